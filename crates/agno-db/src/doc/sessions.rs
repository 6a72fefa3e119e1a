//! Sessions of the document stores: documents of `agno_sessions.json`, never carrying runs (except a
//! legacy v2 `runs` field, read only and carried forward).

use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, RunOutput, SessionPage, SessionQuery, SessionStore, StateUpdate,
    now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::schema::{
    RunRow, legacy_blob, merged_session_data, page_sessions, session_doc, session_from_doc, sort_by_index, str_field,
};
use super::{DocBackend, DocDb, Docs, update_visible};
use crate::codec::{keep_latest, merge_legacy_runs};
use crate::doc::visible;

/// Position of the first document with this `session_id`.
pub(crate) fn find_session(docs: &[Value], session_id: &str) -> Option<usize> {
    docs.iter().position(|d| d.get("session_id").and_then(Value::as_str) == Some(session_id))
}

/// The runs of a session from the runs file, in `run_index` order.
fn session_runs(files: &dyn Docs, session_id: &str) -> DbResult<Vec<RunRow>> {
    let mut rows: Vec<RunRow> = files
        .read(&files.tables().runs)?
        .iter()
        .cloned()
        .filter_map(RunRow::parse)
        .filter(|r| r.session_id.as_deref() == Some(session_id))
        .collect();
    sort_by_index(&mut rows);
    Ok(rows)
}

fn read_session(
    files: &dyn Docs,
    session_id: &str,
    user_id: Option<&str>,
    runs_limit: Option<usize>,
) -> DbResult<Option<AgentSession>> {
    let docs = files.read(&files.tables().sessions)?;
    let Some(Value::Object(doc)) = find_session(&docs, session_id).map(|i| &docs[i]) else {
        return Ok(None);
    };
    if !visible(str_field(doc, "user_id"), user_id) {
        return Ok(None);
    }
    let mut session = session_from_doc(doc)?;
    if runs_limit == Some(0) {
        session.runs = Some(Vec::new());
        return Ok(Some(session));
    }
    let rows = session_runs(files, session_id)?;
    let runs = match legacy_blob(doc) {
        Some(blob) => {
            let table = rows.iter().filter_map(RunRow::listed_run).collect::<Vec<RunOutput>>();
            keep_latest(merge_legacy_runs(table, Some(blob.clone()))?, runs_limit)
        }
        None => {
            let skip = runs_limit.map_or(0, |n| rows.len().saturating_sub(n));
            rows[skip..].iter().filter_map(RunRow::listed_run).collect::<Vec<_>>()
        }
    };
    session.runs = Some(runs);
    Ok(Some(session))
}

#[async_trait]
impl<B: DocBackend> SessionStore for DocDb<B> {
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>> {
        let (session_id, user_id) = (session_id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| read_session(files, &session_id, user_id.as_deref(), runs_limit)).await
    }

    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        let (session, state) = (session.clone(), state.clone());
        self.write(move |files| write_session(files, &session, &state)).await
    }

    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<SessionPage> {
        let query = query.clone();
        self.read(move |files| {
            let docs = files.read(&files.tables().sessions)?;
            page_sessions(docs.iter().filter_map(Value::as_object), &query)
        })
        .await
    }

    async fn rename_session(
        &self,
        session_id: &str,
        session_name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<AgentSession>> {
        let (session_id, name, user_id) = (session_id.to_owned(), session_name.to_owned(), user_id.map(str::to_owned));
        self.write(move |files| {
            let table = files.tables().sessions.clone();
            update_visible(files, &table, ("session_id", &session_id), user_id.as_deref(), |doc| {
                rename_session_doc(doc, &name).map(Some)
            })
        })
        .await
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_sessions(&[session_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let (ids, user_id) = (session_ids.to_vec(), user_id.map(str::to_owned));
        self.write(move |files| {
            let t = files.tables().clone();
            let mut docs = files.read(&t.sessions)?.into_owned();
            let doomed = |d: &Value| {
                d.as_object().is_some_and(|d| {
                    str_field(d, "session_id").is_some_and(|id| ids.iter().any(|x| x == id))
                        && visible(str_field(d, "user_id"), user_id.as_deref())
                })
            };
            let mut deleted: Vec<String> = docs
                .iter()
                .filter(|d| doomed(d))
                .filter_map(|d| d.get("session_id").and_then(Value::as_str).map(str::to_owned))
                .collect();
            deleted.dedup();
            if deleted.is_empty() {
                return Ok(0);
            }
            // Runs first: a crash in between leaves a session without runs, never orphan runs.
            let mut runs = files.read(&t.runs)?.into_owned();
            let before = runs.len();
            runs.retain(|r| {
                !r.get("session_id").and_then(Value::as_str).is_some_and(|sid| deleted.iter().any(|d| d == sid))
            });
            if runs.len() != before {
                files.write(&t.runs, runs)?;
            }
            super::compactions::delete_in(files, &deleted)?;
            docs.retain(|d| !doomed(d));
            files.write(&t.sessions, docs)?;
            let unique: std::collections::HashSet<&String> = deleted.iter().collect();
            Ok(unique.len() as u64)
        })
        .await
    }
}

/// Writes a session (the rest of `upsert_session`): refused, changing nothing, when it belongs
/// to another user.
pub(super) fn write_session(files: &mut dyn Docs, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
    let table = files.tables().sessions.clone();
    let mut docs = files.read(&table)?.into_owned();
    let now = now_epoch_secs();
    let found = find_session(&docs, &session.session_id);
    let stored = found.and_then(|i| docs[i].as_object());
    if let Some(stored) = stored {
        let owner = str_field(stored, "user_id");
        if owner.is_some() && owner != session.user_id.as_deref() {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("session {} belongs to another user", session.session_id),
            ));
        }
    }
    let created_at =
        stored.and_then(|d| d.get("created_at").and_then(Value::as_i64)).or(session.created_at).unwrap_or(now);
    let data = merged_session_data(session, state, stored);
    let doc = session_doc(session, data, created_at, now, stored.and_then(legacy_blob))?;
    match found {
        Some(i) => docs[i] = Value::Object(doc),
        None => docs.push(Value::Object(doc)),
    }
    files.write(&table, docs)
}

/// Names a stored session document `name` (in its `session_data`), as `rename_session` does on
/// every document store; the session as renamed.
pub(crate) fn rename_session_doc(doc: &mut Map<String, Value>, name: &str) -> DbResult<AgentSession> {
    let data = doc.entry("session_data").or_insert(Value::Null);
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Value::Object(data) = data {
        data.insert("session_name".to_owned(), Value::String(name.to_owned()));
    }
    doc.insert("updated_at".to_owned(), Value::from(now_epoch_secs()));
    session_from_doc(doc)
}
