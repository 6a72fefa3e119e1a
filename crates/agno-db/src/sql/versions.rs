//! `agno_schema_versions`: the version each table was migrated to, as Python Agno stamps it
//! (`table_name`, `version`, and ISO-8601 `created_at`/`updated_at` texts), on every SQL database.

use agno_core::{DbError, DbErrorKind, DbResult, SchemaStore};
use sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_query_sqlx::SqlxBinder;

use super::{Columns, Dialect, SqlAdapter, SqlDb, changed, rows};

#[async_trait::async_trait]
impl<A: super::SqlFamily> SchemaStore for SqlDb<A> {
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>> {
        latest_version(&self.0, table_name).await
    }

    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()> {
        stamp_version(&self.0, table_name, version).await
    }
}

/// `SchemaStore::get_latest_schema_version`: none when the table was never stamped (or there is
/// no versions table).
pub(crate) async fn latest_version<A: SqlAdapter>(db: &A, table_name: &str) -> DbResult<Option<String>> {
    let t = &db.tables().versions;
    if !db.table_exists(t).await? {
        return Ok(None);
    }
    let select = Query::select()
        .column("version")
        .from(db.table_ref(t))
        .and_where(Expr::col("table_name").eq(table_name))
        .build_sqlx(A::D::builder());
    let found = rows(db, select, &format!("cannot read the schema version of {table_name}")).await?;
    Ok(found.first().map(|row| Columns::<A::D>::of(row, "agno_schema_versions").text("version")).transpose()?.flatten())
}

/// `SchemaStore::upsert_schema_version`: stamps `table_name` at `version` (creating the versions
/// table when missing), with now as Python Agno stamps it (`datetime.now().isoformat()`, in UTC).
pub(crate) async fn stamp_version<A: super::migrate::SqlSchema>(
    db: &A,
    table_name: &str,
    version: &str,
) -> DbResult<()> {
    db.ensure_versions_table().await?;
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6f").to_string();
    let mut insert = Query::insert();
    insert
        .into_table(db.table_ref(&db.tables().versions))
        .columns(["table_name", "version", "created_at", "updated_at"])
        .values([table_name.into(), version.into(), now.as_str().into(), now.as_str().into()])
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot build the schema version stamp: {e}")))?
        .on_conflict(OnConflict::column("table_name").update_columns(["version", "updated_at"]).to_owned());
    let what = format!("cannot stamp {table_name} at version {version}");
    changed(db, insert.build_sqlx(A::D::builder()), &what).await.map(|_| ())
}
