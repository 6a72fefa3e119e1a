//! Eval runs in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! - `{prefix}:evals:{run_id}`: the eval run document (JSON string, keys `created_at,
//!   updated_at, agent_id, model_id, model_provider, team_id, workflow_id, name,
//!   evaluated_component_name, run_id, eval_type, eval_data, eval_input`, then `user_id` when the
//!   run has an owner, as Agno's `update_eval_run_user_id` appends it);
//! - `{prefix}:evals:index:{field}:{value}`: sets of run ids per `agent_id`, `team_id`,
//!   `workflow_id`, `model_id` and `eval_type`, kept up to date on every write.
//!
//! Creation is one script (existence check and write together); renames are compare-and-set
//! scripts retried on contention (the owner check is decided on the document the write
//! replaces); deletes are one script per batch, checking the owner inside the script.

use crate::doc::evals::page_evals;
use std::sync::LazyLock;

use agno_core::{DbError, DbErrorKind, DbResult, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use async_trait::async_trait;
use redis::Script;
use serde_json::{Map, Value};

use super::{RedisDb, redis_error};
use crate::codec::to_json_text;
use crate::doc::visible;

/// Fields with an index set `{prefix}:evals:index:{field}:{value}` (as Agno).
const INDEX_FIELDS: [&str; 5] = ["agent_id", "team_id", "workflow_id", "model_id", "eval_type"];

/// Attempts of a compare-and-set before giving up (each round, one contender always wins).
const CAS_ATTEMPTS: usize = 10_000;

/// Lua helpers shared by the eval scripts. `ARGV[1]` is always the key prefix.
const PRELUDE: &str = r"
local FIELDS = {'agent_id', 'team_id', 'workflow_id', 'model_id', 'eval_type'}
local function ikey(field, value)
  return ARGV[1] .. ':evals:index:' .. field .. ':' .. value
end
";

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

/// Writes a new eval run unless its key exists, with its index sets.
/// KEYS: eval key. ARGV: prefix, run_id, document text, JSON list of index values.
/// Returns 1 when written, 0 when the run exists.
static CREATE_EVAL: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[3])
local values = cjson.decode(ARGV[4])
for i, f in ipairs(FIELDS) do
  if type(values[i]) == 'string' then redis.call('SADD', ikey(f, values[i]), ARGV[2]) end
end
return 1
",
    )
});

/// Compare-and-set of an existing eval run document, with its index sets.
/// KEYS: eval key. ARGV: prefix, run_id, expected text, new text, JSON list of old index values,
/// JSON list of new index values. Returns 1 when written, 0 when the document changed meanwhile.
static CAS_EVAL: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('GET', KEYS[1]) ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[4])
local old = cjson.decode(ARGV[5])
local new = cjson.decode(ARGV[6])
for i, f in ipairs(FIELDS) do
  if type(old[i]) == 'string' and old[i] ~= new[i] then redis.call('SREM', ikey(f, old[i]), ARGV[2]) end
  if type(new[i]) == 'string' then redis.call('SADD', ikey(f, new[i]), ARGV[2]) end
end
return 1
",
    )
});

/// Deletes the eval runs visible to the caller, with their index entries.
/// KEYS: eval keys. ARGV: prefix, has_user ('1'/'0'), user_id, then the run ids (as KEYS).
/// Returns how many were deleted.
static DELETE_EVALS: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local deleted = 0
for i, key in ipairs(KEYS) do
  local text = redis.call('GET', key)
  if text then
    local ok, doc = pcall(cjson.decode, text)
    if not ok or type(doc) ~= 'table' then doc = {} end
    local owner = doc['user_id']
    if ARGV[2] ~= '1' or (type(owner) == 'string' and owner == ARGV[3]) then
      local id = ARGV[3 + i]
      for _, f in ipairs(FIELDS) do
        local v = doc[f]
        if type(v) == 'string' then redis.call('SREM', ikey(f, v), id) end
      end
      redis.call('DEL', key)
      deleted = deleted + 1
    end
  end
end
return deleted
",
    )
});

/// An eval run document as Python Agno's `RedisDb.create_eval_run` writes it.
fn eval_doc(e: &EvalRunRecord) -> Map<String, Value> {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let mut doc = Map::new();
    doc.insert("created_at".to_owned(), e.created_at.map_or(Value::Null, Value::from));
    doc.insert("updated_at".to_owned(), e.updated_at.map_or(Value::Null, Value::from));
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
    if let Some(user) = &e.user_id {
        doc.insert("user_id".to_owned(), Value::String(user.clone()));
    }
    doc
}

/// The indexed values of an eval document, as a JSON list in `INDEX_FIELDS` order.
fn index_values(doc: Option<&Map<String, Value>>) -> String {
    let values: Vec<Value> = INDEX_FIELDS
        .iter()
        .map(|f| doc.and_then(|d| d.get(*f)).filter(|v| v.is_string()).cloned().unwrap_or(Value::Null))
        .collect();
    Value::Array(values).to_string()
}

/// Reads an eval run from its stored document; `None` when the document is not one.
fn eval_from_doc(doc: &Map<String, Value>) -> Option<EvalRunRecord> {
    serde_json::from_value(Value::Object(doc.clone())).ok()
}

fn not_an_eval(run_id: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("stored eval run {run_id} is not a valid eval run document"))
}

impl RedisDb {
    fn eval_key(&self, run_id: &str) -> String {
        self.doc_key("evals", run_id)
    }
}

#[async_trait]
impl EvalStore for RedisDb {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        let doc = eval_doc(&row);
        let id = &row.run_id;
        let written: i64 = CREATE_EVAL
            .key(self.eval_key(id))
            .arg(&self.prefix)
            .arg(id)
            .arg(to_json_text(&doc)?)
            .arg(index_values(Some(&doc)))
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot write eval run {id}"), e))?;
        if written == 1 {
            Ok(row)
        } else {
            Err(DbError::new(DbErrorKind::Conflict, format!("eval run {id} already exists")))
        }
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let Some((_, doc)) = self.doc_at("evals", run_id, "eval run").await? else { return Ok(None) };
        let record = eval_from_doc(&doc).ok_or_else(|| not_an_eval(run_id))?;
        Ok(visible(record.user_id.as_deref(), user_id).then_some(record))
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let docs = self.docs_of("evals").await?;
        Ok(page_evals(docs.iter().filter_map(eval_from_doc), query))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        self.delete_owned(&DELETE_EVALS, "evals", run_ids, user_id).await
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let key = self.eval_key(run_id);
        for _ in 0..CAS_ATTEMPTS {
            let Some((text, doc)) = self.doc_at("evals", run_id, "eval run").await? else { return Ok(None) };
            let mut record = eval_from_doc(&doc).ok_or_else(|| not_an_eval(run_id))?;
            if !visible(record.user_id.as_deref(), user_id) {
                return Ok(None);
            }
            record.name = Some(name.to_owned());
            record.updated_at = Some(now_epoch_secs());
            // Change only `name` and `updated_at`, keeping every other stored key as it is.
            let mut new = doc.clone();
            new.insert("name".to_owned(), Value::String(name.to_owned()));
            new.insert("updated_at".to_owned(), record.updated_at.map_or(Value::Null, Value::from));
            let written: i64 = CAS_EVAL
                .key(&key)
                .arg(&self.prefix)
                .arg(run_id)
                .arg(&text)
                .arg(to_json_text(&new)?)
                .arg(index_values(Some(&doc)))
                .arg(index_values(Some(&new)))
                .invoke_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot rename eval run {run_id}"), e))?;
            if written == 1 {
                return Ok(Some(record));
            }
        }
        Err(DbError::new(
            DbErrorKind::Conflict,
            format!("eval run {run_id} changed too often concurrently; retry the rename"),
        ))
    }
}
