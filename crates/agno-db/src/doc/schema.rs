//! Document shapes shared by the document and key-value stores (`JsonDb`, `RedisDb`): a session
//! document and a run row exactly as Python Agno's `JsonDb` / `RedisDb` write them, the in-memory
//! filtering, sorting and paging both need, and the rows the v3 migration builds from a legacy
//! `runs` field.

use crate::doc::{Docs, visible};
use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, RunCursor, RunOutput, RunPage, RunQuery, SessionPage, SessionQuery,
    SessionSort, SortOrder, StateUpdate,
};
use serde_json::{Map, Value};

use crate::codec::{decode_run, run_type, session_type_of, skip_unreadable_run};

/// A string field of a document, `None` when missing, null or not a string.
pub(crate) fn str_field<'a>(doc: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    doc.get(key).and_then(Value::as_str)
}

/// An integer field (Python may have written a float).
fn int_field(doc: &Map<String, Value>, key: &str) -> Option<i64> {
    let v = doc.get(key)?;
    #[allow(clippy::cast_possible_truncation)]
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// An object field; a JSON text holding an object is decoded too.
fn object_field(doc: &Map<String, Value>, key: &str) -> Option<Map<String, Value>> {
    match doc.get(key)? {
        Value::Object(m) => Some(m.clone()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        },
        _ => None,
    }
}

fn encode<T: serde::Serialize>(value: &T, what: &str) -> DbResult<Value> {
    serde_json::to_value(value)
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode {what} as JSON: {e}")).with_source(e))
}

/// The `session_type` of a stored document (inferred from its ids when absent).
pub(crate) fn doc_session_type(doc: &Map<String, Value>) -> &str {
    match str_field(doc, "session_type") {
        Some(t) => t,
        None if str_field(doc, "agent_id").is_some() => "agent",
        None if str_field(doc, "team_id").is_some() => "team",
        None if str_field(doc, "workflow_id").is_some() => "workflow",
        None => "agent",
    }
}

/// The `session_data` to store: the session's own, with the state merged into the stored one
/// when `state` is a merge and a stored document exists.
pub(crate) fn merged_session_data(
    session: &AgentSession,
    state: &StateUpdate,
    stored: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let session_data = session.session_data.clone().unwrap_or_default();
    let stored_data = stored.map(|s| object_field(s, "session_data").unwrap_or_default());
    state.session_data(session_data, stored_data.as_ref())
}

/// The stored session document, shaped as Python Agno's `RedisDb.upsert_session` writes an agent
/// session (the `JsonDb` document has the same fields). `legacy_runs` is a v2 `runs` field carried
/// forward untouched.
pub(crate) fn session_doc(
    session: &AgentSession,
    session_data: Map<String, Value>,
    created_at: i64,
    updated_at: i64,
    legacy_runs: Option<&Value>,
) -> DbResult<Map<String, Value>> {
    let opt_str = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let opt_obj = |v: &Option<Map<String, Value>>| v.clone().map_or(Value::Null, Value::Object);
    let extra = |k: &str| session.extra.get(k).cloned().unwrap_or(Value::Null);
    let mut doc = Map::new();
    doc.insert("session_id".to_owned(), Value::String(session.session_id.clone()));
    doc.insert("session_type".to_owned(), Value::String(session_type_of(session).to_owned()));
    doc.insert("agent_id".to_owned(), opt_str(&session.agent_id));
    doc.insert("team_id".to_owned(), opt_str(&session.team_id));
    doc.insert("workflow_id".to_owned(), opt_str(&session.workflow_id));
    doc.insert("user_id".to_owned(), opt_str(&session.user_id));
    doc.insert("agent_data".to_owned(), opt_obj(&session.agent_data));
    doc.insert("team_data".to_owned(), extra("team_data"));
    doc.insert("workflow_data".to_owned(), extra("workflow_data"));
    doc.insert("session_data".to_owned(), Value::Object(session_data));
    let summary = match &session.summary {
        Some(s) => encode(s, &format!("the summary of session {}", session.session_id))?,
        None => Value::Null,
    };
    doc.insert("summary".to_owned(), summary);
    doc.insert("metadata".to_owned(), opt_obj(&session.metadata));
    doc.insert("created_at".to_owned(), Value::from(created_at));
    doc.insert("updated_at".to_owned(), Value::from(updated_at));
    if let Some(runs) = legacy_runs {
        doc.insert("runs".to_owned(), runs.clone());
    }
    Ok(doc)
}

/// Reads a stored session document; `runs` is left `None` (attached by the caller).
pub(crate) fn session_from_doc(doc: &Map<String, Value>) -> DbResult<AgentSession> {
    let Some(session_id) = str_field(doc, "session_id") else {
        return Err(DbError::new(DbErrorKind::Other, "stored session document has no session_id"));
    };
    let get = |k: &str| str_field(doc, k).map(str::to_owned);
    let mut session = AgentSession::new(session_id);
    session.agent_id = get("agent_id");
    session.team_id = get("team_id");
    session.workflow_id = get("workflow_id");
    session.user_id = get("user_id");
    session.session_data = object_field(doc, "session_data");
    session.agent_data = object_field(doc, "agent_data");
    session.metadata = object_field(doc, "metadata");
    session.summary = doc.get("summary").filter(|v| !v.is_null()).and_then(|v| serde_json::from_value(v.clone()).ok());
    for key in ["team_data", "workflow_data"] {
        if let Some(v) = doc.get(key).filter(|v| !v.is_null()) {
            session.extra.insert(key.to_owned(), v.clone());
        }
    }
    session.created_at = int_field(doc, "created_at");
    session.updated_at = int_field(doc, "updated_at");
    session.runs = None;
    Ok(session)
}

/// The legacy v2 `runs` field of a document, when it holds something.
pub(crate) fn legacy_blob(doc: &Map<String, Value>) -> Option<&Value> {
    doc.get("runs").filter(|v| !v.is_null())
}

fn session_matches(doc: &Map<String, Value>, q: &SessionQuery) -> bool {
    let created = int_field(doc, "created_at").unwrap_or(0);
    visible(str_field(doc, "user_id"), q.user_id.as_deref())
        && q.session_type.is_none_or(|t| doc_session_type(doc) == t.as_str())
        && q.component_id
            .as_deref()
            .is_none_or(|c| ["agent_id", "team_id", "workflow_id"].iter().any(|k| str_field(doc, k) == Some(c)))
        && q.session_name.as_deref().is_none_or(|n| {
            object_field(doc, "session_data")
                .and_then(|d| d.get("session_name").and_then(Value::as_str).map(str::to_lowercase))
                .is_some_and(|name| name.contains(&n.to_lowercase()))
        })
        && q.start_timestamp.is_none_or(|t| created >= t)
        && q.end_timestamp.is_none_or(|t| created <= t)
}

/// Filters, sorts and pages session documents as the SQL adapters do (ties broken by
/// `session_id`); the sessions carry no runs.
pub(crate) fn page_sessions<'a>(
    docs: impl IntoIterator<Item = &'a Map<String, Value>>,
    query: &SessionQuery,
) -> DbResult<SessionPage> {
    let mut sessions = crate::codec::readable(
        "session",
        docs.into_iter()
            .filter(|d| session_matches(d, query))
            .map(|d| (d.get("session_id").and_then(Value::as_str).map(str::to_owned), session_from_doc(d))),
    );
    if let Some(filter) = &query.filter {
        sessions.retain(|s| filter.holds(&|field| field.value_in(s)));
    }
    let key = |s: &AgentSession| match query.sort_by {
        SessionSort::CreatedAt => s.created_at,
        SessionSort::UpdatedAt => s.updated_at,
    };
    sessions.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.session_id.cmp(&b.session_id)));
    if query.sort_order == SortOrder::Desc {
        sessions.reverse();
    }
    let total = sessions.len() as u64;
    if let Some(limit) = query.limit {
        let skip = limit.saturating_mul(query.page.unwrap_or(1).max(1) - 1);
        sessions = sessions.into_iter().skip(skip).take(limit).collect();
    }
    Ok(SessionPage { sessions, total })
}

/// One stored run row: the indexed fields and the run itself.
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    /// Run id.
    pub(crate) run_id: String,
    /// Session the run belongs to.
    pub(crate) session_id: Option<String>,
    /// Owner.
    pub(crate) user_id: Option<String>,
    /// Position in the session.
    pub(crate) run_index: Option<i64>,
    /// `created_at` of the run (from the run itself, else the row).
    pub(crate) created_at: i64,
    /// The whole row.
    pub(crate) row: Map<String, Value>,
}

impl RunRow {
    /// Parses a stored row; `None` when it is not a run row.
    pub(crate) fn parse(value: Value) -> Option<Self> {
        let Value::Object(row) = value else { return None };
        let run_id = str_field(&row, "run_id")?.to_owned();
        let data_created = row.get("run_data").and_then(Value::as_object).and_then(|d| int_field(d, "created_at"));
        Some(Self {
            session_id: str_field(&row, "session_id").map(str::to_owned),
            user_id: str_field(&row, "user_id").map(str::to_owned),
            run_index: int_field(&row, "run_index"),
            created_at: data_created.or_else(|| int_field(&row, "created_at")).unwrap_or(0),
            run_id,
            row,
        })
    }

    /// A string column of the row.
    pub(crate) fn field(&self, key: &str) -> Option<&str> {
        str_field(&self.row, key)
    }

    /// The run stored in `run_data`.
    pub(crate) fn run(&self) -> DbResult<RunOutput> {
        match self.row.get("run_data") {
            Some(Value::String(text)) => decode_run(serde_json::from_str(text).map_err(|e| {
                DbError::new(DbErrorKind::Other, format!("stored run {} is corrupt: {e}", self.run_id)).with_source(e)
            })?),
            Some(v) if v.is_object() => decode_run(v.clone()),
            _ => Err(DbError::new(DbErrorKind::Other, format!("stored run {} has no run_data", self.run_id))),
        }
    }

    /// The run for a listing: `None` (with a warning) when it cannot be read.
    pub(crate) fn listed_run(&self) -> Option<RunOutput> {
        self.run().map_err(|e| skip_unreadable_run(&self.run_id, &e)).ok()
    }

    /// True when the row passes the filters of `q` (cursor and paging aside).
    pub(crate) fn matches(&self, q: &RunQuery) -> bool {
        let eq = |key: &str, want: &Option<String>| want.as_deref().is_none_or(|w| self.field(key) == Some(w));
        visible(self.user_id.as_deref(), q.user_id.as_deref())
            && eq("session_id", &q.session_id)
            && eq("agent_id", &q.agent_id)
            && eq("team_id", &q.team_id)
            && eq("workflow_id", &q.workflow_id)
            && q.status.is_none_or(|s| self.field("status") == Some(s.as_str()))
    }
}

/// Sorts rows by `run_index` (then `created_at`): a session's runs in insertion order.
pub(crate) fn sort_by_index(rows: &mut [RunRow]) {
    rows.sort_by_key(|r| (r.run_index.unwrap_or(0), r.created_at));
}

/// One page of runs from candidate rows: filters, orders by `(created_at, run_id)`, continues
/// after the cursor, and decodes only the rows of the page.
pub(crate) fn page_runs(rows: Vec<RunRow>, q: &RunQuery) -> DbResult<RunPage> {
    let mut rows: Vec<RunRow> = rows.into_iter().filter(|r| r.matches(q)).collect();
    rows.sort_by(|a, b| (a.created_at, &a.run_id).cmp(&(b.created_at, &b.run_id)));
    if q.sort == SortOrder::Desc {
        rows.reverse();
    }
    if let Some(c) = &q.cursor {
        let at = (c.created_at, c.run_id.as_str());
        rows.retain(|r| {
            let key = (r.created_at, r.run_id.as_str());
            match q.sort {
                SortOrder::Asc => key > at,
                SortOrder::Desc => key < at,
            }
        });
    }
    let limit = q.limit.unwrap_or(usize::MAX);
    let more = rows.len() > limit;
    let runs = rows.iter().take(limit).filter_map(RunRow::listed_run).collect::<Vec<_>>();
    let next_cursor = if more {
        runs.last().map(|r| RunCursor { created_at: r.created_at, run_id: r.id().to_owned() })
    } else {
        None
    };
    Ok(RunPage { runs, next_cursor })
}

/// A run row as Python Agno's `build_single_run_row` shapes it (same key order). `run_index` is
/// null when the caller assigns it.
pub(crate) fn build_run_row(
    run: &RunOutput,
    session_id: &str,
    user_id: Option<&str>,
    run_index: Option<i64>,
    now: i64,
) -> DbResult<Map<String, Value>> {
    let data = encode(run, &format!("run {}", run.id()))?;
    Ok(row_from_data(data, session_id, user_id, run_index, now))
}

fn row_from_data(
    data: Value,
    session_id: &str,
    user_id: Option<&str>,
    run_index: Option<i64>,
    now: i64,
) -> Map<String, Value> {
    let field = |k: &str| data.get(k).filter(|v| !v.is_null()).cloned().unwrap_or(Value::Null);
    let mut row = Map::new();
    row.insert("run_id".to_owned(), field("run_id"));
    row.insert("session_id".to_owned(), Value::String(session_id.to_owned()));
    row.insert("run_type".to_owned(), Value::String(run_type(&data).to_owned()));
    row.insert("agent_id".to_owned(), field("agent_id"));
    row.insert("team_id".to_owned(), field("team_id"));
    row.insert("workflow_id".to_owned(), field("workflow_id"));
    row.insert("user_id".to_owned(), user_id.map_or(Value::Null, |u| Value::String(u.to_owned())));
    row.insert("parent_run_id".to_owned(), field("parent_run_id"));
    row.insert("status".to_owned(), field("status"));
    row.insert("run_index".to_owned(), run_index.map_or(Value::Null, Value::from));
    let created_at = data.get("created_at").and_then(Value::as_i64).unwrap_or(now);
    row.insert("run_data".to_owned(), data);
    row.insert("created_at".to_owned(), Value::from(created_at));
    row.insert("updated_at".to_owned(), Value::from(now));
    row
}

/// The runs of a legacy `runs` field (a list, or a JSON text holding one), in stored order.
pub(crate) fn blob_list(blob: Option<&Value>) -> Vec<Value> {
    match blob {
        Some(Value::Array(list)) => list.clone(),
        Some(Value::String(text)) => match serde_json::from_str(text) {
            Ok(Value::Array(list)) => list,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The run ids of a legacy `runs` field.
pub(crate) fn blob_run_ids(blob: Option<&Value>) -> Vec<String> {
    blob_list(blob).iter().filter_map(|r| r.get("run_id")?.as_str().map(str::to_owned)).collect()
}

/// Rows for the runs table built from a session's legacy `runs` field, as Agno's v3.0.0
/// migration builds them: `run_index` is the position in the blob, `user_id` the session's.
pub(crate) fn legacy_rows(doc: &Map<String, Value>, now: i64) -> Vec<Map<String, Value>> {
    let Some(session_id) = str_field(doc, "session_id") else { return Vec::new() };
    let user_id = str_field(doc, "user_id");
    blob_list(legacy_blob(doc))
        .into_iter()
        .enumerate()
        .filter(|(_, run)| run.get("run_id").and_then(Value::as_str).is_some())
        .map(|(i, run)| row_from_data(run, session_id, user_id, Some(i64::try_from(i).unwrap_or(i64::MAX)), now))
        .collect()
}

/// Removes the given run ids from a document's legacy `runs` list; true when something changed.
pub(crate) fn scrub_blob(doc: &mut Map<String, Value>, run_ids: &[String]) -> bool {
    let Some(Value::Array(list)) = doc.get_mut("runs") else { return false };
    let before = list.len();
    list.retain(|r| !r.get("run_id").and_then(Value::as_str).is_some_and(|id| run_ids.iter().any(|x| x == id)));
    list.len() != before
}

/// Schema versions in `agno_schema_versions.json`: `{"table_name", "version", "updated_at"}` rows
/// (epoch seconds), as Python Agno's `JsonDb` writes them.
#[async_trait::async_trait]
impl<B: super::DocBackend> agno_core::SchemaStore for super::DocDb<B> {
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>> {
        let table_name = table_name.to_owned();
        self.read(move |files| Ok(stamped_version(&files.read(&files.tables().versions)?, &table_name))).await
    }

    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()> {
        let (table_name, version) = (table_name.to_owned(), version.to_owned());
        self.write(move |files| stamp(files, &table_name, &version)).await
    }
}

/// The version stamped for a table in the rows of the versions file.
pub(crate) fn stamped_version(rows: &[Value], table_name: &str) -> Option<String> {
    rows.iter()
        .filter_map(Value::as_object)
        .find(|r| str_field(r, "table_name") == Some(table_name))
        .and_then(|r| str_field(r, "version"))
        .map(str::to_owned)
}

/// Stamps a table's version (the caller holds the exclusive lock).
pub(crate) fn stamp(files: &mut dyn Docs, table_name: &str, version: &str) -> DbResult<()> {
    let versions = &files.tables().versions.clone();
    let mut rows = files.read(versions)?.into_owned();
    rows.retain(|r| r.get("table_name").and_then(Value::as_str) != Some(table_name));
    let mut row = Map::new();
    row.insert("table_name".to_owned(), Value::String(table_name.to_owned()));
    row.insert("version".to_owned(), Value::String(version.to_owned()));
    row.insert("updated_at".to_owned(), Value::from(agno_core::now_epoch_secs()));
    rows.push(Value::Object(row));
    files.write(versions, rows)
}
