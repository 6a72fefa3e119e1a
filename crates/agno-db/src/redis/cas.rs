//! The compare-and-set script of the Redis job queue: a write of several keys applied only when
//! every value it read is unchanged (Redis's Lua scripts run atomically).

use std::sync::LazyLock;

use agno_core::DbResult;
use redis::Script;

use super::{RedisDb, redis_error};

/// A compare-and-set over any keys: every check must hold (else nothing changes), then every
/// operation is applied. KEYS: the keys. ARGV: prefix (unused), the number of checks, each check
/// as `kind, key index, value`, the number of operations, each as `kind, key index, a, b`.
/// Checks: `eq` (the string value is `value`; '' means absent), `lt` (the sorted set has fewer
/// than `value` members; else -1), `ztop` (the top score is `value`; '' means empty), `below`
/// (the top score is below `value`; else -2). Operations: `set`, `del`, `zadd` (score `a`,
/// member `b`), `zrem` (member `a`). Returns 1 when applied, 0 when a compared value changed.
pub(super) static CAS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local i = 2
local n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  local kind, key, v = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2]; i = i + 3
  if kind == 'eq' then
    local cur = redis.call('GET', key)
    if v == '' then
      if cur then return 0 end
    elseif cur ~= v then
      return 0
    end
  elseif kind == 'lt' then
    if redis.call('ZCARD', key) >= tonumber(v) then return -1 end
  elseif kind == 'ztop' then
    local top = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
    if v == '' then
      if #top > 0 then return 0 end
    elseif #top == 0 or tonumber(top[2]) ~= tonumber(v) then
      return 0
    end
  elseif kind == 'below' then
    local top = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
    if #top > 0 and tonumber(top[2]) >= tonumber(v) then return -2 end
  end
end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  local kind, key, a, b = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3]; i = i + 4
  if kind == 'set' then redis.call('SET', key, a)
  elseif kind == 'del' then redis.call('DEL', key)
  elseif kind == 'zadd' then redis.call('ZADD', key, a, b)
  elseif kind == 'zrem' then redis.call('ZREM', key, a)
  end
end
return 1
",
    )
});

/// What a [`Cas`] did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Applied {
    Yes,
    /// A compared value changed meanwhile: read again and retry.
    Changed,
    /// An `lt` check failed (the queue is full).
    Full,
    /// A `below` check failed (an event index is taken).
    Taken,
}

/// A compare-and-set being built: keys are numbered as they are first named.
#[derive(Default)]
pub(super) struct Cas {
    keys: Vec<String>,
    checks: Vec<[String; 3]>,
    ops: Vec<[String; 4]>,
}

impl Cas {
    pub(super) fn key(&mut self, key: &str) -> String {
        let i = match self.keys.iter().position(|k| k == key) {
            Some(i) => i,
            None => {
                self.keys.push(key.to_owned());
                self.keys.len() - 1
            }
        };
        (i + 1).to_string()
    }
    pub(super) fn check(&mut self, kind: &str, key: &str, value: &(impl ToString + ?Sized)) -> &mut Self {
        let k = self.key(key);
        self.checks.push([kind.to_owned(), k, value.to_string()]);
        self
    }
    /// The string at `key` is still `text` (`None`: still absent).
    pub(super) fn unchanged(&mut self, key: &str, text: Option<&str>) -> &mut Self {
        self.check("eq", key, text.unwrap_or(""))
    }
    pub(super) fn op(
        &mut self,
        kind: &str,
        key: &str,
        a: &(impl ToString + ?Sized),
        b: &(impl ToString + ?Sized),
    ) -> &mut Self {
        let k = self.key(key);
        self.ops.push([kind.to_owned(), k, a.to_string(), b.to_string()]);
        self
    }
    pub(super) fn set(&mut self, key: &str, value: &str) -> &mut Self {
        self.op("set", key, value, "")
    }
    pub(super) fn del(&mut self, key: &str) -> &mut Self {
        self.op("del", key, "", "")
    }
    pub(super) fn zadd(&mut self, key: &str, score: i64, member: &str) -> &mut Self {
        self.op("zadd", key, &score, member)
    }
    pub(super) fn zrem(&mut self, key: &str, member: &str) -> &mut Self {
        self.op("zrem", key, member, "")
    }

    pub(super) async fn apply(&self, db: &RedisDb, what: &str) -> DbResult<Applied> {
        let mut call = CAS.prepare_invoke();
        for k in &self.keys {
            call.key(k);
        }
        call.arg(&db.backend.prefix).arg(self.checks.len());
        for c in &self.checks {
            call.arg(&c[..]);
        }
        call.arg(self.ops.len());
        for o in &self.ops {
            call.arg(&o[..]);
        }
        let done: i64 = call.invoke_async(&mut db.conn()).await.map_err(|e| redis_error(what, e))?;
        Ok(match done {
            1 => Applied::Yes,
            -1 => Applied::Full,
            -2 => Applied::Taken,
            _ => Applied::Changed,
        })
    }
}
