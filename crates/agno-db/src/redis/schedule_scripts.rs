//! The Lua scripts that write Redis schedules and schedule runs (see `redis/schedules.rs` for
//! the key layout): each checks what it replaces, so a write is applied whole or not at all.

use std::sync::LazyLock;

use redis::Script;

/// Helpers shared by the schedule scripts. `ARGV[1]` is always the key prefix.
const PRELUDE: &str = r"
local prefix = ARGV[1]
local names = prefix .. ':schedules:index:owner_name'
local due = prefix .. ':schedules:index:next_run_at'
local function decode(text)
  if not text then return nil end
  local ok, doc = pcall(cjson.decode, text)
  if ok and type(doc) == 'table' then return doc end
  return nil
end
local function owner_of(doc)
  local u = doc['user_id']
  if type(u) == 'string' then return u end
  return nil
end
local function visible(doc, has_user, user)
  return has_user ~= '1' or owner_of(doc) == user
end
local function name_field(doc)
  local name = doc['name']
  if type(name) ~= 'string' then return nil end
  local o = owner_of(doc)
  if o then return string.len(o) .. ':' .. o .. ':' .. name end
  return '-:' .. name
end
-- True when another live schedule holds `field` (an entry left by a vanished one is ignored).
local function name_held(field, id)
  local held = redis.call('HGET', names, field)
  if not held or held == id then return false end
  local doc = decode(redis.call('GET', prefix .. ':schedules:' .. held))
  return doc ~= nil and name_field(doc) == field
end
local function set_due(id, at)
  if at == '' then redis.call('ZREM', due, id) else redis.call('ZADD', due, at, id) end
end
";

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

/// Writes a new schedule. KEYS: schedule key. ARGV: prefix, id, text, due score ('' for none).
/// Returns 'ok', 'exists' or 'name_taken'.
pub(super) static CREATE_SCHEDULE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
local field = name_field(cjson.decode(ARGV[3]))
if name_held(field, ARGV[2]) then return 'name_taken' end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('HSET', names, field, ARGV[2])
set_due(ARGV[2], ARGV[4])
return 'ok'
",
    )
});

/// Compare-and-set of a schedule, with its name and due entries.
/// KEYS: schedule key. ARGV: prefix, id, expected text, new text, due score ('' for none).
/// Returns 'ok', 'changed' (the stored document is not the expected one) or 'name_taken'.
pub(super) static WRITE_SCHEDULE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if redis.call('GET', KEYS[1]) ~= ARGV[3] then return 'changed' end
local old = name_field(cjson.decode(ARGV[3]))
local new = name_field(cjson.decode(ARGV[4]))
if new ~= old then
  if name_held(new, ARGV[2]) then return 'name_taken' end
  if old and redis.call('HGET', names, old) == ARGV[2] then redis.call('HDEL', names, old) end
end
redis.call('SET', KEYS[1], ARGV[4])
redis.call('HSET', names, new, ARGV[2])
set_due(ARGV[2], ARGV[5])
return 'ok'
",
    )
});

/// Claims the first candidate still stored as the claimer read it.
/// KEYS: candidate schedule keys, soonest first. ARGV: prefix, then per key the expected text
/// and the claimed text. Returns the 1-based position of the claimed candidate, 0 for none.
pub(super) static CLAIM_SCHEDULE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[2 * i] then
    redis.call('SET', key, ARGV[2 * i + 1])
    return i
  end
end
return 0
",
    )
});

/// Deletes the caller's runs of a schedule, then the schedule when the caller may.
/// KEYS: schedule key, the schedule's run set. ARGV: prefix, id, has_user, user_id.
/// Returns 1 when the schedule was deleted.
pub(super) static DELETE_SCHEDULE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
for _, rid in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local rkey = prefix .. ':schedule_runs:' .. rid
  local text = redis.call('GET', rkey)
  if not text then
    redis.call('SREM', KEYS[2], rid)
  else
    local run = decode(text)
    if run and visible(run, ARGV[3], ARGV[4]) then
      redis.call('DEL', rkey)
      redis.call('SREM', KEYS[2], rid)
    end
  end
end
local doc = decode(redis.call('GET', KEYS[1]))
if not doc or not visible(doc, ARGV[3], ARGV[4]) then return 0 end
local field = name_field(doc)
if field and redis.call('HGET', names, field) == ARGV[2] then redis.call('HDEL', names, field) end
redis.call('ZREM', due, ARGV[2])
redis.call('DEL', KEYS[1])
return 1
",
    )
});

/// Writes a new run under its schedule, checking the owner it copied is still the schedule's.
/// KEYS: schedule key, run key, the schedule's run set. ARGV: prefix, run id, text, has_owner,
/// owner. Returns 'ok', 'no_schedule', 'exists' or 'changed'.
pub(super) static CREATE_RUN: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local parent = decode(redis.call('GET', KEYS[1]))
if not parent then return 'no_schedule' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'exists' end
local o = owner_of(parent)
if ARGV[4] == '1' then
  if o ~= ARGV[5] then return 'changed' end
elseif o then
  return 'changed'
end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[2])
return 'ok'
",
    )
});

/// Deletes a schedule's runs completed before a cutoff. KEYS: the schedule's run set.
/// ARGV: prefix, schedule id, cutoff. Returns how many were deleted.
pub(super) static EXPIRE_RUNS: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local before = tonumber(ARGV[3])
local n = 0
for _, rid in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local rkey = prefix .. ':schedule_runs:' .. rid
  local text = redis.call('GET', rkey)
  if not text then
    redis.call('SREM', KEYS[1], rid)
  else
    local run = decode(text)
    local done = run and run['completed_at']
    if run and run['schedule_id'] == ARGV[2] and type(done) == 'number' and done < before then
      redis.call('DEL', rkey)
      redis.call('SREM', KEYS[1], rid)
      n = n + 1
    end
  end
end
return n
",
    )
});
