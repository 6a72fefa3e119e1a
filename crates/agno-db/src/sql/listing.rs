//! A listing: the rows of one table that match a filter, in an order, a page of them, and how
//! many match in all. Every paged listing of the SQL stores is one.

use agno_core::{DbResult, SortOrder};
use sea_query::{Asterisk, Condition, Expr, ExprTrait, NullOrdering, Order, Query, SelectStatement, TableRef};
use sea_query_sqlx::SqlxBinder;

use super::{Columns, Dialect, Row, SqlAdapter, rows};

/// A listing being described (see the module documentation).
pub(crate) struct Listing<D: Dialect> {
    select: SelectStatement,
    table: TableRef,
    filter: Condition,
    dialect: std::marker::PhantomData<D>,
}

impl<D: Dialect> Listing<D> {
    /// `columns` of the rows of `table` matching `filter`.
    pub(crate) fn of(table: TableRef, columns: impl IntoIterator<Item = &'static str>, filter: Condition) -> Self {
        let mut select = Query::select();
        select.columns(columns).from(table.clone()).cond_where(filter.clone());
        Self { select, table, filter, dialect: std::marker::PhantomData }
    }

    /// Ordered by `expr`, NULL lowest (first ascending, last descending) on every database.
    pub(crate) fn by(mut self, expr: Expr, order: SortOrder) -> Self {
        let (dir, nulls) = direction(order);
        if D::NULLS_LOW {
            self.select.order_by_expr(expr, dir);
        } else {
            self.select.order_by_expr_with_nulls(expr, dir, nulls);
        }
        self
    }

    /// Ordered by `column`, which is never NULL (no NULL placement: an index on the column can
    /// serve the order).
    pub(crate) fn by_never_null(mut self, column: &'static str, order: SortOrder) -> Self {
        self.select.order_by(column, direction(order).0);
        self
    }

    /// Then by the bytes of `column` (ids: the same order on every database).
    pub(crate) fn then_by_bytes(self, column: &'static str, order: SortOrder) -> Self {
        self.by(D::byte_order(column), order)
    }

    /// The page `page` (from 1) of `limit` rows; every row without a limit.
    pub(crate) fn page(mut self, limit: Option<usize>, page: Option<usize>) -> Self {
        limit_to(&mut self.select, limit, page);
        self
    }

    /// The page's rows and the number of matching rows.
    ///
    /// # Errors
    /// A statement fails.
    pub(crate) async fn fetch<A: SqlAdapter<D = D>>(self, db: &A, what: &str) -> DbResult<(Vec<Row<D>>, u64)> {
        let found = rows(db, self.select.build_sqlx(D::builder()), &format!("cannot list {what}")).await?;
        let count = Query::select()
            .expr_as(Expr::col(Asterisk).count(), "total")
            .from(self.table)
            .cond_where(self.filter)
            .build_sqlx(D::builder());
        Ok((found, count_of(db, count, &format!("cannot count {what}")).await?))
    }
}

/// sea-query's direction for `order`, and where NULL goes for it to sort lowest.
pub(crate) fn direction(order: SortOrder) -> (Order, NullOrdering) {
    match order {
        SortOrder::Asc => (Order::Asc, NullOrdering::First),
        SortOrder::Desc => (Order::Desc, NullOrdering::Last),
    }
}

/// Limits `select` to the page `page` (from 1) of `limit` rows; every row without a limit.
pub(crate) fn limit_to(select: &mut SelectStatement, limit: Option<usize>, page: Option<usize>) {
    if let Some(limit) = limit {
        let (offset, limit) = crate::memories::page_bounds(Some(limit), page);
        select.limit(super::bound(limit)).offset(super::bound(offset));
    }
}

/// The `total` a counting statement returns.
///
/// # Errors
/// The statement fails.
pub(crate) async fn count_of<A: SqlAdapter>(
    db: &A,
    count: (String, sea_query_sqlx::SqlxValues),
    what: &str,
) -> DbResult<u64> {
    let total = match rows(db, count, what).await?.first() {
        Some(row) => Columns::<A::D>::of(row, "count").int("total")?.unwrap_or_default(),
        None => 0,
    };
    Ok(u64::try_from(total).unwrap_or(0))
}

/// The records of `rows` that decode with `read`, each keyed by its `key` column in the warning
/// about one that does not (see [`crate::codec::readable`]).
pub(crate) fn readable<D: Dialect, T>(
    rows: &[Row<D>],
    what: &'static str,
    key: &str,
    read: impl Fn(&Row<D>) -> DbResult<T>,
) -> Vec<T> {
    crate::codec::readable(what, rows.iter().map(|r| (Columns::<D>::of(r, what).text(key).ok().flatten(), read(r))))
}
