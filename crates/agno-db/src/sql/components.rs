//! `agno_components`, `agno_component_configs` and `agno_component_links` as every SQL adapter
//! writes and reads them (Agno 3.1's columns). A catalog write is one transaction: the adapter's
//! catalog lock first (so the writes of every process take turns), then the catalog read, the
//! plan (`agno_core::components::catalog`, the rules written once) and its rows written.

use agno_core::components::catalog::{Catalog, CatalogChange, CatalogPlan, Put, Written};
use agno_core::{
    ComponentConfig, ComponentError, ComponentErrorKind, ComponentLink, ComponentQuery, ComponentRecord,
    ComponentStore, DbResult, SortOrder,
};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;

use super::listing::Listing;
use super::record::{SqlRecord, insert_of, readable, sql_record};
use super::{Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, Violation, rows};

sql_record! {
    ComponentRecord {
        noun: "component", table: "agno_components", key: "component_id",
        columns: [
            component_id: text required, component_type: text required, name: free_text, user_id: text,
            description: free_text, current_version: int, metadata: object, created_at: int required,
            updated_at: int, deleted_at: int,
        ],
    }
}

sql_record! {
    /// A config version; a row read without `config` (see [`CONFIG_HEADS`]) has an empty one.
    ComponentConfig {
        noun: "component config", table: "agno_component_configs", key: "component_id",
        columns: [
            component_id: text required, version: int required, label: free_text, stage: text required,
            config: object required, notes: free_text, created_at: int required, updated_at: int,
        ],
    }
}

sql_record! {
    ComponentLink {
        noun: "component link", table: "agno_component_links", key: "parent_component_id",
        columns: [
            parent_component_id: text required, parent_version: int required, link_kind: text required,
            link_key: text required, child_component_id: text required, child_version: int,
            position: int required, meta: json, created_at: int, updated_at: int,
        ],
    }
}

/// The indexed columns of the components table (each alone, as Agno indexes them).
pub(crate) const COMPONENT_INDEXES: [&str; 5] = ["component_type", "name", "user_id", "current_version", "created_at"];

/// The config columns every catalog write reads of other components' versions (not `config`).
const CONFIG_HEADS: [&str; 7] = ["component_id", "version", "label", "stage", "notes", "created_at", "updated_at"];

/// The indexed columns of the configs table.
pub(crate) const CONFIG_INDEXES: [&str; 2] = ["stage", "created_at"];

/// The indexed columns of the links table.
pub(crate) const LINK_INDEXES: [&str; 2] = ["link_kind", "created_at"];

/// Decodes `rows` with `read`, failing on the first row that does not decode (a catalog write
/// never plans over part of the catalog).
fn all<D: Dialect, T>(rows: &[super::Row<D>], read: impl Fn(&super::Row<D>) -> DbResult<T>) -> DbResult<Vec<T>> {
    rows.iter().map(read).collect()
}

/// The catalog as `tx` sees it: `target`'s config versions whole, the others' without `config`.
async fn read_catalog<A: SqlAdapter>(db: &A, tx: &mut Tx<'_, A>, target: &str) -> DbResult<Catalog> {
    let t = db.tables();
    let b = || A::D::builder();
    let components =
        Query::select().columns(ComponentRecord::names()).from(db.table_ref(&t.components)).build_sqlx(b());
    let components =
        all::<A::D, _>(&tx.rows(components, "cannot read the components").await?, ComponentRecord::from_row::<A::D>)?;
    let own = Query::select()
        .columns(ComponentConfig::names())
        .from(db.table_ref(&t.component_configs))
        .and_where(A::D::exact("component_id", target))
        .build_sqlx(b());
    let others = Query::select()
        .columns(CONFIG_HEADS)
        .from(db.table_ref(&t.component_configs))
        .and_where(A::D::exact("component_id", target).not())
        .build_sqlx(b());
    let mut configs =
        all::<A::D, _>(&tx.rows(own, "cannot read the component's configs").await?, ComponentConfig::from_row::<A::D>)?;
    configs
        .extend(all::<A::D, _>(&tx.rows(others, "cannot read the configs").await?, ComponentConfig::from_row::<A::D>)?);
    let links = Query::select().columns(ComponentLink::names()).from(db.table_ref(&t.component_links)).build_sqlx(b());
    let links =
        all::<A::D, _>(&tx.rows(links, "cannot read the component links").await?, ComponentLink::from_row::<A::D>)?;
    Ok(Catalog::from_rows(components, configs, links))
}

/// Writes `row` into `table`: an insert when `new`, else an update of its columns after the
/// first `keys` (found by `key`). A new row whose key exists is refused with `taken`.
async fn put_row<A: SqlAdapter, R: SqlRecord>(
    db: &A,
    tx: &mut Tx<'_, A>,
    (table, row, keys): (&str, &R, usize),
    key: Condition,
    new: bool,
    taken: impl FnOnce() -> ComponentError,
) -> Result<(), ComponentError> {
    let what = format!("cannot write a row of {table}");
    if new {
        let (_, insert) = insert_of(db, table, row)?;
        return match tx.try_changed(insert.build_sqlx(A::D::builder())).await {
            Ok(_) => Ok(()),
            Err(e) if A::D::violation(&e) == Some(Violation::PrimaryKey) => Err(taken()),
            Err(e) => Err(A::D::error(&what, e).into()),
        };
    }
    let values = super::values::<A::D>(row.cells::<A::D>()?)?;
    let mut update = Query::update();
    update.table(db.table_ref(table));
    for (column, value) in R::names().zip(values).skip(keys) {
        update.value(column, value);
    }
    update.cond_where(key);
    tx.changed(update.build_sqlx(A::D::builder()), &what).await?;
    Ok(())
}

/// Writes what a plan about `target` changed, and announces it where the database can (sent when
/// the transaction commits).
async fn apply<A: SqlAdapter>(
    db: &A,
    tx: &mut Tx<'_, A>,
    target: &str,
    change: &CatalogChange,
) -> Result<(), ComponentError> {
    let t = db.tables();
    for Put { row, new } in &change.components {
        let taken = || {
            ComponentError::refused(
                ComponentErrorKind::Invalid,
                format!("Component ID {} is not available", row.component_id),
            )
        };
        let key = Condition::all().add(A::D::exact("component_id", &row.component_id));
        put_row(db, tx, (&t.components, row, 1), key, *new, taken).await?;
    }
    for Put { row, new } in &change.configs {
        let taken = || {
            ComponentError::refused(
                ComponentErrorKind::VersionConflict,
                format!("Concurrent append on {}: version {} was taken", row.component_id, row.version),
            )
        };
        let key = Condition::all()
            .add(A::D::exact("component_id", &row.component_id))
            .add(Expr::col("version").eq(row.version));
        put_row(db, tx, (&t.component_configs, row, 2), key, *new, taken).await?;
    }
    for set in &change.links {
        let delete = Query::delete()
            .from_table(db.table_ref(&t.component_links))
            .and_where(A::D::exact("parent_component_id", &set.parent))
            .and_where(Expr::col("parent_version").eq(set.version))
            .build_sqlx(A::D::builder());
        tx.changed(delete, "cannot replace a version's links").await?;
        if set.links.is_empty() {
            continue;
        }
        let mut insert = Query::insert();
        insert.into_table(db.table_ref(&t.component_links)).columns(ComponentLink::names());
        for link in &set.links {
            insert.values(super::values::<A::D>(link.cells::<A::D>()?)?).map_err(|e| {
                agno_core::DbError::new(agno_core::DbErrorKind::Other, format!("cannot build the links' insert: {e}"))
            })?;
        }
        tx.changed(insert.build_sqlx(A::D::builder()), "cannot write a version's links").await?;
    }
    if let Some(notice) = db.catalog_notice(target) {
        tx.changed(notice, "cannot announce a catalog write").await?;
    }
    Ok(())
}

/// One attempt of a catalog write: a refusal is `Ok(Err(..))` (rolled back), a storage failure
/// `Err` (which a lost race retries).
async fn attempt<A: SqlAdapter>(db: &A, target: &str, plan: &CatalogPlan) -> DbResult<Result<Written, ComponentError>> {
    let mut tx = Tx::begin(db).await?;
    if let Some(lock) = db.catalog_lock() {
        tx.changed(lock, "cannot take the catalog's write turn").await?;
    }
    let catalog = match read_catalog(db, &mut tx, target).await {
        Ok(catalog) => catalog,
        Err(e) => return tx.end(Err(e), "cannot read the catalog").await,
    };
    let outcome = match plan(&catalog) {
        Ok((change, written)) => apply(db, &mut tx, target, &change).await.map(|()| written),
        Err(refusal) => Err(refusal),
    };
    match outcome {
        Ok(written) => tx.commit("cannot commit a catalog write").await.map(|()| Ok(written)),
        Err(ComponentError::Db(e)) => tx.end(Err(e), "cannot roll back a catalog write").await,
        Err(refusal) => {
            tx.rollback("cannot roll back a catalog write").await?;
            Ok(Err(refusal))
        }
    }
}

/// Who may see what in a listing (`ComponentRecord::visible_to`, as a condition).
fn visible_to<D: Dialect>(viewer: &str) -> Condition {
    Condition::any()
        .add(D::exact("user_id", viewer))
        .add(Expr::col("user_id").is_null())
        .add(Condition::all().add(Expr::col("current_version").is_not_null()).add(Expr::col("deleted_at").is_null()))
}

#[async_trait::async_trait]
impl<A: SqlFamily> ComponentStore for SqlDb<A> {
    async fn change_catalog(&self, target: &str, plan: CatalogPlan) -> Result<Written, ComponentError> {
        super::retrying::<A::D, _, _, _>(|| attempt(&self.0, target, &plan)).await?
    }

    async fn get_component(
        &self,
        id: &str,
        viewer: Option<&str>,
        include_deleted: bool,
    ) -> DbResult<Option<ComponentRecord>> {
        let db = &self.0;
        let select = Query::select()
            .columns(ComponentRecord::names())
            .from(db.table_ref(&db.tables().components))
            .and_where(A::D::exact("component_id", id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read component {id}")).await?;
        let component = found.first().map(ComponentRecord::from_row::<A::D>).transpose()?;
        Ok(component.filter(|c| c.readable(viewer, include_deleted)))
    }

    async fn list_components(&self, q: &ComponentQuery) -> DbResult<(Vec<ComponentRecord>, u64)> {
        let db = &self.0;
        let mut filter = Condition::all();
        if let Some(t) = &q.component_type {
            filter = filter.add(A::D::exact("component_type", t));
        }
        if !q.include_deleted {
            filter = filter.add(Expr::col("deleted_at").is_null());
        }
        if let Some(viewer) = &q.viewer {
            filter = filter.add(visible_to::<A::D>(viewer));
        }
        if !q.exclude.is_empty() {
            filter = filter.add(A::D::exact_in("component_id", q.exclude.iter().map(String::as_str)).not());
        }
        if let Some(name) = &q.name {
            filter = filter.add(A::D::exact("name", name));
        }
        let (found, total) =
            Listing::<A::D>::of(db.table_ref(&db.tables().components), ComponentRecord::names(), filter)
                .by_never_null("created_at", SortOrder::Desc)
                .then_by_bytes("component_id", SortOrder::Asc)
                .page(q.limit, q.page)
                .fetch(db, "components")
                .await?;
        Ok((readable::<A::D, ComponentRecord>(&found), total))
    }

    async fn component_configs(&self, id: &str, include_deleted: bool) -> DbResult<Vec<ComponentConfig>> {
        let db = &self.0;
        let mut select = Query::select();
        select
            .columns(ComponentConfig::names())
            .from(db.table_ref(&db.tables().component_configs))
            .and_where(A::D::exact("component_id", id))
            .order_by("version", sea_query::Order::Desc);
        if !include_deleted {
            select.and_where(Expr::col("stage").ne(agno_core::components::STAGE_DELETED));
        }
        let found = rows(db, select.build_sqlx(A::D::builder()), &format!("cannot read the configs of {id}")).await?;
        Ok(readable::<A::D, ComponentConfig>(&found))
    }

    async fn catalog_changes(&self) -> DbResult<Option<futures::stream::BoxStream<'static, String>>> {
        self.0.catalog_listen().await
    }

    async fn component_links(&self, id: &str, version: i64) -> DbResult<Vec<ComponentLink>> {
        let db = &self.0;
        let select = Query::select()
            .columns(ComponentLink::names())
            .from(db.table_ref(&db.tables().component_links))
            .and_where(A::D::exact("parent_component_id", id))
            .and_where(Expr::col("parent_version").eq(version))
            .order_by("position", sea_query::Order::Asc)
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read the links of {id} v{version}")).await?;
        Ok(readable::<A::D, ComponentLink>(&found))
    }
}
