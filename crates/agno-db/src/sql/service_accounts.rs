//! `agno_service_accounts` as every SQL adapter writes and reads it: Agno's 11 columns, a name
//! unique among the accounts not revoked (the database's unique index decides a race), and a
//! revoke that is one conditional update.

use agno_core::{DbError, DbErrorKind, DbResult, ServiceAccount, ServiceAccountQuery, ServiceAccountStore};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;

use super::listing::Listing;
use super::record::{SqlRecord, insert_of, readable, sql_record};
use super::{Dialect, SqlDb, SqlFamily, changed, rows};

sql_record! {
    ServiceAccount {
        noun: "service account", table: "agno_service_accounts", key: "id",
        columns: [
            id: text required, name: text required, user_id: text, token_hash: text required,
            token_prefix: text required, scopes: list required, created_at: int required, expires_at: int,
            last_used_at: int, revoked_at: int, created_by: text,
        ],
    }
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
        .columns(ServiceAccount::names())
        .from(db.table_ref(&db.tables().service_accounts))
        .cond_where(filter)
        .build_sqlx(A::D::builder());
    let found = rows(db, select, what).await?;
    found.iter().map(ServiceAccount::from_row::<A::D>).collect()
}

#[async_trait::async_trait]
impl<A: SqlFamily> ServiceAccountStore for SqlDb<A> {
    async fn create_service_account(&self, account: &ServiceAccount) -> DbResult<()> {
        let db = &self.0;
        let (_, insert) = insert_of(db, &db.tables().service_accounts, account)?;
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
        let (found, total) = Listing::<A::D>::of(table, ServiceAccount::names(), filter)
            .by(Expr::col(q.sort_by), q.sort_order)
            .then_by_bytes("id", q.sort_order)
            .page(limit, page)
            .fetch(db, "service accounts")
            .await?;
        Ok((readable::<A::D, ServiceAccount>(&found), total))
    }

    async fn touch_service_account(&self, id: &str, at: i64) -> DbResult<()> {
        let what = format!("cannot record the use of service account {id}");
        set_on_live(self, id, "last_used_at", at, &what).await.map(|_| ())
    }

    async fn revoke_service_account(&self, id: &str, at: i64) -> DbResult<bool> {
        Ok(set_on_live(self, id, "revoked_at", at, &format!("cannot revoke service account {id}")).await? == 1)
    }
}
