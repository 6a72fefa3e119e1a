//! Ended spans into `agno_traces`/`agno_spans`: the span processor hands each ended span to a
//! bounded buffer without waiting (a full buffer drops it and counts the drop); one writer task
//! gathers spans for a moment ([`GATHER`]), folds them into traces and stores the batch in one
//! write.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use agno_core::{SpanRecord, TraceStore, trace_of_spans};
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{Array, Value as OtelValue};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc, oneshot};

/// Spans one write stores at most.
const BATCH: usize = 4096;

/// How long the writer lets spans gather after the first of a batch before it writes them (a
/// flush ends the wait): a run's spans and those of the runs beside it go in one write, not one
/// each. The writer sleeps meanwhile instead of waking for every span that arrives.
const GATHER: Duration = Duration::from_millis(200);

/// What the store has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TracingStats {
    /// Spans stored.
    pub written: u64,
    /// Spans dropped: the buffer was full, or their batch failed to store.
    pub dropped: u64,
    /// Batches the store refused (their spans are counted in `dropped`).
    pub failed_batches: u64,
    /// Spans handed to the OTLP exporters' queues.
    pub otlp_handed: u64,
    /// Spans the collector took.
    pub otlp_exported: u64,
    /// Spans lost with an export that failed (the collector down, slow or refusing them).
    /// Once flushed, `otlp_handed - otlp_exported - otlp_failed` were dropped by a full queue.
    pub otlp_failed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    written: AtomicU64,
    dropped: AtomicU64,
    failed_batches: AtomicU64,
}

enum Msg {
    Span(Box<SpanRecord>),
    Flush(oneshot::Sender<()>),
}

/// The writer's side a [`super::Tracing`] keeps: to flush and to read the counts.
pub(crate) struct Writer {
    tx: mpsc::Sender<Msg>,
    counters: Arc<Counters>,
    /// Ends the writer's gathering wait early (a flush is queued).
    wake: Arc<Notify>,
}

impl Writer {
    /// Starts the writer task on `runtime`; the processor feeding it.
    pub(crate) fn start(
        store: Arc<dyn TraceStore>,
        buffer: usize,
        runtime: &tokio::runtime::Handle,
    ) -> (Writer, StoreProcessor) {
        let (tx, rx) = mpsc::channel(buffer);
        let counters = Arc::new(Counters::default());
        let wake = Arc::new(Notify::new());
        runtime.spawn(write_loop(store, rx, Arc::clone(&counters), Arc::clone(&wake)));
        (Writer { tx: tx.clone(), counters: Arc::clone(&counters), wake }, StoreProcessor { tx, counters })
    }

    /// Waits until what was handed over before is stored (the flush queues behind it); a full
    /// buffer is waited for here, never in a run.
    pub(crate) async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).await.is_ok() {
            self.wake.notify_one();
            let _ = wait.await;
        }
    }

    pub(crate) fn stats(&self) -> TracingStats {
        TracingStats {
            written: self.counters.written.load(Ordering::Relaxed),
            dropped: self.counters.dropped.load(Ordering::Relaxed),
            failed_batches: self.counters.failed_batches.load(Ordering::Relaxed),
            ..TracingStats::default()
        }
    }
}

/// Takes messages already waiting into `batch`, up to [`BATCH`], without waiting.
fn take_waiting(rx: &mut mpsc::Receiver<Msg>, batch: &mut Vec<Msg>) {
    while batch.len() < BATCH {
        match rx.try_recv() {
            Ok(msg) => batch.push(msg),
            Err(_) => break,
        }
    }
}

async fn write_loop(
    store: Arc<dyn TraceStore>,
    mut rx: mpsc::Receiver<Msg>,
    counters: Arc<Counters>,
    wake: Arc<Notify>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let flush_queued = |batch: &[Msg]| batch.iter().any(|m| matches!(m, Msg::Flush(_)));
    loop {
        // One wake-up for the first message of a batch...
        if rx.recv_many(&mut batch, BATCH).await == 0 {
            return;
        }
        take_waiting(&mut rx, &mut batch);
        // ...and one when the batch has gathered (a backlog, a full batch or a flush: at once).
        let deadline = tokio::time::Instant::now() + GATHER;
        while batch.len() < BATCH && !flush_queued(&batch) {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    take_waiting(&mut rx, &mut batch);
                    break;
                }
                // A flush was queued (or an earlier flush's wake-up was left over: gather on).
                () = wake.notified() => take_waiting(&mut rx, &mut batch),
            }
        }
        let mut spans = Vec::with_capacity(batch.len());
        let mut flushes = Vec::new();
        for msg in batch.drain(..) {
            match msg {
                Msg::Span(span) => spans.push(*span),
                Msg::Flush(done) => flushes.push(done),
            }
        }
        if !spans.is_empty() {
            write_batch(store.as_ref(), &spans, &counters).await;
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Stores `spans` with the traces they fold into (one per trace id, in order of appearance).
async fn write_batch(store: &dyn TraceStore, spans: &[SpanRecord], counters: &Counters) {
    let mut by_trace: Vec<Vec<&SpanRecord>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for span in spans {
        let at = *index.entry(&span.trace_id).or_insert_with(|| {
            by_trace.push(Vec::new());
            by_trace.len() - 1
        });
        by_trace[at].push(span);
    }
    let traces: Vec<_> = by_trace.iter().filter_map(|list| trace_of_spans(list)).collect();
    let n = spans.len() as u64;
    match store.write_spans(&traces, spans).await {
        Ok(()) => {
            counters.written.fetch_add(n, Ordering::Relaxed);
        }
        Err(e) => {
            counters.dropped.fetch_add(n, Ordering::Relaxed);
            let failed = counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            if super::worth_logging(failed, 1) {
                tracing::warn!(error = %e, spans = n, failed_batches = failed + 1, "cannot store trace spans; they are dropped");
            }
        }
    }
}

/// The store's side of the span processor: hands ended spans to the writer without waiting.
#[derive(Debug)]
pub(crate) struct StoreProcessor {
    tx: mpsc::Sender<Msg>,
    counters: Arc<Counters>,
}

impl StoreProcessor {
    /// Hands an ended span to the writer without waiting (a full buffer drops it, counted).
    pub(crate) fn take(&self, span: &SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if let Err(mpsc::error::TrySendError::Full(_) | mpsc::error::TrySendError::Closed(_)) =
            self.tx.try_send(Msg::Span(Box::new(record(span))))
        {
            let dropped = self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            if super::worth_logging(dropped, 1) {
                tracing::warn!(dropped = dropped + 1, "the trace buffer is full; spans are dropped");
            }
        }
    }
}

/// A span time as traces store it.
fn iso(at: SystemTime) -> String {
    agno_core::trace_time(at.into())
}

/// An ended span as Agno stores it.
fn record(span: &SpanData) -> SpanRecord {
    let (status_code, status_message) = match &span.status {
        Status::Unset => ("UNSET", None),
        Status::Ok => ("OK", None),
        Status::Error { description } => ("ERROR", Some(description.to_string()).filter(|d| !d.is_empty())),
    };
    let kind = match span.span_kind {
        SpanKind::Client => "CLIENT",
        SpanKind::Server => "SERVER",
        SpanKind::Producer => "PRODUCER",
        SpanKind::Consumer => "CONSUMER",
        SpanKind::Internal => "INTERNAL",
    };
    let duration = span.end_time.duration_since(span.start_time).unwrap_or_default();
    let attributes: Map<String, Value> =
        span.attributes.iter().map(|kv| (kv.key.as_str().to_owned(), json(&kv.value))).collect();
    SpanRecord {
        span_id: format!("{:016x}", span.span_context.span_id()),
        trace_id: format!("{:032x}", span.span_context.trace_id()),
        parent_span_id: (span.parent_span_id != SpanId::INVALID).then(|| format!("{:016x}", span.parent_span_id)),
        name: span.name.to_string(),
        span_kind: kind.to_owned(),
        status_code: status_code.to_owned(),
        status_message,
        start_time: iso(span.start_time),
        end_time: iso(span.end_time),
        duration_ms: i64::try_from(duration.as_millis()).unwrap_or(i64::MAX),
        attributes,
        created_at: iso(SystemTime::now()),
    }
}

fn json(value: &OtelValue) -> Value {
    match value {
        OtelValue::Bool(b) => Value::Bool(*b),
        OtelValue::I64(i) => Value::from(*i),
        OtelValue::F64(f) => Value::from(*f),
        OtelValue::String(s) => Value::String(s.as_str().to_owned()),
        OtelValue::Array(Array::Bool(v)) => Value::from(v.clone()),
        OtelValue::Array(Array::I64(v)) => Value::from(v.clone()),
        OtelValue::Array(Array::F64(v)) => Value::from(v.clone()),
        OtelValue::Array(Array::String(v)) => Value::from(v.iter().map(|s| s.as_str().to_owned()).collect::<Vec<_>>()),
        other => Value::String(other.to_string()),
    }
}
