//! A run reads no more of its session than the history it uses: none without history, the
//! newest few with `num_history_runs` or `num_history_messages`, whatever the session's length.
//!
//! Shown on real SQLite and PostgreSQL by making stored runs unreadable (their `status` replaced
//! with one no Agno version writes): reading one logs a warning naming it (and leaves it out), so
//! a run after which no spoiled run was named read none of them. Each test also shows the
//! sentinel works (a run that does read them names them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex, OnceLock};

use agno_core::{Db, Message, ModelResponse, Role, RunStatus};
use agno_db::{PostgresDb, SqliteDb, TableNames};
use agno_models::FunctionModel;
use agno_runtime::{Agent, AgentBuilder, RunRequest};

/// Run ids named by "a stored run cannot be read" warnings, in this process.
fn warned_runs() -> &'static Mutex<Vec<String>> {
    static WARNED: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(SkipWarnings));
    });
    WARNED.get_or_init(|| Mutex::new(Vec::new()))
}

/// Records the `run_id` of every warning about an unreadable stored run.
struct SkipWarnings;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SkipWarnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct RunId(Option<String>, bool);
        impl tracing::field::Visit for RunId {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "run_id" {
                    self.0 = Some(value.to_owned());
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" && format!("{value:?}").contains("cannot be read") {
                    self.1 = true;
                }
            }
        }
        let mut seen = RunId(None, false);
        event.record(&mut seen);
        if let (Some(run_id), true) = (seen.0, seen.1) {
            warned_runs().lock().unwrap().push(run_id);
        }
    }
}

/// How many of `runs` were named as unreadable since the last call (and forgets them).
fn read_spoiled(runs: &[String]) -> usize {
    let mut warned = warned_runs().lock().unwrap();
    let hits = warned.iter().filter(|id| runs.contains(id)).count();
    warned.retain(|id| !runs.contains(id));
    hits
}

/// Makes the runs of a session below a `run_index` unreadable; returns how many it changed.
type Spoil = Box<dyn Fn(&str, i64) -> futures::future::BoxFuture<'static, u64> + Send + Sync>;

/// A store and a way to run raw SQL on it.
struct Store {
    db: Arc<dyn Db>,
    /// Sets the `status` in `run_data` to `SPOILED` for the session's runs below a `run_index`.
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
            sqlx::query(
                "UPDATE agno_runs SET run_data = json_set(run_data, '$.status', 'SPOILED') \
                 WHERE session_id = ? AND run_index < ?",
            )
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
                "UPDATE {table} SET run_data = jsonb_set(run_data, '{{status}}', '\"SPOILED\"') \
                 WHERE session_id = $1 AND run_index < $2"
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
    warned_runs();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let session = format!("long-{}", agno_core::new_id());
    let plain = agent(&store.db, &seen, |b| b);
    let mut ids = Vec::new();
    for i in 0..30 {
        let run = plain.arun(RunRequest::new(format!("m{i}")).session_id(&session)).await.unwrap();
        assert_eq!(run.status, RunStatus::Completed);
        ids.push(run.id().to_owned());
    }
    // Every stored run unreadable: a run without history reads none of them.
    assert_eq!((store.spoil)(&session, i64::MAX).await, 30);
    let run = plain.arun(RunRequest::new("no history").session_id(&session)).await.unwrap();
    assert_eq!(run.content_text(), "echo no history");
    assert_eq!(seen.lock().unwrap().last().unwrap().len(), 1, "only the user message was sent");
    assert_eq!(read_spoiled(&ids), 0, "a run without history read stored runs");
    // The same session with history reads its runs, leaving the unreadable ones out: the
    // sentinel works, and the run still answers.
    let mut with_history = RunRequest::new("history").session_id(&session);
    with_history.add_history_to_context = Some(true);
    let run = plain.arun(with_history).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert!(read_spoiled(&ids) > 0, "the sentinel did not see a history read");

    // A fresh long session whose runs are unreadable except the newest ten: bounded history
    // (by runs or by messages) reads only newest runs.
    let session = format!("bounded-{}", agno_core::new_id());
    let mut ids = Vec::new();
    for i in 0..40 {
        let run = plain.arun(RunRequest::new(format!("b{i}")).session_id(&session)).await.unwrap();
        ids.push(run.id().to_owned());
    }
    let spoiled = (store.spoil)(&session, 30).await;
    assert_eq!(spoiled, 30);
    let by_runs = agent(&store.db, &seen, |b| b.add_history_to_context(true).num_history_runs(2));
    let run = by_runs.arun(RunRequest::new("by runs").session_id(&session)).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    let mut newest = vec![run.id().to_owned()];
    let sent: Vec<String> =
        seen.lock().unwrap().last().unwrap().iter().filter_map(|m| m.content_text().map(str::to_owned)).collect();
    assert_eq!(sent, ["b38", "echo b38", "b39", "echo b39", "by runs"]);
    let by_messages = agent(&store.db, &seen, |b| b.add_history_to_context(true).num_history_messages(3));
    let run = by_messages.arun(RunRequest::new("by messages").session_id(&session)).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    newest.push(run.id().to_owned());
    let sent: Vec<String> =
        seen.lock().unwrap().last().unwrap().iter().filter_map(|m| m.content_text().map(str::to_owned)).collect();
    assert_eq!(sent, ["echo b39", "by runs", "echo by runs", "by messages"]);
    assert_eq!(read_spoiled(&ids), 0, "bounded history read old runs");
    // Every run unreadable: bounded history does read the newest runs (the sentinel sees it).
    (store.spoil)(&session, i64::MAX).await;
    by_runs.arun(RunRequest::new("x").session_id(&session)).await.unwrap();
    assert_eq!(read_spoiled(&newest), 2, "the sentinel did not see the bounded history read the newest two runs");
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
