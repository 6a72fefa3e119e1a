//! Runs of the document stores: one row per run in `agno_runs` (`agno_runs.json`), `run_index`
//! assigned under the backend's exclusive lock (the directory's file lock for JSON files), so
//! writers in any number of processes never collide.

use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, RunOutput, RunPage, RunQuery, RunStore, StateUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;

use super::schema::{RunRow, build_run_row, page_runs, scrub_blob};
use super::sessions::find_session;
use super::{DocBackend, DocDb, Docs};
use crate::doc::visible;

#[async_trait]
impl<B: DocBackend> RunStore for DocDb<B> {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let (run, session_id, user_id) = (run.clone(), session_id.to_owned(), user_id.map(str::to_owned));
        self.write(move |files| write_run(files, &run, &session_id, user_id.as_deref())).await
    }

    async fn save_run_write(&self, write: agno_core::RunWrite<'_>) -> DbResult<i64> {
        let (session, state, run) = (write.session.clone(), write.state.clone(), write.run.clone());
        let user_id = write.user_id.map(str::to_owned);
        let write = move |files: &mut dyn Docs| write_with_session(files, &session, &state, &run, user_id.as_deref());
        self.write(write).await
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        let (run_id, user_id) = (run_id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let row = files
                .read(&files.tables().runs)?
                .iter()
                .cloned()
                .filter_map(RunRow::parse)
                .find(|r| r.run_id == run_id && visible(r.user_id.as_deref(), user_id.as_deref()));
            row.map(|r| r.run()).transpose()
        })
        .await
    }

    async fn get_runs(&self, query: &RunQuery) -> DbResult<RunPage> {
        let query = query.clone();
        self.read(move |files| {
            let rows = files.read(&files.tables().runs)?.iter().cloned().filter_map(RunRow::parse).collect();
            page_runs(rows, &query)
        })
        .await
    }

    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_runs(&[run_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let (ids, user_id) = (run_ids.to_vec(), user_id.map(str::to_owned));
        self.write(move |files| {
            let t = files.tables().clone();
            let mut rows = files.read(&t.runs)?.into_owned();
            let doomed = |r: &Value| {
                let field = |k: &str| r.get(k).and_then(Value::as_str);
                field("run_id").is_some_and(|id| ids.iter().any(|x| x == id))
                    && visible(field("user_id"), user_id.as_deref())
            };
            let deleted: Vec<String> = rows
                .iter()
                .filter(|r| doomed(r))
                .filter_map(|r| r.get("run_id").and_then(Value::as_str).map(str::to_owned))
                .collect();
            if deleted.is_empty() {
                return Ok(0);
            }
            rows.retain(|r| !doomed(r));
            files.write(&t.runs, rows)?;
            // A legacy `runs` field would bring the deleted runs back on the next read.
            let mut docs = files.read(&t.sessions)?.into_owned();
            let mut scrubbed = false;
            for doc in docs.iter_mut().filter_map(Value::as_object_mut) {
                scrubbed |= scrub_blob(doc, &deleted);
            }
            if scrubbed {
                files.write(&t.sessions, docs)?;
            }
            Ok(deleted.len() as u64)
        })
        .await
    }
}

/// The position and the stored `run_index` of the run's row; a `Conflict` when the run belongs
/// to another user or session.
pub(super) fn check_run(
    files: &dyn Docs,
    run: &RunOutput,
    session_id: &str,
    user_id: Option<&str>,
) -> DbResult<(Option<usize>, Option<i64>)> {
    let run_id = run.id();
    let rows = files.read(&files.tables().runs)?;
    let found = rows.iter().position(|r| r.get("run_id").and_then(Value::as_str) == Some(run_id));
    let Some(existing) = found.and_then(|i| RunRow::parse(rows[i].clone())) else { return Ok((found, None)) };
    run_conflict(&existing, session_id, user_id)?;
    Ok((found, existing.run_index))
}

/// A `Conflict` when the stored row `existing` of a run belongs to another user or session than
/// a write for `user_id` into `session_id`.
pub(crate) fn run_conflict(existing: &RunRow, session_id: &str, user_id: Option<&str>) -> DbResult<()> {
    let run_id = &existing.run_id;
    if existing.user_id.is_some() && existing.user_id.as_deref() != user_id {
        return Err(DbError::new(DbErrorKind::Conflict, format!("run {run_id} belongs to another user")));
    }
    if let Some(other) = existing.session_id.as_deref().filter(|s| *s != session_id) {
        return Err(DbError::new(
            DbErrorKind::Conflict,
            format!("run {run_id} belongs to session {other}, not {session_id}"),
        ));
    }
    Ok(())
}

/// Writes a run and its session: the run is checked first ([`check_run`]), so a refused run
/// changes nothing, then the session, then the run. The run's `run_index`.
///
/// # Errors
/// As [`check_run`], [`super::sessions::write_session`] and [`write_run`].
pub(super) fn write_with_session(
    files: &mut dyn Docs,
    session: &AgentSession,
    state: &StateUpdate,
    run: &RunOutput,
    user_id: Option<&str>,
) -> DbResult<i64> {
    check_run(files, run, &session.session_id, user_id)?;
    super::sessions::write_session(files, session, state)?;
    write_run(files, run, &session.session_id, user_id)
}

/// Writes a run's row (the rest of `upsert_run`), keeping a stored `run_index` or assigning the
/// session's next; refused, changing nothing, when its session does not exist or as
/// [`check_run`] refuses.
pub(super) fn write_run(
    files: &mut dyn Docs,
    run: &RunOutput,
    session_id: &str,
    user_id: Option<&str>,
) -> DbResult<i64> {
    if find_session(&files.read(&files.tables().sessions)?, session_id).is_none() {
        let run_id = run.id();
        return Err(DbError::new(
            DbErrorKind::Conflict,
            format!("cannot write run {run_id}: session {session_id} does not exist; save the session first"),
        ));
    }
    let (found, stored_index) = check_run(files, run, session_id, user_id)?;
    let table = files.tables().runs.clone();
    let mut rows = files.read(&table)?.into_owned();
    let run_index = stored_index.unwrap_or_else(|| {
        rows.iter()
            .filter(|r| r.get("session_id").and_then(Value::as_str) == Some(session_id))
            .filter_map(|r| r.get("run_index").and_then(Value::as_i64))
            .max()
            .map_or(0, |m| m + 1)
    });
    let row = Value::Object(build_run_row(run, session_id, user_id, Some(run_index), now_epoch_secs())?);
    match found {
        Some(i) => rows[i] = row,
        None => rows.push(row),
    }
    files.write(&table, rows)?;
    Ok(run_index)
}
