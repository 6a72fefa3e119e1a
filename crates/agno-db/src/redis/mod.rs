//! `RedisDb`: the document family's backend in Redis, with the key layout of Python Agno's
//! `RedisDb`, so both can share a Redis:
//! - `{prefix}:sessions:{session_id}`: the session document (JSON string);
//! - `{prefix}:runs:{run_id}`: one run row (JSON string: indexed fields plus `run_data`);
//! - `{prefix}:runs:by_session:{session_id}`: sorted set of the session's run ids, scored by
//!   `run_index`;
//! - `{prefix}:{sessions|runs}:index:{field}:{value}`: sets of ids per field value, kept as Agno
//!   keeps them;
//! - `{prefix}:agno_schema_versions:{table}`: the table's schema version (plain string);
//! - `{prefix}:memories:*`, `{prefix}:evals:*`, `{prefix}:knowledge:*`, `{prefix}:approvals:*`,
//!   `{prefix}:compactions:*`: user memories, eval runs, knowledge contents, approvals and
//!   compaction records, written by the document family over `Documents` (`crate::doc`);
//! - `{prefix}:metrics:*`: metrics buckets (see `metrics`);
//! - `{prefix}:schedules:*`, `{prefix}:schedule_runs:*`: schedules and their runs, which Agno's
//!   `RedisDb` lacks, stored in the same style (see `schedules`).
//!
//! Every write that must be atomic runs as a Lua script (run index assignment, owner checks,
//! cascades), or as a compare-and-set script retried on contention (session documents, whose
//! JSON is rebuilt in Rust so numbers and key order survive untouched).

mod cas;
mod components;
mod docs;
mod job_docs;
mod jobs;
mod metrics;
mod migrate;
mod runs;
mod schedule_scripts;
mod schedules;
mod schema;
mod sessions;

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use agno_core::{DbError, DbErrorKind, DbResult};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError, Script};
use serde_json::{Map, Value};

use crate::doc::DocDb;
use crate::tables::TableNames;

/// Keys per `MGET`.
const MGET_CHUNK: usize = 500;

/// A Redis database: the document family ([`DocDb`]) over Redis keys laid out as Python Agno's
/// `RedisDb` lays them out. Cloning shares the same connection.
pub type RedisDb = DocDb<RedisDocs>;

/// Where a [`RedisDb`] keeps its documents: a connection to Redis and the key prefix.
pub struct RedisDocs {
    conn: ConnectionManager,
    prefix: String,
    /// The URL, password redacted, for messages.
    url: String,
    tables: TableNames,
}

impl fmt::Debug for RedisDocs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisDb").field("url", &self.url).field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

pub(crate) fn redis_error(what: &str, e: RedisError) -> DbError {
    let kind = if e.is_io_error() || e.is_connection_refusal() || e.is_timeout() || e.is_connection_dropped() {
        DbErrorKind::Unavailable
    } else {
        DbErrorKind::Other
    };
    DbError::new(kind, format!("{what}: {e}")).with_source(e)
}

/// Escapes the glob characters of a `SCAN MATCH` pattern.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Parses a stored JSON document; `None` when the text is not a JSON object.
pub(crate) fn parse_doc(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(doc)) => Some(doc),
        _ => None,
    }
}

/// Splits `redis://...?prefix=x` into the URL for the driver, the prefix, and a redacted URL.
fn parse_url(url: &str) -> DbResult<(String, Option<String>, String)> {
    let mut parsed = url::Url::parse(url.trim())
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("invalid redis url: {e}")).with_source(e))?;
    let prefix = crate::open::take_query_option(&mut parsed, "prefix");
    let driver_url = parsed.to_string();
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    Ok((driver_url, prefix, parsed.to_string()))
}

impl RedisDb {
    /// The key prefix Python Agno uses by default (`db_prefix="agno"`).
    pub const DEFAULT_PREFIX: &str = "agno";

    /// Connects to `url` (`redis://host:port/db`, optionally `?prefix=NAME` for the key prefix,
    /// default `agno`).
    ///
    /// # Errors
    /// [`DbErrorKind::Other`] for an invalid URL; [`DbErrorKind::Unavailable`], naming the URL,
    /// when Redis cannot be reached.
    pub async fn connect(url: &str) -> DbResult<Self> {
        Self::open(url, None).await
    }

    /// Connects with an explicit key prefix (overrides `?prefix=`).
    ///
    /// # Errors
    /// As [`RedisDb::connect`], or [`DbErrorKind::Other`] for an empty prefix.
    pub async fn connect_with(url: &str, prefix: &str) -> DbResult<Self> {
        Self::open(url, Some(prefix)).await
    }

    async fn open(url: &str, prefix: Option<&str>) -> DbResult<Self> {
        let (driver_url, url_prefix, shown) = parse_url(url)?;
        let prefix = prefix.map(str::to_owned).or(url_prefix).unwrap_or_else(|| Self::DEFAULT_PREFIX.to_owned());
        if prefix.is_empty() {
            return Err(DbError::new(DbErrorKind::Other, format!("empty redis key prefix for {shown}")));
        }
        let client = Client::open(driver_url.as_str())
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("invalid redis url {shown}: {e}")).with_source(e))?;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(60)));
        let conn = ConnectionManager::new_with_config(client, config).await.map_err(|e| {
            DbError::new(DbErrorKind::Unavailable, format!("cannot connect to redis at {shown}: {e}")).with_source(e)
        })?;
        Ok(DocDb::with_backend(RedisDocs { conn, prefix, url: shown, tables: TableNames::default() }))
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.backend.prefix
    }

    /// The table names used for schema-version stamps.
    pub fn tables(&self) -> &TableNames {
        &self.backend.tables
    }

    /// Deletes every key under this database's prefix (sessions, runs, indexes, versions, and
    /// anything else Agno stored there); returns how many keys were deleted.
    ///
    /// # Errors
    /// A storage error.
    pub async fn delete_all_keys(&self) -> DbResult<u64> {
        self.delete_keys(&format!("{}:*", glob_escape(&self.backend.prefix))).await
    }

    /// Deletes every key matching a `SCAN` pattern; how many were deleted.
    pub(crate) async fn delete_keys(&self, pattern: &str) -> DbResult<u64> {
        let keys = self.scan(pattern).await?;
        let mut deleted = 0u64;
        for chunk in keys.chunks(MGET_CHUNK) {
            let n: u64 = redis::cmd("DEL")
                .arg(chunk)
                .query_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot delete the keys of {pattern}"), e))?;
            deleted += n;
        }
        Ok(deleted)
    }

    pub(crate) fn conn(&self) -> ConnectionManager {
        self.backend.conn.clone()
    }

    pub(crate) fn session_key(&self, session_id: &str) -> String {
        self.doc_key("sessions", session_id)
    }

    pub(crate) fn run_key(&self, run_id: &str) -> String {
        self.doc_key("runs", run_id)
    }

    pub(crate) fn by_session_key(&self, session_id: &str) -> String {
        format!("{}:runs:by_session:{session_id}", self.backend.prefix)
    }

    pub(crate) fn version_key(&self, table: &str) -> String {
        format!("{}:{}:{table}", self.backend.prefix, self.backend.tables.versions)
    }

    /// Every key matching a `SCAN` pattern, sorted and without duplicates.
    pub(crate) async fn scan(&self, pattern: &str) -> DbResult<Vec<String>> {
        let mut conn = self.conn();
        let mut cursor: u64 = 0;
        let mut keys = BTreeSet::new();
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_error(&format!("cannot scan keys of {}", self.backend.url), e))?;
            keys.extend(batch);
            if next == 0 {
                return Ok(keys.into_iter().collect());
            }
            cursor = next;
        }
    }

    /// The key of document `id` of a kind (`{prefix}:{kind}:{id}`: `sessions`, `evals`, ...).
    pub(crate) fn doc_key(&self, kind: &str, id: &str) -> String {
        format!("{}:{kind}:{id}", self.backend.prefix)
    }

    /// Keys of the documents of a kind, without its index sets (`{prefix}:{kind}:index:*`).
    pub(crate) async fn doc_keys(&self, kind: &str) -> DbResult<Vec<String>> {
        let index = format!("{}:{kind}:index:", self.backend.prefix);
        let keys = self.scan(&format!("{}:{kind}:*", glob_escape(&self.backend.prefix))).await?;
        Ok(keys.into_iter().filter(|k| !k.starts_with(&index)).collect())
    }

    /// Every document of a kind (values that are not JSON documents are skipped).
    pub(crate) async fn docs_of(&self, kind: &str) -> DbResult<Vec<Map<String, Value>>> {
        let keys = self.doc_keys(kind).await?;
        Ok(self.mget(&keys).await?.into_iter().flatten().filter_map(|t| parse_doc(&t)).collect())
    }

    /// Document `id` of a kind, with its text (what a compare-and-set compares); an error naming
    /// it (`what`) when the stored value is not a JSON document.
    pub(crate) async fn doc_at(
        &self,
        kind: &str,
        id: &str,
        what: &str,
    ) -> DbResult<Option<(String, Map<String, Value>)>> {
        let Some(text) = self.get(&self.doc_key(kind, id)).await? else { return Ok(None) };
        let doc = parse_doc(&text)
            .ok_or_else(|| DbError::new(DbErrorKind::Other, format!("stored {what} {id} is not a JSON document")))?;
        Ok(Some((text, doc)))
    }

    /// Runs an owner-checked script on one document: `keys`, then the arguments such scripts
    /// take (prefix, `id`, `1`/`0` for a user filter, the user).
    pub(crate) async fn owned_script<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        keys: &[String],
        id: &str,
        user_id: Option<&str>,
        what: &str,
    ) -> DbResult<T> {
        let (has_user, user) = sessions::user_args(user_id);
        let mut call = script.prepare_invoke();
        for key in keys {
            call.key(key);
        }
        call.arg(&self.backend.prefix).arg(id).arg(has_user).arg(user);
        call.invoke_async(&mut self.conn()).await.map_err(|e| redis_error(&format!("{what} {id}"), e))
    }

    /// Keys of the run rows.
    pub(crate) async fn run_keys(&self) -> DbResult<Vec<String>> {
        let index = format!("{}:runs:index:", self.backend.prefix);
        let by_session = format!("{}:runs:by_session:", self.backend.prefix);
        let keys = self.scan(&format!("{}:runs:*", glob_escape(&self.backend.prefix))).await?;
        Ok(keys.into_iter().filter(|k| !k.starts_with(&index) && !k.starts_with(&by_session)).collect())
    }

    /// `MGET` in chunks; a missing (or non-string) key gives `None`.
    pub(crate) async fn mget(&self, keys: &[String]) -> DbResult<Vec<Option<String>>> {
        let mut conn = self.conn();
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(MGET_CHUNK) {
            let values: Vec<Option<String>> = redis::cmd("MGET")
                .arg(chunk)
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_error("cannot read keys", e))?;
            out.extend(values);
        }
        Ok(out)
    }

    /// `GET` of one key.
    pub(crate) async fn get(&self, key: &str) -> DbResult<Option<String>> {
        redis::cmd("GET")
            .arg(key)
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot read {key}"), e))
    }

    /// Every session document.
    pub(crate) async fn session_docs(&self) -> DbResult<Vec<Map<String, Value>>> {
        self.docs_of("sessions").await
    }

    /// One session document.
    pub(crate) async fn session_doc(&self, session_id: &str) -> DbResult<Option<(String, Map<String, Value>)>> {
        self.doc_at("sessions", session_id, "session").await
    }
}

/// Service accounts are kept by the SQL databases only (as Python Agno's): Redis answers that it
/// does not keep them.
impl agno_core::ServiceAccountStore for RedisDb {}

/// Agent files are kept by the SQL databases and the document stores: Redis answers that it
/// does not keep them (Agno's `DbFileSystem` needs an SQL engine).
impl agno_core::FileStore for RedisDb {}

/// Learnings are kept by the SQL databases (Python Agno's Redis answers 501 too).
impl agno_core::LearningStore for RedisDb {}
