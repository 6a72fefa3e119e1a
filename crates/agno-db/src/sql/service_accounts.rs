//! `agno_service_accounts` as every SQL adapter writes and reads it: Agno's 11 columns, a name
//! unique among the accounts not revoked (the database's unique index decides a race), and a
//! revoke that is one conditional update.

use agno_core::{Cell, DbError, DbErrorKind, DbResult, ServiceAccount, ServiceAccountQuery, ServiceAccountStore};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;
use sqlx::Database;

use super::listing::{Listing, readable};
use super::{Columns, Dialect, SqlDb, SqlFamily, changed, rows};

/// The columns of the service accounts table, in table order.
pub(crate) const SERVICE_ACCOUNT_COLUMNS: [&str; 11] = [
    "id",
    "name",
    "user_id",
    "token_hash",
    "token_prefix",
    "scopes",
    "created_at",
    "expires_at",
    "last_used_at",
    "revoked_at",
    "created_by",
];

fn account_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<ServiceAccount> {
    let c = Columns::<D>::of(row, "agno_service_accounts");
    let scopes = match c.json("scopes")? {
        Some(Value::Array(items)) => items.into_iter().filter_map(|s| s.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    };
    Ok(ServiceAccount {
        id: c.text("id")?.unwrap_or_default(),
        name: c.text("name")?.unwrap_or_default(),
        user_id: c.text("user_id")?,
        token_hash: c.text("token_hash")?.unwrap_or_default(),
        token_prefix: c.text("token_prefix")?.unwrap_or_default(),
        scopes,
        created_at: c.int("created_at")?.unwrap_or_default(),
        expires_at: c.int("expires_at")?,
        last_used_at: c.int("last_used_at")?,
        revoked_at: c.int("revoked_at")?,
        created_by: c.text("created_by")?,
    })
}

fn account_cells(a: &ServiceAccount) -> [Cell; 11] {
    let text = |s: &str| Cell::Text(Some(s.to_owned()));
    [
        text(&a.id),
        text(&a.name),
        Cell::Text(a.user_id.clone()),
        text(&a.token_hash),
        text(&a.token_prefix),
        Cell::Json(Some(Value::from(a.scopes.clone()))),
        Cell::Int(Some(a.created_at)),
        Cell::Int(a.expires_at),
        Cell::Int(a.last_used_at),
        Cell::Int(a.revoked_at),
        Cell::Text(a.created_by.clone()),
    ]
}

/// Owned by `user_id`, or workspace-level (no owner).
fn owned_or_shared<D: Dialect>(user_id: &str) -> Condition {
    Condition::any().add(D::exact("user_id", user_id)).add(Expr::col("user_id").is_null())
}

/// Sets `column` to `at` on account `id` if it is not revoked; how many rows changed (0 or 1).
async fn set_on_live<A: SqlFamily>(
    db: &SqlDb<A>,
    id: &str,
    column: &'static str,
    at: i64,
    what: &str,
) -> DbResult<u64> {
    let db = &db.0;
    let update = Query::update()
        .table(db.table_ref(&db.tables().service_accounts))
        .value(column, at)
        .and_where(Expr::col("id").eq(id))
        .and_where(Expr::col("revoked_at").is_null())
        .build_sqlx(A::D::builder());
    changed(db, update, what).await
}

/// The accounts of `db` matching `filter` (at most a few: an id, a name, a hash).
async fn accounts_where<A: SqlFamily>(db: &SqlDb<A>, filter: Condition, what: &str) -> DbResult<Vec<ServiceAccount>> {
    let db = &db.0;
    let select = Query::select()
        .columns(SERVICE_ACCOUNT_COLUMNS)
        .from(db.table_ref(&db.tables().service_accounts))
        .cond_where(filter)
        .build_sqlx(A::D::builder());
    let found = rows(db, select, what).await?;
    found.iter().map(account_from_row::<A::D>).collect()
}

#[async_trait::async_trait]
impl<A: SqlFamily> ServiceAccountStore for SqlDb<A> {
    async fn create_service_account(&self, account: &ServiceAccount) -> DbResult<()> {
        let db = &self.0;
        let values = super::values::<A::D>(account_cells(account))?;
        let mut insert = Query::insert();
        insert
            .into_table(db.table_ref(&db.tables().service_accounts))
            .columns(SERVICE_ACCOUNT_COLUMNS)
            .values(values)
            .map_err(|e| {
                DbError::new(
                    DbErrorKind::Other,
                    format!("cannot build the insert of service account {}: {e}", account.name),
                )
            })?;
        let name = &account.name;
        match changed(db, insert.build_sqlx(A::D::builder()), &format!("cannot write service account {name}")).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == DbErrorKind::Conflict => Err(DbError::new(
                DbErrorKind::Conflict,
                format!("an active service account named {name:?} already exists"),
            )
            .with_source(e)),
            Err(e) => Err(e),
        }
    }

    async fn get_service_account(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ServiceAccount>> {
        let mut filter = Condition::all().add(Expr::col("id").eq(id));
        if let Some(user) = user_id {
            filter = filter.add(owned_or_shared::<A::D>(user));
        }
        Ok(accounts_where(self, filter, &format!("cannot read service account {id}")).await?.into_iter().next())
    }

    async fn get_active_service_account(&self, name: &str) -> DbResult<Option<ServiceAccount>> {
        let filter = Condition::all().add(A::D::exact("name", name)).add(Expr::col("revoked_at").is_null());
        Ok(accounts_where(self, filter, &format!("cannot read service account {name}")).await?.into_iter().next())
    }

    async fn service_account_by_token(&self, token_hash: &str) -> DbResult<Option<ServiceAccount>> {
        let filter = Condition::all().add(Expr::col("token_hash").eq(token_hash));
        Ok(accounts_where(self, filter, "cannot read a service account by its token").await?.into_iter().next())
    }

    async fn get_service_accounts(&self, q: &ServiceAccountQuery) -> DbResult<(Vec<ServiceAccount>, u64)> {
        let db = &self.0;
        let mut filter = Condition::all();
        if !q.include_revoked {
            filter = filter.add(Expr::col("revoked_at").is_null());
        }
        if let Some(user) = &q.user_id {
            filter = filter.add(owned_or_shared::<A::D>(user));
        }
        let table = db.table_ref(&db.tables().service_accounts);
        let limit = usize::try_from(q.limit).ok();
        let page = usize::try_from(q.page).ok();
        let (found, total) = Listing::<A::D>::of(table, SERVICE_ACCOUNT_COLUMNS, filter)
            .by(Expr::col(q.sort_by), q.sort_order)
            .then_by_bytes("id", q.sort_order)
            .page(limit, page)
            .fetch(db, "service accounts")
            .await?;
        Ok((readable::<A::D, _>(&found, "service account", "id", account_from_row::<A::D>), total))
    }

    async fn touch_service_account(&self, id: &str, at: i64) -> DbResult<()> {
        let what = format!("cannot record the use of service account {id}");
        set_on_live(self, id, "last_used_at", at, &what).await.map(|_| ())
    }

    async fn revoke_service_account(&self, id: &str, at: i64) -> DbResult<bool> {
        Ok(set_on_live(self, id, "revoked_at", at, &format!("cannot revoke service account {id}")).await? == 1)
    }
}
