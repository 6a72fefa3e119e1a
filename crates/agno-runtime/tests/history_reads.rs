//! A run reads no more of its session than the history it uses: none without history, the
//! newest few with `num_history_runs` or `num_history_messages`, whatever the session's length.
//!
//! Shown on real SQLite and PostgreSQL by making stored runs unreadable (their `run_data`
//! replaced with a JSON value that is not a run): a run that reads one of them fails, so a run
//! that succeeds read none of them. Each test also shows the sentinel works (a run that does read
//! them fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};

use agno_core::{Db, Message, ModelResponse, Role, RunStatus};
use agno_db::{PostgresDb, SqliteDb, TableNames};
use agno_models::FunctionModel;
use agno_runtime::{Agent, AgentBuilder, RunError, RunRequest};

/// Makes the runs of a session below a `run_index` unreadable; returns how many it changed.
type Spoil = Box<dyn Fn(&str, i64) -> futures::future::BoxFuture<'static, u64> + Send + Sync>;

/// A store and a way to run raw SQL on it.
struct Store {
    db: Arc<dyn Db>,
    /// Runs `UPDATE <runs table> SET run_data = '"unreadable"' WHERE session_id = $1 AND
    /// run_index < $2`.
    spoil: Spoil,
    schema: Option<String>,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(schema) = &self.schema {
            let _ = std::process::Command::new("psql")
                .args([
                    "-h",
                    "127.0.0.1",
                    "-U",
                    "postgres",
                    "postgres",
                    "-c",
                    &format!("DROP SCHEMA \"{schema}\" CASCADE"),
                ])
                .output();
        }
    }
}

async fn sqlite() -> Store {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("history-reads-{}.db", agno_core::new_id()));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let spoil = move |session: &str, below: i64| -> futures::future::BoxFuture<'static, u64> {
        let (pool, session) = (pool.clone(), session.to_owned());
        Box::pin(async move {
            sqlx::query("UPDATE agno_runs SET run_data = '\"unreadable\"' WHERE session_id = ? AND run_index < ?")
                .bind(session)
                .bind(below)
                .execute(&pool)
                .await
                .unwrap()
                .rows_affected()
        })
    };
    Store { db: Arc::new(db), spoil: Box::new(spoil), schema: None }
}

async fn postgres() -> Store {
    let server = std::env::var("AGNO_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".to_owned());
    let schema = format!("agno_hist_{}", agno_core::new_id().replace('-', "_"));
    let db = PostgresDb::connect_with(&server, TableNames::default(), &schema)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {server} is needed for this test: {e}"));
    db.create_tables().await.unwrap();
    let pool = sqlx::PgPool::connect(&server).await.unwrap();
    let table = format!("\"{schema}\".agno_runs");
    let spoil = move |session: &str, below: i64| -> futures::future::BoxFuture<'static, u64> {
        let (pool, session, table) = (pool.clone(), session.to_owned(), table.clone());
        Box::pin(async move {
            let sql = format!(
                "UPDATE {table} SET run_data = '\"unreadable\"'::jsonb WHERE session_id = $1 AND run_index < $2"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(session)
                .bind(below)
                .execute(&pool)
                .await
                .unwrap()
                .rows_affected()
        })
    };
    Store { db: Arc::new(db), spoil: Box::new(spoil), schema: Some(schema) }
}

/// An agent echoing its input, recording the messages each model call received.
fn agent(
    db: &Arc<dyn Db>,
    seen: &Arc<Mutex<Vec<Vec<Message>>>>,
    configure: impl FnOnce(AgentBuilder) -> AgentBuilder,
) -> Agent {
    let seen = seen.clone();
    let model = Arc::new(FunctionModel::new(move |req| {
        seen.lock().unwrap().push(req.messages.clone());
        let input =
            req.messages.iter().rev().find(|m| m.role == Role::User).and_then(|m| m.content_text()).unwrap_or_default();
        Ok(ModelResponse { content: format!("echo {input}"), ..Default::default() })
    }));
    configure(Agent::builder(model).db(Arc::clone(db))).build().unwrap()
}

async fn runs_read_only_what_their_history_uses(store: Store) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let session = format!("long-{}", agno_core::new_id());
    let plain = agent(&store.db, &seen, |b| b);
    for i in 0..30 {
        let run = plain.arun(RunRequest::new(format!("m{i}")).session_id(&session)).await.unwrap();
        assert_eq!(run.status, RunStatus::Completed);
    }
    // Every stored run unreadable: a run without history still works.
    assert_eq!((store.spoil)(&session, i64::MAX).await, 30);
    let run = plain.arun(RunRequest::new("no history").session_id(&session)).await.unwrap();
    assert_eq!(run.content_text(), "echo no history");
    assert_eq!(seen.lock().unwrap().last().unwrap().len(), 1, "only the user message was sent");
    // The same session with history reads runs and fails on them: the sentinel works.
    let mut with_history = RunRequest::new("history").session_id(&session);
    with_history.add_history_to_context = Some(true);
    let err = plain.arun(with_history).await.unwrap_err();
    assert!(matches!(err, RunError::Storage(_)), "{err:?}");

    // A fresh long session whose runs are unreadable except the newest ten: bounded history
    // (by runs or by messages) reads only newest runs.
    let session = format!("bounded-{}", agno_core::new_id());
    for i in 0..40 {
        plain.arun(RunRequest::new(format!("b{i}")).session_id(&session)).await.unwrap();
    }
    let spoiled = (store.spoil)(&session, 30).await;
    assert_eq!(spoiled, 30);
    let by_runs = agent(&store.db, &seen, |b| b.add_history_to_context(true).num_history_runs(2));
    let run = by_runs.arun(RunRequest::new("by runs").session_id(&session)).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    let sent: Vec<String> =
        seen.lock().unwrap().last().unwrap().iter().filter_map(|m| m.content_text().map(str::to_owned)).collect();
    assert_eq!(sent, ["b38", "echo b38", "b39", "echo b39", "by runs"]);
    let by_messages = agent(&store.db, &seen, |b| b.add_history_to_context(true).num_history_messages(3));
    let run = by_messages.arun(RunRequest::new("by messages").session_id(&session)).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    let sent: Vec<String> =
        seen.lock().unwrap().last().unwrap().iter().filter_map(|m| m.content_text().map(str::to_owned)).collect();
    assert_eq!(sent, ["echo b39", "by runs", "echo by runs", "by messages"]);
    // Every run unreadable: bounded history fails too (it does read the newest runs).
    (store.spoil)(&session, i64::MAX).await;
    assert!(matches!(by_runs.arun(RunRequest::new("x").session_id(&session)).await, Err(RunError::Storage(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_runs_read_only_what_their_history_uses() {
    runs_read_only_what_their_history_uses(sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_runs_read_only_what_their_history_uses() {
    if !agno_testkit::services::postgres("on_postgres_runs_read_only_what_their_history_uses") {
        return;
    }
    runs_read_only_what_their_history_uses(postgres().await).await;
}
