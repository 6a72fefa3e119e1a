//! PostgreSQL going away in the middle of a run: the run ends with an error carrying the cause,
//! the event stream ends with `RunError`, and the stored session is neither reset nor emptied.
//!
//! The database is reached through a TCP proxy that the test cuts, so the shared server keeps
//! serving every other test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use agno_core::{Db, EventData, ModelResponse, Role, ToolCall, ToolError};
use agno_db::{PostgresDb, TableNames};
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunError, RunRequest};
use agno_tools::Function;
use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const SERVER: &str = "127.0.0.1:5432";

/// Forwards connections to the server until `stop` fires, then drops all of them.
async fn start_proxy(stop: CancellationToken) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = stop.cancelled() => return,
            };
            let Ok((mut client, _)) = accepted else { return };
            let stop = stop.clone();
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(SERVER).await else { return };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
    });
    port
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lost_mid_run_ends_the_run_in_error_and_keeps_the_session() {
    if !agno_testkit::services::postgres("postgres_lost_mid_run_ends_the_run_in_error_and_keeps_the_session") {
        return;
    }
    let schema = format!("agno_fault_{}", agno_core::new_id().replace('-', "_"));
    let stop = CancellationToken::new();
    let port = start_proxy(stop.clone()).await;
    let via_proxy = format!("postgresql://postgres@127.0.0.1:{port}/postgres");
    let db = PostgresDb::connect_with(&via_proxy, TableNames::default(), &schema).await.unwrap();
    db.create_tables().await.unwrap();
    let db: Arc<dyn Db> = Arc::new(db);

    let started = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Notify::new());
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    let wait = Function::with_context("wait_here", "Waits.", move |_: Nothing, ctx| {
        let (s, r) = (Arc::clone(&s), Arc::clone(&r));
        async move {
            ctx.session_state.lock().map_err(|_| ToolError::execution("lock"))?.insert("second".into(), true.into());
            s.notify_one();
            r.notified().await;
            Ok("done waiting")
        }
    });
    let model = Arc::new(FunctionModel::new(|req| {
        let last = req.messages.last().unwrap();
        Ok(if last.role == Role::User && last.content_text() == Some("wait") {
            ModelResponse { tool_calls: vec![ToolCall::new("c1", "wait_here", "{}")], ..Default::default() }
        } else {
            ModelResponse { content: "ok".into(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model).function(wait).db(Arc::clone(&db)).build().unwrap();
    let first = agent
        .arun(
            RunRequest::new("hello")
                .session_id("s1")
                .session_state(serde_json::json!({"first": true}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();

    // The second run is inside its tool call when the database goes away.
    let mut stream = agent.run_stream(RunRequest::new("wait").session_id("s1"));
    let collector = tokio::spawn(async move {
        let mut last = None;
        while let Some(e) = stream.next().await {
            last = Some(e);
        }
        (last, stream.output().await)
    });
    tokio::time::timeout(Duration::from_secs(20), started.notified()).await.unwrap();
    stop.cancel();
    release.notify_one();
    let (last, result) = tokio::time::timeout(Duration::from_secs(60), collector).await.unwrap().unwrap();
    let err = result.expect_err("the run cannot be stored");
    assert!(matches!(err, RunError::Storage(_)), "{err}");
    match last.map(|e| e.data) {
        Some(EventData::RunError { content, error_id, .. }) => {
            assert_eq!(error_id.as_deref(), Some("storage_error"));
            assert!(content.unwrap().as_str().unwrap().contains("storing the run failed"));
        }
        other => panic!("the stream must end with RunError, got {other:?}"),
    }

    // Straight to the server: the session is whole, with its first run and state.
    let direct =
        PostgresDb::connect_with(&format!("postgresql://postgres@{SERVER}/postgres"), TableNames::default(), &schema)
            .await
            .unwrap();
    let session = agno_core::SessionStore::get_session(&direct, "s1", None, None).await.unwrap().expect("session kept");
    // The second run was stored as RUNNING when it started; its final write is what failed.
    assert_eq!(session.runs().len(), 2);
    assert_eq!(session.runs()[0].id(), first.id());
    assert_eq!(session.runs()[0].status, agno_core::RunStatus::Completed);
    assert_eq!(session.runs()[1].status, agno_core::RunStatus::Running);
    assert_eq!(session.session_state().unwrap()["first"], true);
    sqlx_drop_schema(&direct, &schema).await;
}

async fn sqlx_drop_schema(db: &PostgresDb, schema: &str) {
    db.close().await;
    let out = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "postgres", "-c", &format!("DROP SCHEMA \"{schema}\" CASCADE")])
        .output();
    if let Ok(out) = out {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
