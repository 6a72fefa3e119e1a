//! Traces and spans as Python Agno 3.1 stores them (`agno_traces`, `agno_spans`): one trace per
//! run attempt, its spans (the run, each model call, tool call, delegation and workflow step)
//! with OpenInference attributes, and the queries `/traces` answers.
//!
//! Times are ISO-8601 strings in UTC with microseconds (`2025-11-19T10:30:00.123456+00:00`), as
//! Agno writes them, so that the same rows compare and sort as text on every database.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::filter::{FilterExpr, FilterField, FilterValue};

/// One trace (`agno_traces`): the aggregate of its spans, named after its root span and carrying
/// the root's run, session, user and component ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// The OpenTelemetry trace id (32 hex digits).
    pub trace_id: String,
    /// The root span's name (`Assistant.run`).
    pub name: String,
    /// `OK` or `ERROR` (`ERROR` when any span failed).
    pub status: String,
    /// When the first span started (ISO-8601).
    pub start_time: String,
    /// When the last span ended (ISO-8601).
    pub end_time: String,
    /// From the first start to the last end, in milliseconds.
    pub duration_ms: i64,
    /// The run traced.
    pub run_id: Option<String>,
    /// Its session.
    pub session_id: Option<String>,
    /// Its user.
    pub user_id: Option<String>,
    /// The agent run (or the team's leader).
    pub agent_id: Option<String>,
    /// The team run.
    pub team_id: Option<String>,
    /// The workflow run.
    pub workflow_id: Option<String>,
    /// When the trace was first written (ISO-8601).
    pub created_at: String,
    /// How many spans it has (counted on read, never stored).
    #[serde(default)]
    pub total_spans: u64,
    /// How many of them failed (counted on read, never stored).
    #[serde(default)]
    pub error_count: u64,
}

/// One span (`agno_spans`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRecord {
    /// The span id (16 hex digits).
    pub span_id: String,
    /// Its trace.
    pub trace_id: String,
    /// The span it is nested in; none for the root.
    pub parent_span_id: Option<String>,
    /// Its name (`Assistant.run`, `OpenAIChat.invoke`, `get_weather`).
    pub name: String,
    /// The OpenTelemetry span kind (`INTERNAL`, `CLIENT`, ...).
    pub span_kind: String,
    /// `UNSET`, `OK` or `ERROR`.
    pub status_code: String,
    /// The error's description, for `ERROR`.
    pub status_message: Option<String>,
    /// When it started (ISO-8601).
    pub start_time: String,
    /// When it ended (ISO-8601).
    pub end_time: String,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
    /// Its attributes (OpenInference conventions: `openinference.span.kind`, `input.value`,
    /// `llm.token_count.prompt`, `agno.run.id`, ...).
    pub attributes: Map<String, Value>,
    /// When it was written (ISO-8601).
    pub created_at: String,
}

impl SpanRecord {
    /// The attribute `key` when it is a string.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// Whether the span failed.
    pub fn failed(&self) -> bool {
        self.status_code == "ERROR"
    }
}

/// A field of a trace that listings filter on ([`TraceFilter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceField {
    /// `trace_id`.
    TraceId,
    /// `name`.
    Name,
    /// `status`.
    Status,
    /// `run_id`.
    RunId,
    /// `session_id`.
    SessionId,
    /// `user_id`.
    UserId,
    /// `agent_id`.
    AgentId,
    /// `team_id`.
    TeamId,
    /// `workflow_id`.
    WorkflowId,
    /// `duration_ms` (a number).
    DurationMs,
    /// `start_time`.
    StartTime,
    /// `end_time`.
    EndTime,
    /// `created_at`.
    CreatedAt,
}

impl FilterField for TraceField {
    const ALL: &'static [TraceField] = &[
        TraceField::Status,
        TraceField::UserId,
        TraceField::AgentId,
        TraceField::TeamId,
        TraceField::WorkflowId,
        TraceField::SessionId,
        TraceField::RunId,
        TraceField::Name,
        TraceField::TraceId,
        TraceField::DurationMs,
        TraceField::StartTime,
        TraceField::EndTime,
        TraceField::CreatedAt,
    ];

    fn column(self) -> &'static str {
        match self {
            TraceField::TraceId => "trace_id",
            TraceField::Name => "name",
            TraceField::Status => "status",
            TraceField::RunId => "run_id",
            TraceField::SessionId => "session_id",
            TraceField::UserId => "user_id",
            TraceField::AgentId => "agent_id",
            TraceField::TeamId => "team_id",
            TraceField::WorkflowId => "workflow_id",
            TraceField::DurationMs => "duration_ms",
            TraceField::StartTime => "start_time",
            TraceField::EndTime => "end_time",
            TraceField::CreatedAt => "created_at",
        }
    }
}

impl TraceField {
    /// The field's value in `trace` (`duration_ms` as a number, the others as text).
    pub fn value_in(self, trace: &TraceRecord) -> Option<FilterValue> {
        let text = |s: &Option<String>| s.clone().map(FilterValue::Text);
        match self {
            TraceField::TraceId => Some(FilterValue::Text(trace.trace_id.clone())),
            TraceField::Name => Some(FilterValue::Text(trace.name.clone())),
            TraceField::Status => Some(FilterValue::Text(trace.status.clone())),
            TraceField::RunId => text(&trace.run_id),
            TraceField::SessionId => text(&trace.session_id),
            TraceField::UserId => text(&trace.user_id),
            TraceField::AgentId => text(&trace.agent_id),
            TraceField::TeamId => text(&trace.team_id),
            TraceField::WorkflowId => text(&trace.workflow_id),
            TraceField::DurationMs => Some(FilterValue::Number(trace.duration_ms as f64)),
            TraceField::StartTime => Some(FilterValue::Text(trace.start_time.clone())),
            TraceField::EndTime => Some(FilterValue::Text(trace.end_time.clone())),
            TraceField::CreatedAt => Some(FilterValue::Text(trace.created_at.clone())),
        }
    }
}

/// Agno's filter expression over trace fields (`POST /traces/search`).
pub type TraceFilter = FilterExpr<TraceField>;

/// Filters and paging for [`TraceStore::get_traces`] (newest first by `start_time`).
#[derive(Debug, Clone, Default)]
pub struct TraceQuery {
    /// Only this run's traces.
    pub run_id: Option<String>,
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only this user's (a scoped caller's own).
    pub user_id: Option<String>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this team's.
    pub team_id: Option<String>,
    /// Only this workflow's.
    pub workflow_id: Option<String>,
    /// Only traces with this status.
    pub status: Option<String>,
    /// Only traces starting at or after (ISO-8601).
    pub start_time: Option<String>,
    /// Only traces ending at or before (ISO-8601).
    pub end_time: Option<String>,
    /// An expression the traces must also match.
    pub filter: Option<TraceFilter>,
    /// Page size.
    pub limit: Option<usize>,
    /// 1-based page.
    pub page: Option<usize>,
}

impl TraceQuery {
    /// Whether `trace` passes every filter but the paging.
    pub fn matches(&self, trace: &TraceRecord) -> bool {
        let eq = |want: &Option<String>, have: &Option<String>| want.is_none() || want == have;
        eq(&self.run_id, &trace.run_id)
            && eq(&self.session_id, &trace.session_id)
            && eq(&self.user_id, &trace.user_id)
            && eq(&self.agent_id, &trace.agent_id)
            && eq(&self.team_id, &trace.team_id)
            && eq(&self.workflow_id, &trace.workflow_id)
            && self.status.as_ref().is_none_or(|s| *s == trace.status)
            && self.start_time.as_ref().is_none_or(|t| trace.start_time.as_str() >= t.as_str())
            && self.end_time.as_ref().is_none_or(|t| trace.end_time.as_str() <= t.as_str())
            && self.filter.as_ref().is_none_or(|f| f.holds(&|field| field.value_in(trace)))
    }
}

/// The traces of one session, aggregated (`GET /trace_session_stats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSessionStats {
    /// The session.
    pub session_id: String,
    /// Its user (the greatest, when its traces disagree).
    pub user_id: Option<String>,
    /// Its agent (likewise).
    pub agent_id: Option<String>,
    /// Its team (likewise).
    pub team_id: Option<String>,
    /// Its workflow (likewise).
    pub workflow_id: Option<String>,
    /// How many traces it has.
    pub total_traces: u64,
    /// The first trace's `created_at`.
    pub first_trace_at: String,
    /// The last trace's `created_at`.
    pub last_trace_at: String,
}

/// Filters and paging for [`TraceStore::get_trace_session_stats`] (the latest active session
/// first). `start_time`/`end_time` bound the traces' `created_at`.
pub type TraceStatsQuery = TraceQuery;

/// Folds `traces` into per-session stats, latest activity first (traces without a session are
/// left out), as every store answers [`TraceStore::get_trace_session_stats`] before paging.
pub fn session_stats<'a>(traces: impl IntoIterator<Item = &'a TraceRecord>) -> Vec<TraceSessionStats> {
    let mut by_session: std::collections::HashMap<&str, TraceSessionStats> = std::collections::HashMap::new();
    for t in traces {
        let Some(session) = t.session_id.as_deref() else { continue };
        let stats = by_session.entry(session).or_insert_with(|| TraceSessionStats {
            session_id: session.to_owned(),
            user_id: None,
            agent_id: None,
            team_id: None,
            workflow_id: None,
            total_traces: 0,
            first_trace_at: t.created_at.clone(),
            last_trace_at: t.created_at.clone(),
        });
        stats.total_traces += 1;
        for (have, new) in [
            (&mut stats.user_id, &t.user_id),
            (&mut stats.agent_id, &t.agent_id),
            (&mut stats.team_id, &t.team_id),
            (&mut stats.workflow_id, &t.workflow_id),
        ] {
            if new.is_some() && (*have).as_ref().is_none_or(|h| Some(h) < new.as_ref()) {
                have.clone_from(new);
            }
        }
        if t.created_at < stats.first_trace_at {
            stats.first_trace_at.clone_from(&t.created_at);
        }
        if t.created_at > stats.last_trace_at {
            stats.last_trace_at.clone_from(&t.created_at);
        }
    }
    let mut list: Vec<_> = by_session.into_values().collect();
    list.sort_by(|a, b| b.last_trace_at.cmp(&a.last_trace_at).then_with(|| a.session_id.cmp(&b.session_id)));
    list
}

/// Traces and their spans.
#[async_trait::async_trait]
pub trait TraceStore: Send + Sync {
    /// Writes `spans` and folds them into their traces (`traces`, one per trace id, as
    /// [`trace_of_spans`] makes them): a trace written before keeps its earliest start, latest
    /// end, the context ids it had, and the name of its highest component (workflow, team, agent).
    ///
    /// # Errors
    /// A [`crate::DbError`]; nothing of the batch is written then.
    async fn write_spans(&self, traces: &[TraceRecord], spans: &[SpanRecord]) -> crate::DbResult<()>;

    /// One trace, with its span counts: by id, else the latest of a run.
    ///
    /// # Errors
    /// A [`crate::DbError`]; missing is `Ok(None)`.
    async fn get_trace(&self, trace_id: Option<&str>, run_id: Option<&str>) -> crate::DbResult<Option<TraceRecord>>;

    /// A page of traces, newest start first, with their span counts, and how many match.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn get_traces(&self, query: &TraceQuery) -> crate::DbResult<(Vec<TraceRecord>, u64)>;

    /// The spans of a trace (in no particular order).
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn get_spans(&self, trace_id: &str) -> crate::DbResult<Vec<SpanRecord>>;

    /// A page of per-session trace stats, latest activity first, and how many sessions match.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn get_trace_session_stats(&self, query: &TraceStatsQuery) -> crate::DbResult<(Vec<TraceSessionStats>, u64)>;

    /// Deletes the traces created before `before` (ISO-8601) with their spans (the retention of
    /// `[tracing]`); how many traces.
    ///
    /// # Errors
    /// A [`crate::DbError`]; nothing is deleted then.
    async fn delete_traces_created_before(&self, before: &str) -> crate::DbResult<u64>;
}

/// The trace a batch of spans of one trace makes (`spans` non-empty, all of `trace_id`), as Agno
/// folds them: named after and carrying the ids of the batch's root span (none in a batch of
/// child spans only, so a later fold keeps the root's), `ERROR` when any span failed, created
/// when its first span was (Agno writes each span as it ends: its trace is created then).
pub fn trace_of_spans(spans: &[&SpanRecord]) -> Option<TraceRecord> {
    let first = spans.first()?;
    let created_at = spans.iter().map(|s| s.created_at.as_str()).min().unwrap_or_default();
    let start = spans.iter().map(|s| s.start_time.as_str()).min().unwrap_or_default();
    let end = spans.iter().map(|s| s.end_time.as_str()).max().unwrap_or_default();
    let root = spans.iter().find(|s| s.parent_span_id.is_none());
    let attr = |keys: &[&str]| {
        root.and_then(|r| keys.iter().find_map(|k| r.attribute(k).filter(|v| !v.is_empty())).map(str::to_owned))
    };
    let errors = spans.iter().filter(|s| s.failed()).count() as u64;
    Some(TraceRecord {
        trace_id: first.trace_id.clone(),
        name: root.map_or_else(|| first.name.clone(), |r| r.name.clone()),
        status: if errors > 0 { "ERROR" } else { "OK" }.to_owned(),
        start_time: start.to_owned(),
        end_time: end.to_owned(),
        duration_ms: duration_ms(start, end),
        run_id: attr(&["run_id", "agno.run.id"]),
        session_id: attr(&["session_id", "agno.session.id", "session.id"]),
        user_id: attr(&["user_id", "agno.user.id", "user.id"]),
        agent_id: attr(&["agent_id", "agno.agent.id"]),
        team_id: attr(&["team_id", "agno.team.id"]),
        workflow_id: attr(&["workflow_id", "agno.workflow.id"]),
        created_at: created_at.to_owned(),
        total_spans: spans.len() as u64,
        error_count: errors,
    })
}

/// `at` as traces store their times (ISO-8601 in UTC with microseconds, as Agno writes them):
/// span and trace times, and every time they are compared with (filters, retention), so that
/// comparing the text compares the times.
pub fn trace_time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

/// Milliseconds from `start` to `end` (ISO-8601); 0 when either does not parse.
pub fn duration_ms(start: &str, end: &str) -> i64 {
    match (chrono::DateTime::parse_from_rfc3339(start), chrono::DateTime::parse_from_rfc3339(end)) {
        (Ok(s), Ok(e)) => (e - s).num_milliseconds(),
        _ => 0,
    }
}

/// The importance of a trace's name when two folds of it meet: a workflow's run (3) over a
/// team's (2) over an agent's (1) over a child span's (0), as Agno ranks them (a continued run's
/// `.continue_run` counts as a run, which Agno's ranking misses).
pub fn component_level(trace: &TraceRecord) -> u8 {
    let root_name = [".run", ".arun", ".continue_run", ".acontinue_run"].iter().any(|r| trace.name.contains(r));
    match () {
        () if !root_name => 0,
        () if trace.workflow_id.is_some() => 3,
        () if trace.team_id.is_some() => 2,
        () if trace.agent_id.is_some() => 1,
        () => 0,
    }
}

/// `stored` with `new` folded in, as an upsert of `new` over `stored` keeps them: the name of the
/// root's batch or of the higher component, the earliest start, the latest end, `ERROR` when either failed (Agno takes the newer fold's status, so a
/// later batch of healthy child spans would hide an error), the stored ids first.
pub fn fold_trace(stored: &TraceRecord, new: &TraceRecord) -> TraceRecord {
    let start = stored.start_time.clone().min(new.start_time.clone());
    let end = stored.end_time.clone().max(new.end_time.clone());
    let keep = |old: &Option<String>, new: &Option<String>| old.clone().or_else(|| new.clone());
    TraceRecord {
        trace_id: stored.trace_id.clone(),
        // The batch with the root (the run's ids) names the trace when the first had only children.
        name: if component_level(new) > component_level(stored) || (stored.run_id.is_none() && new.run_id.is_some()) {
            new.name.clone()
        } else {
            stored.name.clone()
        },
        status: if stored.status == "ERROR" { stored.status.clone() } else { new.status.clone() },
        duration_ms: duration_ms(&start, &end),
        start_time: start,
        end_time: end,
        run_id: keep(&stored.run_id, &new.run_id),
        session_id: keep(&stored.session_id, &new.session_id),
        user_id: keep(&stored.user_id, &new.user_id),
        agent_id: keep(&stored.agent_id, &new.agent_id),
        team_id: keep(&stored.team_id, &new.team_id),
        workflow_id: keep(&stored.workflow_id, &new.workflow_id),
        created_at: stored.created_at.clone(),
        total_spans: stored.total_spans,
        error_count: stored.error_count,
    }
}

/// A span with the spans nested in it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanNode<'a> {
    /// The span.
    pub span: &'a SpanRecord,
    /// Its children, by start time.
    pub children: Vec<SpanNode<'a>>,
}

/// The tree of `spans`: the roots (spans without a parent) by start time, each with its
/// descendants, as Agno's trace view nests them (a span whose parent is not among `spans` is
/// left out, as Agno leaves it out).
pub fn span_tree(spans: &[SpanRecord]) -> Vec<SpanNode<'_>> {
    let mut children: std::collections::HashMap<Option<&str>, Vec<&SpanRecord>> = std::collections::HashMap::new();
    for s in spans {
        children.entry(s.parent_span_id.as_deref().filter(|p| !p.is_empty())).or_default().push(s);
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| a.start_time.cmp(&b.start_time));
    }
    fn grow<'a>(
        span: &'a SpanRecord,
        children: &std::collections::HashMap<Option<&str>, Vec<&'a SpanRecord>>,
        depth: usize,
    ) -> SpanNode<'a> {
        // A cycle of parent links (a corrupt row) stops at a depth no real trace reaches.
        let below = if depth > 256 { None } else { children.get(&Some(span.span_id.as_str())) };
        SpanNode { span, children: below.into_iter().flatten().map(|c| grow(c, children, depth + 1)).collect() }
    }
    children.get(&None).into_iter().flatten().map(|r| grow(r, &children, 0)).collect()
}
