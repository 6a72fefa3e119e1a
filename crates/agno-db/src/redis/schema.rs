//! The Lua scripts that make `RedisDb` writes atomic, the index fields Agno keeps, and the
//! schema-version keys (`{prefix}:agno_schema_versions:{table}`, a plain version string, as
//! Python Agno stores them).

use std::sync::LazyLock;

use agno_core::{DbResult, SchemaStore};
use async_trait::async_trait;
use redis::Script;

use super::{RedisDb, redis_error};
use crate::migration::LATEST_VERSION;

/// Fields of a run row with an index set `{prefix}:runs:index:{field}:{value}` (as Agno).
pub(crate) const RUN_INDEX_FIELDS: [&str; 7] =
    ["session_id", "user_id", "agent_id", "team_id", "workflow_id", "run_type", "status"];

/// Fields of a session document with an index set `{prefix}:sessions:index:{field}:{value}`.
pub(crate) const SESSION_INDEX_FIELDS: [&str; 5] = ["user_id", "agent_id", "team_id", "workflow_id", "session_type"];

/// Helpers shared by every script. `ARGV[1]` is always the key prefix.
const PRELUDE: &str = r#"
local prefix = ARGV[1]
local RUN_FIELDS = {'session_id', 'user_id', 'agent_id', 'team_id', 'workflow_id', 'run_type', 'status'}
local SESSION_FIELDS = {'user_id', 'agent_id', 'team_id', 'workflow_id', 'session_type'}
local function str(v)
  if type(v) == 'string' then return v end
  if type(v) == 'number' then return tostring(v) end
  return nil
end
local function ikey(tbl, field, value)
  return prefix .. ':' .. tbl .. ':index:' .. field .. ':' .. value
end
local function unindex(tbl, fields, doc, member)
  for _, f in ipairs(fields) do
    local v = str(doc[f])
    if v then redis.call('SREM', ikey(tbl, f, v), member) end
  end
end
local function index(tbl, fields, values, member)
  for i, f in ipairs(fields) do
    if type(values[i]) == 'string' then redis.call('SADD', ikey(tbl, f, values[i]), member) end
  end
end
-- Session compare-and-set, split so several writes can share one script: the check, then the
-- write with its index sets.
local function session_unchanged(key, expect_existing, expected)
  local cur = redis.call('GET', key)
  if expect_existing == '1' then return cur == expected end
  return not cur
end
local function session_write(key, session_id, new_text, old_values, new_values)
  redis.call('SET', key, new_text)
  local old = cjson.decode(old_values)
  local new = cjson.decode(new_values)
  for i, f in ipairs(SESSION_FIELDS) do
    if type(old[i]) == 'string' and old[i] ~= new[i] then redis.call('SREM', ikey('sessions', f, old[i]), session_id) end
  end
  index('sessions', SESSION_FIELDS, new, session_id)
end
-- Run upsert, split the same way: the owner and session checks (an error reply, or nil and the
-- stored row), then the write, which assigns run_index (kept on update, else top + 1).
local function run_check(run_key, session_id, has_user, user)
  local old = redis.call('GET', run_key)
  if not old then return nil, nil end
  local row = cjson.decode(old)
  local owner = str(row['user_id'])
  if owner and (has_user ~= '1' or owner ~= user) then return {'other_user'}, nil end
  local sid = str(row['session_id'])
  if sid and sid ~= session_id then return {'other_session', sid}, nil end
  return nil, row
end
local function run_write(run_key, by_session_key, run_id, row, head, tail, values)
  local idx = nil
  if row then
    if type(row['run_index']) == 'number' then idx = row['run_index'] end
    unindex('runs', RUN_FIELDS, row, run_id)
  end
  if not idx then
    local top = redis.call('ZREVRANGE', by_session_key, 0, 0, 'WITHSCORES')
    if #top == 0 then idx = 0 else idx = math.floor(tonumber(top[2])) + 1 end
  end
  local n = string.format('%d', idx)
  redis.call('SET', run_key, head .. ', "run_index": ' .. n .. ', ' .. tail)
  redis.call('ZADD', by_session_key, idx, run_id)
  index('runs', RUN_FIELDS, cjson.decode(values), run_id)
  return {'ok', n}
end
local function drop_run(run_id)
  local key = prefix .. ':runs:' .. run_id
  local text = redis.call('GET', key)
  if not text then return false end
  local ok, row = pcall(cjson.decode, text)
  if ok and type(row) == 'table' then unindex('runs', RUN_FIELDS, row, run_id) end
  redis.call('DEL', key)
  return true
end
"#;

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

/// Inserts or updates a run row and assigns its `run_index` atomically.
/// KEYS: run key, the session's run set, session key.
/// ARGV: prefix, run_id, session_id, has_user ('1'/'0'), user_id, row head, row tail,
/// JSON list of the new index values (in `RUN_INDEX_FIELDS` order).
/// Returns `{'ok', index}`, `{'no_session'}`, `{'other_user'}` or `{'other_session', id}`.
pub(crate) static UPSERT_RUN: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('EXISTS', KEYS[3]) == 0 then return {'no_session'} end
local err, row = run_check(KEYS[1], ARGV[3], ARGV[4], ARGV[5])
if err then return err end
return run_write(KEYS[1], KEYS[2], ARGV[2], row, ARGV[6], ARGV[7], ARGV[8])
",
    )
});

/// Writes a legacy run row unless the run already has one (the runs keys win).
/// KEYS: run key, the session's run set. ARGV: prefix, run_id, run_index, row, index values.
/// Returns 1 when written.
pub(crate) static INSERT_RUN_IF_ABSENT: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], tonumber(ARGV[3]), ARGV[2])
index('runs', RUN_FIELDS, cjson.decode(ARGV[5]), ARGV[2])
return 1
",
    )
});

/// Deletes one run visible to the caller. KEYS: run key. ARGV: prefix, run_id, has_user, user_id.
/// Returns `{'0'}`, or `{'1', session_id}`.
pub(crate) static DELETE_RUN: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local text = redis.call('GET', KEYS[1])
if not text then return {'0'} end
local row = cjson.decode(text)
if ARGV[3] == '1' and str(row['user_id']) ~= ARGV[4] then return {'0'} end
unindex('runs', RUN_FIELDS, row, ARGV[2])
redis.call('DEL', KEYS[1])
local sid = str(row['session_id'])
if sid then
  redis.call('ZREM', prefix .. ':runs:by_session:' .. sid, ARGV[2])
  return {'1', sid}
end
return {'1', ''}
",
    )
});

/// Deletes a session visible to the caller with its runs and indexes.
/// KEYS: session key, the session's run set. ARGV: prefix, session_id, has_user, user_id.
/// Returns 1 when deleted.
pub(crate) static DELETE_SESSION: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local text = redis.call('GET', KEYS[1])
if not text then return 0 end
local doc = cjson.decode(text)
if ARGV[3] == '1' and str(doc['user_id']) ~= ARGV[4] then return 0 end
unindex('sessions', SESSION_FIELDS, doc, ARGV[2])
redis.call('DEL', KEYS[1])
for _, rid in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do drop_run(rid) end
redis.call('DEL', KEYS[2])
return 1
",
    )
});

/// A claimed run's write: the job document (the lease check, by compare-and-set on the text the
/// caller read and found holding), the session compare-and-set and the run upsert, all or
/// nothing (every check comes before the first write).
/// KEYS: job key, running set, session key, run key, the session's run set.
/// ARGV: prefix, job expected text, job new text, running score ('' for none), job id,
/// session_id, session expect_existing, session expected text, session new text, old and new
/// session index values, run_id, has_user, user_id, row head, row tail, run index values.
/// Returns `{'ok', index}`, `{'retry'}` (the job or session changed meanwhile), or an error reply
/// of `UPSERT_RUN`.
pub(crate) static SAVE_CLAIMED_RUN: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return {'retry'} end
if not session_unchanged(KEYS[3], ARGV[7], ARGV[8]) then return {'retry'} end
local err, row = run_check(KEYS[4], ARGV[6], ARGV[13], ARGV[14])
if err then return err end
redis.call('SET', KEYS[1], ARGV[3])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], tonumber(ARGV[4]), ARGV[5]) end
session_write(KEYS[3], ARGV[6], ARGV[9], ARGV[10], ARGV[11])
return run_write(KEYS[4], KEYS[5], ARGV[12], row, ARGV[15], ARGV[16], ARGV[17])
",
    )
});

impl RedisDb {
    /// Stamps the sessions and metrics key spaces at the latest schema when they hold no key
    /// yet (a fresh database), and the runs, schedules and schedule runs key spaces (which only
    /// v3 writes) when unstamped. Existing unstamped sessions and metrics are left to the
    /// migrations.
    ///
    /// # Errors
    /// A storage error.
    pub async fn create_tables(&self) -> DbResult<()> {
        let t = self.tables().clone();
        if self.get_latest_schema_version(&t.sessions).await?.is_none() && self.doc_keys("sessions").await?.is_empty() {
            self.upsert_schema_version(&t.sessions, LATEST_VERSION).await?;
        }
        if self.get_latest_schema_version(&t.metrics).await?.is_none() && !self.has_keys("metrics").await? {
            self.upsert_schema_version(&t.metrics, LATEST_VERSION).await?;
        }
        for table in [&t.runs, &t.schedules, &t.schedule_runs] {
            if self.get_latest_schema_version(table).await?.is_none() {
                self.upsert_schema_version(table, LATEST_VERSION).await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SchemaStore for RedisDb {
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>> {
        self.get(&self.version_key(table_name)).await
    }

    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()> {
        let key = self.version_key(table_name);
        redis::cmd("SET")
            .arg(&key)
            .arg(version)
            .query_async::<()>(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot stamp schema version of {table_name}"), e))
    }
}
