//! The embedded store end to end: the repository's corpus ingested into SQLite and searched by
//! keyword, vector and hybrid; contents rows with their status; per-user isolation; bad input
//! that fails one content and leaves the others; batched embedding over HTTP; filters; the
//! pre-v3 table migration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use agno_core::{Db, Filter, KnowledgeError, KnowledgeQuery, SearchType};
use agno_db::InMemoryDb;
use agno_knowledge::{Chunking, Content, HashEmbedder, Knowledge, OpenAiEmbedder, SqliteVectorDb, VectorDb, status};
use agno_testkit::FakeProvider;
use common::{corpus, meta};
use serde_json::{Map, json};

fn scratch(tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("agno-knowledge-{tag}-{}", agno_core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    format!("sqlite://{}", dir.join("kb.db").display())
}

async fn store(tag: &str) -> Arc<SqliteVectorDb> {
    Arc::new(SqliteVectorDb::connect(&scratch(tag), "agno_vectors").await.unwrap())
}

/// (query, file the best hit must come from), for every search type.
const QUERIES: &[(&str, &str)] = &[
    ("magma lava eruption", "00-volcanoes.md"),
    ("queen workers honey hive", "01-honeybees.md"),
    ("castling checkmate king", "04-chess.txt"),
    ("chlorophyll glucose sunlight", "05-photosynthesis.md"),
    ("syntax tree register allocation", "08-compilers.md"),
    ("espresso crema beans", "09-coffee.txt"),
    ("ballast tanks sonar periscope", "14-submarines.md"),
    ("SQL indexes transactions", "24-databases.md"),
    ("kiln glaze stoneware", "27-pottery.txt"),
    ("kerning serif glyphs", "29-typography.txt"),
];

async fn ingest(knowledge: &Knowledge) -> usize {
    let mut chunks = 0;
    for (name, bytes) in corpus() {
        let topic = name.split(['-', '.']).nth(1).unwrap().to_owned();
        let number: u64 = name[..2].parse().unwrap();
        let content =
            Content::file(&name, bytes).metadata(meta(&json!({"topic": topic, "number": number, "file": name})));
        let row = knowledge.insert(content).await.unwrap();
        assert_eq!(row.status.as_deref(), Some(status::COMPLETED), "{name}: {:?}", row.status_message);
        chunks += 1;
    }
    chunks
}

#[tokio::test]
async fn the_corpus_is_found_by_keyword_vector_and_hybrid_search() {
    let contents: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let knowledge = Knowledge::new("docs", store("corpus").await)
        .contents_db(Arc::clone(&contents))
        .embedder(Arc::new(HashEmbedder::new(1024)))
        .chunking(Chunking::Markdown { size: 400, overlap: 0 });
    knowledge.create().await.unwrap();
    assert_eq!(ingest(&knowledge).await, 30);

    for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
        for (query, expected) in QUERIES {
            let found = knowledge.search_with(query, Some(3), None, None, Some(search_type)).await.unwrap();
            assert!(!found.is_empty(), "{search_type:?} {query}: nothing");
            assert_eq!(found[0].meta_data["file"], *expected, "{search_type:?} {query}: {found:#?}");
            let scores: Vec<f64> = found.iter().map(|d| d.reranking_score.unwrap()).collect();
            assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{search_type:?} scores not sorted: {scores:?}");
            assert!(found[0].content_id.is_some() && found[0].name.as_deref() == Some(*expected));
        }
    }

    // The content rows: one per file, completed, linked to the knowledge base, typed.
    let (rows, total) =
        contents.get_knowledge_contents(&KnowledgeQuery { limit: Some(100), ..Default::default() }).await.unwrap();
    assert_eq!(total, 30);
    assert!(rows.iter().all(|r| r.status.as_deref() == Some("completed") && r.linked_to.as_deref() == Some("docs")));
    assert!(
        rows.iter().any(|r| r.kind.as_deref() == Some("md")) && rows.iter().any(|r| r.kind.as_deref() == Some("txt"))
    );

    // Filters narrow every search type; a filter matching nothing finds nothing.
    let only_txt = Filter::from_json(&json!({"op": "CONTAINS", "key": "file", "value": ".txt"})).unwrap();
    for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
        let found = knowledge
            .search_with("lava honey castling", Some(5), Some(&only_txt), None, Some(search_type))
            .await
            .unwrap();
        assert_eq!(found[0].meta_data["file"], "04-chess.txt", "{search_type:?}");
        assert!(found.iter().all(|d| d.meta_data["file"].as_str().unwrap().ends_with(".txt")));
    }
    let range = Filter::from_json(&json!({"op": "AND", "conditions": [
        {"op": "GTE", "key": "number", "value": 20}, {"op": "NOT", "condition": {"op": "IN", "key": "topic", "values": ["owls"]}}
    ]}))
    .unwrap();
    let found = knowledge
        .search_with("night owls talons pyramids", Some(5), Some(&range), None, Some(SearchType::Keyword))
        .await
        .unwrap();
    assert_eq!(found[0].meta_data["topic"], "pyramids", "{found:#?}");
    assert!(found.iter().all(|d| d.meta_data["number"].as_u64().unwrap() >= 20 && d.meta_data["topic"] != "owls"));

    // Re-inserting the same file replaces its chunks rather than duplicating them.
    let before = knowledge
        .vector_db()
        .search(agno_knowledge::VectorQuery {
            text: "magma",
            embedding: None,
            limit: 100,
            filter: None,
            user_id: None,
            search_type: SearchType::Keyword,
        })
        .await
        .unwrap()
        .len();
    ingest(&knowledge).await;
    let after = knowledge.search_with("magma", Some(100), None, None, Some(SearchType::Keyword)).await.unwrap().len();
    assert_eq!(before, after);
}

#[tokio::test]
async fn keyword_search_needs_no_embedder_and_vector_search_says_it_needs_one() {
    let knowledge = Knowledge::new("offline", store("offline").await);
    knowledge.create().await.unwrap();
    ingest(&knowledge).await;
    let found = knowledge.search_with("ballast periscope", None, None, None, None).await.unwrap();
    assert_eq!(found[0].meta_data["topic"], "submarines");
    let err = knowledge.search_with("x", None, None, None, Some(SearchType::Vector)).await.unwrap_err();
    assert!(matches!(err, KnowledgeError::Unsupported(_)) && err.to_string().contains("embedder"), "{err}");
    // Query syntax is never passed to the index: FTS5 operators are just words (or nothing).
    for hostile in ["\"", "NEAR(", "a* OR", ")) OR 1=1 --", "'; DROP TABLE agno_vectors; --", ""] {
        knowledge.search_with(hostile, None, None, None, None).await.unwrap();
    }
    assert!(!knowledge.search_with("ballast", None, None, None, None).await.unwrap().is_empty());
}

#[tokio::test]
async fn users_see_their_own_contents_and_shared_ones_never_anothers() {
    let knowledge = Knowledge::new("private", store("users").await)
        .contents_db(Arc::new(InMemoryDb::new()))
        .embedder(Arc::new(HashEmbedder::new(64)));
    knowledge.create().await.unwrap();
    knowledge.insert(Content::text("ann-notes", "Ann's secret garden has blue tulips").user("ann")).await.unwrap();
    knowledge.insert(Content::text("bob-notes", "Bob's secret garden has red tulips").user("bob")).await.unwrap();
    knowledge.insert(Content::text("shared", "Every garden needs tulips and water")).await.unwrap();
    for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
        let names = |user: Option<&'static str>| {
            let k = knowledge.clone();
            async move {
                let mut found: Vec<String> = k
                    .search_with("secret garden tulips", Some(10), None, user, Some(search_type))
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|d| d.name.unwrap())
                    .collect();
                found.sort();
                found
            }
        };
        assert_eq!(names(Some("ann")).await, ["ann-notes", "shared"], "{search_type:?}");
        assert_eq!(names(Some("bob")).await, ["bob-notes", "shared"], "{search_type:?}");
        assert_eq!(names(Some("cleo")).await, ["shared"], "{search_type:?}");
        assert_eq!(names(None).await.len(), 3, "unscoped sees all ({search_type:?})");
    }
    // Bob cannot delete Ann's content; Ann can.
    let ann_id = knowledge.search_with("blue", Some(1), None, Some("ann"), Some(SearchType::Keyword)).await.unwrap()[0]
        .content_id
        .clone()
        .unwrap();
    assert_eq!(knowledge.vector_db().delete_by_content_id("nope").await.unwrap(), 0);
    assert!(!knowledge.remove_content(&ann_id, Some("bob")).await.unwrap());
    assert_eq!(
        knowledge.search_with("blue", None, None, Some("ann"), Some(SearchType::Keyword)).await.unwrap().len(),
        1
    );
    assert!(knowledge.remove_content(&ann_id, Some("ann")).await.unwrap());
    assert!(
        knowledge.search_with("blue", None, None, Some("ann"), Some(SearchType::Keyword)).await.unwrap().is_empty()
    );
}

#[tokio::test]
async fn bad_contents_fail_with_a_reason_and_leave_the_rest_searchable() {
    let contents: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let provider = FakeProvider::start().await.unwrap();
    let good = OpenAiEmbedder::new(provider.base_url()).api_key("sk-test").dimensions(32).batch_size(4);
    let knowledge = Knowledge::new("batch", store("bad").await)
        .contents_db(Arc::clone(&contents))
        .embedder(Arc::new(good))
        .chunking(Chunking::FixedSize { size: 60, overlap: 0 })
        .max_content_bytes(10_000);
    knowledge.create().await.unwrap();

    // Ten chunks with a batch size of 4: three embedding calls.
    let ten =
        (0..10).map(|i| format!("Sentence number {i} is about anchors and harbors.")).collect::<Vec<_>>().join(" ");
    let row = knowledge.insert(Content::text("harbor", ten)).await.unwrap();
    assert_eq!(row.status.as_deref(), Some("completed"), "{:?}", row.status_message);
    let calls = provider.requests().iter().filter(|r| r.path == "/v1/embeddings").count();
    let chunks =
        knowledge.search_with("anchors", Some(100), None, None, Some(SearchType::Keyword)).await.unwrap().len();
    assert_eq!(calls, chunks.div_ceil(4), "{chunks} chunks");

    let failures = [
        (Content::file("malware.exe", b"MZ...".to_vec()), "unsupported file type .exe"),
        (Content::file("empty.txt", Vec::new()), "empty"),
        (Content::file("huge.txt", vec![b'a'; 10_001]), "more than the limit of 10000 bytes"),
        (Content::file("broken.json", b"{\"a\": ".to_vec()), "not valid JSON"),
    ];
    for (content, reason) in failures {
        let name = content.name.clone();
        let row = knowledge.insert(content).await.unwrap();
        assert_eq!(row.status.as_deref(), Some("failed"), "{name}");
        let message = row.status_message.unwrap_or_default();
        assert!(message.contains(reason), "{name}: {message}");
        let stored = contents.get_knowledge_content(row.id.as_deref().unwrap(), None).await.unwrap().unwrap();
        assert_eq!(stored.status.as_deref(), Some("failed"));
    }

    // An embedder answering the wrong dimension fails its content; nothing of it is indexed.
    let wrong = OpenAiEmbedder::new(provider.base_url()).model("wrong-dimensions").dimensions(32);
    let broken = Knowledge::new("batch", Arc::clone(knowledge.vector_db()))
        .contents_db(Arc::clone(&contents))
        .embedder(Arc::new(wrong));
    let row = broken.insert(Content::text("zebra", "zebras stripes savanna")).await.unwrap();
    assert_eq!(row.status.as_deref(), Some("failed"));
    assert!(row.status_message.unwrap().contains("33 dimensions, expected 32"));
    assert!(knowledge.search_with("zebras", None, None, None, Some(SearchType::Keyword)).await.unwrap().is_empty());
    // An unreachable embedder fails the same way.
    let gone = OpenAiEmbedder::new("http://127.0.0.1:9/v1").dimensions(32);
    let offline = Knowledge::new("batch", Arc::clone(knowledge.vector_db())).embedder(Arc::new(gone));
    let row = offline.insert(Content::text("giraffe", "giraffes necks")).await.unwrap();
    assert_eq!(row.status.as_deref(), Some("failed"));
    assert!(row.status_message.unwrap().contains("request failed"));

    // The good content is untouched by all of this.
    assert_eq!(
        knowledge.search_with("anchors", Some(100), None, None, Some(SearchType::Keyword)).await.unwrap().len(),
        chunks
    );
    assert!(
        !knowledge
            .search_with("anchors harbors", Some(3), None, None, Some(SearchType::Vector))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn different_documents_never_share_an_identity() {
    let knowledge = Knowledge::new("ids", store("ids").await);
    knowledge.create().await.unwrap();
    let a = knowledge.insert(Content::text("same", "same words").metadata(meta(&json!({"v": 1})))).await.unwrap();
    let b = knowledge.insert(Content::text("same", "same words").metadata(meta(&json!({"v": 2})))).await.unwrap();
    let c = knowledge.insert(Content::text("same", "other words")).await.unwrap();
    let d = knowledge.insert(Content::text("same", "same words").metadata(meta(&json!({"v": 1})))).await.unwrap();
    // The same file added by two users is two contents: neither replaces the other's chunks.
    let ann = knowledge
        .insert(Content::text("same", "same words").metadata(meta(&json!({"v": 1}))).user("ann"))
        .await
        .unwrap();
    let bob = knowledge
        .insert(Content::text("same", "same words").metadata(meta(&json!({"v": 1}))).user("bob"))
        .await
        .unwrap();
    assert!(ann.id != bob.id && ann.id != a.id);
    for user in ["ann", "bob"] {
        let found = knowledge.search_with("same", Some(10), None, Some(user), None).await.unwrap();
        assert_eq!(found.len(), 3, "{user}: shared a, b and their own: {found:#?}");
    }
    assert_ne!(a.id, b.id);
    assert_ne!(a.id, c.id);
    assert_eq!(a.id, d.id, "the same content keeps its id");
    let found = knowledge.search_with("same", Some(10), None, None, None).await.unwrap();
    assert_eq!(found.len(), 4, "{found:#?}");
}

#[tokio::test]
async fn metadata_filters_are_data_never_query_text() {
    let knowledge = Knowledge::new("fuzz", store("fuzz").await).embedder(Arc::new(HashEmbedder::new(16)));
    knowledge.create().await.unwrap();
    let keys = ["kind", "k'ey", "a\"b", "x) OR 1=1 --", "ключ", ""];
    let values = [json!("guide"), json!("' OR '1'='1"), json!(3), json!(["a", "b"]), json!(null), json!("%_*")];
    for (i, (k, v)) in keys.iter().zip(values.iter()).enumerate() {
        let mut m = Map::new();
        m.insert((*k).to_owned(), v.clone());
        knowledge.insert(Content::text(format!("doc{i}"), "fuzzing filters on tulips").metadata(m)).await.unwrap();
    }
    let mut rng = 7u64;
    let mut next = |n: usize| {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        usize::try_from(rng >> 33).unwrap() % n
    };
    let ops = ["EQ", "NEQ", "GT", "LT", "GTE", "LTE", "CONTAINS", "STARTSWITH"];
    for _ in 0..200 {
        let (key, value, op) = (keys[next(keys.len())], values[next(values.len())].clone(), ops[next(ops.len())]);
        let filter = Filter::from_json(&json!({"op": op, "key": key, "value": value})).unwrap();
        for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
            let found =
                knowledge.search_with("tulips", Some(10), Some(&filter), None, Some(search_type)).await.unwrap();
            assert!(found.iter().all(|d| filter.matches(&d.meta_data)), "{op} {key:?} {value}");
        }
    }
    assert_eq!(
        knowledge.search_with("tulips", Some(10), None, None, None).await.unwrap().len(),
        keys.len(),
        "nothing lost"
    );
}

#[tokio::test]
async fn a_table_from_before_v3_refuses_per_user_search_until_migrated() {
    let url = scratch("legacy");
    // A table as an older store made it: no user_id column, two chunks.
    let legacy = SqliteVectorDb::connect(&url, "old_vectors").await.unwrap();
    {
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query(
            "CREATE TABLE old_vectors (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT, \
             meta_data TEXT NOT NULL DEFAULT '{}', content TEXT NOT NULL, embedding BLOB, created_at INTEGER, \
             updated_at INTEGER, content_hash TEXT, content_id TEXT)",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    legacy.create().await.unwrap();
    let rows = ["old lighthouse keeper", "old harbor pilot"].map(|text| agno_knowledge::VectorRow {
        id: format!("c_{text}"),
        name: Some("old".into()),
        meta_data: Map::new(),
        content: text.into(),
        embedding: None,
        content_hash: "h".into(),
        content_id: format!("c_{text}"),
        user_id: None,
    });
    // Written through SQL without user_id (the old shape).
    {
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        for r in &rows {
            sqlx::query(
                "INSERT INTO old_vectors (id, name, content, content_hash, content_id) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .bind(&r.id)
            .bind(&r.name)
            .bind(&r.content)
            .bind(&r.content_hash)
            .bind(&r.content_id)
            .execute(&pool)
            .await
            .unwrap();
        }
        pool.close().await;
    }
    let knowledge = Knowledge::new("legacy", Arc::new(legacy.clone()));
    assert_eq!(knowledge.search_with("old", None, None, None, None).await.unwrap().len(), 2, "unscoped still works");
    let err = knowledge.search_with("old", None, None, Some("ann"), None).await.unwrap_err();
    assert!(matches!(err, KnowledgeError::NeedsMigration { .. }), "{err}");
    assert!(err.to_string().contains("agno db migrate-vectors"), "{err}");

    assert!(legacy.migrate_user_id().await.unwrap());
    assert!(!legacy.migrate_user_id().await.unwrap(), "a second migration changes nothing");
    let found = knowledge.search_with("old", None, None, Some("ann"), None).await.unwrap();
    assert_eq!(found.len(), 2, "nothing lost: the old rows are shared");
    assert_eq!(legacy.count().await.unwrap(), 2);
}

fn binary(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/knowledge/binary").join(name)).unwrap()
}

#[tokio::test]
async fn pdf_docx_and_html_are_read_and_a_broken_pdf_fails_alone() {
    let contents: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let knowledge = Knowledge::new("files", store("binary").await).contents_db(Arc::clone(&contents));
    knowledge.create().await.unwrap();
    let html = b"<html><head><title>t</title><script>var hidden = 1;</script></head><body><h1>Tides</h1>\
        <p>Spring tides follow the <b>full moon</b>.</p></body></html>"
        .to_vec();
    for (name, bytes) in [
        ("lighthouse-manual.pdf", binary("lighthouse-manual.pdf")),
        ("sailing-guide.docx", binary("sailing-guide.docx")),
        ("tides.html", html),
        ("broken.pdf", binary("broken.pdf")),
        ("broken.docx", b"PK\x03\x04 not really a zip".to_vec()),
    ] {
        let row = knowledge.insert(Content::file(name, bytes)).await.unwrap();
        let ok = !name.starts_with("broken");
        assert_eq!(
            row.status.as_deref(),
            Some(if ok { "completed" } else { "failed" }),
            "{name}: {:?}",
            row.status_message
        );
        if !ok {
            let why = row.status_message.unwrap();
            assert!(
                why.contains("could not be parsed as PDF") || why.contains("could not be read as DOCX"),
                "{name}: {why}"
            );
        }
    }
    let find = |q: &'static str| {
        let k = knowledge.clone();
        async move {
            k.search_with(q, Some(1), None, None, None).await.unwrap().into_iter().next().map(|d| (d.name, d.content))
        }
    };
    let (name, text) = find("Fresnel lens").await.unwrap();
    assert_eq!(name.as_deref(), Some("lighthouse-manual.pdf"));
    assert!(text.contains("Keepers log every flash pattern"), "{text}");
    let (name, text) = find("jib mainsail").await.unwrap();
    assert_eq!(name.as_deref(), Some("sailing-guide.docx"));
    assert!(
        text.contains("Trim the jib\tthen the mainsail.") && text.contains("The keel resists\nsideways drift."),
        "{text:?}"
    );
    let (name, text) = find("spring tides moon").await.unwrap();
    assert_eq!(name.as_deref(), Some("tides.html"));
    assert!(text.contains("full moon") && !text.contains("hidden"), "{text}");
    let (rows, _) = contents.get_knowledge_contents(&KnowledgeQuery::default()).await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.status.as_deref() == Some("completed")).count(), 3);
}

#[tokio::test]
async fn ollama_cohere_gemini_and_voyage_embed_in_batches_and_wrong_sizes_are_refused() {
    use agno_knowledge::{Embedder, EmbeddingApi, ProviderEmbedder};
    let provider = FakeProvider::start().await.unwrap();
    let root = provider.base_url().trim_end_matches("/v1").to_owned();
    let texts: Vec<String> = (0..10).map(|i| format!("text number {i} about harbors")).collect();
    for (api, path) in [
        (EmbeddingApi::Ollama, "/api/embed"),
        (EmbeddingApi::Cohere, "/v2/embed"),
        (EmbeddingApi::Gemini, "/v1beta/models/embed-model:batchEmbedContents"),
        (EmbeddingApi::Voyage, "/v1/embeddings"),
    ] {
        let before = provider.requests().iter().filter(|r| r.path == path).count();
        let e = ProviderEmbedder::new(api, &root, "embed-model", 32).api_key("k").batch_size(4);
        let vectors = e.embed(&texts).await.unwrap();
        assert_eq!(vectors.len(), 10, "{api:?}");
        for (t, v) in texts.iter().zip(&vectors) {
            assert_eq!(v, &agno_testkit::bag_of_words_embedding(t, 32), "{api:?}: vectors in order");
        }
        let calls = provider.requests().iter().filter(|r| r.path == path).count() - before;
        assert_eq!(calls, 3, "{api:?}: ceil(10 / 4) calls");
        // A vector store knowledge base works with it end to end.
        let knowledge = Knowledge::new("p", store(&format!("{api:?}").to_lowercase()).await).embedder(Arc::new(e));
        knowledge.create().await.unwrap();
        knowledge.insert(Content::text("harbor", "anchors in the harbor")).await.unwrap();
        let found =
            knowledge.search_with("harbor anchors", Some(1), None, None, Some(SearchType::Vector)).await.unwrap();
        assert_eq!(found[0].name.as_deref(), Some("harbor"), "{api:?}");
    }
    // The fake Ollama and Cohere models answer 32 dimensions: an embedder set to 16 refuses them.
    let wrong = ProviderEmbedder::new(EmbeddingApi::Ollama, &root, "m", 16);
    let err = wrong.embed(&texts[..1]).await.unwrap_err();
    assert!(err.to_string().contains("32 dimensions, expected 16"), "{err}");
}

#[tokio::test]
async fn urls_are_downloaded_and_bad_ones_fail_with_the_reason() {
    use axum::http::header::CONTENT_TYPE;
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/guide",
            get(|| async {
                ([(CONTENT_TYPE, "text/html; charset=utf-8")], "<h1>Knots</h1><p>A bowline makes a fixed loop.</p>")
            }),
        )
        .route("/notes.txt", get(|| async { "Reef knots join two ropes." }))
        .route("/big.txt", get(|| async { "x".repeat(5_000) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let base = format!("http://{addr}");

    let contents: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let knowledge =
        Knowledge::new("web", store("urls").await).contents_db(Arc::clone(&contents)).max_content_bytes(1_000);
    knowledge.create().await.unwrap();
    let row = knowledge.insert(Content::url(format!("{base}/guide"))).await.unwrap();
    assert_eq!(row.status.as_deref(), Some("completed"), "{:?}", row.status_message);
    assert_eq!(row.name, "guide");
    let row = knowledge.insert(Content::url(format!("{base}/notes.txt"))).await.unwrap();
    assert_eq!(row.status.as_deref(), Some("completed"), "{:?}", row.status_message);
    let found = knowledge.search_with("bowline loop", Some(1), None, None, None).await.unwrap();
    assert_eq!(found[0].name.as_deref(), Some("guide"));
    assert!(found[0].content.contains("A bowline makes a fixed loop.") && !found[0].content.contains("<p>"));

    for (url, reason) in [
        ("http://127.0.0.1:9/unreachable.txt".to_owned(), "cannot download"),
        (format!("{base}/missing.txt"), "HTTP 404"),
        (format!("{base}/big.txt"), "more than the limit of 1000 bytes"),
        ("file:///etc/passwd".to_owned(), "only http and https"),
    ] {
        let row = knowledge.insert(Content::url(url.clone())).await.unwrap();
        assert_eq!(row.status.as_deref(), Some("failed"), "{url}");
        assert!(row.status_message.as_deref().unwrap_or_default().contains(reason), "{url}: {:?}", row.status_message);
    }
    assert_eq!(
        knowledge.search_with("knots ropes", Some(10), None, None, None).await.unwrap().len(),
        2,
        "the good ones stay"
    );
    // A server reading its users' URLs refuses internal addresses, by IP or by name.
    let guarded = Knowledge::new("web", Arc::clone(knowledge.vector_db())).private_urls(false);
    for url in [
        format!("{base}/notes.txt"),
        format!("http://localhost:{}/notes.txt", addr.port()),
        "http://[::1]/x".to_owned(),
        "http://169.254.169.254/latest".to_owned(),
    ] {
        let row = guarded.insert(Content::url(url.clone())).await.unwrap();
        assert_eq!(row.status.as_deref(), Some("failed"), "{url}");
        let why = row.status_message.unwrap_or_default();
        assert!(why.contains("internal address"), "{url}: {why}");
    }
}

#[tokio::test]
async fn a_content_patched_or_deleted_while_it_is_processed_keeps_the_patch_or_stays_gone() {
    use axum::routing::get;
    use tokio::sync::Notify;
    // A download that waits until the test lets it go, so the test can act in between.
    let gate = Arc::new((Notify::new(), Notify::new()));
    let app = axum::Router::new().route(
        "/{name}",
        get({
            let gate = Arc::clone(&gate);
            move || async move {
                gate.0.notify_one();
                gate.1.notified().await;
                "Tulips open in spring and close at night."
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let contents: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let knowledge = Arc::new(
        Knowledge::new("slow", store("race").await)
            .contents_db(Arc::clone(&contents))
            .embedder(Arc::new(HashEmbedder::new(16))),
    );
    knowledge.create().await.unwrap();
    let start = |name: &str| {
        let content = Content::url(format!("{base}/{name}.txt")).metadata(meta(&json!({"kind": "note"})));
        let knowledge = Arc::clone(&knowledge);
        async move {
            let row = knowledge.accept(&content).await.unwrap();
            let id = row.id.clone().unwrap();
            let task = tokio::spawn(async move { knowledge.process(&content, row).await.unwrap() });
            (id, task)
        }
    };

    // Patched while downloading: the patch wins, in the row and in the chunks.
    let (id, task) = start("patched").await;
    gate.0.notified().await;
    let patch = agno_knowledge::ContentPatch {
        name: Some("renamed".to_owned()),
        metadata: Some(meta(&json!({"topic": "flowers"}))),
        ..Default::default()
    };
    assert!(knowledge.update_content(&id, None, patch).await.unwrap().is_some());
    gate.1.notify_one();
    let row = task.await.unwrap();
    assert_eq!((row.status.as_deref(), row.name.as_str()), (Some("completed"), "renamed"));
    let stored = contents.get_knowledge_content(&id, None).await.unwrap().unwrap();
    assert_eq!(stored.metadata, Some(meta(&json!({"kind": "note", "topic": "flowers"}))));
    let filter = Filter::from_json(&json!({"topic": "flowers"})).unwrap();
    for search_type in [SearchType::Keyword, SearchType::Vector] {
        let found = knowledge.search_with("tulips", None, Some(&filter), None, Some(search_type)).await.unwrap();
        assert_eq!(found.len(), 1, "{search_type:?}: the new chunks carry the patch");
        assert_eq!(found[0].meta_data["kind"], "note");
    }

    // Deleted while downloading: no row comes back and no chunk is searchable.
    let (id, task) = start("deleted").await;
    gate.0.notified().await;
    assert!(knowledge.remove_content(&id, None).await.unwrap());
    gate.1.notify_one();
    task.await.unwrap();
    assert!(contents.get_knowledge_content(&id, None).await.unwrap().is_none());
    let found = knowledge.search_with("tulips", Some(10), None, None, Some(SearchType::Keyword)).await.unwrap();
    assert!(found.iter().all(|d| d.content_id.as_deref() != Some(id.as_str())), "{found:?}");
    assert_eq!(found.len(), 1, "the patched content stays");
}
