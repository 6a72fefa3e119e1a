//! Traces and spans of the document stores, written once for the in-memory store, the JSON files
//! (`agno_traces.json`, `agno_spans.json`) and Redis (`{prefix}:traces:{trace_id}` and
//! `{prefix}:spans:{span_id}`, with index sets per `run_id`, `session_id`, `user_id`,
//! `agent_id`, `team_id`, `workflow_id` and `status` of a trace and per `trace_id` and
//! `parent_span_id` of a span): the keys of Agno's `Trace.to_dict()` without the span counts,
//! which are counted on read, and of `Span.to_dict()`. A trace is folded into the stored one, a
//! span written only when absent.

use std::collections::HashMap;

use agno_core::{
    DbResult, SpanRecord, TraceQuery, TraceRecord, TraceSessionStats, TraceStatsQuery, TraceStore, fold_trace,
    session_stats,
};
use async_trait::async_trait;

use super::DocDb;
use super::documents::{Doc, DocKind, Documents, record, records};

/// The document of a trace: its record without the span counts.
pub(crate) fn trace_doc(trace: &TraceRecord) -> DbResult<Doc> {
    let mut doc = crate::codec::to_doc(trace)?;
    doc.remove("total_spans");
    doc.remove("error_count");
    Ok(doc)
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

/// Trace documents, with the index sets Python Agno's `RedisDb` keeps for them.
const TRACES: DocKind = DocKind {
    name: "traces",
    key: "trace_id",
    table: |t| &t.traces,
    index: &["run_id", "session_id", "user_id", "agent_id", "team_id", "workflow_id", "status"],
};

/// Span documents, with their index sets.
const SPANS: DocKind =
    DocKind { name: "spans", key: "span_id", table: |t| &t.spans, index: &["trace_id", "parent_span_id"] };

/// The spans of the traces `trace_ids`.
async fn spans_of(store: &impl Documents, trace_ids: &[&str]) -> DbResult<Vec<SpanRecord>> {
    let docs = store.docs(&SPANS, Some(("trace_id", trace_ids))).await?;
    Ok(records(docs))
}

/// `traces` with their span counts.
async fn counted(store: &impl Documents, mut traces: Vec<TraceRecord>) -> DbResult<Vec<TraceRecord>> {
    let ids: Vec<&str> = traces.iter().map(|t| t.trace_id.as_str()).collect();
    let spans = spans_of(store, &ids).await?;
    count_spans(&mut traces, &spans);
    Ok(traces)
}

#[async_trait]
impl<B> TraceStore for DocDb<B>
where
    DocDb<B>: Documents,
{
    async fn write_spans(&self, traces: &[TraceRecord], spans: &[SpanRecord]) -> DbResult<()> {
        for new in traces {
            let new = new.clone();
            self.change(&TRACES, &new.trace_id.clone(), "trace", move |current| {
                let merged = match current.cloned().and_then(record::<TraceRecord>) {
                    Some(old) => fold_trace(&old, &new),
                    None => new.clone(),
                };
                Ok(Some((trace_doc(&merged)?, ())))
            })
            .await?;
        }
        // Written once: a span exported again is left as it is.
        let spans = spans.iter().map(|s| Ok((s.span_id.clone(), crate::codec::to_doc(s)?))).collect::<DbResult<_>>()?;
        self.insert_absent(&SPANS, spans).await?;
        Ok(())
    }

    async fn get_trace(&self, trace_id: Option<&str>, run_id: Option<&str>) -> DbResult<Option<TraceRecord>> {
        let found = match (trace_id.filter(|id| !id.is_empty()), run_id) {
            (Some(id), _) => self.doc(&TRACES, id, "trace").await?.and_then(record),
            (None, Some(run)) => {
                latest_of_run(records::<TraceRecord>(self.docs(&TRACES, Some(("run_id", &[run]))).await?), run)
            }
            (None, None) => None,
        };
        let Some(trace) = found else { return Ok(None) };
        Ok(counted(self, vec![trace]).await?.pop())
    }

    async fn get_traces(&self, query: &TraceQuery) -> DbResult<(Vec<TraceRecord>, u64)> {
        let (page, total) = page_traces(records::<TraceRecord>(self.docs(&TRACES, None).await?), query);
        Ok((counted(self, page).await?, total))
    }

    async fn get_spans(&self, trace_id: &str) -> DbResult<Vec<SpanRecord>> {
        spans_of(self, &[trace_id]).await
    }

    /// Each old trace's spans, then the traces.
    async fn delete_traces_created_before(&self, before: &str) -> DbResult<u64> {
        let old: Vec<String> = records::<TraceRecord>(self.docs(&TRACES, None).await?)
            .into_iter()
            .filter(|t| t.created_at.as_str() < before)
            .map(|t| t.trace_id)
            .collect();
        for chunk in old.chunks(100) {
            let ids: Vec<&str> = chunk.iter().map(String::as_str).collect();
            let spans: Vec<String> = spans_of(self, &ids).await?.into_iter().map(|s| s.span_id).collect();
            self.delete(&SPANS, &spans, None).await?;
        }
        self.delete(&TRACES, &old, None).await
    }

    async fn get_trace_session_stats(&self, query: &TraceStatsQuery) -> DbResult<(Vec<TraceSessionStats>, u64)> {
        Ok(page_session_stats(&records::<TraceRecord>(self.docs(&TRACES, None).await?), query))
    }
}
