//! Eval runs: which a listing shows and in which order.
//!
//! Eval runs of the document stores (`agno_eval_runs.json`, documents shaped as Python Agno's `JsonDb`
//! writes them: `EvalRunRecord.model_dump()` with epoch `created_at`/`updated_at`, plus the v3
//! `user_id`). Filters, sort and paging run in process under the file lock.

use std::collections::BTreeSet;

use agno_core::{DbError, DbErrorKind, DbResult, EvalStore, EvalType, now_epoch_secs};
use agno_core::{EvalFilterType, EvalQuery, EvalRunRecord};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::memories::epoch_value;
use super::schema::str_field;
use super::{DocBackend, DocDb};
use super::{delete_visible, update_visible};
use crate::doc::visible;

/// True when `e` passes the listing's filters (owner, component ids, model, component kind,
/// eval types).
pub(crate) fn eval_matches(e: &EvalRunRecord, q: &EvalQuery) -> bool {
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

/// The page of `records` the listing `q` asks for (by `created_at`, then `run_id`), with the
/// number of matching records.
pub(crate) fn page_evals(records: impl IntoIterator<Item = EvalRunRecord>, q: &EvalQuery) -> (Vec<EvalRunRecord>, u64) {
    let list = records.into_iter().filter(|e| eval_matches(e, q)).collect();
    let by_time =
        |a: &EvalRunRecord, b: &EvalRunRecord| a.created_at.cmp(&b.created_at).then_with(|| a.run_id.cmp(&b.run_id));
    super::sort_and_page(list, by_time, q.sort_order, q.limit, q.page)
}

/// An object field; a JSON text holding an object is decoded too.
pub(crate) fn object_of(value: Option<&Value>) -> Option<Map<String, Value>> {
    match value? {
        Value::Object(m) => Some(m.clone()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        },
        _ => None,
    }
}

/// An eval run from a stored document; `None` for a document without a `run_id` or with an
/// unknown `eval_type` (written by a newer Agno).
fn eval_from_doc(doc: &Map<String, Value>) -> Option<EvalRunRecord> {
    let text = |key: &str| str_field(doc, key).map(str::to_owned);
    let eval_type: EvalType = serde_json::from_value(doc.get("eval_type")?.clone()).ok()?;
    Some(EvalRunRecord {
        run_id: text("run_id")?,
        eval_type,
        eval_data: object_of(doc.get("eval_data")).unwrap_or_default(),
        eval_input: object_of(doc.get("eval_input")),
        name: text("name"),
        agent_id: text("agent_id"),
        team_id: text("team_id"),
        workflow_id: text("workflow_id"),
        model_id: text("model_id"),
        model_provider: text("model_provider"),
        evaluated_component_name: text("evaluated_component_name"),
        user_id: text("user_id"),
        created_at: epoch_value(doc.get("created_at")),
        updated_at: epoch_value(doc.get("updated_at")),
    })
}

/// The fields of an eval run document that both of Python Agno's layouts write, in their order;
/// each layout places the timestamps and `user_id` itself.
pub(crate) fn eval_fields(e: &EvalRunRecord) -> Map<String, Value> {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let mut doc = Map::new();
    doc.insert("agent_id".to_owned(), text(&e.agent_id));
    doc.insert("model_id".to_owned(), text(&e.model_id));
    doc.insert("model_provider".to_owned(), text(&e.model_provider));
    doc.insert("team_id".to_owned(), text(&e.team_id));
    doc.insert("workflow_id".to_owned(), text(&e.workflow_id));
    doc.insert("name".to_owned(), text(&e.name));
    doc.insert("evaluated_component_name".to_owned(), text(&e.evaluated_component_name));
    doc.insert("run_id".to_owned(), Value::String(e.run_id.clone()));
    doc.insert("eval_type".to_owned(), Value::String(e.eval_type.as_str().to_owned()));
    doc.insert("eval_data".to_owned(), Value::Object(e.eval_data.clone()));
    doc.insert("eval_input".to_owned(), e.eval_input.clone().map_or(Value::Null, Value::Object));
    doc
}

/// The document Python Agno's `JsonDb` writes for an eval run (its key order), with `user_id`.
fn eval_doc(e: &EvalRunRecord) -> Map<String, Value> {
    let mut doc = eval_fields(e);
    doc.insert("user_id".to_owned(), e.user_id.clone().map_or(Value::Null, Value::String));
    doc.insert("created_at".to_owned(), e.created_at.map_or(Value::Null, Value::from));
    doc.insert("updated_at".to_owned(), e.updated_at.map_or(Value::Null, Value::from));
    doc
}

fn doc_id(doc: &Value) -> Option<&str> {
    doc.get("run_id").and_then(Value::as_str)
}

#[async_trait]
impl<B: DocBackend> EvalStore for DocDb<B> {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let mut row = record.clone();
        self.write(move |files| {
            let table = &files.tables().evals.clone();
            let mut docs = files.read(table)?.into_owned();
            if docs.iter().any(|d| doc_id(d) == Some(row.run_id.as_str())) {
                return Err(DbError::new(DbErrorKind::Conflict, format!("eval run {} already exists", row.run_id)));
            }
            let now = now_epoch_secs();
            row.created_at = Some(row.created_at.unwrap_or(now));
            row.updated_at = Some(row.updated_at.unwrap_or(now));
            docs.push(Value::Object(eval_doc(&row)));
            files.write(table, docs)?;
            Ok(row)
        })
        .await
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let (run_id, user_id) = (run_id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let docs = files.read(&files.tables().evals)?;
            Ok(docs
                .iter()
                .find(|d| doc_id(d) == Some(run_id.as_str()))
                .and_then(Value::as_object)
                .and_then(eval_from_doc)
                .filter(|e| visible(e.user_id.as_deref(), user_id.as_deref())))
        })
        .await
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            let docs = files.read(&files.tables().evals)?;
            Ok(page_evals(docs.iter().filter_map(Value::as_object).filter_map(eval_from_doc), &query))
        })
        .await
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let (ids, user_id) = (run_ids.iter().cloned().collect::<BTreeSet<String>>(), user_id.map(str::to_owned));
        self.write(move |files| {
            let table = files.tables().evals.clone();
            delete_visible(files, &table, "run_id", &ids, user_id.as_deref())
        })
        .await
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let (run_id, name, user_id) = (run_id.to_owned(), name.to_owned(), user_id.map(str::to_owned));
        self.write(move |files| {
            let table = files.tables().evals.clone();
            update_visible(files, &table, ("run_id", &run_id), user_id.as_deref(), |doc| {
                // Change only these keys: anything else a newer Agno stored is kept.
                doc.insert("name".to_owned(), Value::String(name));
                doc.insert("updated_at".to_owned(), Value::from(now_epoch_secs()));
                Ok(eval_from_doc(doc))
            })
        })
        .await
    }
}
