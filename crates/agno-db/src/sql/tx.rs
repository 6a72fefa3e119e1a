//! One transaction of the shared store code ([`Tx`]) and the retry of one that lost a race
//! ([`retrying`]).

use agno_core::DbResult;

use super::{Dialect, Row, SqlAdapter, WRITE_ATTEMPTS};

/// One transaction of the shared store code, in the process's writer turn where the database
/// has one writer. Dropped without [`Tx::commit`], it rolls back.
pub(crate) struct Tx<'a, A: SqlAdapter> {
    pub(super) tx: sqlx::Transaction<'static, <A::D as Dialect>::DB>,
    _turn: Option<tokio::sync::MutexGuard<'a, ()>>,
}

impl<'a, A: SqlAdapter> Tx<'a, A> {
    /// Starts a transaction on `db`.
    ///
    /// # Errors
    /// No connection, or the database refuses the transaction.
    pub(crate) async fn begin(db: &'a A) -> DbResult<Self> {
        let turn = db.writer_turn().await;
        Ok(Self { _turn: turn, ..Self::begin_in_turn(db).await? })
    }

    /// Starts a transaction on `db` whose writer turn the caller holds already.
    ///
    /// # Errors
    /// No connection, or the database refuses the transaction.
    pub(crate) async fn begin_in_turn(db: &'a A) -> DbResult<Self> {
        let tx = match A::D::BEGIN {
            Some(begin) => db.pool().begin_with(begin).await,
            None => db.pool().begin().await,
        }
        .map_err(|e| A::D::error("cannot start a transaction", e))?;
        Ok(Self { tx, _turn: None })
    }

    /// Runs a built statement and returns its rows, or the driver's error.
    pub(crate) async fn try_rows(
        &mut self,
        (sql, values): (String, sea_query_sqlx::SqlxValues),
    ) -> Result<Vec<Row<A::D>>, sqlx::Error> {
        A::D::fetch_on(&mut self.tx, &sql, values).await
    }

    /// Runs a built statement and returns its rows, or the error saying what was being done.
    pub(crate) async fn rows(
        &mut self,
        statement: (String, sea_query_sqlx::SqlxValues),
        what: &str,
    ) -> DbResult<Vec<Row<A::D>>> {
        self.try_rows(statement).await.map_err(|e| A::D::error(what, e))
    }

    /// Runs a built write and returns the number of rows it changed, or the driver's error.
    pub(crate) async fn try_changed(
        &mut self,
        (sql, values): (String, sea_query_sqlx::SqlxValues),
    ) -> Result<u64, sqlx::Error> {
        A::D::execute_on(&mut self.tx, &sql, values).await
    }

    /// Runs a built write and returns the number of rows it changed, or the error saying what
    /// was being done.
    pub(crate) async fn changed(
        &mut self,
        statement: (String, sea_query_sqlx::SqlxValues),
        what: &str,
    ) -> DbResult<u64> {
        self.try_changed(statement).await.map_err(|e| A::D::error(what, e))
    }

    /// Rolls the transaction back now (not when its connection is next used: a row it locked
    /// would stay locked meanwhile).
    ///
    /// # Errors
    /// The rollback fails.
    pub(crate) async fn rollback(self, what: &str) -> DbResult<()> {
        self.tx.rollback().await.map_err(|e| A::D::error(what, e))
    }

    /// Commits the transaction.
    ///
    /// # Errors
    /// The commit fails (nothing of the transaction is kept).
    pub(crate) async fn commit(self, what: &str) -> DbResult<()> {
        self.tx.commit().await.map_err(|e| A::D::error(what, e))
    }

    /// Ends the transaction as `outcome` says: committed with its value, or rolled back now
    /// (not when its connection is next used: a row it locked would stay locked meanwhile) with
    /// its error.
    ///
    /// # Errors
    /// `outcome`'s error, or the commit's or rollback's.
    pub(crate) async fn end<T>(self, outcome: DbResult<T>, what: &str) -> DbResult<T> {
        match outcome {
            Ok(value) => self.commit(what).await.map(|()| value),
            Err(e) => {
                self.rollback(what).await?;
                Err(e)
            }
        }
    }
}

/// Runs `attempt` (a transaction) again while it fails by losing a race (a MySQL deadlock).
///
/// # Errors
/// The last attempt's error.
pub(crate) async fn retrying<D: Dialect, T, F, Fut>(mut attempt: F) -> DbResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = DbResult<T>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(e) if tries < WRITE_ATTEMPTS && D::lost_race(&e) => {
                tries += 1;
                tracing::debug!(error = %e, tries, "retrying a transaction that lost a race");
            }
            other => return other,
        }
    }
}
