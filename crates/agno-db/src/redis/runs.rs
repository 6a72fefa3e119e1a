//! Runs in Redis: one row per run at `{prefix}:runs:{run_id}` plus the session's sorted set
//! `{prefix}:runs:by_session:{session_id}` scored by `run_index`. A Lua script assigns the index
//! (top score + 1), checks the owner and writes row, set and indexes atomically, so concurrent
//! writers never collide and saving run N costs the same for any N.

use std::collections::BTreeMap;

use agno_core::{
    DbError, DbErrorKind, DbResult, RunOutput, RunPage, RunQuery, RunStore, RunWrite, SessionStore, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::schema::{DELETE_RUN, RUN_INDEX_FIELDS, UPSERT_RUN};
use super::sessions::user_args;
use super::{RedisDb, redis_error};
use crate::doc::runs::run_conflict;
use crate::doc::schema::{RunRow, build_run_row, page_runs, scrub_blob, str_field};
use crate::doc::visible;

/// The indexed values of a run row, as a JSON list in `RUN_INDEX_FIELDS` order.
pub(crate) fn run_index_values(row: &Map<String, Value>) -> String {
    let values: Vec<Value> = RUN_INDEX_FIELDS
        .iter()
        .map(|f| str_field(row, f).map_or(Value::Null, |v| Value::String(v.to_owned())))
        .collect();
    Value::Array(values).to_string()
}

/// A row as JSON text with Python's separators; `run_index` is spliced in by the script between
/// `head` and `tail`, keeping Agno's key order.
pub(crate) fn split_row(row: &Map<String, Value>) -> (String, String) {
    let mut head = Vec::new();
    let mut tail = Vec::new();
    let mut after = false;
    for (k, v) in row {
        if k == "run_index" {
            after = true;
            continue;
        }
        let part = format!("{}: {v}", Value::String(k.clone()));
        if after { tail.push(part) } else { head.push(part) }
    }
    (format!("{{{}", head.join(", ")), format!("{}}}", tail.join(", ")))
}

impl RedisDb {
    /// Parsed rows of the given run keys (missing keys skipped).
    async fn rows(&self, keys: &[String]) -> DbResult<Vec<RunRow>> {
        let texts = self.mget(keys).await?;
        Ok(texts
            .into_iter()
            .flatten()
            .filter_map(|t| match serde_json::from_str(&t) {
                Ok(row) => Some(row),
                Err(e) => {
                    tracing::warn!(error = %e, "a stored run row is not JSON; it is left out of the listing");
                    None
                }
            })
            .filter_map(RunRow::parse)
            .collect())
    }

    /// The session's runs in `run_index` order (the latest `limit` when given).
    pub(crate) async fn session_runs(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<RunOutput>> {
        if limit == Some(0) {
            return Ok(Vec::new());
        }
        let start = limit.map_or(0, |n| -isize::try_from(n).unwrap_or(isize::MAX));
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.by_session_key(session_id))
            .arg(start)
            .arg(-1)
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot read the runs of session {session_id}"), e))?;
        let keys: Vec<String> = ids.iter().map(|id| self.run_key(id)).collect();
        Ok(self.rows(&keys).await?.iter().filter_map(RunRow::listed_run).collect())
    }
}

#[async_trait]
impl RunStore for RedisDb {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let run_id = run.id();
        if run_id.is_empty() {
            return Err(DbError::new(DbErrorKind::Other, "cannot write a run without a run_id"));
        }
        let row = build_run_row(run, session_id, user_id, None, now_epoch_secs())?;
        let (head, tail) = split_row(&row);
        let (has_user, user) = user_args(user_id);
        let reply: Vec<String> = UPSERT_RUN
            .key(self.run_key(run_id))
            .key(self.by_session_key(session_id))
            .key(self.session_key(session_id))
            .arg(&self.backend.prefix)
            .arg(run_id)
            .arg(session_id)
            .arg(has_user)
            .arg(user)
            .arg(head)
            .arg(tail)
            .arg(run_index_values(&row))
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot write run {run_id}"), e))?;
        match reply.first().map(String::as_str) {
            Some("ok") => reply.get(1).and_then(|n| n.parse().ok()).ok_or_else(|| {
                DbError::new(DbErrorKind::Other, format!("unexpected reply writing run {run_id}: {reply:?}"))
            }),
            Some("no_session") => Err(DbError::new(
                DbErrorKind::Conflict,
                format!("cannot write run {run_id}: session {session_id} does not exist; save the session first"),
            )),
            Some("other_user") => {
                Err(DbError::new(DbErrorKind::Conflict, format!("run {run_id} belongs to another user")))
            }
            Some("other_session") => Err(DbError::new(
                DbErrorKind::Conflict,
                format!(
                    "run {run_id} belongs to session {}, not {session_id}",
                    reply.get(1).map_or("", String::as_str)
                ),
            )),
            _ => Err(DbError::new(DbErrorKind::Other, format!("unexpected reply writing run {run_id}: {reply:?}"))),
        }
    }

    /// The session, then the run (Redis writes them in two scripts), the run checked against its
    /// stored row first so that a refused run writes nothing; only a concurrent write of the same
    /// run id between the check and the run's script can leave the session written alone.
    async fn save_run_write(&self, write: RunWrite<'_>) -> DbResult<i64> {
        let (run_id, session_id) = (write.run.id(), &write.session.session_id);
        let stored = self.get(&self.run_key(run_id)).await?;
        if let Some(existing) = stored.and_then(|t| serde_json::from_str(&t).ok()).and_then(RunRow::parse) {
            run_conflict(&existing, session_id, write.user_id)?;
        }
        self.upsert_session(write.session, write.state).await?;
        self.upsert_run(write.run, session_id, write.user_id).await
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        let Some(text) = self.get(&self.run_key(run_id)).await? else { return Ok(None) };
        let row = serde_json::from_str(&text)
            .ok()
            .and_then(RunRow::parse)
            .ok_or_else(|| DbError::new(DbErrorKind::Other, format!("stored run {run_id} is not a run row")))?;
        if !visible(row.user_id.as_deref(), user_id) {
            return Ok(None);
        }
        row.run().map(Some)
    }

    async fn get_runs(&self, query: &RunQuery) -> DbResult<RunPage> {
        let keys = match &query.session_id {
            Some(sid) => {
                let ids: Vec<String> = redis::cmd("ZRANGE")
                    .arg(self.by_session_key(sid))
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut self.conn())
                    .await
                    .map_err(|e| redis_error(&format!("cannot read the runs of session {sid}"), e))?;
                ids.iter().map(|id| self.run_key(id)).collect()
            }
            None => self.run_keys().await?,
        };
        page_runs(self.rows(&keys).await?, query)
    }

    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_runs(&[run_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let mut by_session: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut deleted = 0;
        for id in run_ids {
            let reply: Vec<String> =
                self.owned_script(&DELETE_RUN, &[self.run_key(id)], id, user_id, "cannot delete run").await?;
            if reply.first().map(String::as_str) == Some("1") {
                deleted += 1;
                if let Some(sid) = reply.get(1).filter(|s| !s.is_empty()) {
                    by_session.entry(sid.clone()).or_default().push(id.clone());
                }
            }
        }
        // A legacy `runs` field would bring the deleted runs back on the next read.
        for (sid, ids) in by_session {
            self.update_session_doc(&sid, |doc| Ok(scrub_blob(doc, &ids).then_some(()))).await?;
        }
        Ok(deleted)
    }
}
