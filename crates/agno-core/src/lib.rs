//! Shared types and traits of agno-rs: the run model, sessions, events, and the `Model`,
//! `DynTool` and storage traits.
//!
//! This crate does no IO. An outside model provider, tool or storage adapter needs only this
//! crate. JSON shapes match Python Agno 3.x `to_dict()` output so the same database and API
//! payloads are shared with it; unknown fields are preserved on read-modify-write.

pub mod agent_files;
mod approvals;
pub mod aws_sigv4;
mod branch;
mod checkpoints;
mod clock;
pub mod compaction;
pub mod components;
pub mod db;
mod error;
mod event;
mod filter;
mod jobs;
mod knowledge;
mod learnings;
mod memory;
mod message;
mod metrics;
pub mod model;
mod python;
mod records;
mod redact;
mod requirement;
mod review;
mod run;
mod schedule;
pub mod schema_example;
mod service_accounts;
mod session;
mod stream_event;
mod team;
pub mod tool;
mod tool_execution;
mod traces;
mod usage;
mod workflow;

pub use agent_files::{FileMeta, FileStore, FileSystem, FileSystemSettings, FsError, Partition, StoredFile};
pub use approvals::{
    APPROVAL_APPROVED, APPROVAL_CANCELLED, APPROVAL_EXPIRED, APPROVAL_PENDING, APPROVAL_REJECTED, APPROVAL_STATUSES,
    ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, ApprovalType, Resolved,
};
pub use branch::{Boundary, Branch, BranchError, BranchOptions, branch, lineage};
pub use checkpoints::{
    CHECKPOINT_CREATED_AT_FIELD, CHECKPOINT_STATUS_FIELD, CheckpointOutOfRange, LAST_CHECKPOINT_FIELD,
    checkpoint_snapshot, run_checkpoints, safe_truncation_index,
};
pub use chrono::NaiveDate;
pub use clock::{new_id, now_epoch_secs};
pub use compaction::{CompactionRecord, CompactionSettings, CompactionStatus, CompactionStore};
pub use components::{
    ComponentChange, ComponentConfig, ComponentError, ComponentErrorKind, ComponentLink, ComponentQuery,
    ComponentRecord, ComponentStore, ConfigChoice, ConfigWrite, LinkSpec, NewComponent,
};
pub use db::{
    Db, DbResult, EvalQuery, EvalStore, JobStore, KnowledgeQuery, KnowledgeSort, KnowledgeStore, MemoryPage,
    MemoryQuery, MemorySort, MemoryStore, MetricsStore, RunCursor, RunPage, RunQuery, RunStore, ScheduleStore,
    SchemaStore, SessionPage, SessionQuery, SessionSort, SessionStore, SortOrder, StateUpdate,
};
pub use error::{BoxError, DbError, DbErrorKind, ModelError, ModelErrorKind, ToolError, ToolErrorKind};
pub use event::{EventData, RunEvent};
pub use filter::{CompareOp, FilterExpr, FilterField, FilterValue};
pub use jobs::{
    ComponentKind, Continued, Enqueued, Job, JobLease, JobOutcome, JobSignal, JobStatus, JobType, PendingRun, RunWrite,
    StoredEvent,
};
pub use knowledge::{Document, Filter, KnowledgeBase, KnowledgeError, SearchType};
pub use learnings::{
    DEFAULT_LEARNING_NAMESPACE, IDENTITY_KEYED_LEARNING_TYPES, LEARNING_SORTABLE, LearningIdentity, LearningQuery,
    LearningRecord, LearningStore, LearningUser, learning_id,
};
pub use memory::{UserMemory, UserMemoryStats};
pub use message::{FunctionCall, Message, Role, ToolCall, pair_tool_calls, tool_calls_paired};
pub use metrics::{Metrics, Usage};
pub use model::{
    Capabilities, Model, ModelChunk, ModelRequest, ModelResponse, ModelStream, ResponseAssembler, ResponseFormat,
};
pub use python::truthy;
pub use records::{EvalFilterType, EvalRunRecord, EvalType, KnowledgeRow};
pub use redact::redact_url;
pub use requirement::{PauseType, RunRequirement};
pub use review::{ErrorRequirement, StepInputField, StepRequirement};
pub use run::{Media, RunInput, RunOutput, RunStatus};
pub use schedule::{Cell, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleUpdate};
pub use schema_example::{SchemaLimits, SchemaTooLarge, check_schema, example_value, example_within};
pub use service_accounts::{
    SERVICE_ACCOUNT_PRINCIPAL_PREFIX, SERVICE_ACCOUNT_SORTABLE, ServiceAccount, ServiceAccountQuery,
    ServiceAccountStore,
};
pub use session::{AgentSession, SessionField, SessionSummary, SessionType};
pub use stream_event::StreamEvent;
pub use team::TeamStreamEvent;
pub use tool::{DynTool, ToolContext, ToolDefinition, ToolFlags, ToolOutput};
pub use tool_execution::{ToolCallMetrics, ToolExecution, UserInputField};
pub use traces::{
    SpanNode, SpanRecord, TraceField, TraceFilter, TraceQuery, TraceRecord, TraceSessionStats, TraceStatsQuery,
    TraceStore, component_level, duration_ms, fold_trace, session_stats, span_tree, trace_of_spans, trace_time,
};
pub use usage::{MetricsBucket, MetricsQuery, SessionFacts};
pub use workflow::{StepOutput, StepType, WorkflowEvent, WorkflowEventData, WorkflowStreamEvent};
