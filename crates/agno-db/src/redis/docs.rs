//! One document per key, with the index sets Python Agno's `RedisDb` keeps beside it: the writes
//! every Redis area shares. A [`DocKind`] names a kind (`{prefix}:{kind}:{id}`) and the fields
//! indexed in `{prefix}:{kind}:index:{field}:{value}` sets; [`RedisDb::change_doc`] is the
//! compare-and-set loop over one document (the area only plans the new document from the stored
//! one), [`RedisDb::delete_docs`] the owner-checked delete of many. Both keep the index sets in
//! the same Lua script as the document, so a write is applied whole or not at all.

use std::collections::HashSet;
use std::sync::LazyLock;

use agno_core::{DbError, DbErrorKind, DbResult};
use redis::Script;
use serde_json::{Map, Value};

use super::sessions::user_args;
use super::{MGET_CHUNK, RedisDb, glob_escape, parse_doc, redis_error};
use crate::codec::to_json_text;
pub(crate) use crate::doc::documents::DocKind;
use crate::doc::documents::{Doc, Documents, Layout, indexed};

/// Attempts of a compare-and-set before giving up (each round, one contender always wins).
pub(crate) const CAS_ATTEMPTS: usize = 10_000;

/// The JSON list of `kind`'s indexed fields, as the scripts take it.
fn fields(kind: &DocKind) -> String {
    Value::from(kind.index.to_vec()).to_string()
}

/// Helpers of the document scripts. `ARGV[1]` is the key prefix, `ARGV[2]` the kind, `ARGV[3]`
/// the JSON list of indexed fields.
const PRELUDE: &str = r"
local FIELDS = cjson.decode(ARGV[3])
local function ikey(field, value)
  return ARGV[1] .. ':' .. ARGV[2] .. ':index:' .. field .. ':' .. value
end
local function decode(text)
  if not text then return {} end
  local ok, doc = pcall(cjson.decode, text)
  if ok and type(doc) == 'table' then return doc end
  return {}
end
";

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

/// Compare-and-set of one document with its index sets.
/// KEYS: the document key. ARGV: prefix, kind, fields, id, '1' when the document must be stored
/// as the expected text ('0': must be absent), the expected text, the new text.
/// Returns 1 when written, 0 when the stored document is not the expected one.
static PUT_DOC: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local cur = redis.call('GET', KEYS[1])
if ARGV[5] == '1' then
  if cur ~= ARGV[6] then return 0 end
elseif cur then
  return 0
end
local old, new = decode(cur), decode(ARGV[7])
for _, f in ipairs(FIELDS) do
  if type(old[f]) == 'string' and old[f] ~= new[f] then redis.call('SREM', ikey(f, old[f]), ARGV[4]) end
  if type(new[f]) == 'string' then redis.call('SADD', ikey(f, new[f]), ARGV[4]) end
end
redis.call('SET', KEYS[1], ARGV[7])
return 1
",
    )
});

/// Deletes the documents the caller may delete (any for an unscoped caller; otherwise only those
/// whose `user_id` is the caller's, never a shared one), with their index entries.
/// KEYS: document keys. ARGV: prefix, kind, fields, '1'/'0' for a user filter, the user, then the
/// ids (as KEYS). Returns how many were deleted.
static DELETE_DOCS: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local deleted = 0
for i, key in ipairs(KEYS) do
  local text = redis.call('GET', key)
  if text then
    local doc = decode(text)
    local owner = doc['user_id']
    if ARGV[4] ~= '1' or (type(owner) == 'string' and owner == ARGV[5]) then
      for _, f in ipairs(FIELDS) do
        if type(doc[f]) == 'string' then redis.call('SREM', ikey(f, doc[f]), ARGV[5 + i]) end
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

/// The error of a compare-and-set that lost `CAS_ATTEMPTS` rounds on `what`.
pub(crate) fn too_busy(what: &str) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("{what} changed too often concurrently; retry the write"))
}

impl RedisDb {
    /// The ids in the index set of `kind` for `field` = `value`.
    pub(crate) async fn indexed_ids(&self, kind: DocKind, field: &str, value: &str) -> DbResult<Vec<String>> {
        redis::cmd("SMEMBERS")
            .arg(format!("{}:{}:index:{field}:{value}", self.backend.prefix, kind.name))
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot read the {} of {field} {value}", kind.name), e))
    }

    /// Writes `new` as document `id` of `kind` when the stored one is still `expected` (its
    /// text; `None`: none is stored); false when it changed meanwhile.
    pub(crate) async fn put_doc(
        &self,
        kind: DocKind,
        id: &str,
        expected: Option<&str>,
        new: &Map<String, Value>,
    ) -> DbResult<bool> {
        let written: i64 = PUT_DOC
            .key(self.doc_key(kind.name, id))
            .arg(&self.backend.prefix)
            .arg(kind.name)
            .arg(fields(&kind))
            .arg(id)
            .arg(if expected.is_some() { "1" } else { "0" })
            .arg(expected.unwrap_or(""))
            .arg(to_json_text(new)?)
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot write {} {id}", kind.name), e))?;
        Ok(written == 1)
    }

    /// Changes document `id` of `kind` by compare-and-set, retried on contention: `plan` sees the
    /// stored document (`None`: none) and returns the document to write with what to answer, or
    /// `None` to write nothing. `what` names the document in errors (`"eval run"`).
    pub(crate) async fn change_doc<T>(
        &self,
        kind: DocKind,
        id: &str,
        what: &str,
        mut plan: impl FnMut(Option<&Map<String, Value>>) -> DbResult<Option<(Map<String, Value>, T)>>,
    ) -> DbResult<Option<T>> {
        for _ in 0..CAS_ATTEMPTS {
            let current = self.doc_at(kind.name, id, what).await?;
            let Some((new, out)) = plan(current.as_ref().map(|(_, doc)| doc))? else { return Ok(None) };
            if self.put_doc(kind, id, current.as_ref().map(|(text, _)| text.as_str()), &new).await? {
                return Ok(Some(out));
            }
        }
        Err(too_busy(&format!("{what} {id}")))
    }

    /// [`RedisDb::change_doc`] for a `plan` that always writes (an upsert); what it answers.
    pub(crate) async fn upsert_doc<T>(
        &self,
        kind: DocKind,
        id: &str,
        what: &str,
        mut plan: impl FnMut(Option<&Map<String, Value>>) -> DbResult<(Map<String, Value>, T)>,
    ) -> DbResult<T> {
        let written = self.change_doc(kind, id, what, |current| plan(current).map(Some)).await?;
        written.ok_or_else(|| DbError::new(DbErrorKind::Other, format!("{what} {id} was not written")))
    }

    /// Deletes the documents `ids` of `kind` that `user_id` may delete (none: any), in batches;
    /// the number deleted.
    pub(crate) async fn delete_docs(&self, kind: DocKind, ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let (has_user, user) = user_args(user_id);
        let mut deleted = 0;
        for chunk in ids.chunks(MGET_CHUNK) {
            let mut call = DELETE_DOCS.prepare_invoke();
            for id in chunk {
                call.key(self.doc_key(kind.name, id));
            }
            call.arg(&self.backend.prefix).arg(kind.name).arg(fields(&kind)).arg(has_user).arg(user);
            for id in chunk {
                call.arg(id);
            }
            let n: u64 = call
                .invoke_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot delete {}", kind.name), e))?;
            deleted += n;
        }
        Ok(deleted)
    }
}

impl Documents for RedisDb {
    const LAYOUT: Layout = Layout::Redis;

    async fn doc(&self, kind: &'static DocKind, id: &str, what: &str) -> DbResult<Option<Doc>> {
        Ok(self.doc_at(kind.name, id, what).await?.map(|(_, doc)| doc))
    }

    async fn docs(&self, kind: &'static DocKind, index: Option<(&'static str, &[&str])>) -> DbResult<Vec<Doc>> {
        let docs = match index {
            Some((field, values)) if kind.index.contains(&field) => {
                let mut keys = Vec::new();
                for value in values {
                    keys.extend(
                        self.indexed_ids(*kind, field, value).await?.iter().map(|id| self.doc_key(kind.name, id)),
                    );
                }
                self.mget(&keys).await?.into_iter().flatten().filter_map(|text| parse_doc(&text)).collect()
            }
            _ => self.docs_of(kind.name).await?,
        };
        // An index set may be stale by the time its documents are read: filter them again.
        let Some((field, values)) = index else { return Ok(docs) };
        let values: HashSet<&str> = values.iter().copied().collect();
        Ok(docs.into_iter().filter(|d| indexed(d, field, &values)).collect())
    }

    async fn insert_absent(&self, kind: &'static DocKind, docs: Vec<(String, Doc)>) -> DbResult<u64> {
        let mut stored = 0;
        for (id, doc) in docs {
            stored += u64::from(self.put_doc(*kind, &id, None, &doc).await?);
        }
        Ok(stored)
    }

    async fn change<T, P>(&self, kind: &'static DocKind, id: &str, what: &str, plan: P) -> DbResult<Option<T>>
    where
        T: Send + 'static,
        P: FnMut(Option<&Doc>) -> DbResult<Option<(Doc, T)>> + Send + 'static,
    {
        self.change_doc(*kind, id, what, plan).await
    }

    async fn delete(&self, kind: &'static DocKind, ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        self.delete_docs(*kind, ids, user_id).await
    }

    async fn clear(&self, kind: &'static DocKind) -> DbResult<()> {
        self.delete_keys(&format!("{}:{}:*", glob_escape(&self.backend.prefix), kind.name)).await?;
        Ok(())
    }
}
