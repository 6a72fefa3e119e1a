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
use futures::{Stream, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Events read per round trip while catching up.
const PAGE: usize = 256;

/// Events a tail takes from the shared log at a time (a tail that catches up holds this many
/// frames, not the whole log).
const SEND_PAGE: usize = 32;

/// Events of the log a tail takes at once.
struct Page {
    events: Vec<Logged>,
    /// More events are held past these.
    more: bool,
    /// No event will follow these: the job had settled when the log was read.
    settled: bool,
}

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
    /// The next events after index `after` (at most [`SEND_PAGE`]), from a read of the database
    /// that started at `since` or later: the first tail to ask after a wake-up reads (the job's
    /// state, then the log past what is held), the others reuse what it read.
    async fn since(
        log: &tokio::sync::Mutex<RunLog>,
        jobs: &dyn JobStore,
        run_id: &str,
        after: i64,
        since: tokio::time::Instant,
    ) -> Page {
        let mut log = log.lock().await;
        if log.read_at.is_none_or(|at| at < since) {
            log.read(jobs, run_id).await;
        }
        let first = log.events.partition_point(|e| e.index <= after);
        let end = log.events.len().min(first + SEND_PAGE);
        let more = end < log.events.len();
        Page { events: log.events[first..end].to_vec(), more, settled: log.settled && !more }
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
/// log until the run's job settles. When the replica stops it sends what the log holds and ends;
/// dropping the stream (the client went away) stops it. The stream is driven by the response
/// that sends it: no task or channel of its own.
pub fn tail(source: TailSource, run_id: String, after: i64) -> impl Stream<Item = Frame> {
    let (wake, log) = match source.waiters.subscribe(&run_id) {
        Some((wake, log)) => (Some(wake), log),
        None => (None, Arc::default()),
    };
    let follower =
        Follower { source, run_id, after, ended: None, wake, log, paging: None, wait: false, last: false, over: false };
    futures::stream::unfold(follower, |mut f| async move {
        let frames = f.next_frames().await?;
        Some((futures::stream::iter(frames), f))
    })
    .flatten()
}

/// One tail's place in its run's log.
struct Follower {
    source: TailSource,
    run_id: String,
    /// The index of the last event sent.
    after: i64,
    /// Whether the last event sent ends the stream (`None`: not known yet).
    ended: Option<bool>,
    wake: Option<watch::Receiver<()>>,
    log: Arc<tokio::sync::Mutex<RunLog>>,
    /// When the read being paged through started.
    paging: Option<tokio::time::Instant>,
    /// Wait for a wake-up (or the poll) before reading again.
    wait: bool,
    /// The replica is stopping: send what the log holds, then end.
    last: bool,
    /// The last frames were sent: the stream ends.
    over: bool,
}

impl Drop for Follower {
    fn drop(&mut self) {
        // The receiver goes first: the run's shared state is released when no tail holds one.
        self.wake = None;
        self.source.waiters.release(&self.run_id);
    }
}

impl Follower {
    /// Whether the event at `after` (the last one the client saw) ends the stream.
    async fn saw_end(&self) -> bool {
        let a = self.after;
        if a < 0 {
            return false;
        }
        let seen = self.source.jobs.read_events(&self.run_id, a - 1, 1).await;
        seen.ok().and_then(|v| v.into_iter().next()).is_some_and(|e| e.event_index == a && e.ends_stream())
    }

    /// The next frames to send; `None` once the stream is over.
    async fn next_frames(&mut self) -> Option<Vec<Frame>> {
        if self.over {
            return None;
        }
        if self.ended.is_none() {
            self.ended = Some(self.saw_end().await);
        }
        loop {
            if std::mem::take(&mut self.wait) {
                self.wait_for_news().await;
            }
            let woke = match self.paging.take() {
                Some(started) => started,
                None => {
                    if let Some(w) = self.wake.as_mut() {
                        w.borrow_and_update();
                    }
                    // What was written before this moment (the wake-up's write included) is in a
                    // read that starts now or later.
                    tokio::time::Instant::now()
                }
            };
            let page = RunLog::since(&self.log, self.source.jobs.as_ref(), &self.run_id, self.after, woke).await;
            if let Some(last) = page.events.last() {
                self.after = last.index;
                self.ended = Some(last.ends_stream);
            }
            let mut frames: Vec<Frame> = page.events.into_iter().map(|e| e.frame).collect();
            if page.more {
                self.paging = Some(woke);
                return Some(frames);
            }
            if page.settled {
                if self.ended != Some(true)
                    && let Some(last) = closing_frame(self.source.db.as_ref(), &self.run_id).await
                {
                    frames.push(last);
                }
                self.last = true;
            }
            if self.last {
                self.over = true;
                return (!frames.is_empty()).then_some(frames);
            }
            self.wait = true;
            if !frames.is_empty() {
                return Some(frames);
            }
        }
    }

    /// Waits for a wake-up, the poll, or the replica stopping.
    async fn wait_for_news(&mut self) {
        let changed = async {
            match self.wake.as_mut() {
                Some(w) => {
                    let _ = w.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(self.source.poll) => {}
            () = self.source.stop.cancelled() => self.last = true,
        }
    }
}
