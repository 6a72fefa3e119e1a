//! Storage adapters for agno-rs.
//!
//! The storage traits ([`agno_core::SessionStore`], [`agno_core::RunStore`],
//! [`agno_core::SchemaStore`], their union [`agno_core::Db`]) live in `agno-core`; this crate
//! holds the adapters and the migrations:
//! - [`InMemoryDb`] (`memory://`), [`SqliteDb`] (`sqlite://`, the embedded default);
//! - [`MigrationManager`] walks the schema versions 2.0.0 -> 3.0.0 on any adapter;
//! - [`open`] / [`open_ready`] pick the adapter from a URL.
//!
//! Every adapter follows the same semantics, checked by one conformance suite: sessions and runs
//! are stored apart (saving a run writes one row and never rewrites the session), `run_index` is
//! assigned per session on first write and kept, and a given `user_id` filters every read and
//! write inside the query itself. Tables are shaped as Python Agno 3.x creates them, so both
//! can share a database.

mod codec;
mod doc;
mod memories;
pub mod metrics;
mod migration;
mod mysql;
mod open;
mod postgres;
mod redis;
mod schedules;
mod sql;
mod sqlite;
mod tables;

pub use self::redis::RedisDb;
pub use agno_core::redact_url;
pub use doc::{DocDb, InMemoryDb, JsonDb};
pub use metrics::{MetricsReads, calculate_metrics, calculate_metrics_until, calculate_metrics_with};
pub use migration::{
    CleanupReport, LATEST_VERSION, Migrate, MigrationManager, MigrationOptions, MigrationStep, Progress, SchemaStatus,
    TableKind, TableStatus, UNSTAMPED_VERSION, VERSIONS,
};
pub use mysql::MySqlDb;
pub use open::{open, open_ready};
pub use postgres::PostgresDb;
pub use sql::SqlDb;
pub use sqlite::SqliteDb;
pub use tables::TableNames;
