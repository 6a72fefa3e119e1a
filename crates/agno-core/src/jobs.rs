//! Durable background jobs (`agno_jobs`, as Agno 3.x shapes it): one row per background run,
//! `id == run_id`. A job is claimed by one worker at a time; `attempt` counts claims and fences
//! every write of the worker holding it, so a worker whose lease expired cannot overwrite the
//! outcome of the one that took over.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Waiting for a worker (or for `available_at`).
    Queued,
    /// Claimed by a worker holding a lease.
    Running,
    /// The run paused for a human; `continue` queues it again.
    Paused,
    /// Finished.
    Completed,
    /// Failed for good.
    Failed,
    /// Cancelled before or while running.
    Cancelled,
}

impl JobStatus {
    /// Every status, in a job's life order.
    pub const ALL: [JobStatus; 6] = [
        JobStatus::Queued,
        JobStatus::Running,
        JobStatus::Paused,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

    /// The stored value.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Paused => "paused",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// Parses a stored value.
    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_value(Value::String(text.to_owned())).ok()
    }

    /// True for `completed`, `failed` and `cancelled`.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled)
    }
}

/// The kinds of component a run belongs to (a job's `component_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComponentKind {
    /// An agent.
    Agent,
    /// A team of agents.
    Team,
    /// A workflow of steps.
    Workflow,
}

impl ComponentKind {
    /// Every kind.
    pub const ALL: [ComponentKind; 3] = [ComponentKind::Agent, ComponentKind::Team, ComponentKind::Workflow];

    /// The stored value (`agent`, `team`, `workflow`).
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentKind::Agent => "agent",
            ComponentKind::Team => "team",
            ComponentKind::Workflow => "workflow",
        }
    }

    /// Parses a stored value.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl std::fmt::Display for ComponentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a job does (its `job_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobType {
    /// A run of an agent, team or workflow (`run`); the job's id is the run's.
    Run,
    /// The ingestion of a knowledge content (`ingest`): its `session_id` is the content's id, so
    /// two ingestions of the same content never run at once.
    Ingest,
}

impl JobType {
    /// The stored value.
    pub fn as_str(self) -> &'static str {
        match self {
            JobType::Run => "run",
            JobType::Ingest => "ingest",
        }
    }

    /// Parses a stored value.
    pub fn parse(text: &str) -> Option<Self> {
        [JobType::Run, JobType::Ingest].into_iter().find(|t| t.as_str() == text)
    }
}

/// One background job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Job id, equal to the run id.
    pub id: String,
    /// `agent`, `team` or `workflow`.
    pub component_type: String,
    /// What the job does: `run` (a run of the component), or `ingest` (reading a knowledge
    /// content into its base; `component_type` is then `knowledge`). See [`JobType`].
    pub job_type: String,
    /// Only workers of this deployment may claim it (`None`: any).
    #[serde(default)]
    pub deployment_id: Option<String>,
    /// The agent, team or workflow id.
    pub component_id: String,
    /// The run's session.
    pub session_id: String,
    /// The run's user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The run's parameters (message, session state, ...).
    pub payload: Value,
    /// Status.
    pub status: JobStatus,
    /// Claims so far; the fencing generation.
    pub attempt: i64,
    /// Claims allowed.
    pub max_attempts: i64,
    /// Client-supplied dedup key, unique per user.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Not claimable before (epoch seconds).
    pub available_at: i64,
    /// Worker holding the lease.
    #[serde(default)]
    pub locked_by: Option<String>,
    /// Last heartbeat of the lease (epoch seconds).
    #[serde(default)]
    pub locked_at: Option<i64>,
    /// Last error.
    #[serde(default)]
    pub error: Option<String>,
    /// Creation (epoch seconds).
    pub created_at: i64,
    /// Last change.
    #[serde(default)]
    pub updated_at: Option<i64>,
    /// When it reached a terminal status.
    #[serde(default)]
    pub completed_at: Option<i64>,
}

impl Job {
    /// A queued run job of a component of `kind`.
    pub fn run(
        kind: ComponentKind,
        run_id: impl Into<String>,
        component_id: impl Into<String>,
        session_id: impl Into<String>,
        payload: Value,
    ) -> Self {
        Self { component_type: kind.as_str().to_owned(), ..Self::agent_run(run_id, component_id, session_id, payload) }
    }

    /// The kind of component the job runs; `None` for a `component_type` no version wrote (and
    /// for an ingestion, whose component is a knowledge base).
    pub fn kind(&self) -> Option<ComponentKind> {
        ComponentKind::parse(&self.component_type)
    }

    /// What the job does; `None` for a `job_type` no version wrote.
    pub fn job_type(&self) -> Option<JobType> {
        JobType::parse(&self.job_type)
    }

    /// A queued ingestion of content `content_id` into knowledge base `knowledge_id`: the
    /// content's id is the job's id (a content's ingestion is found from the content) and its
    /// session (ingestions of one content run one at a time).
    pub fn ingest(knowledge_id: impl Into<String>, content_id: impl Into<String>, payload: Value) -> Self {
        let content_id: String = content_id.into();
        Self {
            component_type: "knowledge".to_owned(),
            job_type: JobType::Ingest.as_str().to_owned(),
            ..Self::agent_run(content_id.clone(), knowledge_id, content_id, payload)
        }
    }

    /// A queued workflow run job.
    pub fn workflow_run(
        run_id: impl Into<String>,
        workflow_id: impl Into<String>,
        session_id: impl Into<String>,
        payload: Value,
    ) -> Self {
        Self { component_type: "workflow".to_owned(), ..Self::agent_run(run_id, workflow_id, session_id, payload) }
    }

    /// A queued team run job.
    pub fn team_run(
        run_id: impl Into<String>,
        team_id: impl Into<String>,
        session_id: impl Into<String>,
        payload: Value,
    ) -> Self {
        Self { component_type: "team".to_owned(), ..Self::agent_run(run_id, team_id, session_id, payload) }
    }

    /// A queued agent run job.
    pub fn agent_run(
        run_id: impl Into<String>,
        agent_id: impl Into<String>,
        session_id: impl Into<String>,
        payload: Value,
    ) -> Self {
        let now = crate::now_epoch_secs();
        Self {
            id: run_id.into(),
            component_type: "agent".to_owned(),
            job_type: "run".to_owned(),
            deployment_id: None,
            component_id: agent_id.into(),
            session_id: session_id.into(),
            user_id: None,
            payload,
            status: JobStatus::Queued,
            attempt: 0,
            max_attempts: 1,
            idempotency_key: None,
            available_at: now,
            locked_by: None,
            locked_at: None,
            error: None,
            created_at: now,
            updated_at: Some(now),
            completed_at: None,
        }
    }
}

impl Job {
    /// The payload with `continuation` under `"continue"` (replacing an earlier one, as Agno's
    /// `continue_job`); a payload that is not an object becomes `{"continue": ...}`.
    pub fn continued_payload(&self, continuation: &Value) -> Value {
        let mut payload = self.payload.clone();
        match &mut payload {
            Value::Object(p) => {
                p.insert("continue".to_owned(), continuation.clone());
            }
            other => *other = serde_json::json!({ "continue": continuation }),
        }
        payload
    }

    // The transitions of a job, the rules every store applies (memory, Redis and MySQL apply
    // them to a row they hold; SQLite and PostgreSQL express the same rules in SQL). Each
    // returns whether it applies, changing nothing when it does not.

    /// True while `worker_id`'s claim `attempt` holds the job: it runs, or was cancelled while it
    /// ran (the worker still records the end).
    pub fn held_by(&self, worker_id: &str, attempt: i64) -> bool {
        matches!(self.status, JobStatus::Running | JobStatus::Cancelled)
            && self.locked_by.as_deref() == Some(worker_id)
            && self.attempt == attempt
    }

    /// Claims the job for `worker_id`: running, leased at `now`, one more attempt.
    pub fn claim(&mut self, worker_id: &str, now: i64) {
        self.status = JobStatus::Running;
        self.locked_by = Some(worker_id.to_owned());
        self.locked_at = Some(now);
        self.attempt += 1;
        self.updated_at = Some(now);
    }

    /// Refreshes `worker_id`'s lease on a running job.
    pub fn heartbeat(&mut self, worker_id: &str, now: i64) -> bool {
        let held = self.status == JobStatus::Running && self.locked_by.as_deref() == Some(worker_id);
        if held {
            self.locked_at = Some(now);
        }
        held
    }

    /// Checks `worker_id`'s claim `attempt` (see [`Job::held_by`]), refreshing the lease of a
    /// running job.
    pub fn hold(&mut self, worker_id: &str, attempt: i64, now: i64) -> bool {
        let held = self.held_by(worker_id, attempt);
        if held && self.status == JobStatus::Running {
            self.locked_at = Some(now);
        }
        held
    }

    /// Ends `worker_id`'s attempt `attempt` with `outcome`, releasing the lease. A job cancelled
    /// while it ran stays cancelled whatever the outcome; a retry is queued again while attempts
    /// remain, else the job fails.
    pub fn finish(&mut self, worker_id: &str, attempt: i64, outcome: &JobOutcome, now: i64) -> bool {
        if !self.held_by(worker_id, attempt) {
            return false;
        }
        self.locked_by = None;
        self.locked_at = None;
        self.updated_at = Some(now);
        if self.status == JobStatus::Cancelled {
            return true;
        }
        match outcome {
            JobOutcome::Retry { error, available_at } if self.attempt < self.max_attempts => {
                self.status = JobStatus::Queued;
                self.error = Some(error.clone());
                self.available_at = *available_at;
            }
            JobOutcome::Retry { error, .. } => {
                self.status = JobStatus::Failed;
                self.error = Some(error.clone());
                self.completed_at = Some(now);
            }
            JobOutcome::Settled(status, error) => {
                self.status = *status;
                self.error.clone_from(error);
                if status.is_terminal() {
                    self.completed_at = Some(now);
                }
            }
        }
        true
    }

    /// The sweep of a job whose lease expired (at or before `stale`): a running job with no
    /// attempt left fails with `error`; a job cancelled while it ran loses its dead worker's
    /// lease. Others are left alone.
    pub fn sweep(&mut self, stale: i64, now: i64, error: &str) -> bool {
        let expired = self.locked_at.is_some_and(|t| t <= stale);
        if self.status == JobStatus::Cancelled && self.locked_by.is_some() && expired {
            self.locked_by = None;
            self.locked_at = None;
            self.updated_at = Some(now);
            true
        } else if self.status == JobStatus::Running && expired && self.attempt >= self.max_attempts {
            self.status = JobStatus::Failed;
            self.error = Some(error.to_owned());
            self.locked_by = None;
            self.locked_at = None;
            self.completed_at = Some(now);
            self.updated_at = Some(now);
            true
        } else {
            false
        }
    }

    /// Cancels a queued, paused or running job and returns the status it had; a running job
    /// keeps its lease so its worker records how the run ended. `None` for an ended job.
    pub fn cancel(&mut self, now: i64) -> Option<JobStatus> {
        let before = self.status;
        if !matches!(before, JobStatus::Queued | JobStatus::Paused | JobStatus::Running) {
            return None;
        }
        self.status = JobStatus::Cancelled;
        if before != JobStatus::Running {
            self.locked_by = None;
            self.locked_at = None;
        }
        self.completed_at = Some(now);
        self.updated_at = Some(now);
        Some(before)
    }

    /// Marks a swept job (failed, released) completed: its worker stored the run before dying.
    pub fn complete_swept(&mut self, now: i64) -> bool {
        let swept = self.status == JobStatus::Failed && self.locked_by.is_none();
        if swept {
            self.status = JobStatus::Completed;
            self.error = None;
            self.updated_at = Some(now);
        }
        swept
    }

    /// Queues a paused job again with `continuation` and exactly one more attempt (a HITL
    /// continue). A queued or running job is left alone (`Attach`), an ended one is a `Conflict`.
    pub fn continue_with(&mut self, continuation: &Value, now: i64) -> Continued {
        match self.status {
            JobStatus::Queued | JobStatus::Running => return Continued::Attach(self.clone()),
            JobStatus::Paused => {}
            _ => return Continued::Conflict(Some(self.clone())),
        }
        self.payload = self.continued_payload(continuation);
        self.status = JobStatus::Queued;
        self.max_attempts = self.attempt + 1;
        self.available_at = now;
        self.locked_by = None;
        self.locked_at = None;
        self.completed_at = None;
        self.updated_at = Some(now);
        Continued::Queued(self.clone())
    }

    /// Queues a failed or cancelled job again with a fresh attempt budget (an operator's
    /// requeue).
    pub fn requeue(&mut self, now: i64) -> bool {
        if !matches!(self.status, JobStatus::Failed | JobStatus::Cancelled) {
            return false;
        }
        self.status = JobStatus::Queued;
        self.max_attempts = self.attempt + self.max_attempts.max(1);
        self.available_at = now;
        self.locked_by = None;
        self.locked_at = None;
        self.completed_at = None;
        self.updated_at = Some(now);
        true
    }
}

/// What [`JobStore::enqueue_job`](crate::JobStore::enqueue_job) did.
#[derive(Debug, Clone, PartialEq)]
pub enum Enqueued {
    /// Stored as a new job.
    Accepted(Job),
    /// The same user already submitted this idempotency key: the original job.
    Duplicate(Job),
    /// `max_depth` jobs are already queued.
    QueueFull,
}

/// How a worker's attempt ended, for [`JobStore::finish_job`](crate::JobStore::finish_job).
#[derive(Debug, Clone, PartialEq)]
pub enum JobOutcome {
    /// Done for good: `completed`, `failed`, `cancelled` or `paused`.
    Settled(JobStatus, Option<String>),
    /// Failed but retryable: queued again at `available_at` if attempts remain, else `failed`.
    Retry {
        /// Why.
        error: String,
        /// Earliest next claim.
        available_at: i64,
    },
}

/// A hint from the database that something happened to a job (PostgreSQL `NOTIFY`). Only hints:
/// the claim and the fenced writes decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobSignal {
    /// A job became claimable (enqueued or requeued).
    Claimable(String),
    /// A job was cancelled; its worker should stop the run now.
    Cancelled(String),
    /// A run's event log grew, or its job ended: tails of that run should read again.
    Events(String),
}

/// A worker's claim on a job: what every write it makes for the job's run is conditioned on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLease {
    /// The job (and run) id.
    pub job_id: String,
    /// The worker holding the claim.
    pub worker_id: String,
    /// The claim's number: a later claim of the same job fences this one out.
    pub attempt: i64,
}

impl JobLease {
    /// The claim `attempt` of `worker_id` on job `job_id`.
    pub fn new(job_id: impl Into<String>, worker_id: impl Into<String>, attempt: i64) -> Self {
        Self { job_id: job_id.into(), worker_id: worker_id.into(), attempt }
    }

    /// The claim a job holds, when it is claimed.
    pub fn of(job: &Job) -> Option<Self> {
        Some(Self::new(&job.id, job.locked_by.as_deref()?, job.attempt))
    }
}

/// What [`JobStore::enqueue_run`](crate::JobStore::enqueue_run) stores beside a run job: the
/// session the run belongs to (written only when it is not stored yet) and the run as it is
/// before a worker takes it (`PENDING`).
#[derive(Debug, Clone, Copy)]
pub struct PendingRun<'a> {
    /// The run's session, as a new one would be stored (without runs).
    pub session: &'a crate::AgentSession,
    /// The run's record.
    pub run: &'a crate::RunOutput,
}

/// One write of a run: its session (with the state change to apply) and the run row, stored
/// together by [`JobStore::save_claimed_run`](crate::JobStore::save_claimed_run).
#[derive(Debug, Clone, Copy)]
pub struct RunWrite<'a> {
    /// The session, without its runs.
    pub session: &'a crate::AgentSession,
    /// How `session_state` is written (replaced, or merged into the stored one).
    pub state: &'a crate::StateUpdate,
    /// The run.
    pub run: &'a crate::RunOutput,
    /// The run's owner.
    pub user_id: Option<&'a str>,
}

/// One run event in the durable event log, as written by the worker that ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The event's `event_index`, strictly increasing within the run (also across attempts).
    pub event_index: i64,
    /// The claim (`attempt`) that produced it.
    pub attempt: i64,
    /// The event name (`RunStarted`, `RunContent`, ...).
    pub event: String,
    /// The event as JSON text, exactly as streamed.
    pub data: String,
    /// When it was written, epoch seconds.
    pub created_at: i64,
}

impl StoredEvent {
    /// True for the events that end a stream: `RunCompleted`, `RunError`, `RunCancelled`,
    /// `RunPaused`, and their workflow and team forms.
    pub fn ends_stream(&self) -> bool {
        matches!(
            self.event.as_str(),
            "RunCompleted"
                | "RunError"
                | "RunCancelled"
                | "RunPaused"
                | "WorkflowCompleted"
                | "WorkflowError"
                | "WorkflowCancelled"
                | "WorkflowPaused"
                | "TeamRunCompleted"
                | "TeamRunError"
                | "TeamRunCancelled"
                | "TeamRunPaused"
        )
    }
}

/// What [`JobStore::continue_job`](crate::JobStore::continue_job) did.
#[derive(Debug, Clone, PartialEq)]
pub enum Continued {
    /// The paused job is queued again under the same id, with the continuation in its payload.
    Queued(Job),
    /// The job is already queued or running (a repeated continue): nothing changed.
    Attach(Job),
    /// The job has ended (or does not exist) and cannot be continued.
    Conflict(Option<Job>),
}
