//! Group commit: the run writes (session + run, `RunStore::save_run_write` and a claimed job's
//! `save_claimed_run`) that wait for a single-writer database's write turn go in together, in one
//! transaction.
//!
//! SQLite has one writer, and every statement is a round trip to the connection's worker thread,
//! so a write's `BEGIN` and `COMMIT` cost as much as its session and run statements, all inside
//! the write turn that every other writer waits for. Here a writer queues its write and waits for
//! the turn; whoever gets the turn first leads: it takes every write queued by then, runs them
//! one after the other in one transaction and commits once, and each writer gets its own
//! result. At 32 clients a transaction carries about a dozen runs' writes.
//!
//! What a write sees and leaves is what it would alone: the writes run in queue order on one
//! connection (a merge reads what an earlier write of the batch stored), and nothing of a batch is
//! kept unless all of it is. When any write of a batch fails, the batch is rolled back and every
//! writer of it writes again alone, as without group commit (so each gets its own error, and the
//! others are written). A leader whose future is dropped (a client gone) before the commit leaves
//! nothing written, and its followers write alone; once the statements have run, the commit and
//! the answers go on in a task of their own, so a commit that happened is never written twice.

use std::sync::{Arc, Mutex, PoisonError};

use agno_core::{AgentSession, DbResult, RunOutput, RunWrite, StateUpdate};
use tokio::sync::oneshot;

use super::Tx;
use super::runs::SqlRuns;
use super::runs::{Statement, write_alone, write_once};
use super::sessions::SqlSessions;

/// The writes waiting for the write turn of one database.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    queued: Mutex<Vec<Queued>>,
}

/// A queued write and where its outcome goes.
#[derive(Debug)]
struct Queued {
    write: Arc<OwnedWrite>,
    done: oneshot::Sender<Outcome>,
}

/// A run write, owned so that another writer's future (the leader) can run it.
#[derive(Debug)]
struct OwnedWrite {
    session: AgentSession,
    state: StateUpdate,
    run: RunOutput,
    user_id: Option<String>,
    guard: Option<Statement>,
}

impl OwnedWrite {
    fn of(write: RunWrite<'_>, guard: Option<Statement>) -> Self {
        Self {
            session: write.session.clone(),
            state: write.state.clone(),
            run: write.run.clone(),
            user_id: write.user_id.map(str::to_owned),
            guard,
        }
    }

    fn as_write(&self) -> RunWrite<'_> {
        RunWrite { session: &self.session, state: &self.state, run: &self.run, user_id: self.user_id.as_deref() }
    }
}

/// What became of a queued write.
#[derive(Debug)]
enum Outcome {
    /// Committed with its batch: the run's `run_index`, or `None` when its guard did not hold.
    Written(Option<i64>),
    /// Not written: write it again alone.
    Alone,
}

impl GroupCommit {
    fn queue(&self, queued: Queued) {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner).push(queued);
    }

    fn is_empty(&self) -> bool {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    fn take(&self) -> Vec<Queued> {
        std::mem::take(&mut *self.queued.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Writes `write` (after `guard`, when given, changed a row) with whatever other run writes of
/// `db` are waiting, in one transaction: the run's `run_index`, `None` when the guard did not
/// hold.
///
/// # Errors
/// As the write alone.
pub(crate) async fn write<A: SqlSessions + SqlRuns>(
    db: &A,
    group: &GroupCommit,
    write: RunWrite<'_>,
    guard: Option<Statement>,
) -> DbResult<Option<i64>> {
    // Nobody writing, nobody waiting: this write goes alone, as without group commit (nothing
    // to copy, no commit task).
    if group.is_empty()
        && let Some(turn) = db.try_writer_turn()
    {
        let written = write_alone(db, write, guard, true).await;
        drop(turn);
        return written;
    }
    let (done, mut outcome) = oneshot::channel();
    let mine = Arc::new(OwnedWrite::of(write, guard.clone()));
    group.queue(Queued { write: Arc::clone(&mine), done });
    let turn = tokio::select! {
        biased;
        // A leader took this write and ended it.
        ended = &mut outcome => return finish(db, ended.ok(), write, guard).await,
        turn = db.writer_turn() => turn,
    };
    if let Ok(ended) = outcome.try_recv() {
        drop(turn);
        return finish(db, Some(ended), write, guard).await;
    }
    let batch = group.take();
    if !batch.is_empty() {
        lead(db, batch, &mine).await;
    }
    // Written in the batch above, or (an earlier leader took it and was dropped) not at all.
    let ended = outcome.await.ok();
    drop(turn);
    finish(db, ended, write, guard).await
}

async fn finish<A: SqlSessions + SqlRuns>(
    db: &A,
    ended: Option<Outcome>,
    write: RunWrite<'_>,
    guard: Option<Statement>,
) -> DbResult<Option<i64>> {
    match ended {
        Some(Outcome::Written(index)) => Ok(index),
        // Rolled back with its batch, or its leader was dropped before the commit.
        Some(Outcome::Alone) | None => write_alone(db, write, guard, false).await,
    }
}

/// Runs `batch` in one transaction (the caller, whose write is `mine`, holds the write turn) and
/// sends each write its outcome.
async fn lead<A: SqlSessions + SqlRuns>(db: &A, batch: Vec<Queued>, mine: &Arc<OwnedWrite>) {
    let alone = |batch: Vec<Queued>| {
        for q in batch {
            let _ = q.done.send(Outcome::Alone);
        }
    };
    let mut tx = match Tx::begin_in_turn(db).await {
        Ok(tx) => tx,
        Err(e) => {
            tracing::debug!(error = %e, writes = batch.len(), "cannot start a group of run writes; each writes alone");
            return alone(batch);
        }
    };
    let batch_is_mine = matches!(batch.as_slice(), [only] if Arc::ptr_eq(&only.write, mine));
    let mut indexes = Vec::with_capacity(batch.len());
    for q in &batch {
        match write_once(db, &mut *tx.tx, q.write.as_write(), q.write.guard.as_ref()).await {
            Ok(index) => indexes.push(index),
            Err(e) => {
                tracing::debug!(error = %e, writes = batch.len(), "a write of a group failed; each writes alone");
                let _ = tx.rollback("cannot roll back a group of run writes").await;
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
                for (q, index) in batch.into_iter().zip(indexes) {
                    let _ = q.done.send(Outcome::Written(index));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, writes = batch.len(), "a group of run writes did not commit; each writes alone");
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
