//! Tailing a background run's durable event log: replay everything after an index, then follow
//! new events until the run's job settles. Works from any replica with nothing but the database:
//! local writers wake local tails at once, PostgreSQL `NOTIFY` wakes tails on other replicas, and
//! a short poll covers stores without push (and any lost notification).
//!
//! Every frame carries its `event_index` as the SSE `id:`, so a client reconnecting with
//! `Last-Event-ID` (or `last_event_index`) gets each event exactly once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sse::Frame;
use agno_core::{Db, JobStatus, JobStore, RunStatus, StoredEvent};
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

/// Events read per round trip while catching up.
const PAGE: usize = 256;

/// Per-run wake-ups and the shared log reads of this replica's tails: a writer (or a
/// notification from another replica) marks the run changed; tails waiting on it look again. A
/// wake-up is only a hint; the log decides what is sent. The tails of one run read the database
/// once between them ([`RunLog`]), not once each.
#[derive(Debug, Default)]
pub struct Waiters {
    runs: Mutex<HashMap<String, Shared>>,
}

/// What the tails of one run share: the wake-up channel and the events read so far.
#[derive(Debug)]
struct Shared {
    wake: watch::Sender<()>,
    log: Arc<tokio::sync::Mutex<RunLog>>,
}

/// The events of one run read so far (from the start of its log, in order) as encoded frames,
/// whether its job had settled when they were read, and when that read started. Held while the
/// run has tails; a frame's bytes are shared by every tail that sends it.
#[derive(Debug, Default)]
struct RunLog {
    events: Vec<Logged>,
    settled: bool,
    read_at: Option<tokio::time::Instant>,
}

/// One event of the log, encoded once.
#[derive(Debug, Clone)]
struct Logged {
    index: i64,
    ends_stream: bool,
    frame: Frame,
}

impl Waiters {
    /// Marks `run_id` changed, waking its tails (if any).
    pub fn wake(&self, run_id: &str) {
        if let Ok(runs) = self.runs.lock()
            && let Some(shared) = runs.get(run_id)
        {
            shared.wake.send_replace(());
        }
    }

    fn subscribe(&self, run_id: &str) -> Option<(watch::Receiver<()>, Arc<tokio::sync::Mutex<RunLog>>)> {
        let mut runs = self.runs.lock().ok()?;
        let shared =
            runs.entry(run_id.to_owned()).or_insert_with(|| Shared { wake: watch::channel(()).0, log: Arc::default() });
        Some((shared.wake.subscribe(), Arc::clone(&shared.log)))
    }

    fn release(&self, run_id: &str) {
        if let Ok(mut runs) = self.runs.lock()
            && runs.get(run_id).is_some_and(|shared| shared.wake.receiver_count() == 0)
        {
            runs.remove(run_id);
        }
    }
}

impl RunLog {
    /// The events after index `after` and whether the job had settled, from a read of the
    /// database that started at `since` or later: the first tail to ask after a wake-up reads
    /// (the job's state, then the log past what is held), the others reuse what it read.
    async fn since(
        log: &tokio::sync::Mutex<RunLog>,
        jobs: &dyn JobStore,
        run_id: &str,
        after: i64,
        since: tokio::time::Instant,
    ) -> (Vec<Logged>, bool) {
        let mut log = log.lock().await;
        if log.read_at.is_none_or(|at| at < since) {
            log.read(jobs, run_id).await;
        }
        let first = log.events.partition_point(|e| e.index <= after);
        (log.events[first..].to_vec(), log.settled)
    }

    async fn read(&mut self, jobs: &dyn JobStore, run_id: &str) {
        let started = tokio::time::Instant::now();
        // The job's state is read before the log: a settled job wrote its last event earlier.
        let settled_now = match jobs.get_job(run_id, None).await {
            Ok(Some(job)) => settled(job.status, job.locked_by.as_deref()),
            Ok(None) => true,
            Err(e) => {
                tracing::warn!(run = %run_id, error = %e, "tail: cannot read the job; retrying");
                return;
            }
        };
        loop {
            let after = self.events.last().map_or(-1, |e| e.index);
            match jobs.read_events(run_id, after, PAGE).await {
                Ok(batch) => {
                    let full = batch.len() == PAGE;
                    self.events.extend(batch.iter().map(|event| Logged {
                        index: event.event_index,
                        ends_stream: event.ends_stream(),
                        frame: frame(event),
                    }));
                    if !full {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(run = %run_id, error = %e, "tail: cannot read the event log; retrying");
                    return;
                }
            }
        }
        self.settled = settled_now;
        self.read_at = Some(started);
    }
}

/// An SSE frame of a logged event: its name, its JSON exactly as first streamed, its index as id.
pub fn frame(event: &StoredEvent) -> Frame {
    Frame::new(&event.event, &event.data, u64::try_from(event.event_index).ok())
}

/// What a tail needs: the stores, this replica's waiters, and the fallback poll.
#[derive(Clone)]
pub struct TailSource {
    /// The job store holding the log.
    pub jobs: Arc<dyn JobStore>,
    /// The database holding the run (for the closing frame of a run that ended without one).
    pub db: Arc<dyn Db>,
    /// Wake-ups of this replica.
    pub waiters: Arc<Waiters>,
    /// Longest wait between two reads when nothing wakes the tail.
    pub poll: Duration,
    /// Fired when this replica stops: the tail sends what the log holds and ends (the client
    /// resumes on another replica).
    pub stop: tokio_util::sync::CancellationToken,
}

impl std::fmt::Debug for TailSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailSource").field("poll", &self.poll).finish_non_exhaustive()
    }
}

/// True when the job will write no more events: ended (or paused) and released by its worker.
fn settled(status: JobStatus, locked_by: Option<&str>) -> bool {
    matches!(status, JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled | JobStatus::Paused)
        && locked_by.is_none()
}

/// The closing frame of a run whose log does not end with one (cancelled before it started, or
/// its worker died): built from the stored run, without an id (it is not in the log).
async fn closing_frame(db: &dyn Db, run_id: &str) -> Option<Frame> {
    let run = match db.get_run(run_id, None).await {
        Ok(run) => run?,
        Err(e) => {
            tracing::warn!(run = %run_id, error = %e, "cannot read the run for its closing frame");
            return None;
        }
    };
    if run.workflow_id.is_some() && run.agent_id.is_none() {
        let name = match run.status {
            RunStatus::Cancelled => "WorkflowCancelled",
            RunStatus::Error => "WorkflowError",
            RunStatus::Completed => "WorkflowCompleted",
            RunStatus::Paused => "WorkflowPaused",
            RunStatus::Pending | RunStatus::Running | RunStatus::Regenerated => return None,
        };
        let data = json!({
            "event": name,
            "run_id": run_id,
            "session_id": run.session_id,
            "workflow_id": run.workflow_id,
            "content": run.content,
            "created_at": agno_core::now_epoch_secs(),
        });
        return Some(Frame::new(name, &data.to_string(), None));
    }
    let (name, extra) = match run.status {
        RunStatus::Cancelled => ("RunCancelled", json!({"reason": "the run was cancelled"})),
        RunStatus::Error => ("RunError", json!({"content": run.content.clone().unwrap_or(Value::Null)})),
        RunStatus::Completed => ("RunCompleted", json!({"content": run.content.clone().unwrap_or(Value::Null)})),
        RunStatus::Paused => ("RunPaused", json!({"requirements": run.requirements.clone()})),
        RunStatus::Pending | RunStatus::Running | RunStatus::Regenerated => return None,
    };
    // A team run's end is named as Agno's team events (`TeamRunCompleted`, ...).
    let team_id = run.extra.get("team_id").filter(|_| run.agent_id.is_none());
    let name = match team_id {
        Some(_) => format!("Team{name}"),
        None => name.to_owned(),
    };
    let mut data = json!({
        "event": name,
        "run_id": run_id,
        "session_id": run.session_id,
        "agent_id": run.agent_id,
        "created_at": agno_core::now_epoch_secs(),
    });
    if let (Some(team_id), Value::Object(d)) = (team_id, &mut data) {
        d.remove("agent_id");
        d.insert("team_id".to_owned(), team_id.clone());
    }
    if let (Value::Object(d), Value::Object(e)) = (&mut data, extra) {
        d.extend(e);
    }
    Some(Frame::new(&name, &data.to_string(), None))
}

/// Streams the events of `run_id` after index `after` (-1: from the start), then follows the
/// log until the run's job settles. Ends early when the client goes away or the replica stops.
pub fn tail(source: TailSource, run_id: String, after: i64) -> impl Stream<Item = Frame> {
    // Few frames ahead: the response's own buffer bounds what waits for the client.
    let (tx, rx) = mpsc::channel::<Frame>(8);
    tokio::spawn(async move {
        let (mut wake, log) = match source.waiters.subscribe(&run_id) {
            Some((wake, log)) => (Some(wake), log),
            None => (None, Arc::default()),
        };
        follow(&source, &run_id, after, &tx, wake.as_mut(), &log).await;
        drop(wake);
        source.waiters.release(&run_id);
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
}

async fn follow(
    source: &TailSource,
    run_id: &str,
    mut after: i64,
    tx: &mpsc::Sender<Frame>,
    mut wake: Option<&mut watch::Receiver<()>>,
    log: &tokio::sync::Mutex<RunLog>,
) {
    // The event at `after` tells whether the client already saw the end.
    let mut ended = match after {
        a if a >= 0 => source
            .jobs
            .read_events(run_id, a - 1, 1)
            .await
            .ok()
            .and_then(|v| v.into_iter().next())
            .is_some_and(|e| e.event_index == a && e.ends_stream()),
        _ => false,
    };
    let mut last_round = false;
    loop {
        if let Some(w) = wake.as_deref_mut() {
            w.borrow_and_update();
        }
        // What was written before this moment (the wake-up's write included) is in a read that
        // starts now or later.
        let woke = tokio::time::Instant::now();
        let (events, done) = RunLog::since(log, source.jobs.as_ref(), run_id, after, woke).await;
        for event in events {
            after = event.index;
            ended = event.ends_stream;
            if tx.send(event.frame).await.is_err() {
                return;
            }
        }
        if done {
            if !ended && let Some(last) = closing_frame(source.db.as_ref(), run_id).await {
                let _ = tx.send(last).await;
            }
            return;
        }
        if last_round {
            return;
        }
        let changed = async {
            match wake.as_deref_mut() {
                Some(w) => {
                    let _ = w.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(source.poll) => {}
            () = tx.closed() => return,
            () = source.stop.cancelled() => last_round = true,
        }
    }
}
