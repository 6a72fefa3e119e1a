//! Storage traits, split by area. `Db` is their union; code asks for the narrowest trait it uses.
//!
//! Every user-facing read and write takes an optional `user_id`; when given, rows of other users
//! are never returned or touched, and the filter is part of the query itself. Adapters live in
//! `agno-db`.

use async_trait::async_trait;
use std::collections::HashMap;

use chrono::NaiveDate;
use serde_json::{Map, Value};

use crate::error::DbError;
use crate::jobs::{Continued, Enqueued, Job, JobOutcome, JobSignal, JobStatus, StoredEvent};
use crate::memory::{UserMemory, UserMemoryStats};
use crate::records::{EvalFilterType, EvalRunRecord, EvalType, KnowledgeRow};
use crate::run::{RunOutput, RunStatus};
use crate::schedule::{Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleUpdate};
use crate::session::{AgentSession, SessionType};
use crate::usage::{MetricsBucket, MetricsQuery};

/// Result of a storage call.
pub type DbResult<T> = Result<T, DbError>;

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Oldest first.
    Asc,
    /// Newest first.
    #[default]
    Desc,
}

impl SortOrder {
    /// `ASC` or `DESC`.
    pub fn sql(self) -> &'static str {
        match self {
            SortOrder::Asc => "ASC",
            SortOrder::Desc => "DESC",
        }
    }
}

/// Filters and paging for [`RunStore::get_runs`].
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    /// Only runs of this session.
    pub session_id: Option<String>,
    /// Only runs of this user.
    pub user_id: Option<String>,
    /// Only runs of this agent.
    pub agent_id: Option<String>,
    /// Only runs of this team.
    pub team_id: Option<String>,
    /// Only runs of this workflow.
    pub workflow_id: Option<String>,
    /// Only runs with this status.
    pub status: Option<RunStatus>,
    /// At most this many runs.
    pub limit: Option<usize>,
    /// Continue after this cursor (from [`RunPage::next_cursor`]).
    pub cursor: Option<RunCursor>,
    /// Order by `(created_at, run_id)`.
    pub sort: SortOrder,
}

/// Position in a run listing: the last row of the previous page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCursor {
    /// `created_at` of the last row.
    pub created_at: i64,
    /// `run_id` of the last row (tie-breaker).
    pub run_id: String,
}

/// One page of runs.
#[derive(Debug, Clone, Default)]
pub struct RunPage {
    /// The runs.
    pub runs: Vec<RunOutput>,
    /// Cursor for the next page; `None` at the end.
    pub next_cursor: Option<RunCursor>,
}

/// Column a session listing is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionSort {
    /// `created_at`.
    #[default]
    CreatedAt,
    /// `updated_at`.
    UpdatedAt,
}

/// Filters and paging for [`SessionStore::get_sessions`].
#[derive(Debug, Clone, Default)]
pub struct SessionQuery {
    /// Only sessions of this type.
    pub session_type: Option<SessionType>,
    /// Only sessions of this user.
    pub user_id: Option<String>,
    /// Only sessions of this agent, team or workflow id.
    pub component_id: Option<String>,
    /// Only sessions whose name contains this text.
    pub session_name: Option<String>,
    /// Only sessions created at or after (epoch seconds).
    pub start_timestamp: Option<i64>,
    /// Only sessions created at or before (epoch seconds).
    pub end_timestamp: Option<i64>,
    /// An expression the sessions must also match (`POST /sessions/search`).
    pub filter: Option<crate::FilterExpr<crate::SessionField>>,
    /// Page size.
    pub limit: Option<usize>,
    /// 1-based page number.
    pub page: Option<usize>,
    /// Sort column.
    pub sort_by: SessionSort,
    /// Sort direction.
    pub sort_order: SortOrder,
}

/// One page of sessions (without runs) and the total number of matching sessions.
#[derive(Debug, Clone, Default)]
pub struct SessionPage {
    /// The sessions; `runs` is always `None`: listing never reads run bodies.
    pub sessions: Vec<AgentSession>,
    /// How many sessions match the filters.
    pub total: u64,
}

/// How the stored `session_state` is updated by [`SessionStore::upsert_session`].
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StateUpdate {
    /// Replace the stored state with the session's.
    #[default]
    Replace,
    /// Merge: set these keys and remove those, keeping every other stored key. Concurrent runs
    /// on one session that change different keys never lose each other's updates.
    Merge {
        /// Keys set or changed.
        set: Map<String, Value>,
        /// Keys removed.
        removed: Vec<String>,
        /// A run's metrics to add to the stored `session_metrics` (under the same lock, so
        /// concurrent runs all count).
        metrics: Option<Box<crate::Metrics>>,
    },
}

impl StateUpdate {
    /// The change from `before` to `after`.
    pub fn diff(before: &Map<String, Value>, after: &Map<String, Value>) -> Self {
        let set =
            after.iter().filter(|(k, v)| before.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let removed = before.keys().filter(|k| !after.contains_key(*k)).cloned().collect();
        StateUpdate::Merge { set, removed, metrics: None }
    }

    /// A merge that changes nothing: the stored state and metrics stay as they are.
    pub fn keep() -> Self {
        StateUpdate::Merge { set: Map::new(), removed: Vec::new(), metrics: None }
    }

    /// True for a merge that sets, removes and adds nothing ([`StateUpdate::keep`], or the diff of
    /// a state a run has not changed yet): the stored state and metrics stay exactly as stored.
    pub fn changes_nothing(&self) -> bool {
        matches!(self, StateUpdate::Merge { set, removed, metrics: None } if set.is_empty() && removed.is_empty())
    }

    /// The same merge, also adding `metrics` to the stored `session_metrics`.
    pub fn with_metrics(self, metrics: crate::Metrics) -> Self {
        match self {
            StateUpdate::Merge { set, removed, .. } => {
                StateUpdate::Merge { set, removed, metrics: Some(Box::new(metrics)) }
            }
            replace => replace,
        }
    }

    /// The `session_data` to store: the session's own, except that a merge over a stored row
    /// keeps the stored `session_state` with this merge applied and the stored
    /// `session_metrics` (what concurrent runs wrote since this session was read), and adds
    /// this update's metrics to them (to the session's own when nothing is stored yet).
    pub fn session_data(
        &self,
        mut session_data: Map<String, Value>,
        stored_data: Option<&Map<String, Value>>,
    ) -> Map<String, Value> {
        let StateUpdate::Merge { metrics, .. } = self else { return session_data };
        if let Some(stored) = stored_data {
            let mut merged = stored.get("session_state").and_then(Value::as_object).cloned().unwrap_or_default();
            self.apply(&mut merged, &Map::new());
            session_data.insert("session_state".to_owned(), Value::Object(merged));
            match stored.get("session_metrics") {
                Some(m) => session_data.insert("session_metrics".to_owned(), m.clone()),
                None => session_data.remove("session_metrics"),
            };
        }
        if let Some(run) = metrics {
            let mut total: crate::Metrics = session_data
                .get("session_metrics")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default();
            total.accumulate(run);
            if let Ok(value) = serde_json::to_value(&total) {
                session_data.insert("session_metrics".to_owned(), value);
            }
        }
        session_data
    }

    /// Applies the update to a stored state.
    pub fn apply(&self, stored: &mut Map<String, Value>, replacement: &Map<String, Value>) {
        match self {
            StateUpdate::Replace => *stored = replacement.clone(),
            StateUpdate::Merge { set, removed, .. } => {
                for k in removed {
                    stored.remove(k);
                }
                for (k, v) in set {
                    stored.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// Sessions: one row each, without their runs.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Reads a session with its runs attached (the latest `runs_limit` when given), merging the
    /// runs table with any legacy `runs` blob (the table wins per `run_id`).
    ///
    /// # Errors
    /// A [`DbError`]; a missing session is `Ok(None)`, never an error and never a fresh session.
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>>;

    /// Inserts or updates the session row; never writes runs. `state` says how the stored
    /// `session_state` changes.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the session belongs to
    /// another user.
    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()>;

    /// Lists sessions without reading run bodies.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<SessionPage>;

    /// Renames a session; returns it (without runs), or `None` when it does not exist.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn rename_session(
        &self,
        session_id: &str,
        session_name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<AgentSession>>;

    /// Deletes a session and its runs; false when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool>;

    /// Deletes sessions and their runs; returns how many sessions were deleted.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64>;

    /// The `input` of the first top-level run of each of these sessions (what a session's name
    /// falls back to in listings), keyed by session id; sessions without runs are absent. Only
    /// sessions visible to `user_id` count. Adapters read as little as they can; this default
    /// reads each session with its runs.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn first_run_inputs(
        &self,
        session_ids: &[String],
        user_id: Option<&str>,
    ) -> DbResult<HashMap<String, Value>> {
        let mut out = HashMap::new();
        for session_id in session_ids {
            let Some(session) = self.get_session(session_id, user_id, None).await? else { continue };
            if let Some(first) = session.runs().iter().find(|r| r.parent_run_id.is_none())
                && let Some(input) = first.input.as_ref().and_then(|i| serde_json::to_value(i).ok())
            {
                out.insert(session_id.clone(), input);
            }
        }
        Ok(out)
    }
}

/// Runs: one row each, `run_index` assigned per session on first write.
#[async_trait]
pub trait RunStore: SessionStore {
    /// Inserts or updates one run; returns its `run_index` (assigned atomically per session on
    /// first write, kept on update). Costs the same whatever the session's run count.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the run belongs to another
    /// user.
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64>;

    /// Writes a run and its session: `upsert_session` then `upsert_run`, as a run's save makes
    /// them, in one transaction where the store has transactions (every store but Redis), so
    /// either both are written or neither. Returns the run's `run_index`.
    ///
    /// # Errors
    /// As [`SessionStore::upsert_session`] and [`RunStore::upsert_run`]. Where the store writes
    /// the two one after the other (the default, Redis), an error of the run write comes after
    /// the session was written.
    async fn save_run_write(&self, write: crate::RunWrite<'_>) -> DbResult<i64> {
        self.upsert_session(write.session, write.state).await?;
        self.upsert_run(write.run, &write.session.session_id, write.user_id).await
    }

    /// Reads one run.
    ///
    /// # Errors
    /// A [`DbError`]; a missing run is `Ok(None)`.
    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>>;

    /// Lists runs, paged by cursor.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_runs(&self, query: &RunQuery) -> DbResult<RunPage>;

    /// Deletes one run; false when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool>;

    /// Deletes runs; returns how many were deleted.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64>;
}

/// Schema versions, tracked per table in `agno_schema_versions` (or the adapter's equivalent).
#[async_trait]
pub trait SchemaStore: Send + Sync {
    /// The stamped version of a table, `None` when unstamped.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>>;

    /// Stamps a table's version.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()>;
}

/// Column a memory listing is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemorySort {
    /// `updated_at`.
    #[default]
    UpdatedAt,
    /// `created_at`.
    CreatedAt,
}

/// Filters and paging for [`MemoryStore::get_user_memories`].
#[derive(Debug, Clone, Default)]
pub struct MemoryQuery {
    /// Only memories of this user.
    pub user_id: Option<String>,
    /// Only memories made by this agent.
    pub agent_id: Option<String>,
    /// Only memories made by this team.
    pub team_id: Option<String>,
    /// Only memories with any of these topics.
    pub topics: Option<Vec<String>>,
    /// Only memories whose text contains this (case-insensitive).
    pub search_content: Option<String>,
    /// Page size.
    pub limit: Option<usize>,
    /// 1-based page number.
    pub page: Option<usize>,
    /// Sort column.
    pub sort_by: MemorySort,
    /// Sort direction.
    pub sort_order: SortOrder,
}

/// One page of memories and the total number matching.
#[derive(Debug, Clone, Default)]
pub struct MemoryPage {
    /// The memories.
    pub memories: Vec<UserMemory>,
    /// How many match the filters.
    pub total: u64,
}

/// User memories.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Inserts or updates a memory (a missing id is generated, a missing `created_at` set);
    /// returns it as stored.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the memory belongs to another
    /// user.
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory>;

    /// Reads one memory.
    ///
    /// # Errors
    /// A [`DbError`]; a missing memory is `Ok(None)`.
    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>>;

    /// Lists memories.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_user_memories(&self, query: &MemoryQuery) -> DbResult<MemoryPage>;

    /// Deletes one memory; false when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool>;

    /// Deletes memories; returns how many were deleted.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64>;

    /// Every topic used by the user's memories (all users' when `None`), sorted, without
    /// duplicates.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>>;

    /// Memory counts per user, most recently updated first, paged; and the number of users.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)>;

    /// Deletes every memory of every user (an admin operation).
    ///
    /// # Errors
    /// A [`DbError`].
    async fn clear_memories(&self) -> DbResult<()>;
}

/// Filters and paging for [`EvalStore::get_eval_runs`].
#[derive(Debug, Clone, Default)]
pub struct EvalQuery {
    /// Only runs of this user.
    pub user_id: Option<String>,
    /// Only evals of this agent.
    pub agent_id: Option<String>,
    /// Only evals of this team.
    pub team_id: Option<String>,
    /// Only evals of this workflow.
    pub workflow_id: Option<String>,
    /// Only evals of this model.
    pub model_id: Option<String>,
    /// Only evals of this kind of component.
    pub filter_type: Option<EvalFilterType>,
    /// Only evals of these types.
    pub eval_types: Option<Vec<EvalType>>,
    /// Page size.
    pub limit: Option<usize>,
    /// 1-based page.
    pub page: Option<usize>,
    /// Sort by `created_at` in this direction.
    pub sort_order: SortOrder,
}

/// Eval runs.
#[async_trait]
pub trait EvalStore: Send + Sync {
    /// Stores a new eval run (sets `created_at`/`updated_at` when missing).
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the id exists.
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord>;

    /// Reads one eval run (only the owner's when `user_id` is given).
    ///
    /// # Errors
    /// A [`DbError`]; missing is `Ok(None)`.
    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>>;

    /// Lists eval runs and counts the matches.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)>;

    /// Deletes eval runs (only the owner's when `user_id` is given); returns how many.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64>;

    /// Renames an eval run; returns it, or `None` when not found (or not the user's).
    ///
    /// # Errors
    /// A [`DbError`].
    async fn rename_eval_run(&self, run_id: &str, name: &str, user_id: Option<&str>)
    -> DbResult<Option<EvalRunRecord>>;
}

/// Column a knowledge listing is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KnowledgeSort {
    /// `created_at`.
    #[default]
    CreatedAt,
    /// `updated_at`.
    UpdatedAt,
    /// `name`.
    Name,
}

/// Filters and paging for [`KnowledgeStore::get_knowledge_contents`].
#[derive(Debug, Clone, Default)]
pub struct KnowledgeQuery {
    /// The user's rows plus shared (unowned) rows; every row when `None`.
    pub user_id: Option<String>,
    /// Only rows of this knowledge instance.
    pub linked_to: Option<String>,
    /// Page size.
    pub limit: Option<usize>,
    /// 1-based page.
    pub page: Option<usize>,
    /// Sort column.
    pub sort_by: KnowledgeSort,
    /// Sort direction.
    pub sort_order: SortOrder,
}

/// Knowledge contents. A row without `user_id` is shared: every user reads it, only an unscoped
/// caller changes or deletes it.
#[async_trait]
pub trait KnowledgeStore: Send + Sync {
    /// Inserts or updates a row (a missing id is generated); returns it as stored.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the row belongs to another
    /// user.
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow>;

    /// Reads a row: the user's own or a shared one when `user_id` is given.
    ///
    /// # Errors
    /// A [`DbError`]; missing is `Ok(None)`.
    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>>;

    /// Lists rows and counts the matches.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)>;

    /// Deletes a row (only the user's own when `user_id` is given); false when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool>;
}

/// Daily usage metrics, one bucket per `(user_id, date, aggregation_period)`.
///
/// The buckets are computed from sessions and runs by `agno_db::calculate_metrics`; an adapter
/// stores and reads them.
#[async_trait]
pub trait MetricsStore: Send + Sync {
    /// Inserts or replaces buckets by their key `(user_id, date, aggregation_period)`; a
    /// replaced bucket keeps its `id` and `created_at`.
    ///
    /// # Errors
    /// A [`DbError`]; on error no bucket of the batch is written.
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()>;

    /// Buckets in the date range, ordered by date then owner, and the latest `updated_at` among
    /// the owner-filtered buckets (`None` when nothing matches).
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)>;

    /// The latest day with a completed bucket, and the earliest day after it with an incomplete
    /// one: where a recalculation resumes.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)>;

    /// The facts of every session created in `[from, to)` (epoch seconds), read set-based (a
    /// fixed number of queries, whatever the number of sessions). `None` when this adapter
    /// cannot (a document store, or a table still holding legacy run blobs): the metrics are then
    /// computed from one read per session.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn metrics_facts(&self, from: i64, to: i64) -> DbResult<Option<Vec<crate::SessionFacts>>> {
        let _ = (from, to);
        Ok(None)
    }
}

/// Schedules and their runs. User-facing calls take the owner's `user_id` and never see or touch
/// another owner's rows; the poller's [`claim_due_schedule`](ScheduleStore::claim_due_schedule)
/// and [`release_schedule`](ScheduleStore::release_schedule) work across owners.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Stores a new schedule.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the id exists or the owner
    /// already has a schedule of that name.
    async fn create_schedule(&self, schedule: &Schedule) -> DbResult<Schedule>;

    /// Reads a schedule (only the owner's when `user_id` is given).
    ///
    /// # Errors
    /// A [`DbError`]; missing is `Ok(None)`.
    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>>;

    /// Reads a schedule by name within one owner: `None` addresses schedules without an owner,
    /// never another owner's schedule of the same name.
    ///
    /// # Errors
    /// A [`DbError`]; missing is `Ok(None)`.
    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>>;

    /// Lists schedules, newest first (`created_at`, then `id`), and counts the matches.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)>;

    /// Changes a schedule's mutable columns; returns it, or `None` when not found (or not the
    /// user's).
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when renamed onto a name the owner
    /// already uses.
    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>>;

    /// Deletes a schedule and its runs (only the owner's when `user_id` is given); false when
    /// nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool>;

    /// Claims the enabled schedule due soonest (`next_run_at <= now`) that is unlocked or whose
    /// lock is older than `lock_grace_seconds`, for `worker_id`; returns it as claimed. Two
    /// workers never claim the same schedule at once.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>>;

    /// Releases a claim and sets the next firing time (kept when `None`; cleared for an on-demand
    /// schedule, whose `cron_expr` is empty). With `worker_id`/`locked_at`, only that claim is
    /// released. False when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool>;

    /// Extends a claim: sets `locked_at` to `now` while `worker_id` still holds the schedule, so
    /// an execution longer than the claim's grace is not taken for an abandoned one. False when
    /// the claim was released or taken over.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool>;

    /// Stores a run of a schedule; its `user_id` is copied from the schedule.
    ///
    /// # Errors
    /// [`DbErrorKind::NotFound`](crate::DbErrorKind::NotFound) when the schedule does not exist;
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the id exists.
    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun>;

    /// Changes a schedule run; returns it, or `None` when not found.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>>;

    /// Reads a schedule run (only the owner's when `user_id` is given).
    ///
    /// # Errors
    /// A [`DbError`]; missing is `Ok(None)`.
    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>>;

    /// Lists a schedule's runs, newest first, and counts them.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)>;

    /// The latest run (by `triggered_at`, then `created_at`, then `id`) of each given schedule
    /// that has one.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>>;

    /// Deletes a schedule's runs completed before `before` (epoch seconds); returns how many.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64>;
}

/// The durable job queue (`agno_jobs`). Every write of a claimed job names the worker and the
/// attempt it claimed; a write from a stale attempt (the lease expired and another worker took
/// the job) changes nothing and reports so.
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Stores a queued job, unless the same user already used its idempotency key (the original
    /// job is returned) or `max_depth` (> 0) jobs are already queued. Safe under concurrent
    /// duplicates: the unique key decides, not a check-then-insert.
    ///
    /// # Errors
    /// A [`DbError`]; `Conflict` when the id exists.
    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued>;

    /// Stores a queued run job as [`enqueue_job`](Self::enqueue_job) does, together with what a
    /// submitted run is before any worker has it: its session, inserted when missing (a stored
    /// session is left as it is), and its `PENDING` run (as `upsert_run` writes it, owned by
    /// `job.user_id`). One transaction where the database has them: a job that is not
    /// accepted (a duplicate key, a full queue, an error) leaves neither session nor run behind,
    /// and a worker never sees the job before its run.
    ///
    /// # Errors
    /// As [`enqueue_job`](Self::enqueue_job) and `upsert_run` (`Conflict`: the run id is another
    /// user's or another session's); nothing is written then.
    async fn enqueue_run(&self, job: &Job, max_depth: usize, pending: crate::PendingRun<'_>) -> DbResult<Enqueued>;

    /// Claims the oldest claimable job for `worker_id`: queued and available, or running with a
    /// lease older than `lock_grace_seconds` and attempts left. Increments `attempt`, sets the
    /// lease; two workers never claim the same job at once.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>>;

    /// Claims up to `limit` jobs for `worker_id` as [`claim_job`](Self::claim_job) claims one,
    /// oldest first: never two of one session (the older one runs first). A database that can
    /// claims them in one statement; the default claims one at a time.
    ///
    /// # Errors
    /// A [`DbError`]; the jobs claimed before it stay claimed (their leases expire as a lost
    /// worker's would).
    async fn claim_jobs(&self, worker_id: &str, limit: usize, lock_grace_seconds: i64, now: i64) -> DbResult<Vec<Job>> {
        let mut claimed = Vec::new();
        while claimed.len() < limit {
            match self.claim_job(worker_id, lock_grace_seconds, now).await? {
                Some(job) => claimed.push(job),
                None => break,
            }
        }
        Ok(claimed)
    }

    /// Refreshes the leases `worker_id` holds on `job_ids`; returns how many it still holds.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64>;

    /// Ends the claim `lease` on its job. False (and no change) when the worker no longer holds
    /// that attempt.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn finish_job(&self, lease: &crate::JobLease, outcome: &JobOutcome, now: i64) -> DbResult<bool>;

    /// Running jobs whose lease expired with no attempts left (their worker died): marked
    /// `failed` with `error`, and returned so their runs can be ended too. Jobs cancelled while
    /// running whose worker died before recording the end lose their lease and are returned too
    /// (still `cancelled`).
    ///
    /// # Errors
    /// A [`DbError`].
    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>>;

    /// Records the cancellation of a job that is queued, paused or running and returns the status
    /// it had (`None`: no such job, or it already ended). A waiting job simply never runs. A
    /// running job keeps its lease so its worker can still record how the run ended (partial
    /// output, `RunCancelled`), but its heartbeats fail, so it stops the run; it is never claimed
    /// again. Needs nothing but the database, so any replica can cancel any job.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>>;

    /// True while the claim `lease` still holds its job: running (the lease is refreshed) or
    /// cancelled while it ran (the worker records the end). The fence of every write a worker
    /// makes for its run.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn holds_job(&self, lease: &crate::JobLease, now: i64) -> DbResult<bool>;

    /// Stores a claimed run's session and run (as `upsert_session` and `upsert_run` do) if, and
    /// only if, `lease` still holds the job (as [`holds_job`](Self::holds_job) decides, refreshing
    /// the lease), all in one transaction: the check and the writes cannot be separated by a
    /// takeover. False, with nothing written, when the claim no longer holds.
    ///
    /// # Errors
    /// A [`DbError`], as `upsert_session` and `upsert_run` give them; nothing is written then.
    async fn save_claimed_run(&self, lease: &crate::JobLease, write: crate::RunWrite<'_>, now: i64) -> DbResult<bool>;

    /// Jobs cancelled while `worker_id` held them, for stores without push notifications: the
    /// worker polls this to stop those runs quickly.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn cancelled_jobs(&self, worker_id: &str) -> DbResult<Vec<String>>;

    /// Appends events to a run's durable log, fenced like every other write of the worker:
    /// false (nothing written) when the claim `lease` no longer holds the job.
    ///
    /// # Errors
    /// A [`DbError`]; `Conflict` when an index is already taken.
    async fn append_events(&self, lease: &crate::JobLease, events: &[StoredEvent]) -> DbResult<bool>;

    /// Events of a run with `event_index > after`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>>;

    /// The highest `event_index` in a run's log.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>>;

    /// Marks a swept job (`failed`, released) `completed`, clearing its error: its worker stored
    /// the run COMPLETED and died before recording the job's outcome. False when the job is not
    /// in that state.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn complete_swept_job(&self, job_id: &str, now: i64) -> DbResult<bool>;

    /// Deletes ended jobs (`completed`, `failed`, `cancelled`, released by their worker) that
    /// ended at or before `before`, with their event logs; paused jobs are exempt (they wait for
    /// a human). Returns how many jobs were removed.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64>;

    /// Queues a paused job again under the same id (a HITL continue): the continuation goes
    /// into `payload["continue"]` (replacing an earlier one) and exactly one more attempt is
    /// granted. A job already queued or running is left alone (`Attach`); an ended one is a
    /// `Conflict`.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn continue_job(&self, job_id: &str, continuation: &Value, now: i64) -> DbResult<Continued>;

    /// Queues a failed or cancelled job again with a fresh attempt budget (an operator's
    /// requeue); false when it is not in such a state.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool>;

    /// Reads a job (only the user's when `user_id` is given).
    ///
    /// # Errors
    /// A [`DbError`]; missing is `Ok(None)`.
    async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>>;

    /// Push notifications of claimable and cancelled jobs, for stores that have them (PostgreSQL
    /// `LISTEN`); `None` means workers rely on polling and heartbeats alone.
    ///
    /// # Errors
    /// A [`DbError`] when the subscription cannot be made.
    async fn job_signals(&self) -> DbResult<Option<futures::stream::BoxStream<'static, JobSignal>>> {
        Ok(None)
    }

    /// Lists jobs, newest first, optionally of one status; and counts them.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn list_jobs(
        &self,
        status: Option<JobStatus>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<Job>, u64)>;
}

/// A complete storage backend: sessions, runs, memories, metrics, eval runs, knowledge contents,
/// schedules, traces, approvals, compactions, components and schema versions.
pub trait Db:
    SessionStore
    + crate::TraceStore
    + crate::ApprovalStore
    + crate::CompactionStore
    + crate::ComponentStore
    + crate::ServiceAccountStore
    + crate::FileStore
    + crate::LearningStore
    + RunStore
    + MemoryStore
    + MetricsStore
    + EvalStore
    + KnowledgeStore
    + ScheduleStore
    + SchemaStore
    + std::fmt::Debug
{
}

impl<T> Db for T where
    T: SessionStore
        + crate::TraceStore
        + crate::ApprovalStore
        + crate::CompactionStore
        + crate::ComponentStore
        + crate::ServiceAccountStore
        + crate::FileStore
        + crate::LearningStore
        + RunStore
        + MemoryStore
        + MetricsStore
        + EvalStore
        + KnowledgeStore
        + ScheduleStore
        + SchemaStore
        + std::fmt::Debug
{
}
