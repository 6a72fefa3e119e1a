//! Runs of the in-memory store: one entry per run, `run_index` assigned per session.

use agno_core::{DbError, DbErrorKind, DbResult, RunCursor, RunOutput, RunPage, RunQuery, RunStore, SortOrder};
use async_trait::async_trait;

use super::{InMemoryDb, RunRow, Tables, visible};

fn matches(r: &RunRow, q: &RunQuery) -> bool {
    visible(r.user_id.as_deref(), q.user_id.as_deref())
        && q.session_id.as_deref().is_none_or(|s| r.session_id == s)
        && q.agent_id.as_deref().is_none_or(|a| r.run.agent_id.as_deref() == Some(a))
        && q.team_id.as_deref().is_none_or(|t| r.run.extra.get("team_id").and_then(|v| v.as_str()) == Some(t))
        && q.workflow_id.as_deref().is_none_or(|w| r.run.workflow_id.as_deref() == Some(w))
        && q.status.is_none_or(|s| r.run.status == s)
}

#[async_trait]
impl RunStore for InMemoryDb {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let mut tables = self.lock()?;
        let run_index = run_index_for(&tables, run, session_id, user_id)?;
        write_run(&mut tables, run, session_id, user_id, run_index);
        Ok(run_index)
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        let tables = self.lock()?;
        Ok(tables.runs.get(run_id).filter(|r| visible(r.user_id.as_deref(), user_id)).map(|r| r.run.clone()))
    }

    async fn get_runs(&self, query: &RunQuery) -> DbResult<RunPage> {
        let tables = self.lock()?;
        let mut rows: Vec<&RunRow> = tables.runs.values().filter(|r| matches(r, query)).collect();
        let key = |r: &RunRow| (r.run.created_at, r.run.id().to_owned());
        rows.sort_by_key(|r| key(r));
        if query.sort == SortOrder::Desc {
            rows.reverse();
        }
        if let Some(cursor) = &query.cursor {
            let at = (cursor.created_at, cursor.run_id.clone());
            rows.retain(|r| match query.sort {
                SortOrder::Asc => key(r) > at,
                SortOrder::Desc => key(r) < at,
            });
        }
        let limit = query.limit.unwrap_or(usize::MAX);
        let more = rows.len() > limit;
        let runs: Vec<RunOutput> = rows.into_iter().take(limit).map(|r| r.run.clone()).collect();
        let next_cursor = if more {
            runs.last().map(|r| RunCursor { created_at: r.created_at, run_id: r.id().to_owned() })
        } else {
            None
        };
        Ok(RunPage { runs, next_cursor })
    }

    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_runs(&[run_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let mut deleted = 0;
        for id in run_ids {
            if tables.runs.get(id).is_some_and(|r| visible(r.user_id.as_deref(), user_id)) {
                tables.runs.remove(id);
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// The index a write of `run` gets (kept when it exists, else the session's next); refused when
/// the run belongs to another user.
pub(super) fn run_index_for(
    tables: &Tables,
    run: &RunOutput,
    session_id: &str,
    user_id: Option<&str>,
) -> DbResult<i64> {
    match tables.runs.get(run.id()) {
        Some(existing) if existing.user_id.is_some() && existing.user_id.as_deref() != user_id => {
            Err(DbError::new(DbErrorKind::Conflict, format!("run {} belongs to another user", run.id())))
        }
        Some(existing) => Ok(existing.run_index),
        None => {
            Ok(tables.runs.values().filter(|r| r.session_id == session_id).map(|r| r.run_index + 1).max().unwrap_or(0))
        }
    }
}

/// Stores `run` at `run_index` (from [`run_index_for`]).
pub(super) fn write_run(tables: &mut Tables, run: &RunOutput, session_id: &str, user_id: Option<&str>, run_index: i64) {
    let row =
        RunRow { session_id: session_id.to_owned(), user_id: user_id.map(str::to_owned), run_index, run: run.clone() };
    tables.runs.insert(run.id().to_owned(), row);
}
