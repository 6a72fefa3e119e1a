//! Traces and spans of the document stores (`agno_traces.json`, `agno_spans.json`: documents
//! shaped as Python Agno's `JsonDb` writes them, without the span counts, which are counted on
//! read). The listing, paging and stats rules here serve Redis too.

use std::collections::HashMap;

use agno_core::{
    DbResult, SpanRecord, TraceQuery, TraceRecord, TraceSessionStats, TraceStatsQuery, TraceStore, fold_trace,
    session_stats,
};
use async_trait::async_trait;
use serde_json::Value;

use super::{DocBackend, DocDb};

/// The document of a trace: its record without the span counts.
pub(crate) fn trace_doc(trace: &TraceRecord) -> DbResult<Value> {
    let mut doc = crate::codec::to_doc(trace)?;
    doc.remove("total_spans");
    doc.remove("error_count");
    Ok(Value::Object(doc))
}

/// A trace from its document; `None` for one that is not a trace.
pub(crate) fn trace_from_doc(doc: &Value) -> Option<TraceRecord> {
    serde_json::from_value(doc.clone()).ok()
}

/// A span from its document; `None` for one that is not a span.
pub(crate) fn span_from_doc(doc: &Value) -> Option<SpanRecord> {
    serde_json::from_value(doc.clone()).ok()
}

/// Sets each trace's span counts from `spans` (of any traces).
pub(crate) fn count_spans<'a>(traces: &mut [TraceRecord], spans: impl IntoIterator<Item = &'a SpanRecord>) {
    let mut counts: HashMap<&str, (u64, u64)> = HashMap::new();
    for s in spans {
        let c = counts.entry(s.trace_id.as_str()).or_default();
        c.0 += 1;
        c.1 += u64::from(s.failed());
    }
    for t in traces {
        (t.total_spans, t.error_count) = counts.get(t.trace_id.as_str()).copied().unwrap_or_default();
    }
}

/// The page of `traces` the listing `q` asks for (newest start first, then by id), with the
/// number of matching traces.
pub(crate) fn page_traces(traces: impl IntoIterator<Item = TraceRecord>, q: &TraceQuery) -> (Vec<TraceRecord>, u64) {
    let list = traces.into_iter().filter(|t| q.matches(t)).collect();
    let by_start =
        |a: &TraceRecord, b: &TraceRecord| a.start_time.cmp(&b.start_time).then_with(|| a.trace_id.cmp(&b.trace_id));
    super::sort_and_page(list, by_start, agno_core::SortOrder::Desc, q.limit, q.page)
}

/// The page of per-session stats of `traces` the query asks for (its times bound `created_at`),
/// with the number of sessions.
pub(crate) fn page_session_stats(traces: &[TraceRecord], q: &TraceStatsQuery) -> (Vec<TraceSessionStats>, u64) {
    let by_creation = TraceQuery { start_time: None, end_time: None, ..q.clone() };
    let kept = traces.iter().filter(|t| {
        by_creation.matches(t)
            && q.start_time.as_ref().is_none_or(|s| t.created_at.as_str() >= s.as_str())
            && q.end_time.as_ref().is_none_or(|e| t.created_at.as_str() <= e.as_str())
    });
    let list = session_stats(kept);
    let total = list.len() as u64;
    let (offset, limit) = crate::memories::page_bounds(q.limit, q.page);
    (list.into_iter().skip(offset).take(limit).collect(), total)
}

/// The latest trace of `run_id` (by start) among `traces`.
pub(crate) fn latest_of_run(traces: impl IntoIterator<Item = TraceRecord>, run_id: &str) -> Option<TraceRecord> {
    traces.into_iter().filter(|t| t.run_id.as_deref() == Some(run_id)).max_by(|a, b| a.start_time.cmp(&b.start_time))
}

#[async_trait]
impl<B: DocBackend> TraceStore for DocDb<B> {
    async fn write_spans(&self, traces: &[TraceRecord], spans: &[SpanRecord]) -> DbResult<()> {
        if traces.is_empty() && spans.is_empty() {
            return Ok(());
        }
        let (traces, spans) = (traces.to_vec(), spans.to_vec());
        self.write(move |files| {
            let t = files.tables().clone();
            let mut stored = files.read(&t.traces)?.into_owned();
            for new in &traces {
                let at = stored.iter().position(|d| d.get("trace_id").and_then(Value::as_str) == Some(&new.trace_id));
                match at.and_then(|i| trace_from_doc(&stored[i]).map(|old| (i, old))) {
                    Some((i, old)) => stored[i] = trace_doc(&fold_trace(&old, new))?,
                    None => stored.push(trace_doc(new)?),
                }
            }
            let mut span_docs = files.read(&t.spans)?.into_owned();
            let known: std::collections::HashSet<String> =
                span_docs.iter().filter_map(|d| d.get("span_id").and_then(Value::as_str).map(str::to_owned)).collect();
            for span in spans.iter().filter(|s| !known.contains(&s.span_id)) {
                span_docs.push(Value::Object(crate::codec::to_doc(span)?));
            }
            files.write(&t.traces, stored)?;
            files.write(&t.spans, span_docs)
        })
        .await
    }

    async fn get_trace(&self, trace_id: Option<&str>, run_id: Option<&str>) -> DbResult<Option<TraceRecord>> {
        let (trace_id, run_id) = (trace_id.map(str::to_owned), run_id.map(str::to_owned));
        self.read(move |files| {
            let t = files.tables().clone();
            let traces = files.read(&t.traces)?.iter().filter_map(trace_from_doc).collect::<Vec<_>>();
            let found = match (trace_id.filter(|id| !id.is_empty()), run_id) {
                (Some(id), _) => traces.into_iter().find(|t| t.trace_id == id),
                (None, Some(run)) => latest_of_run(traces, &run),
                (None, None) => None,
            };
            let Some(trace) = found else { return Ok(None) };
            let spans: Vec<SpanRecord> = files.read(&t.spans)?.iter().filter_map(span_from_doc).collect();
            let mut one = [trace];
            count_spans(&mut one, &spans);
            let [trace] = one;
            Ok(Some(trace))
        })
        .await
    }

    async fn get_traces(&self, query: &TraceQuery) -> DbResult<(Vec<TraceRecord>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            let t = files.tables().clone();
            let (mut page, total) = page_traces(files.read(&t.traces)?.iter().filter_map(trace_from_doc), &query);
            let spans: Vec<SpanRecord> = files.read(&t.spans)?.iter().filter_map(span_from_doc).collect();
            count_spans(&mut page, &spans);
            Ok((page, total))
        })
        .await
    }

    async fn get_spans(&self, trace_id: &str) -> DbResult<Vec<SpanRecord>> {
        let trace_id = trace_id.to_owned();
        self.read(move |files| {
            let docs = files.read(&files.tables().spans)?;
            Ok(docs.iter().filter_map(span_from_doc).filter(|s| s.trace_id == trace_id).collect())
        })
        .await
    }

    async fn delete_traces_created_before(&self, before: &str) -> DbResult<u64> {
        let before = before.to_owned();
        self.write(move |files| {
            let t = files.tables().clone();
            let traces = files.read(&t.traces)?.into_owned();
            let (old, kept): (Vec<Value>, Vec<Value>) = traces
                .into_iter()
                .partition(|d| d.get("created_at").and_then(Value::as_str).is_some_and(|c| c < before.as_str()));
            if old.is_empty() {
                return Ok(0);
            }
            let gone: std::collections::HashSet<&str> =
                old.iter().filter_map(|d| d.get("trace_id").and_then(Value::as_str)).collect();
            let mut spans = files.read(&t.spans)?.into_owned();
            spans.retain(|s| !s.get("trace_id").and_then(Value::as_str).is_some_and(|id| gone.contains(id)));
            files.write(&t.spans, spans)?;
            files.write(&t.traces, kept)?;
            Ok(old.len() as u64)
        })
        .await
    }

    async fn get_trace_session_stats(&self, query: &TraceStatsQuery) -> DbResult<(Vec<TraceSessionStats>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            let traces: Vec<TraceRecord> =
                files.read(&files.tables().traces)?.iter().filter_map(trace_from_doc).collect();
            Ok(page_session_stats(&traces, &query))
        })
        .await
    }
}
