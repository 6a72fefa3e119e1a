//! Eval runs in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! - `{prefix}:evals:{run_id}`: the eval run document (JSON string, keys `created_at,
//!   updated_at, agent_id, model_id, model_provider, team_id, workflow_id, name,
//!   evaluated_component_name, run_id, eval_type, eval_data, eval_input`, then `user_id` when the
//!   run has an owner, as Agno's `update_eval_run_user_id` appends it);
//! - `{prefix}:evals:index:{field}:{value}`: sets of run ids per `agent_id`, `team_id`,
//!   `workflow_id`, `model_id` and `eval_type`, kept up to date on every write.
//!
//! Writes are the shared document writes (`docs`): creation and renames compare-and-set (the
//! owner check is decided on the document the write replaces), deletes one owner-checked script
//! per batch.

use agno_core::{DbError, DbErrorKind, DbResult, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::RedisDb;
use super::docs::DocKind;
use crate::doc::evals::{eval_fields, page_evals};
use crate::doc::visible;

/// Eval run documents, with the index sets Agno keeps for them.
const EVALS: DocKind =
    DocKind { name: "evals", index: &["agent_id", "team_id", "workflow_id", "model_id", "eval_type"] };

/// An eval run document as Python Agno's `RedisDb.create_eval_run` writes it (timestamps first,
/// `user_id` last and only for an owned run).
fn eval_doc(e: &EvalRunRecord) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert("created_at".to_owned(), e.created_at.map_or(Value::Null, Value::from));
    doc.insert("updated_at".to_owned(), e.updated_at.map_or(Value::Null, Value::from));
    doc.extend(eval_fields(e));
    if let Some(user) = &e.user_id {
        doc.insert("user_id".to_owned(), Value::String(user.clone()));
    }
    doc
}

/// Reads an eval run from its stored document; `None` when the document is not one.
fn eval_from_doc(doc: &Map<String, Value>) -> Option<EvalRunRecord> {
    serde_json::from_value(Value::Object(doc.clone())).ok()
}

fn not_an_eval(run_id: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("stored eval run {run_id} is not a valid eval run document"))
}

#[async_trait]
impl EvalStore for RedisDb {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        let (id, doc) = (&row.run_id, eval_doc(&row));
        self.upsert_doc(EVALS, id, "eval run", |current| match current {
            Some(_) => Err(DbError::new(DbErrorKind::Conflict, format!("eval run {id} already exists"))),
            None => Ok((doc.clone(), ())),
        })
        .await?;
        Ok(row)
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let Some((_, doc)) = self.doc_at(EVALS.name, run_id, "eval run").await? else { return Ok(None) };
        let record = eval_from_doc(&doc).ok_or_else(|| not_an_eval(run_id))?;
        Ok(visible(record.user_id.as_deref(), user_id).then_some(record))
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let docs = self.docs_of(EVALS.name).await?;
        Ok(page_evals(docs.iter().filter_map(eval_from_doc), query))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        self.delete_docs(EVALS, run_ids, user_id).await
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        self.change_doc(EVALS, run_id, "eval run", |current| {
            let Some(doc) = current else { return Ok(None) };
            let mut record = eval_from_doc(doc).ok_or_else(|| not_an_eval(run_id))?;
            if !visible(record.user_id.as_deref(), user_id) {
                return Ok(None);
            }
            record.name = Some(name.to_owned());
            record.updated_at = Some(now_epoch_secs());
            // Change only `name` and `updated_at`, keeping every other stored key as it is.
            let mut new = doc.clone();
            new.insert("name".to_owned(), Value::String(name.to_owned()));
            new.insert("updated_at".to_owned(), record.updated_at.map_or(Value::Null, Value::from));
            Ok(Some((new, record)))
        })
        .await
    }
}
