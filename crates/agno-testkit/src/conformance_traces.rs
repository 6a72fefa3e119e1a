//! Conformance cases of the trace store (`agno_traces`, `agno_spans`), run against every adapter
//! by [`crate::db_conformance!`].

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::{
    CompareOp, FilterValue, SpanRecord, TraceField, TraceFilter, TraceQuery, TraceRecord, TraceStore, trace_of_spans,
};
use serde_json::{Map, Value, json};

/// A span of `trace` at second `start` (to `end`) of 2025-11-19 10:00 UTC.
fn span(trace: &str, id: &str, parent: Option<&str>, (start, end): (u32, u32), attrs: Value) -> SpanRecord {
    let at = |s: u32| format!("2025-11-19T10:00:{s:02}.000000+00:00");
    let attributes: Map<String, Value> = match attrs {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let failed = attributes.get("exception.message").is_some();
    SpanRecord {
        span_id: id.to_owned(),
        trace_id: trace.to_owned(),
        parent_span_id: parent.map(str::to_owned),
        name: attributes.get("name").and_then(Value::as_str).unwrap_or(id).to_owned(),
        span_kind: "INTERNAL".to_owned(),
        status_code: if failed { "ERROR" } else { "OK" }.to_owned(),
        status_message: failed.then(|| "boom".to_owned()),
        start_time: at(start),
        end_time: at(end),
        duration_ms: i64::from(end - start) * 1000,
        attributes,
        created_at: at(end),
    }
}

/// Writes `spans`, ended (and handed to the writer) at `now`, as the tracing writer does: the
/// traces they fold into, then the spans.
async fn write<D: TraceStore + ?Sized>(db: &D, spans: &[SpanRecord], now: &str) {
    let spans: Vec<SpanRecord> =
        spans.iter().cloned().map(|s| SpanRecord { created_at: now.to_owned(), ..s }).collect();
    let mut ids: Vec<&str> = spans.iter().map(|s| s.trace_id.as_str()).collect();
    ids.dedup();
    let traces: Vec<TraceRecord> = ids
        .iter()
        .filter_map(|id| trace_of_spans(&spans.iter().filter(|s| s.trace_id == *id).collect::<Vec<_>>()))
        .collect();
    db.write_spans(&traces, &spans).await.expect("spans are written");
}

/// An agent run's root span with its ids.
fn root(trace: &str, id: &str, (start, end): (u32, u32), user: &str, session: &str) -> SpanRecord {
    span(
        trace,
        id,
        None,
        (start, end),
        json!({
            "name": "Assistant.run",
            "openinference.span.kind": "AGENT",
            "agno.agent.id": "assistant",
            "agno.run.id": format!("run-{trace}"),
            "session.id": session,
            "user.id": user,
            "input.value": "hello",
        }),
    )
}

/// Spans written in two batches (children first, then the root) fold into one trace: the root's
/// name and ids, the earliest start and latest end, ERROR when a child failed; span counts are
/// counted on read; a span written again is left as it is.
pub async fn traces_fold_batches_and_count_spans<D: TraceStore + ?Sized>(db: Arc<D>) {
    let t = "0af7651916cd43dd8448eb211c80319c";
    let children = [
        span(t, "b7ad6b7169203331", Some("a000000000000001"), (2, 3), json!({"openinference.span.kind": "LLM"})),
        span(
            t,
            "b7ad6b7169203332",
            Some("a000000000000001"),
            (3, 5),
            json!({"openinference.span.kind": "TOOL", "exception.message": "boom"}),
        ),
    ];
    write(db.as_ref(), &children, "2025-11-19T10:00:05.000000+00:00").await;
    let partial = db.get_trace(Some(t), None).await.unwrap().expect("a trace of child spans only");
    assert_eq!((partial.run_id.as_deref(), partial.total_spans), (None, 2), "{partial:?}");

    let root_span = root(t, "a000000000000001", (1, 6), "alice", "s-1");
    write(db.as_ref(), std::slice::from_ref(&root_span), "2025-11-19T10:00:06.000000+00:00").await;
    // Exported again (a retried batch): nothing doubles.
    write(db.as_ref(), &children, "2025-11-19T10:00:07.000000+00:00").await;

    let trace = db.get_trace(Some(t), None).await.unwrap().expect("the trace");
    assert_eq!(trace.name, "Assistant.run");
    assert_eq!(trace.run_id.as_deref(), Some(&*format!("run-{t}")));
    assert_eq!((trace.user_id.as_deref(), trace.session_id.as_deref()), (Some("alice"), Some("s-1")));
    assert_eq!(trace.agent_id.as_deref(), Some("assistant"));
    assert_eq!(trace.start_time, "2025-11-19T10:00:01.000000+00:00");
    assert_eq!(trace.end_time, "2025-11-19T10:00:06.000000+00:00");
    assert_eq!(trace.duration_ms, 5000);
    assert_eq!(trace.status, "ERROR", "a failed child makes the trace ERROR, whatever batch comes later");
    assert_eq!((trace.total_spans, trace.error_count), (3, 1));
    assert_eq!(trace.created_at, "2025-11-19T10:00:05.000000+00:00", "created when first written");

    let by_run = db.get_trace(None, Some(&format!("run-{t}"))).await.unwrap().expect("found by run");
    assert_eq!(by_run.trace_id, t);
    assert!(db.get_trace(Some("ffffffffffffffffffffffffffffffff"), None).await.unwrap().is_none());

    let mut spans = db.get_spans(t).await.unwrap();
    spans.sort_by(|a, b| a.span_id.cmp(&b.span_id));
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[0], root_span, "a span reads back as written");
    assert_eq!(spans[2].status_message.as_deref(), Some("boom"));
    assert!(db.get_spans("ffffffffffffffffffffffffffffffff").await.unwrap().is_empty());
}

/// Listings filter on every field, order newest start first, page, and take Agno's filter
/// expressions; per-session stats count each session's traces, latest activity first.
pub async fn traces_list_filter_and_stats<D: TraceStore + ?Sized>(db: Arc<D>) {
    let trace_id = |i: u32| format!("{i:032x}");
    for i in 1..=6u32 {
        let (user, session) = if i <= 4 { ("alice", "s-a") } else { ("bob", "s-b") };
        let mut spans = vec![root(&trace_id(i), &format!("{i:016x}"), (i, i + i), user, session)];
        if i == 3 {
            spans.push(span(
                &trace_id(i),
                "ee00000000000003",
                Some(&format!("{i:016x}")),
                (i, i + 1),
                json!({"exception.message": "no"}),
            ));
        }
        write(db.as_ref(), &spans, &format!("2025-11-19T10:01:{i:02}.000000+00:00")).await;
    }
    let ids = |list: &[TraceRecord]| list.iter().map(|t| t.trace_id.clone()).collect::<Vec<_>>();

    let (all, total) = db.get_traces(&TraceQuery::default()).await.unwrap();
    assert_eq!(total, 6);
    assert_eq!(ids(&all), (1..=6).rev().map(trace_id).collect::<Vec<_>>(), "newest start first");

    let page = TraceQuery { limit: Some(4), page: Some(2), ..TraceQuery::default() };
    let (second, total) = db.get_traces(&page).await.unwrap();
    assert_eq!((ids(&second), total), (vec![trace_id(2), trace_id(1)], 6));

    let alice = TraceQuery { user_id: Some("alice".into()), ..TraceQuery::default() };
    let (list, total) = db.get_traces(&alice).await.unwrap();
    assert_eq!(total, 4);
    assert!(list.iter().all(|t| t.user_id.as_deref() == Some("alice")));

    let failed = TraceQuery { status: Some("ERROR".into()), ..TraceQuery::default() };
    let (list, _) = db.get_traces(&failed).await.unwrap();
    assert_eq!(ids(&list), vec![trace_id(3)]);
    assert_eq!((list[0].total_spans, list[0].error_count), (2, 1));

    let window = TraceQuery {
        start_time: Some("2025-11-19T10:00:02.000000+00:00".into()),
        end_time: Some("2025-11-19T10:00:08.000000+00:00".into()),
        ..TraceQuery::default()
    };
    let (list, _) = db.get_traces(&window).await.unwrap();
    assert_eq!(ids(&list), vec![trace_id(4), trace_id(3), trace_id(2)], "start >= 2 s, end <= 8 s");

    // `duration_ms > 3000 AND NOT user_id STARTSWITH 'AL'` (case ignored), OR trace 1 by id.
    let expr = TraceFilter::Or(vec![
        TraceFilter::And(vec![
            TraceFilter::Compare(TraceField::DurationMs, CompareOp::Gt, FilterValue::Number(3000.0)),
            TraceFilter::Not(Box::new(TraceFilter::Compare(
                TraceField::UserId,
                CompareOp::StartsWith,
                FilterValue::Text("AL".into()),
            ))),
        ]),
        TraceFilter::In(TraceField::TraceId, vec![FilterValue::Text(trace_id(1))]),
    ]);
    let filtered = TraceQuery { filter: Some(expr), ..TraceQuery::default() };
    let (list, total) = db.get_traces(&filtered).await.unwrap();
    assert_eq!((ids(&list), total), (vec![trace_id(6), trace_id(5), trace_id(1)], 3));

    let literal = TraceFilter::Compare(TraceField::Name, CompareOp::Contains, FilterValue::Text("t_%".into()));
    let (list, _) = db.get_traces(&TraceQuery { filter: Some(literal), ..TraceQuery::default() }).await.unwrap();
    assert!(list.is_empty(), "% and _ match themselves only");

    let (stats, total) = db.get_trace_session_stats(&TraceQuery::default()).await.unwrap();
    assert_eq!(total, 2);
    assert_eq!(stats[0].session_id, "s-b", "latest activity first");
    assert_eq!((stats[0].total_traces, stats[1].total_traces), (2, 4));
    assert_eq!(stats[1].first_trace_at, "2025-11-19T10:01:01.000000+00:00");
    assert_eq!(stats[1].last_trace_at, "2025-11-19T10:01:04.000000+00:00");
    assert_eq!(stats[1].user_id.as_deref(), Some("alice"));

    let (stats, total) = db.get_trace_session_stats(&alice).await.unwrap();
    assert_eq!((stats.len(), total, stats[0].session_id.as_str()), (1, 1, "s-a"));
    let since = TraceQuery { start_time: Some("2025-11-19T10:01:04.000000+00:00".into()), ..TraceQuery::default() };
    let (stats, _) = db.get_trace_session_stats(&since).await.unwrap();
    let counts: Vec<(String, u64)> = stats.into_iter().map(|s| (s.session_id, s.total_traces)).collect();
    assert_eq!(counts, vec![("s-b".into(), 2), ("s-a".into(), 1)], "created_at bounds the traces counted");
    let paged = TraceQuery { limit: Some(1), page: Some(2), ..TraceQuery::default() };
    let (stats, total) = db.get_trace_session_stats(&paged).await.unwrap();
    assert_eq!((stats.len(), total, stats[0].session_id.as_str()), (1, 2, "s-a"));
}

/// The retention: traces created before a time are deleted with their spans; later ones stay.
pub async fn old_traces_are_deleted_with_their_spans<D: TraceStore + ?Sized>(db: Arc<D>) {
    let (old, new) = ("0000000000000000000000000000aaaa", "0000000000000000000000000000bbbb");
    let spans = |t: &str, first: char| {
        let id = |n: u8| format!("{first}00000000000000{n}");
        vec![root(t, &id(1), (1, 3), "alice", "s"), span(t, &id(2), Some(&id(1)), (1, 2), json!({}))]
    };
    write(db.as_ref(), &spans(old, 'a'), "2025-11-18T10:00:00.000000+00:00").await;
    write(db.as_ref(), &spans(new, 'b'), "2025-11-19T10:00:00.000000+00:00").await;
    assert_eq!(db.delete_traces_created_before("2025-11-19T00:00:00.000000+00:00").await.unwrap(), 1);
    assert!(db.get_trace(Some(old), None).await.unwrap().is_none(), "the old trace is gone");
    assert!(db.get_spans(old).await.unwrap().is_empty(), "with its spans");
    let kept = db.get_trace(Some(new), None).await.unwrap().expect("the newer trace stays");
    assert_eq!(kept.total_spans, 2);
    assert_eq!(db.delete_traces_created_before("2025-11-19T00:00:00.000000+00:00").await.unwrap(), 0);
}
