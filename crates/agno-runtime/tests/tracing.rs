//! Tracing never holds a run back: a store that hangs or fails costs spans (counted), never a
//! run; a text attribute over the size limit is cut, never refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agno_core::{
    DbError, DbErrorKind, DbResult, SpanRecord, TraceQuery, TraceRecord, TraceSessionStats, TraceStatsQuery, TraceStore,
};
use agno_db::InMemoryDb;
use agno_runtime::{Agent, Tracing};
use tokio::sync::Semaphore;

/// A store whose writes wait until it is opened (`hang`) or fail (`fail`), else go to memory.
#[derive(Debug)]
struct Unreliable {
    /// Told when a write starts.
    entered: tokio::sync::Notify,
    gate: Semaphore,
    fail: AtomicBool,
    inner: InMemoryDb,
}

#[async_trait::async_trait]
impl TraceStore for Unreliable {
    async fn write_spans(&self, traces: &[TraceRecord], spans: &[SpanRecord]) -> DbResult<()> {
        self.entered.notify_one();
        let _open = self.gate.acquire().await.expect("the gate is never closed");
        if self.fail.load(Ordering::SeqCst) {
            return Err(DbError::new(DbErrorKind::Unavailable, "the database is down"));
        }
        self.inner.write_spans(traces, spans).await
    }
    async fn get_trace(&self, trace_id: Option<&str>, run_id: Option<&str>) -> DbResult<Option<TraceRecord>> {
        self.inner.get_trace(trace_id, run_id).await
    }
    async fn get_traces(&self, query: &TraceQuery) -> DbResult<(Vec<TraceRecord>, u64)> {
        self.inner.get_traces(query).await
    }
    async fn get_spans(&self, trace_id: &str) -> DbResult<Vec<SpanRecord>> {
        self.inner.get_spans(trace_id).await
    }
    async fn get_trace_session_stats(&self, query: &TraceStatsQuery) -> DbResult<(Vec<TraceSessionStats>, u64)> {
        self.inner.get_trace_session_stats(query).await
    }
    async fn delete_traces_created_before(&self, before: &str) -> DbResult<u64> {
        self.inner.delete_traces_created_before(before).await
    }
}

fn unreliable(open: bool) -> Arc<Unreliable> {
    Arc::new(Unreliable {
        entered: tokio::sync::Notify::new(),
        gate: Semaphore::new(if open { Semaphore::MAX_PERMITS } else { 0 }),
        fail: AtomicBool::new(false),
        inner: InMemoryDb::new(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_store_drops_spans_and_counts_them_but_never_holds_a_run_back() {
    let store = unreliable(false);
    let tracing = Tracing::builder().store(Arc::clone(&store) as Arc<dyn TraceStore>).buffer(4).build().unwrap();
    let agent = Agent::builder("test").tracing(tracing.clone()).build().unwrap();
    let complete = |i: usize| {
        let agent = agent.clone();
        async move {
            // The deadline only guards the test against a hang.
            let run = tokio::time::timeout(Duration::from_secs(30), agent.arun(format!("question {i}"))).await;
            let out = run.expect("a run is never held back by its spans").unwrap();
            assert_eq!(out.status, agno_core::RunStatus::Completed);
        }
    };
    // The first run's spans: the writer takes them and hangs in the store.
    complete(0).await;
    tokio::time::timeout(Duration::from_secs(30), store.entered.notified()).await.expect("the writer writes");
    // 19 more runs, 38 spans, while it hangs: 4 wait in the buffer, the rest are dropped.
    for i in 1..20 {
        complete(i).await;
    }
    let stats = tracing.stats();
    assert_eq!((stats.written, stats.dropped), (0, 34), "{stats:?}");

    // Once the store answers, what was kept is written; every span is either written or counted.
    store.gate.add_permits(Semaphore::MAX_PERMITS / 2);
    tracing.flush().await;
    let stats = tracing.stats();
    assert_eq!(stats.written + stats.dropped, 40, "{stats:?}");
    let (traces, _) = store.get_traces(&TraceQuery::default()).await.unwrap();
    assert!(!traces.is_empty(), "the spans kept in the buffer reached the store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_store_costs_its_batches_not_the_runs() {
    let store = unreliable(true);
    store.fail.store(true, Ordering::SeqCst);
    let tracing = Tracing::builder().store(Arc::clone(&store) as Arc<dyn TraceStore>).build().unwrap();
    let agent = Agent::builder("test").tracing(tracing.clone()).build().unwrap();
    for i in 0..3 {
        let out = agent.arun(format!("question {i}")).await.unwrap();
        assert_eq!(out.status, agno_core::RunStatus::Completed);
        tracing.flush().await;
    }
    let stats = tracing.stats();
    assert_eq!((stats.written, stats.dropped, stats.failed_batches), (0, 6, 3), "{stats:?}");

    store.fail.store(false, Ordering::SeqCst);
    let out = agent.arun("after the outage").await.unwrap();
    tracing.flush().await;
    assert_eq!(tracing.stats().written, 2, "the store takes spans again");
    let trace = store.get_trace(None, Some(out.id())).await.unwrap().expect("the run's trace");
    assert_eq!((trace.name.as_str(), trace.total_spans), ("Agent.run", 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_attribute_over_the_limit_is_cut_never_refused() {
    let store = unreliable(true);
    let tracing =
        Tracing::builder().store(Arc::clone(&store) as Arc<dyn TraceStore>).max_attribute_len(100).build().unwrap();
    let agent = Agent::builder("test").tracing(tracing.clone()).build().unwrap();
    let long = "é".repeat(1000);
    let out = agent.arun(long.as_str()).await.unwrap();
    tracing.flush().await;
    let trace = store.get_trace(None, Some(out.id())).await.unwrap().expect("the run is traced");
    let spans = store.get_spans(&trace.trace_id).await.unwrap();
    let root = spans.iter().find(|s| s.parent_span_id.is_none()).unwrap();
    let input = root.attribute("input.value").unwrap();
    assert!(input.starts_with(&"é".repeat(50)), "cut on a character boundary: {input}");
    assert!(input.ends_with("... [1900 more bytes]"), "{input}");
    // The model call's messages are serialised no further than the limit.
    let llm = spans.iter().find(|s| s.attribute("openinference.span.kind") == Some("LLM")).unwrap();
    let messages = llm.attribute("input.value").unwrap();
    assert!(messages.len() <= 100 && messages.ends_with("... [cut]"), "{messages}");
    assert!(messages.starts_with("{\"messages\":["), "{messages}");
}

/// A collector that is down costs the spans sent to it (counted as failed), never a run: over
/// HTTP and over gRPC, to a port nothing listens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_costs_its_spans_counted_never_a_run() {
    for protocol in [agno_runtime::trace::OtlpProtocol::HttpProtobuf, agno_runtime::trace::OtlpProtocol::Grpc] {
        // A port that was free a moment ago: connections to it are refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let endpoint = format!("http://127.0.0.1:{port}");
        let tracing = Tracing::builder().otlp(Some(&endpoint), Some(protocol)).unwrap().build().unwrap();
        let agent = Agent::builder("test").tracing(tracing.clone()).build().unwrap();
        for i in 0..3 {
            let run = tokio::time::timeout(Duration::from_secs(30), agent.arun(format!("question {i}"))).await;
            assert_eq!(run.expect("never held back").unwrap().status, agno_core::RunStatus::Completed);
        }
        tracing.flush().await;
        let stats = tracing.stats();
        assert_eq!(
            (stats.otlp_handed, stats.otlp_exported, stats.otlp_failed),
            (6, 0, 6),
            "{protocol:?}: each run's 2 spans handed to the exporter and lost with its exports: {stats:?}"
        );
        tracing.shutdown();
    }
}

/// `sample_ratio(0.0)` traces nothing (runs unchanged); a ratio of 1 traces every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_ratio_decides_which_runs_are_traced() {
    for (ratio, spans) in [(0.0, 0), (1.0, 8)] {
        let store = unreliable(true);
        let tracing =
            Tracing::builder().store(Arc::clone(&store) as Arc<dyn TraceStore>).sample_ratio(ratio).build().unwrap();
        let agent = Agent::builder("test").tracing(tracing.clone()).build().unwrap();
        for i in 0..4 {
            let out = agent.arun(format!("question {i}")).await.unwrap();
            assert_eq!(out.status, agno_core::RunStatus::Completed);
        }
        tracing.flush().await;
        assert_eq!(tracing.stats().written, spans, "ratio {ratio}: {:?}", tracing.stats());
    }
}

/// One OTLP/HTTP request a [`collector`] took: its content type and body.
type Received = (String, Vec<u8>);

/// A minimal OTLP/HTTP collector on a free port: answers every request 200 and hands over what
/// it received.
async fn collector() -> (String, tokio::sync::mpsc::UnboundedReceiver<Received>) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut conn = BufReader::new(socket);
                loop {
                    let (mut length, mut kind) = (0usize, String::new());
                    let mut line = String::new();
                    // The request line, then headers up to the blank line.
                    if conn.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if conn.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let header = line.trim_end().to_ascii_lowercase();
                        if header.is_empty() {
                            break;
                        }
                        if let Some(v) = header.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if let Some(v) = header.strip_prefix("content-type:") {
                            kind = v.trim().to_owned();
                        }
                    }
                    let mut body = vec![0; length];
                    if conn.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let _ = tx.send((kind, body));
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if conn.get_mut().write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, rx)
}

/// `http/json`: the spans reach the collector as OTLP JSON (`resourceSpans`), the run's name and
/// kind in them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_as_otlp_json_when_asked() {
    let (url, mut received) = collector().await;
    let tracing = Tracing::builder()
        .otlp(Some(&url), Some(agno_runtime::trace::OtlpProtocol::HttpJson))
        .unwrap()
        .build()
        .unwrap();
    let agent = Agent::builder("test").tracing(tracing.clone()).build().unwrap();
    assert_eq!(agent.arun("hello").await.unwrap().status, agno_core::RunStatus::Completed);
    tracing.flush().await;
    let (kind, body) = tokio::time::timeout(Duration::from_secs(30), received.recv()).await.unwrap().unwrap();
    assert_eq!(kind, "application/json");
    let export: serde_json::Value = serde_json::from_slice(&body).expect("a JSON body");
    let spans = &export["resourceSpans"][0]["scopeSpans"][0]["spans"];
    let names: Vec<&str> = spans.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Agent.run") && names.contains(&"Test.invoke"), "{names:?}");
    let stats = tracing.stats();
    assert_eq!((stats.otlp_handed, stats.otlp_exported, stats.otlp_failed), (2, 2, 0), "{stats:?}");
    tracing.shutdown();
}
