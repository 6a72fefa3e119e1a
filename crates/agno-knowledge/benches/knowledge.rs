//! Knowledge benchmark: ingestion throughput and query latency of the embedded store at 10k and
//! 100k chunks, for keyword, vector (exact) and hybrid search.
//!
//!     cargo bench -p agno-knowledge --bench knowledge            # 10k and 100k chunks
//!     cargo bench -p agno-knowledge --bench knowledge -- 10000   # one size
//!
//! The corpus is synthetic and deterministic (the same generator as
//! `benches/python/knowledge_bench.py`, which measures Python Agno 3.1 with LanceDb on it): each
//! chunk is 30 words drawn from a 5,000-word vocabulary, embedded by the offline 384-dimension
//! bag-of-words embedder; queries are 3 words. Vector search is exact, so its recall@10 against
//! exact search is 1.0 by construction (printed to say so).

#![allow(clippy::expect_used, clippy::cast_precision_loss, missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use agno_core::SearchType;
use agno_knowledge::{HashEmbedder, SqliteVectorDb, VectorDb, VectorQuery, VectorRow};
use serde_json::Map;

const DIMS: usize = 384;
const VOCABULARY: usize = 5000;
const WORDS_PER_CHUNK: usize = 30;
const QUERIES: usize = 200;

/// The generator both benchmarks share: a 64-bit LCG (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % n as u64).unwrap_or(0)
    }
}

fn word(i: usize) -> String {
    format!("w{i}")
}

fn text(rng: &mut Lcg, words: usize) -> String {
    (0..words).map(|_| word(rng.next(VOCABULARY))).collect::<Vec<_>>().join(" ")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One size's figures: chunks/s, then (p50, p99) ms for keyword, vector, hybrid.
type Figures = (f64, [(f64, f64); 3]);

async fn measure(n: usize) -> Figures {
    let dir = std::env::temp_dir().join(format!("agno-kbench-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let url = format!("sqlite://{}", dir.join("kb.db").display());
    let store = SqliteVectorDb::connect(&url, "bench").await.expect("store");
    store.create().await.expect("create");
    let embedder = HashEmbedder::new(DIMS);
    let mut rng = Lcg(42);

    // Ingestion: embed and store in contents of 500 chunks, as a knowledge insert does.
    let started = Instant::now();
    let mut stored = 0;
    let mut content = 0;
    while stored < n {
        let batch: Vec<VectorRow> = (0..500.min(n - stored))
            .map(|i| {
                let content_text = text(&mut rng, WORDS_PER_CHUNK);
                VectorRow {
                    id: format!("c{content}_{i}"),
                    name: Some(format!("doc{content}")),
                    meta_data: Map::new(),
                    embedding: Some(embedder.vector(&content_text)),
                    content: content_text,
                    content_hash: format!("h{content}"),
                    content_id: format!("c{content}"),
                    user_id: None,
                }
            })
            .collect();
        store.replace_content(&format!("c{content}"), &batch).await.expect("insert");
        stored += batch.len();
        content += 1;
    }
    let ingest = started.elapsed().as_secs_f64();
    println!("{n:>7} chunks  ingestion {:>9.0} chunks/s  ({ingest:.2} s)", n as f64 / ingest);

    let queries: Vec<String> = (0..QUERIES).map(|_| text(&mut rng, 3)).collect();
    let store: Arc<dyn VectorDb> = Arc::new(store);
    let mut latencies = [(0.0, 0.0); 3];
    for (slot, search_type) in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid].into_iter().enumerate() {
        // One warm-up query loads the embeddings into the store's copy.
        let warm = embedder.vector(&queries[0]);
        let q = VectorQuery {
            text: &queries[0],
            embedding: Some(&warm),
            limit: 10,
            filter: None,
            user_id: None,
            search_type,
        };
        store.search(q).await.expect("warm-up");
        let mut times = Vec::with_capacity(QUERIES);
        for query in &queries {
            let started = Instant::now();
            let embedding = embedder.vector(query);
            let q = VectorQuery {
                text: query,
                embedding: Some(&embedding),
                limit: 10,
                filter: None,
                user_id: None,
                search_type,
            };
            let found = store.search(q).await.expect("search");
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(found.len() <= 10);
        }
        times.sort_by(f64::total_cmp);
        latencies[slot] = (percentile(&times, 0.5), percentile(&times, 0.99));
        println!(
            "{n:>7} chunks  {:<7} p50 {:>7.2} ms  p99 {:>7.2} ms{}",
            search_type.as_str(),
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            if search_type == SearchType::Vector { "  recall@10 1.000 (exact search)" } else { "" }
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    (n as f64 / ingest, latencies)
}

/// Python Agno 3.1 with LanceDb on the same corpus (`scripts/bench/knowledge_bench.py`).
fn python(sizes: &[usize]) -> Option<Vec<Figures>> {
    let python = std::env::var("AGNO_PYTHON").ok()?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench/knowledge_bench.py");
    let dir = std::env::temp_dir().join(format!("agno-kbench-py-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    println!("running Python Agno 3.1 with LanceDb on the same corpus ...");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg("--dir")
        .arg(&dir)
        .args(sizes.iter().map(ToString::to_string))
        .output()
        .ok()?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        eprintln!("the Python benchmark failed:\n{}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let pair = |v: &serde_json::Value, key: &str| {
        (v[key][0].as_f64().unwrap_or(f64::NAN), v[key][1].as_f64().unwrap_or(f64::NAN))
    };
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| {
                let ingest = v["ingest_chunks_per_s"].as_f64().unwrap_or(f64::NAN);
                (ingest, [pair(&v, "keyword"), pair(&v, "vector"), pair(&v, "hybrid")])
            })
            .collect(),
    )
}

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10_000, 100_000] } else { sizes };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    println!("embedded store (SQLite FTS5 + exact cosine), {DIMS} dimensions, {QUERIES} queries of 3 words, top 10");
    let ours: Vec<Figures> = sizes.iter().map(|n| rt.block_on(measure(*n))).collect();
    let Some(theirs) = python(&sizes) else {
        println!("(set AGNO_PYTHON to a Python with agno 3.1 and lancedb to compare with Python Agno)");
        return;
    };
    println!("\n| chunks | measure | agno-rs embedded | Python Agno 3.1 LanceDb | ratio |");
    println!("|---|---|---|---|---|");
    for ((n, a), b) in sizes.iter().zip(&ours).zip(&theirs) {
        println!("| {n} | ingestion chunks/s | {:.0} | {:.0} | {:.1}x |", a.0, b.0, a.0 / b.0);
        for (i, name) in ["keyword", "vector", "hybrid"].iter().enumerate() {
            let ((a50, a99), (b50, b99)) = (a.1[i], b.1[i]);
            println!("| {n} | {name} p50 / p99 ms | {a50:.2} / {a99:.2} | {b50:.2} / {b99:.2} | {:.1}x |", b50 / a50);
        }
    }
}
