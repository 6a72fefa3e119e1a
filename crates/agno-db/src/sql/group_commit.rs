//! Group commit: the writes that wait for a single-writer database's write turn go in together,
//! in one transaction: run writes (session + run: `RunStore::save_run_write`, a claimed job's
//! `save_claimed_run`), a job's event log appends, and every single-statement write
//! (`sql::changed`: finishing a job, heartbeats, deletes).
//!
//! SQLite has one writer, and every statement is a round trip to the connection's worker thread,
//! so a write's `BEGIN` and `COMMIT` cost as much as its session and run statements, all inside
//! the write turn that every other writer waits for. Here a writer queues its write and waits for
//! the turn; whoever gets the turn first leads: it takes every write queued by then, runs them
//! one after the other in one transaction and commits once, and each writer gets its own
//! result. At 32 clients a transaction carries about a dozen writes.
//!
//! What a write sees and leaves is what it would alone: the writes run in queue order on one
//! connection (a merge reads what an earlier write of the batch stored), and nothing of a batch is
//! kept unless all of it is. When any write of a batch fails, the batch is rolled back and every
//! writer of it writes again alone, as without group commit (so each gets its own error, and the
//! others are written). A leader whose future is dropped (a client gone) before the commit leaves
//! nothing written, and its followers write alone; once the statements have run, the commit and
//! the answers go on in a task of their own, so a commit that happened is never written twice.

use std::sync::{Arc, Mutex, PoisonError};

use agno_core::{DbError, DbErrorKind, DbResult};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::{Conn, SqlAdapter, Tx};

/// A queued write as a leader runs it: owned (it outlives its writer's borrow), on the leader's
/// connection, inside the batch's transaction.
type Work<A> =
    Arc<dyn for<'c> Fn(&'c A, &'c mut Conn<<A as SqlAdapter>::D>) -> BoxFuture<'c, DbResult<Done>> + Send + Sync>;

/// How a leader runs a queued write on its connection, from what the writer gave it to own.
pub(crate) type Run<A, O, T> =
    for<'c> fn(&'c A, &'c mut Conn<<A as SqlAdapter>::D>, &'c O) -> BoxFuture<'c, DbResult<T>>;

/// What a write of a batch answered: the writer's own answer type, which it reads back.
type Done = Box<dyn std::any::Any + Send>;

/// The writes waiting for the write turn of one database.
pub(crate) struct GroupCommit<A: SqlAdapter> {
    queued: Mutex<Vec<Queued<A>>>,
}

impl<A: SqlAdapter> Default for GroupCommit<A> {
    fn default() -> Self {
        Self { queued: Mutex::new(Vec::new()) }
    }
}

impl<A: SqlAdapter> std::fmt::Debug for GroupCommit<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").field("queued", &self.queued.lock().map(|q| q.len()).ok()).finish()
    }
}

/// A queued write and where its outcome goes.
struct Queued<A: SqlAdapter> {
    work: Work<A>,
    done: oneshot::Sender<Outcome>,
}

/// What became of a queued write.
#[derive(Debug)]
enum Outcome {
    /// Committed with its batch.
    Written(Done),
    /// Not written: write it again alone.
    Alone,
}

impl<A: SqlAdapter> GroupCommit<A> {
    fn queue(&self, queued: Queued<A>) {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner).push(queued);
    }

    fn is_empty(&self) -> bool {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    fn take(&self) -> Vec<Queued<A>> {
        std::mem::take(&mut *self.queued.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Writes with whatever other writes of `db` are waiting, in one transaction, where the
/// database's writers take turns (elsewhere `alone` at once). `owned` makes what a leader needs
/// to run the write (it outlives the writer's borrows), and `run` runs it on the leader's
/// connection; `alone` is the write in a transaction of its own (taking the writer turn, unless
/// told the caller holds it), for when nobody else writes or waits, and when the batch failed or
/// its leader was dropped.
///
/// # Errors
/// As `alone`.
pub(crate) async fn submit<A: SqlAdapter, O: Send + Sync + 'static, T: Send + 'static>(
    db: &A,
    owned: impl FnOnce() -> O,
    run: Run<A, O, T>,
    alone: impl AsyncFnOnce(bool) -> DbResult<T>,
) -> DbResult<T> {
    let Some(group) = db.group_commit() else { return alone(false).await };
    // Nobody writing, nobody waiting: this write goes alone, as without group commit (nothing
    // to copy, no commit task).
    if group.is_empty()
        && let Some(turn) = db.try_writer_turn()
    {
        let written = alone(true).await;
        drop(turn);
        return written;
    }
    let (done, mut outcome) = oneshot::channel();
    let owned = Arc::new(owned());
    let mine: Work<A> = Arc::new(move |db, conn| {
        let owned = Arc::clone(&owned);
        Box::pin(async move { run(db, conn, &owned).await.map(|answer| Box::new(answer) as Done) })
    });
    group.queue(Queued { work: Arc::clone(&mine), done });
    let turn = tokio::select! {
        biased;
        // A leader took this write and ended it.
        ended = &mut outcome => Err(ended.ok()),
        turn = db.writer_turn() => Ok(turn),
    };
    let ended = match turn {
        Err(ended) => ended,
        Ok(turn) => {
            if let Ok(ended) = outcome.try_recv() {
                Some(ended)
            } else {
                let batch = group.take();
                if !batch.is_empty() {
                    lead(db, batch, &mine).await;
                }
                // Written in the batch above, or (an earlier leader took it and was dropped)
                // not at all.
                let ended = (&mut outcome).await.ok();
                drop(turn);
                ended
            }
        }
    };
    match ended {
        Some(Outcome::Written(done)) => done
            .downcast::<T>()
            .map(|answer| *answer)
            .map_err(|_| DbError::new(DbErrorKind::Other, "a grouped write was answered another write's answer")),
        // Rolled back with its batch, or its leader was dropped before the commit.
        Some(Outcome::Alone) | None => alone(false).await,
    }
}

/// Runs `batch` in one transaction (the caller, whose write is `mine`, holds the write turn) and
/// sends each write its outcome.
async fn lead<A: SqlAdapter>(db: &A, batch: Vec<Queued<A>>, mine: &Work<A>) {
    let alone = |batch: Vec<Queued<A>>| {
        for q in batch {
            let _ = q.done.send(Outcome::Alone);
        }
    };
    let mut tx = match Tx::begin_in_turn(db).await {
        Ok(tx) => tx,
        Err(e) => {
            tracing::debug!(error = %e, writes = batch.len(), "cannot start a group of writes; each writes alone");
            return alone(batch);
        }
    };
    let batch_is_mine = matches!(batch.as_slice(), [only] if Arc::ptr_eq(&only.work, mine));
    let mut answers = Vec::with_capacity(batch.len());
    for q in &batch {
        match (q.work)(db, &mut *tx.tx).await {
            Ok(done) => answers.push(done),
            Err(e) => {
                tracing::debug!(error = %e, writes = batch.len(), "a write of a group failed; each writes alone");
                let _ = tx.rollback("cannot roll back a group of writes").await;
                return alone(batch);
            }
        }
    }
    // From here the commit runs to its end even when this future is dropped, so that no writer
    // writes again what was committed (unless the batch is the leader's write alone: nobody
    // else waits for it).
    let tx = tx.tx;
    let commit = async move {
        match tx.commit().await {
            Ok(()) => {
                for (q, done) in batch.into_iter().zip(answers) {
                    let _ = q.done.send(Outcome::Written(done));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, writes = batch.len(), "a group of writes did not commit; each writes alone");
                alone(batch);
            }
        }
    };
    if batch_is_mine {
        commit.await;
    } else {
        let _ = tokio::spawn(commit).await;
    }
}
