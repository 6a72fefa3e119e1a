//! Traces and spans in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! `{prefix}:traces:{trace_id}` and `{prefix}:spans:{span_id}` hold the documents (JSON strings,
//! the keys of Agno's `Trace.to_dict()` without the span counts and of `Span.to_dict()`), with
//! index sets per `run_id`, `session_id`, `user_id`, `agent_id`, `team_id`, `workflow_id` and
//! `status` of a trace and per `trace_id` and `parent_span_id` of a span.
//!
//! A trace is folded by the shared compare-and-set (`docs`), a span written only when absent;
//! listings and stats are the document family's (`doc::traces`).

use agno_core::{
    DbResult, SpanRecord, TraceQuery, TraceRecord, TraceSessionStats, TraceStatsQuery, TraceStore, fold_trace,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::RedisDb;
use super::docs::DocKind;
use crate::doc::traces::{
    count_spans, latest_of_run, page_session_stats, page_traces, span_from_doc, trace_doc, trace_from_doc,
};

/// Trace documents, with the index sets Agno keeps for them.
const TRACES: DocKind = DocKind {
    name: "traces",
    index: &["run_id", "session_id", "user_id", "agent_id", "team_id", "workflow_id", "status"],
};

/// Span documents, with the index sets Agno keeps for them.
const SPANS: DocKind = DocKind { name: "spans", index: &["trace_id", "parent_span_id"] };

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(doc) => doc,
        _ => Map::new(),
    }
}

impl RedisDb {
    /// The spans of the traces `trace_ids`, read through the `trace_id` index sets.
    async fn spans_of(&self, trace_ids: &[&str]) -> DbResult<Vec<SpanRecord>> {
        let mut keys = Vec::new();
        for id in trace_ids {
            let set = format!("{}:{}:index:trace_id:{id}", self.prefix(), SPANS.name);
            let members: Vec<String> = redis::cmd("SMEMBERS")
                .arg(&set)
                .query_async(&mut self.conn())
                .await
                .map_err(|e| super::redis_error(&format!("cannot read the spans of trace {id}"), e))?;
            keys.extend(members.iter().map(|span| self.doc_key(SPANS.name, span)));
        }
        let texts = self.mget(&keys).await?;
        Ok(texts
            .into_iter()
            .flatten()
            .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
            .filter_map(|d| span_from_doc(&d))
            .collect())
    }

    async fn all_traces(&self) -> DbResult<Vec<TraceRecord>> {
        let docs = self.docs_of(TRACES.name).await?;
        Ok(docs.into_iter().filter_map(|d| trace_from_doc(&Value::Object(d))).collect())
    }

    async fn counted(&self, mut traces: Vec<TraceRecord>) -> DbResult<Vec<TraceRecord>> {
        let ids: Vec<&str> = traces.iter().map(|t| t.trace_id.as_str()).collect();
        let spans = self.spans_of(&ids).await?;
        count_spans(&mut traces, &spans);
        Ok(traces)
    }
}

#[async_trait]
impl TraceStore for RedisDb {
    async fn write_spans(&self, traces: &[TraceRecord], spans: &[SpanRecord]) -> DbResult<()> {
        for new in traces {
            self.upsert_doc(TRACES, &new.trace_id, "trace", |current| {
                let merged = match current.and_then(|d| trace_from_doc(&Value::Object(d.clone()))) {
                    Some(old) => fold_trace(&old, new),
                    None => new.clone(),
                };
                Ok((object(trace_doc(&merged)?), ()))
            })
            .await?;
        }
        for span in spans {
            // Written once: a span exported again is left as it is.
            self.put_doc(SPANS, &span.span_id, None, &crate::codec::to_doc(span)?).await?;
        }
        Ok(())
    }

    async fn get_trace(&self, trace_id: Option<&str>, run_id: Option<&str>) -> DbResult<Option<TraceRecord>> {
        let found = match (trace_id.filter(|id| !id.is_empty()), run_id) {
            (Some(id), _) => {
                self.doc_at(TRACES.name, id, "trace").await?.and_then(|(_, doc)| trace_from_doc(&Value::Object(doc)))
            }
            (None, Some(run)) => latest_of_run(self.all_traces().await?, run),
            (None, None) => None,
        };
        let Some(trace) = found else { return Ok(None) };
        Ok(self.counted(vec![trace]).await?.pop())
    }

    async fn get_traces(&self, query: &TraceQuery) -> DbResult<(Vec<TraceRecord>, u64)> {
        let (page, total) = page_traces(self.all_traces().await?, query);
        Ok((self.counted(page).await?, total))
    }

    async fn get_spans(&self, trace_id: &str) -> DbResult<Vec<SpanRecord>> {
        self.spans_of(&[trace_id]).await
    }

    /// Each old trace's spans, then the traces (with their index entries).
    async fn delete_traces_created_before(&self, before: &str) -> DbResult<u64> {
        let old: Vec<String> = self
            .all_traces()
            .await?
            .into_iter()
            .filter(|t| t.created_at.as_str() < before)
            .map(|t| t.trace_id)
            .collect();
        for chunk in old.chunks(100) {
            let ids: Vec<&str> = chunk.iter().map(String::as_str).collect();
            let spans: Vec<String> = self.spans_of(&ids).await?.into_iter().map(|s| s.span_id).collect();
            self.delete_docs(SPANS, &spans, None).await?;
        }
        self.delete_docs(TRACES, &old, None).await
    }

    async fn get_trace_session_stats(&self, query: &TraceStatsQuery) -> DbResult<(Vec<TraceSessionStats>, u64)> {
        Ok(page_session_stats(&self.all_traces().await?, query))
    }
}
