//! Eval runs and knowledge contents of the in-memory store; the reference semantics the other
//! adapters follow.

use agno_core::{
    DbError, DbErrorKind, DbResult, EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, KnowledgeQuery, KnowledgeRow,
    KnowledgeSort, KnowledgeStore, SortOrder, new_id, now_epoch_secs,
};
use async_trait::async_trait;

use super::{InMemoryDb, visible};
use crate::memories::page_bounds;

fn eval_matches(e: &EvalRunRecord, q: &EvalQuery) -> bool {
    let eq = |want: &Option<String>, have: &Option<String>| want.as_deref().is_none_or(|w| have.as_deref() == Some(w));
    eq(&q.user_id, &e.user_id)
        && eq(&q.agent_id, &e.agent_id)
        && eq(&q.team_id, &e.team_id)
        && eq(&q.workflow_id, &e.workflow_id)
        && eq(&q.model_id, &e.model_id)
        && q.filter_type.is_none_or(|f| match f {
            EvalFilterType::Agent => e.agent_id.is_some(),
            EvalFilterType::Team => e.team_id.is_some(),
            EvalFilterType::Workflow => e.workflow_id.is_some(),
        })
        && q.eval_types.as_ref().is_none_or(|types| types.contains(&e.eval_type))
}

/// Shared rows (no owner) are visible to everyone; owned rows to their owner.
fn knowledge_visible(row: &KnowledgeRow, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| row.user_id.is_none() || row.user_id.as_deref() == Some(u))
}

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
        let mut list: Vec<EvalRunRecord> = tables.evals.values().filter(|e| eval_matches(e, query)).cloned().collect();
        list.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.run_id.cmp(&b.run_id)));
        if query.sort_order == SortOrder::Desc {
            list.reverse();
        }
        let total = list.len() as u64;
        let (offset, limit) = page_bounds(query.limit, query.page);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
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

#[async_trait]
impl KnowledgeStore for InMemoryDb {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let mut tables = self.lock()?;
        let mut row = row.clone();
        let id = row.id.get_or_insert_with(new_id).clone();
        if let Some(existing) = tables.knowledge.get(&id) {
            if existing.user_id.is_some() && existing.user_id != row.user_id {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!("knowledge content {id} belongs to another user"),
                ));
            }
            row.created_at = existing.created_at;
        }
        let now = now_epoch_secs();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(now);
        tables.knowledge.insert(id, row.clone());
        Ok(row)
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let tables = self.lock()?;
        Ok(tables.knowledge.get(id).filter(|k| knowledge_visible(k, user_id)).cloned())
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let tables = self.lock()?;
        let mut list: Vec<KnowledgeRow> = tables
            .knowledge
            .values()
            .filter(|k| knowledge_visible(k, query.user_id.as_deref()))
            .filter(|k| query.linked_to.as_deref().is_none_or(|l| k.linked_to.as_deref() == Some(l)))
            .cloned()
            .collect();
        list.sort_by(|a, b| {
            let primary = match query.sort_by {
                KnowledgeSort::CreatedAt => a.created_at.cmp(&b.created_at),
                KnowledgeSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
                KnowledgeSort::Name => a.name.cmp(&b.name),
            };
            primary.then_with(|| a.id.cmp(&b.id))
        });
        if query.sort_order == SortOrder::Desc {
            list.reverse();
        }
        let total = list.len() as u64;
        let (offset, limit) = page_bounds(query.limit, query.page);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let allowed = tables.knowledge.get(id).is_some_and(|k| match user_id {
            None => true,
            Some(u) => k.user_id.as_deref() == Some(u),
        });
        if allowed {
            tables.knowledge.remove(id);
        }
        Ok(allowed)
    }
}
