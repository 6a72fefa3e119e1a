//! PgVector on a real PostgreSQL with pgvector (`scripts/pgvector-server`): the corpus found by
//! keyword, vector and hybrid search, filters as bound SQL, per-user isolation, the pre-v3 table
//! migration, and a table shared with Python Agno 3.1's `PgVector` in both directions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use agno_core::{Filter, KnowledgeError, SearchType};
use agno_knowledge::{Chunking, Content, HashEmbedder, Knowledge, PgVectorDb, VectorDb, VectorIndex};
use agno_testkit::services;
use common::{corpus, meta};
use serde_json::{Map, Value, json};

fn table(tag: &str) -> String {
    format!("t_{tag}_{}", &agno_core::new_id().replace('-', "")[..12])
}

async fn pg_store(tag: &str, dims: usize, index: VectorIndex) -> PgVectorDb {
    PgVectorDb::connect(&services::pgvector_url(), "ai", &table(tag), dims).await.unwrap().index(index)
}

#[tokio::test]
async fn the_corpus_is_found_by_every_search_type_with_either_index() {
    if !services::pgvector("PgVector corpus search") {
        return;
    }
    for index in [VectorIndex::default(), VectorIndex::Ivfflat { lists: 4, probes: 4 }, VectorIndex::None] {
        let store = Arc::new(pg_store("corpus", 1024, index).await);
        let knowledge = Knowledge::new("docs", store.clone())
            .embedder(Arc::new(HashEmbedder::new(1024)))
            .chunking(Chunking::Markdown { size: 400, overlap: 0 });
        knowledge.create().await.unwrap();
        for (name, bytes) in corpus() {
            let number: u64 = name[..2].parse().unwrap();
            let row = knowledge
                .insert(Content::file(&name, bytes).metadata(meta(&json!({"file": name, "number": number}))))
                .await
                .unwrap();
            assert_eq!(row.status.as_deref(), Some("completed"), "{name}: {:?}", row.status_message);
        }
        assert_eq!(store.count().await.unwrap(), 30);
        knowledge.vector_db().optimize().await.unwrap();
        knowledge.vector_db().optimize().await.unwrap(); // rebuilding replaces the index
        for (query, expected) in [
            ("magma lava eruption", "00-volcanoes.md"),
            ("castling checkmate king", "04-chess.txt"),
            ("espresso crema beans", "09-coffee.txt"),
            ("SQL indexes transactions", "24-databases.md"),
            ("kerning serif glyphs", "29-typography.txt"),
        ] {
            for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
                let found = knowledge.search_with(query, Some(3), None, None, Some(search_type)).await.unwrap();
                assert_eq!(
                    found.first().map(|d| d.meta_data["file"].clone()),
                    Some(json!(expected)),
                    "{index:?} {search_type:?} {query}"
                );
                let scores: Vec<f64> = found.iter().map(|d| d.reranking_score.unwrap()).collect();
                assert!(
                    scores.windows(2).all(|w| w[0] >= w[1]) && scores.iter().all(|s| (0.0..=1.0).contains(s)),
                    "{scores:?}"
                );
            }
        }
        // Filters: bound SQL, same answers as the in-process evaluation.
        let filter = Filter::from_json(&json!({"op": "AND", "conditions": [
            {"op": "GTE", "key": "number", "value": 20}, {"op": "CONTAINS", "key": "file", "value": ".txt"},
            {"op": "NOT", "condition": {"op": "IN", "key": "file", "values": ["25-owls.txt"]}}]}))
        .unwrap();
        let found = knowledge
            .search_with("talons kiln night glaze", Some(10), Some(&filter), None, Some(SearchType::Hybrid))
            .await
            .unwrap();
        assert_eq!(found[0].meta_data["file"], "27-pottery.txt", "{found:#?}");
        assert!(found.iter().all(|d| filter.matches(&d.meta_data)));
        store.drop_table().await.unwrap();
    }
}

#[tokio::test]
async fn hostile_filter_keys_and_values_are_bound_never_spliced() {
    if !services::pgvector("PgVector filter fuzz") {
        return;
    }
    let store = Arc::new(pg_store("fuzz", 16, VectorIndex::None).await);
    let knowledge = Knowledge::new("fuzz", store.clone()).embedder(Arc::new(HashEmbedder::new(16)));
    knowledge.create().await.unwrap();
    let keys = ["kind", "k'ey", "a\"b", "x) OR 1=1 --", "ключ", "$1", ""];
    let values =
        [json!("guide"), json!("' OR '1'='1"), json!(3), json!(["a", "b"]), json!(null), json!("%_*"), json!(2.5)];
    for (i, (k, v)) in keys.iter().zip(values.iter()).enumerate() {
        let mut m = Map::new();
        m.insert((*k).to_owned(), v.clone());
        knowledge.insert(Content::text(format!("doc{i}"), "fuzzing filters on tulips").metadata(m)).await.unwrap();
    }
    let ops = ["EQ", "NEQ", "GT", "LT", "GTE", "LTE", "CONTAINS", "STARTSWITH"];
    let mut rng = 11u64;
    let mut next = |n: usize| {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        usize::try_from(rng >> 33).unwrap() % n
    };
    for _ in 0..150 {
        let (key, value, op) = (keys[next(keys.len())], values[next(values.len())].clone(), ops[next(ops.len())]);
        let filter = Filter::from_json(&json!({"op": op, "key": key, "value": value})).unwrap();
        for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
            let found =
                knowledge.search_with("tulips", Some(10), Some(&filter), None, Some(search_type)).await.unwrap();
            // The database agrees with the reference evaluation row for row.
            let all = knowledge.search_with("tulips", Some(10), None, None, Some(search_type)).await.unwrap();
            let expected: Vec<_> =
                all.iter().filter(|d| filter.matches(&d.meta_data)).map(|d| d.name.clone()).collect();
            let mut got: Vec<_> = found.iter().map(|d| d.name.clone()).collect();
            let mut want = expected.clone();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{op} {key:?} {value} ({search_type:?})");
        }
    }
    assert_eq!(store.count().await.unwrap(), keys.len() as u64, "nothing lost");
    store.drop_table().await.unwrap();
}

#[tokio::test]
async fn patched_metadata_reaches_every_chunk_and_filters_see_it() {
    if !services::pgvector("PgVector metadata update") {
        return;
    }
    let store = Arc::new(pg_store("patch", 16, VectorIndex::None).await);
    let knowledge = Knowledge::new("patch", store.clone())
        .embedder(Arc::new(HashEmbedder::new(16)))
        .chunking(Chunking::FixedSize { size: 40, overlap: 0 });
    knowledge.create().await.unwrap();
    let text = "Tulips open in spring. Tulips close at night. Tulips need cold winters.";
    let row = knowledge.insert(Content::text("tulips", text).metadata(meta(&json!({"kind": "note"})))).await.unwrap();
    let other = knowledge.insert(Content::text("roses", "Roses and tulips share a bed.")).await.unwrap();
    let id = row.id.unwrap();
    let changed = store.update_metadata(&id, &meta(&json!({"topic": "flowers", "kind": "guide"}))).await.unwrap();
    assert!(changed > 1, "every chunk of the content: {changed}");
    let filter = Filter::from_json(&json!({"topic": "flowers"})).unwrap();
    for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
        let found = knowledge.search_with("tulips", Some(10), Some(&filter), None, Some(search_type)).await.unwrap();
        assert_eq!(found.len() as u64, changed, "{search_type:?}");
        assert!(found.iter().all(|d| d.content_id.as_deref() == Some(id.as_str())), "{search_type:?}");
        assert!(found.iter().all(|d| d.meta_data["kind"] == "guide"), "{search_type:?}: replaced key");
    }
    // The other content is untouched.
    let filter = Filter::Not { condition: Box::new(filter) };
    let found = knowledge.search_with("roses", Some(10), Some(&filter), None, Some(SearchType::Keyword)).await.unwrap();
    assert_eq!(found.iter().map(|d| d.content_id.clone().unwrap()).collect::<Vec<_>>(), [other.id.unwrap()]);
    store.drop_table().await.unwrap();
}

#[tokio::test]
async fn users_are_isolated_and_a_pre_v3_table_needs_the_migration() {
    if !services::pgvector("PgVector isolation") {
        return;
    }
    let store = Arc::new(pg_store("users", 32, VectorIndex::default()).await);
    let knowledge = Knowledge::new("private", store.clone()).embedder(Arc::new(HashEmbedder::new(32)));
    knowledge.create().await.unwrap();
    knowledge.insert(Content::text("ann", "Ann's secret garden has blue tulips").user("ann")).await.unwrap();
    knowledge.insert(Content::text("bob", "Bob's secret garden has red tulips").user("bob")).await.unwrap();
    knowledge.insert(Content::text("shared", "Every garden needs tulips")).await.unwrap();
    for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
        let mut names: Vec<String> = knowledge
            .search_with("garden tulips", Some(10), None, Some("ann"), Some(search_type))
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.name.unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["ann", "shared"], "{search_type:?}");
    }
    store.drop_table().await.unwrap();

    // A table as Agno created it before v3: no user_id column.
    let old = pg_store("legacy", 8, VectorIndex::None).await;
    let url = services::pgvector_url();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let name = old.table().to_owned();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE ai.{name} (id VARCHAR PRIMARY KEY, name VARCHAR, meta_data JSONB DEFAULT '{{}}'::jsonb, \
         filters JSONB DEFAULT '{{}}'::jsonb, content TEXT, embedding vector(8), usage JSONB, \
         created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ, content_hash VARCHAR, content_id VARCHAR)"
    )))
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO ai.{name} (id, name, content, content_id) VALUES ('1', 'old', 'an old keeper chunk', 'c1')"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let knowledge = Knowledge::new("legacy", Arc::new(old.clone()));
    assert_eq!(knowledge.search_with("keeper", None, None, None, Some(SearchType::Keyword)).await.unwrap().len(), 1);
    let err = knowledge.search_with("keeper", None, None, Some("ann"), Some(SearchType::Keyword)).await.unwrap_err();
    assert!(
        matches!(err, KnowledgeError::NeedsMigration { .. }) && err.to_string().contains("agno db migrate-vectors"),
        "{err}"
    );
    assert!(old.migrate_user_id().await.unwrap());
    assert!(!old.migrate_user_id().await.unwrap());
    assert_eq!(
        knowledge.search_with("keeper", None, None, Some("ann"), Some(SearchType::Keyword)).await.unwrap().len(),
        1
    );
    old.drop_table().await.unwrap();
}

fn python_search(python: &str, table: &str, query: &str, user: Option<&str>, search_type: &str) -> Vec<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/pgvector_interop.py");
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script).args([
        "search",
        "--url",
        &services::pgvector_url(),
        "--table",
        table,
        "--query",
        query,
        "--type",
        search_type,
    ]);
    if let Some(u) = user {
        cmd.args(["--user", u]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

#[tokio::test]
async fn python_agno_and_agno_rs_share_a_pgvector_table_both_ways() {
    if !services::pgvector("PgVector interop with Python Agno") {
        return;
    }
    let Some(python) = agno_testkit::agno_python("PgVector interop with Python Agno") else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/pgvector_interop.py");

    // Python writes; agno-rs searches.
    let py_table = table("py");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .args(["write", "--url", &services::pgvector_url(), "--table", &py_table])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs = PgVectorDb::connect(&services::pgvector_url(), "ai", &py_table, 64).await.unwrap();
    let knowledge = Knowledge::new("py", Arc::new(theirs.clone())).embedder(Arc::new(HashEmbedder::new(64)));
    for search_type in [SearchType::Keyword, SearchType::Vector, SearchType::Hybrid] {
        let found = knowledge
            .search_with("lighthouse lamp keepers", Some(10), None, Some("ann"), Some(search_type))
            .await
            .unwrap();
        assert_eq!(found[0].name.as_deref(), Some("keepers"), "{search_type:?}: {found:#?}");
        let bob = knowledge
            .search_with("private journal lighthouse", Some(10), None, Some("bob"), Some(search_type))
            .await
            .unwrap();
        assert!(bob.iter().all(|d| d.name.as_deref() != Some("ann-journal")), "{search_type:?}: bob saw ann's chunk");
        let ann =
            knowledge.search_with("private journal", Some(10), None, Some("ann"), Some(search_type)).await.unwrap();
        assert_eq!(ann[0].name.as_deref(), Some("ann-journal"), "{search_type:?}");
    }
    let filtered = knowledge
        .search_with("ships rocks", Some(10), Some(&Filter::from_json(&json!({"kind": "guide"})).unwrap()), None, None)
        .await
        .unwrap();
    assert_eq!(filtered.iter().map(|d| d.name.clone().unwrap()).collect::<Vec<_>>(), ["pilots"]);
    theirs.drop_table().await.unwrap();

    // agno-rs writes; Python searches.
    let rs_table = table("rs");
    let ours = PgVectorDb::connect(&services::pgvector_url(), "ai", &rs_table, 64).await.unwrap();
    let knowledge = Knowledge::new("rs", Arc::new(ours.clone())).embedder(Arc::new(HashEmbedder::new(64)));
    knowledge.create().await.unwrap();
    knowledge
        .insert(
            Content::text("rs-espresso", "Espresso needs finely ground beans")
                .metadata(meta(&json!({"kind": "coffee"}))),
        )
        .await
        .unwrap();
    knowledge.insert(Content::text("rs-tea", "Green tea steeps at eighty degrees")).await.unwrap();
    knowledge.insert(Content::text("rs-ann", "Ann's espresso diary").user("ann")).await.unwrap();
    for search_type in ["keyword", "vector", "hybrid"] {
        let found = python_search(&python, &rs_table, "espresso beans", None, search_type);
        assert_eq!(found[0]["name"], "rs-espresso", "{search_type}: {found:?}");
        assert_eq!(found[0]["meta_data"]["kind"], "coffee");
        let bob = python_search(&python, &rs_table, "espresso diary", Some("bob"), search_type);
        assert!(bob.iter().all(|d| d["name"] != "rs-ann"), "{search_type}: {bob:?}");
        let ann = python_search(&python, &rs_table, "espresso diary", Some("ann"), search_type);
        assert!(ann.iter().any(|d| d["name"] == "rs-ann"), "{search_type}: {ann:?}");
    }
    ours.drop_table().await.unwrap();
}
