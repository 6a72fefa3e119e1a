//! The upsert of a user-scoped record (a memory, a knowledge content): insert it, or replace the
//! stored row when the table's owner rule lets the writer; a row the writer may not replace is
//! left as it is. One transaction that locks the stored row, on every SQL database.

use agno_core::{Cell, DbError, DbErrorKind, DbResult};
use sea_query::{Expr, ExprTrait, LockType, Query};
use sea_query_sqlx::SqlxBinder;

use super::record::{SqlRecord, key_in};
use super::{Columns, Dialect, SqlAdapter, Tx, Violation, WRITE_ATTEMPTS};

/// Upserts `record` into `table` and answers it as stored (what the database kept of it:
/// PostgreSQL cannot hold NUL in text), or `None` when `may_replace`, given the stored row's
/// owner, refuses (nothing is written). A replacement leaves the `kept` columns as stored (the
/// key and `created_at`; the owner too where it never changes), and keeps the stored
/// `created_at`, or sets it when the stored row has none.
///
/// # Errors
/// A storage error.
pub(crate) async fn upsert_owned<A: SqlAdapter, R: SqlRecord>(
    db: &A,
    (table, record): (&str, &R),
    kept: &[&str],
    may_replace: impl Fn(Option<&str>) -> bool,
    what: &str,
) -> DbResult<Option<R>> {
    let table = db.table_ref(table);
    let cells = record.cells::<A::D>()?;
    let key = R::KEY;
    let Some(id) = key_in::<R>(&cells) else {
        return Err(DbError::new(DbErrorKind::Other, format!("{what}: the record has no {key}")));
    };
    let id = id.as_str();
    let cells: Vec<(&'static str, Cell)> = R::names().zip(cells).collect();
    let lock = Query::select()
        .columns(["user_id", "created_at"])
        .from(table.clone())
        .and_where(Expr::col(key).eq(id))
        .lock(LockType::Update)
        .build_sqlx(A::D::builder());
    let (mut columns, mut values, mut set) = (Vec::new(), Vec::new(), Vec::new());
    for (column, cell) in &cells {
        let value = Expr::val(A::D::value(cell.clone())?);
        if !kept.contains(column) {
            set.push((*column, value.clone()));
        }
        columns.push(*column);
        values.push(value);
    }
    let insert = Query::insert()
        .into_table(table.clone())
        .columns(columns)
        .values(values)
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("{what}: {e}")))?
        .build_sqlx(A::D::builder());
    let update = Query::update().table(table.clone()).values(set).and_where(Expr::col(key).eq(id)).take();
    let created = cells.iter().find_map(|(column, cell)| match (*column, cell) {
        ("created_at", Cell::Int(at)) => *at,
        _ => None,
    });
    let mut undated = update.clone();
    let update = update.build_sqlx(A::D::builder());
    let undated = undated.value("created_at", created).build_sqlx(A::D::builder());
    let read_back =
        Query::select().columns(R::names()).from(table).and_where(Expr::col(key).eq(id)).build_sqlx(A::D::builder());
    let mut attempt = 1;
    loop {
        let mut tx = Tx::begin(db).await?;
        let stored = tx.rows(lock.clone(), what).await?;
        let outcome = if let Some(row) = stored.first() {
            let c = Columns::<A::D>::of(row, "user-scoped record");
            if !may_replace(c.text("user_id")?.as_deref()) {
                tx.rollback(what).await?;
                return Ok(None);
            }
            let replace = if c.int("created_at")?.is_some() { &update } else { &undated };
            tx.changed(replace.clone(), what).await
        } else {
            match tx.try_changed(insert.clone()).await {
                Ok(n) => Ok(n),
                // Another writer inserted it since the read: replace it (or refuse) as stored.
                Err(e) if A::D::violation(&e) == Some(Violation::PrimaryKey) && attempt < WRITE_ATTEMPTS => {
                    attempt += 1;
                    continue;
                }
                Err(e) => Err(A::D::error(what, e)),
            }
        };
        let stored = match outcome {
            Ok(_) => tx.rows(read_back.clone(), what).await,
            Err(e) => Err(e),
        };
        match stored {
            Ok(stored) => {
                tx.commit(what).await?;
                return stored.first().map(R::from_row::<A::D>).transpose();
            }
            Err(e) if A::D::lost_race(&e) && attempt < WRITE_ATTEMPTS => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}
