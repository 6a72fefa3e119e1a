//! `agno knowledge add|search|list` and `agno db migrate-vectors` as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{agno, scratch_dir};

fn run(args: &[&str]) -> (bool, String, String) {
    let out = agno().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn files_are_added_searched_and_listed_per_user_and_failures_are_named() {
    let dir = scratch_dir("kcli");
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/knowledge/corpus");
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"sqlite://{}\"\n[[knowledge]]\nid = \"docs\"\nembedder = \"hash:512\"\nchunker = \"MarkdownChunker\"\nchunk_size = 500\n",
            dir.join("agno.db").display()
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let (ok, out, err) = run(&["knowledge", "add", "--config", cfg, corpus.to_str().unwrap()]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("30 added, 0 failed, into knowledge base docs"), "{out}");

    // A private file for ann, and a file that cannot be read: named, the rest still added.
    std::fs::write(dir.join("ann.md"), "# Ann\n\nAnn's espresso machine is red.").unwrap();
    std::fs::write(dir.join("bad.exe"), "MZ").unwrap();
    let (ok, out, err) = run(&[
        "knowledge",
        "add",
        "--config",
        cfg,
        "--user",
        "ann",
        dir.join("ann.md").to_str().unwrap(),
        dir.join("bad.exe").to_str().unwrap(),
    ]);
    assert!(!ok, "a failed file fails the command");
    assert!(out.contains("1 added, 1 failed"), "{out}");
    assert!(err.contains("bad.exe") && err.contains("unsupported file type .exe"), "{err}");

    let (ok, out, err) = run(&["knowledge", "search", "--config", cfg, "--type", "hybrid", "espresso", "crema"]);
    assert!(ok, "{err}");
    assert!(out.lines().next().unwrap().contains("09-coffee.txt"), "{out}");
    let (_, out, _) =
        run(&["knowledge", "search", "--config", cfg, "--user", "ann", "--type", "keyword", "espresso", "machine"]);
    assert!(out.lines().next().unwrap().contains("ann.md"), "{out}");
    let (_, out, _) =
        run(&["knowledge", "search", "--config", cfg, "--user", "bob", "--type", "keyword", "espresso", "machine"]);
    assert!(!out.contains("ann.md"), "bob never sees ann's file: {out}");

    let (ok, out, _) = run(&["knowledge", "list", "--config", cfg, "--user", "bob", "--limit", "100"]);
    assert!(ok);
    assert!(out.contains("30 of 30 contents"), "{out}");
    let (_, out, _) = run(&["knowledge", "list", "--config", cfg, "--user", "ann", "--limit", "100"]);
    assert!(out.contains("of 32 contents") && out.contains("failed"), "{out}");

    let (ok, out, _) = run(&["knowledge", "optimize", "--config", cfg]);
    assert!(ok && out.contains("optimized knowledge base docs"), "{out}");
    // Bad arguments say what to do.
    let (ok, _, err) = run(&["knowledge", "search", "--config", cfg, "--type", "semantic", "x"]);
    assert!(!ok && err.contains("use vector, keyword or hybrid"), "{err}");
    let (ok, _, err) = run(&["knowledge", "list", "--config", cfg, "--knowledge", "nope"]);
    assert!(!ok && err.contains("known: docs"), "{err}");
}

#[test]
fn migrate_vectors_adds_user_id_to_an_old_table_and_is_idempotent() {
    let dir = scratch_dir("kmig");
    let url = format!("sqlite://{}", dir.join("old.db").display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(&format!("{url}?mode=rwc")).await.unwrap();
        sqlx::query(
            "CREATE TABLE v (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT, meta_data TEXT NOT NULL DEFAULT '{}', \
             content TEXT NOT NULL, embedding BLOB, created_at INTEGER, updated_at INTEGER, content_hash TEXT, content_id TEXT)",
        )
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query("INSERT INTO v (id, content) VALUES ('a', 'old chunk')").execute(&pool).await.unwrap();
        pool.close().await;
    });
    let (ok, out, err) = run(&["db", "migrate-vectors", "--db", &url, "--table", "v"]);
    assert!(ok, "{err}");
    assert!(out.contains("v: added user_id (its 1 chunks stay shared)"), "{out}");
    let (ok, out, _) = run(&["db", "migrate-vectors", "--db", &url, "--table", "v"]);
    assert!(ok && out.contains("already has user_id"), "{out}");
    // The old chunk is indexed and shared: a user's keyword search finds it.
    let config = dir.join("agentos.toml");
    std::fs::write(&config, format!("[db]\nurl = \"{url}\"\n[[knowledge]]\nid = \"old\"\ntable = \"v\"\n")).unwrap();
    let (ok, out, err) = run(&["knowledge", "search", "--config", config.to_str().unwrap(), "--user", "ann", "chunk"]);
    assert!(ok && out.contains("old chunk"), "{out}\n{err}");
    let (ok, _, err) = run(&["db", "migrate-vectors", "--db", "mysql://x/y", "--table", "v"]);
    assert!(!ok && err.contains("is neither"), "{err}");
}

#[test]
fn migrate_vectors_migrates_a_pgvector_table_python_agno_made_before_v3() {
    if !agno_testkit::services::pgvector("agno db migrate-vectors on PgVector") {
        return;
    }
    let url = agno_testkit::services::pgvector_url();
    let table = format!("old_{}", &agno::core::new_id().replace('-', "")[..12]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        sqlx::query("CREATE EXTENSION IF NOT EXISTS vector").execute(&pool).await.unwrap();
        sqlx::query("CREATE SCHEMA IF NOT EXISTS ai").execute(&pool).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE TABLE ai.{table} (id VARCHAR PRIMARY KEY, name VARCHAR, meta_data JSONB DEFAULT '{{}}'::jsonb, \
             filters JSONB, content TEXT, embedding vector(4), usage JSONB, created_at TIMESTAMPTZ DEFAULT now(), \
             updated_at TIMESTAMPTZ, content_hash VARCHAR, content_id VARCHAR)"
        )))
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO ai.{table} (id, content) VALUES ('a', 'kept')")))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    });
    let (ok, out, err) = run(&["db", "migrate-vectors", "--db", &url, "--table", &table]);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("{table}: added user_id (its 1 chunks stay shared)")), "{out}");
    let (ok, out, _) = run(&["db", "migrate-vectors", "--db", &format!("{url}?schema=ai"), "--table", &table]);
    assert!(ok && out.contains("already has user_id"), "{out}");
    rt.block_on(async {
        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE ai.{table}"))).execute(&pool).await.unwrap();
    });
}
