//! Sessions in Redis: one JSON document per session at `{prefix}:sessions:{id}`, never carrying
//! runs (except a legacy v2 `runs` field, read only and carried forward). Writes are the shared
//! compare-and-set (`docs`) retried on contention, so concurrent merges lose nothing.

use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, SessionPage, SessionQuery, SessionStore, StateUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::RedisDb;
use super::docs::DocKind;
use super::schema::{DELETE_SESSION, SESSION_INDEX_FIELDS};
use crate::codec::{keep_latest, merge_legacy_runs};
use crate::doc::schema::{legacy_blob, merged_session_data, page_sessions, session_doc, session_from_doc, str_field};
use crate::doc::visible;

/// Session documents, with the index sets Agno keeps for them.
pub(crate) const SESSIONS: DocKind =
    DocKind { name: "sessions", key: "session_id", table: |t| &t.sessions, index: &SESSION_INDEX_FIELDS };

/// `('1', user)` when filtering on a user, `('0', "")` otherwise: the script arguments.
pub(crate) fn user_args(user_id: Option<&str>) -> (&'static str, &str) {
    match user_id {
        Some(u) => ("1", u),
        None => ("0", ""),
    }
}

/// The document `upsert_session` writes over the stored one (`current`); a `Conflict` when the
/// stored session belongs to another user.
pub(crate) fn planned_session_doc(
    session: &AgentSession,
    state: &StateUpdate,
    current: Option<&Map<String, Value>>,
) -> DbResult<Map<String, Value>> {
    if let Some(stored) = current {
        let owner = str_field(stored, "user_id");
        if owner.is_some() && owner != session.user_id.as_deref() {
            let id = &session.session_id;
            return Err(DbError::new(DbErrorKind::Conflict, format!("session {id} belongs to another user")));
        }
    }
    let now = now_epoch_secs();
    let created_at =
        current.and_then(|d| d.get("created_at").and_then(Value::as_i64)).or(session.created_at).unwrap_or(now);
    let data = merged_session_data(session, state, current);
    session_doc(session, data, created_at, now, current.and_then(legacy_blob))
}

/// The indexed values of a session document, as a JSON list in `SESSION_INDEX_FIELDS` order.
pub(crate) fn index_values(doc: Option<&Map<String, Value>>) -> String {
    let values: Vec<Value> = SESSION_INDEX_FIELDS
        .iter()
        .map(|f| doc.and_then(|d| str_field(d, f)).map_or(Value::Null, |v| Value::String(v.to_owned())))
        .collect();
    Value::Array(values).to_string()
}

impl RedisDb {
    /// Applies `change` to a stored session document with compare-and-set, retrying on
    /// contention. `change` returns `None` to leave the document alone.
    pub(crate) async fn update_session_doc<T>(
        &self,
        session_id: &str,
        mut change: impl FnMut(&mut Map<String, Value>) -> DbResult<Option<T>>,
    ) -> DbResult<Option<T>> {
        self.change_doc(SESSIONS, session_id, "session", |current| {
            let Some(doc) = current else { return Ok(None) };
            let mut new = doc.clone();
            Ok(change(&mut new)?.map(|out| (new, out)))
        })
        .await
    }
}

#[async_trait]
impl SessionStore for RedisDb {
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>> {
        let Some((_, doc)) = self.session_doc(session_id).await? else { return Ok(None) };
        if !visible(str_field(&doc, "user_id"), user_id) {
            return Ok(None);
        }
        let mut session = session_from_doc(&doc)?;
        let runs = match legacy_blob(&doc) {
            _ if runs_limit == Some(0) => Vec::new(),
            // Merge first, then bound: blob-only runs count towards the latest N.
            Some(blob) => keep_latest(
                merge_legacy_runs(self.session_runs(session_id, None).await?, Some(blob.clone()))?,
                runs_limit,
            ),
            None => self.session_runs(session_id, runs_limit).await?,
        };
        session.runs = Some(runs);
        Ok(Some(session))
    }

    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        let write = |current: Option<&Map<String, Value>>| Ok((planned_session_doc(session, state, current)?, ()));
        self.upsert_doc(SESSIONS, &session.session_id, "session", write).await
    }

    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<SessionPage> {
        let docs = self.session_docs().await?;
        page_sessions(docs.iter(), query)
    }

    async fn rename_session(
        &self,
        session_id: &str,
        session_name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<AgentSession>> {
        self.update_session_doc(session_id, |doc| {
            if !visible(str_field(doc, "user_id"), user_id) {
                return Ok(None);
            }
            crate::doc::sessions::rename_session_doc(doc, session_name).map(Some)
        })
        .await
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_sessions(&[session_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let mut deleted = 0;
        for id in session_ids {
            let keys = [self.session_key(id), self.by_session_key(id)];
            let done: i64 = self.owned_script(&DELETE_SESSION, &keys, id, user_id, "cannot delete session").await?;
            if done == 1 {
                // Its folds hold its messages verbatim: they go with it.
                agno_core::CompactionStore::delete_compactions(self, std::slice::from_ref(id)).await?;
            }
            deleted += u64::from(done == 1);
        }
        Ok(deleted)
    }
}
