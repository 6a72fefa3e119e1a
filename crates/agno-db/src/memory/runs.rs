//! Runs of the in-memory store: one entry per run, `run_index` assigned per session.

use agno_core::{DbResult, RunOutput, RunQuery, RunStore, SortOrder};
use async_trait::async_trait;

use super::{InMemoryDb, RunRow, visible};

#[async_trait]
impl RunStore for InMemoryDb {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let mut tables = self.lock()?;
        let run_id = run.id().to_owned();
        let run_index = match tables.runs.get(&run_id) {
            Some(existing) => existing.run_index,
            None => {
                tables.runs.values().filter(|r| r.session_id == session_id).map(|r| r.run_index + 1).max().unwrap_or(0)
            }
        };
        tables.runs.insert(
            run_id,
            RunRow {
                session_id: session_id.to_owned(),
                user_id: user_id.map(str::to_owned),
                run_index,
                run: run.clone(),
            },
        );
        Ok(run_index)
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        let tables = self.lock()?;
        Ok(tables.runs.get(run_id).filter(|r| visible(r.user_id.as_deref(), user_id)).map(|r| r.run.clone()))
    }

    async fn get_runs(&self, query: &RunQuery) -> DbResult<Vec<RunOutput>> {
        let tables = self.lock()?;
        let mut rows: Vec<&RunRow> = tables
            .runs
            .values()
            .filter(|r| visible(r.user_id.as_deref(), query.user_id.as_deref()))
            .filter(|r| query.session_id.as_deref().is_none_or(|s| r.session_id == s))
            .filter(|r| query.agent_id.is_none() || r.run.agent_id == query.agent_id)
            .filter(|r| query.status.is_none_or(|s| r.run.status == s))
            .collect();
        rows.sort_by_key(|r| (r.run.created_at, r.run_index));
        if query.sort == SortOrder::Desc {
            rows.reverse();
        }
        let limit = query.limit.unwrap_or(usize::MAX);
        Ok(rows.into_iter().take(limit).map(|r| r.run.clone()).collect())
    }

    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let owned = tables.runs.get(run_id).is_some_and(|r| visible(r.user_id.as_deref(), user_id));
        if owned {
            tables.runs.remove(run_id);
        }
        Ok(owned)
    }
}
