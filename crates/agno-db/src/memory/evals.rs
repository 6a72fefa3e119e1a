//! Eval runs of the in-memory store; the reference semantics the other adapters follow.

use crate::doc::evals::page_evals;
use agno_core::{DbError, DbErrorKind, DbResult, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use async_trait::async_trait;

use super::{InMemoryDb, visible};

#[async_trait]
impl EvalStore for InMemoryDb {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let mut tables = self.lock()?;
        if tables.evals.contains_key(&record.run_id) {
            return Err(DbError::new(DbErrorKind::Conflict, format!("eval run {} already exists", record.run_id)));
        }
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        tables.evals.insert(row.run_id.clone(), row.clone());
        Ok(row)
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let tables = self.lock()?;
        Ok(tables.evals.get(run_id).filter(|e| visible(e.user_id.as_deref(), user_id)).cloned())
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let tables = self.lock()?;
        Ok(page_evals(tables.evals.values().cloned(), query))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let mut deleted = 0;
        for id in run_ids {
            if tables.evals.get(id).is_some_and(|e| visible(e.user_id.as_deref(), user_id)) {
                tables.evals.remove(id);
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let mut tables = self.lock()?;
        let Some(row) = tables.evals.get_mut(run_id).filter(|e| visible(e.user_id.as_deref(), user_id)) else {
            return Ok(None);
        };
        row.name = Some(name.to_owned());
        row.updated_at = Some(now_epoch_secs());
        Ok(Some(row.clone()))
    }
}
