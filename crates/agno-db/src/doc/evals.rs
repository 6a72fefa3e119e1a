//! Eval runs of the document stores, written once for the in-memory store, the JSON files
//! (`agno_eval_runs.json`) and Redis (`{prefix}:evals:{run_id}`, with index sets per
//! `agent_id`, `team_id`, `workflow_id`, `model_id` and `eval_type`), each document shaped as
//! Python Agno writes it there: `EvalRunRecord.model_dump()` with epoch `created_at` and
//! `updated_at`, plus the v3 `user_id`. Filters, order and paging run in process.

use agno_core::{DbError, DbErrorKind, DbResult, EvalStore, EvalType, now_epoch_secs};
use agno_core::{EvalFilterType, EvalQuery, EvalRunRecord};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::DocDb;
use super::documents::{Doc, DocKind, Documents, Layout};
use super::memories::epoch_value;
use super::schema::str_field;
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

/// Eval run documents, with the index sets Python Agno's `RedisDb` keeps for them.
pub(crate) const EVALS: DocKind = DocKind {
    name: "evals",
    key: "run_id",
    table: |t| &t.evals,
    index: &["agent_id", "team_id", "workflow_id", "model_id", "eval_type"],
};

/// The document Python Agno writes for an eval run in `layout`: its `JsonDb` puts `user_id`
/// and the timestamps last; its `RedisDb` the timestamps first and `user_id` last, only for an
/// owned run (as its `update_eval_run_user_id` appends it).
fn eval_doc(layout: Layout, e: &EvalRunRecord) -> Doc {
    let stamp = |v: Option<i64>| v.map_or(Value::Null, Value::from);
    let mut doc = Map::new();
    if layout == Layout::Redis {
        doc.insert("created_at".to_owned(), stamp(e.created_at));
        doc.insert("updated_at".to_owned(), stamp(e.updated_at));
    }
    doc.extend(eval_fields(e));
    match (layout, &e.user_id) {
        (Layout::Json, user) => {
            doc.insert("user_id".to_owned(), user.clone().map_or(Value::Null, Value::String));
            doc.insert("created_at".to_owned(), stamp(e.created_at));
            doc.insert("updated_at".to_owned(), stamp(e.updated_at));
        }
        (Layout::Redis, Some(user)) => {
            doc.insert("user_id".to_owned(), Value::String(user.clone()));
        }
        (Layout::Redis, None) => {}
    }
    doc
}

#[async_trait]
impl<B> EvalStore for DocDb<B>
where
    DocDb<B>: Documents,
{
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        match self.insert_absent(&EVALS, vec![(row.run_id.clone(), eval_doc(Self::LAYOUT, &row))]).await? {
            0 => Err(DbError::new(DbErrorKind::Conflict, format!("eval run {} already exists", row.run_id))),
            _ => Ok(row),
        }
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let found = self.doc(&EVALS, run_id, "eval run").await?.as_ref().and_then(eval_from_doc);
        Ok(found.filter(|e| visible(e.user_id.as_deref(), user_id)))
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        Ok(page_evals(self.docs(&EVALS, None).await?.iter().filter_map(eval_from_doc), query))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        self.delete(&EVALS, run_ids, user_id).await
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let (name, user_id) = (name.to_owned(), user_id.map(str::to_owned));
        self.change(&EVALS, run_id, "eval run", move |current| {
            let Some(doc) = current else { return Ok(None) };
            let Some(mut record) = eval_from_doc(doc) else { return Ok(None) };
            if !visible(record.user_id.as_deref(), user_id.as_deref()) {
                return Ok(None);
            }
            record.name = Some(name.clone());
            record.updated_at = Some(now_epoch_secs());
            // Change only `name` and `updated_at`: anything else a newer Agno stored is kept.
            let mut new = doc.clone();
            new.insert("name".to_owned(), Value::String(name.clone()));
            new.insert("updated_at".to_owned(), record.updated_at.map_or(Value::Null, Value::from));
            Ok(Some((new, record)))
        })
        .await
    }
}
