//! Knowledge benchmark: ingestion throughput and query latency at 10k and 100k chunks, for
//! keyword, vector and hybrid search, on the embedded store and (when its server answers) on
//! PgVector with HNSW, with the HNSW index's recall@10 against exact search.
//!
//!     cargo bench -p agno-knowledge --bench knowledge            # 10k and 100k chunks
//!     cargo bench -p agno-knowledge --bench knowledge -- 10000   # one size
//!
//! PgVector: `AGNO_BENCH_PGVECTOR` (default `postgresql://postgres@127.0.0.1:5433/postgres`, the
//! server `scripts/pgvector-server` starts). With `AGNO_PYTHON` set, Python Agno 3.1 runs the same
//! corpus with LanceDb and PgVector (`scripts/bench/knowledge_bench.py`) and both are printed
//! side by side.
//!
//! The corpus is synthetic and deterministic (the Python script has the same generator): each
//! chunk is 30 words drawn from a 5,000-word vocabulary, embedded by the offline 384-dimension
//! bag-of-words embedder; queries are 3 words, top 10, query embedding included.
#![allow(clippy::expect_used, clippy::cast_precision_loss, missing_docs)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use agno_core::SearchType;
use agno_knowledge::{HashEmbedder, PgVectorDb, SqliteVectorDb, VectorDb, VectorQuery, VectorRow};
use serde_json::Map;

const DIMS: usize = 384;
const VOCABULARY: usize = 5000;
const WORDS_PER_CHUNK: usize = 30;
const QUERIES: usize = 200;
/// Queries per search type on PgVector.
const PG_QUERIES: usize = 50;
const TYPES: [SearchType; 3] = [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid];

/// The generator both benchmarks share: a 64-bit LCG (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % n as u64).unwrap_or(0)
    }
}

fn text(rng: &mut Lcg, words: usize) -> String {
    (0..words).map(|_| format!("w{}", rng.next(VOCABULARY))).collect::<Vec<_>>().join(" ")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `n` chunks in contents of 500, and the queries.
fn corpus(n: usize) -> (Vec<Vec<VectorRow>>, Vec<String>) {
    let mut rng = Lcg(42);
    let mut contents = Vec::new();
    let mut stored = 0;
    while stored < n {
        let c = contents.len();
        let batch: Vec<VectorRow> = (0..500.min(n - stored))
            .map(|i| {
                let content = text(&mut rng, WORDS_PER_CHUNK);
                VectorRow {
                    id: format!("c{c}_{i}"),
                    name: Some(format!("doc{c}")),
                    meta_data: Map::new(),
                    embedding: None,
                    content,
                    content_hash: format!("h{c}"),
                    content_id: format!("c{c}"),
                    user_id: None,
                }
            })
            .collect();
        stored += batch.len();
        contents.push(batch);
    }
    let queries = (0..QUERIES).map(|_| text(&mut rng, 3)).collect();
    (contents, queries)
}

/// One store's figures: chunks/s, (p50, p99) ms per search type, and the vector results' ids.
struct Figures {
    ingest: f64,
    latency: [(f64, f64); 3],
    vector_ids: Vec<HashSet<String>>,
}

async fn measure(
    store: Arc<dyn VectorDb>,
    contents: &[Vec<VectorRow>],
    queries: &[String],
    embedder: &HashEmbedder,
    pg: Option<&PgVectorDb>,
) -> Figures {
    store.create().await.expect("create");
    let n: usize = contents.iter().map(Vec::len).sum();
    let started = Instant::now();
    for batch in contents {
        // What a knowledge insert costs after chunking: embedding the chunks and writing them.
        let mut rows = batch.clone();
        for row in &mut rows {
            row.embedding = Some(embedder.vector(&row.content));
        }
        store.replace_content(&rows[0].content_id, &rows).await.expect("insert");
    }
    let ingest = n as f64 / started.elapsed().as_secs_f64();
    if let Some(pg) = pg {
        // The HNSW index, built once over the data as Agno's optimize() does.
        let started = Instant::now();
        pg.build_index().await.expect("optimize");
        println!("{n:>7} chunks  PgVector HNSW index built in {:.1} s", started.elapsed().as_secs_f64());
    }
    let mut latency = [(0.0, 0.0); 3];
    let mut vector_ids = Vec::new();
    for (slot, search_type) in TYPES.into_iter().enumerate() {
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
        let mut times = Vec::with_capacity(queries.len());
        for query in queries {
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
            if search_type == SearchType::Vector {
                vector_ids.push(found.into_iter().filter_map(|d| d.id).collect());
            }
        }
        times.sort_by(f64::total_cmp);
        latency[slot] = (percentile(&times, 0.5), percentile(&times, 0.99));
    }
    Figures { ingest, latency, vector_ids }
}

fn print(n: usize, store: &str, f: &Figures, recall: Option<f64>) {
    println!("{n:>7} chunks  {store:<22} ingestion {:>8.0} chunks/s", f.ingest);
    for (i, t) in TYPES.iter().enumerate() {
        let extra = match (t, recall) {
            (SearchType::Vector, Some(r)) => format!("  recall@10 {r:.3}"),
            _ => String::new(),
        };
        println!(
            "{n:>7} chunks  {store:<22} {:<7} p50 {:>7.2} ms  p99 {:>7.2} ms{extra}",
            t.as_str(),
            f.latency[i].0,
            f.latency[i].1
        );
    }
}

fn recall(approximate: &[HashSet<String>], exact: &[HashSet<String>]) -> f64 {
    let hits: usize = approximate.iter().zip(exact).map(|(a, e)| a.intersection(e).count()).sum();
    let wanted: usize = exact.iter().map(HashSet::len).sum();
    if wanted == 0 { 1.0 } else { hits as f64 / wanted as f64 }
}

fn pg_url() -> Option<String> {
    let url = std::env::var("AGNO_BENCH_PGVECTOR")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5433/postgres".to_owned());
    let host = url.split("://").nth(1)?.split(['/', '?']).next()?.rsplit('@').next()?.to_owned();
    std::net::TcpStream::connect(&host).ok().map(|_| url)
}

/// Python Agno 3.1 on the same corpus: lines of JSON, one per size and store.
fn python(sizes: &[usize], pg: Option<&str>) -> Vec<serde_json::Value> {
    let Ok(python) = std::env::var("AGNO_PYTHON") else { return Vec::new() };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench/knowledge_bench.py");
    let dir = std::env::temp_dir().join(format!("agno-kbench-py-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return Vec::new();
    }
    println!(
        "running Python Agno 3.1 (LanceDb{}) on the same corpus ...",
        if pg.is_some() { ", PgVector" } else { "" }
    );
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script).arg("--dir").arg(&dir).args(sizes.iter().map(ToString::to_string));
    if let Some(url) = pg {
        cmd.args(["--pgvector", url]);
    }
    let out = cmd.output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(out) if out.status.success() => {
            String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
        }
        Ok(out) => {
            eprintln!("the Python benchmark failed:\n{}", String::from_utf8_lossy(&out.stderr));
            Vec::new()
        }
        Err(e) => {
            eprintln!("cannot run the Python benchmark: {e}");
            Vec::new()
        }
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10_000, 100_000] } else { sizes };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let embedder = HashEmbedder::new(DIMS);
    let pg = pg_url();
    if pg.is_none() {
        println!("(PgVector not measured: no server at AGNO_BENCH_PGVECTOR; scripts/pgvector-server starts one)");
    }
    println!("{DIMS} dimensions, {QUERIES} queries of 3 words ({PG_QUERIES} on PgVector), top 10");
    let mut rows: Vec<(usize, &str, Figures, Option<f64>)> = Vec::new();
    for &n in &sizes {
        let (contents, queries) = corpus(n);
        let dir = std::env::temp_dir().join(format!("agno-kbench-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let url = format!("sqlite://{}", dir.join("kb.db").display());
        let embedded: Arc<dyn VectorDb> = Arc::new(rt.block_on(SqliteVectorDb::connect(&url, "bench")).expect("store"));
        let exact = rt.block_on(measure(embedded, &contents, &queries, &embedder, None));
        print(n, "embedded (exact)", &exact, Some(1.0));
        if let Some(url) = &pg {
            let store =
                rt.block_on(PgVectorDb::connect(url, "ai", &format!("agno_bench_{n}"), DIMS)).expect("pgvector");
            rt.block_on(store.drop_table()).expect("drop");
            // Fewer queries: PgVector's hybrid ranks every row (as Agno's does), ~1 s each at 100k.
            let few = &queries[..PG_QUERIES];
            let f = rt.block_on(measure(Arc::new(store.clone()), &contents, few, &embedder, Some(&store)));
            let r = recall(&f.vector_ids, &exact.vector_ids[..PG_QUERIES]);
            print(n, "PgVector (HNSW)", &f, Some(r));
            rt.block_on(store.drop_table()).expect("drop");
            rows.push((n, "agno-rs PgVector (HNSW)", f, Some(r)));
        }
        rows.push((n, "agno-rs embedded", exact, Some(1.0)));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let theirs = python(&sizes, pg.as_deref());
    println!(
        "\n| chunks | store | ingestion chunks/s | keyword p50 / p99 ms | vector p50 / p99 ms | hybrid p50 / p99 ms | recall@10 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &n in &sizes {
        for (m, name, f, r) in rows.iter().filter(|r| r.0 == n) {
            let lat = |i: usize| format!("{:.2} / {:.2}", f.latency[i].0, f.latency[i].1);
            let r = r.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
            println!("| {m} | {name} | {:.0} | {} | {} | {} | {r} |", f.ingest, lat(0), lat(1), lat(2));
        }
        for v in theirs.iter().filter(|v| v["chunks"].as_u64() == Some(n as u64)) {
            let lat = |k: &str| {
                format!("{:.2} / {:.2}", v[k][0].as_f64().unwrap_or(f64::NAN), v[k][1].as_f64().unwrap_or(f64::NAN))
            };
            println!(
                "| {n} | Python Agno 3.1 {} | {:.0} | {} | {} | {} | - |",
                v["store"].as_str().unwrap_or("?"),
                v["ingest_chunks_per_s"].as_f64().unwrap_or(f64::NAN),
                lat("keyword"),
                lat("vector"),
                lat("hybrid")
            );
        }
    }
}
