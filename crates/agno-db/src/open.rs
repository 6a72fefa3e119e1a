//! Opening a database by URL: `memory://`, `sqlite://PATH` (or a bare `*.db` path), `postgresql://`,
//! `mysql://`, `redis://`, `json://DIR`.

use std::sync::Arc;

use agno_core::{Db, DbError, DbErrorKind, DbResult, redact_url};

use crate::doc::InMemoryDb;
use crate::migration::{Migrate, MigrationManager};
use crate::sqlite::SqliteDb;

/// Opens the database named by `url`. Does not create or migrate tables: see [`open_ready`].
///
/// # Errors
/// [`DbErrorKind::Other`] for a URL that cannot be parsed or names an unknown scheme;
/// [`DbErrorKind::Unavailable`] when the database cannot be reached.
pub async fn open(url: &str) -> DbResult<Arc<dyn Migrate>> {
    let url = url.trim();
    let shown = redact_url(url);
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("memory") => Ok(Arc::new(InMemoryDb::new())),
        Some("sqlite") => Ok(Arc::new(SqliteDb::connect(url).await?)),
        Some("redis") => Ok(Arc::new(crate::redis::RedisDb::connect(url).await?)),
        Some("json") => Ok(Arc::new(crate::doc::JsonDb::connect(url).await?)),
        Some(s) if s == "mysql" || s == "mariadb" || s.starts_with("mysql+") => {
            Ok(Arc::new(crate::mysql::MySqlDb::connect(url).await?))
        }
        Some(s) if s.split('+').next().is_some_and(|base| base == "postgres" || base == "postgresql") => {
            Ok(Arc::new(crate::postgres::PostgresDb::connect(url).await?))
        }
        None if url.ends_with(".db") || url.ends_with(".sqlite") || url.ends_with(".sqlite3") => {
            Ok(Arc::new(SqliteDb::connect(url).await?))
        }
        Some(other) => Err(DbError::new(
            DbErrorKind::Other,
            format!(
                "unsupported database url scheme {other:?} in {shown:?}; supported: memory://, sqlite://, \
                 postgresql://, mysql://, redis://, json://"
            ),
        )),
        None => Err(DbError::new(
            DbErrorKind::Other,
            format!("cannot parse database url {shown:?}; expected e.g. sqlite://agno.db or memory://"),
        )),
    }
}

/// Opens the database, creates missing tables, and refuses a database that needs migrating,
/// naming the pending steps and the command that applies them.
///
/// # Errors
/// As [`open`]; [`DbErrorKind::SchemaTooOld`] when migrations are pending.
pub async fn open_ready(url: &str) -> DbResult<Arc<dyn Db>> {
    let db = open(url).await?;
    let status = MigrationManager::new(db.as_ref()).status(None).await?;
    if !status.is_current() {
        return Err(DbError::new(DbErrorKind::SchemaTooOld, status.pending_description(&redact_url(url))));
    }
    db.create_tables().await?;
    let db: Arc<dyn Db> = db;
    Ok(db)
}

/// Takes our own option `key` out of `url`'s query (the driver would reject it), leaving the rest
/// of the query as it was; its last value, if present.
pub(crate) fn take_query_option(url: &mut url::Url, key: &str) -> Option<String> {
    let mut taken = None;
    let rest: Vec<(String, String)> = url
        .query_pairs()
        .filter_map(|(k, v)| {
            if k == key {
                taken = Some(v.into_owned());
                None
            } else {
                Some((k.into_owned(), v.into_owned()))
            }
        })
        .collect();
    if rest.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(rest);
    }
    taken
}
