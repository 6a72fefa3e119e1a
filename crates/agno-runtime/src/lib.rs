//! The agent engine of agno-rs: the run loop, history, tool execution, human-in-the-loop pauses
//! and cancellation.
//!
//! Build an [`Agent`] with [`Agent::builder`], then:
//! - [`Agent::arun`] (async) or [`Agent::run`] (blocking) for one run's [`agno_core::RunOutput`];
//! - [`Agent::run_stream`] for its [`agno_core::RunEvent`]s as they happen;
//! - [`Agent::spawn_run`] to start a run on its own task and await its [`RunHandle`] later;
//! - [`Agent::continue_run`] / [`Agent::acontinue_run`] to resume a `PAUSED` run with the user's
//!   decisions ([`agno_core::RunRequirement`]s);
//! - [`cancel_run`] to stop a running run by id.
//!
//! Runs are traced as OpenTelemetry spans (stored as Agno stores them, or exported) while a
//! [`Tracing`] is in their context: see [`trace`].
//!
//! There is one run loop (`run_loop.rs`): streaming is the primitive, `arun` is the same loop
//! without listeners, and the blocking API is a thin wrapper at the edge.

#[macro_use]
mod builder;
mod agent;
mod agentic_state;
pub mod approvals;
mod blocking;
mod cancel;
mod client_side;
pub mod compaction;
mod component;
mod config;
mod emitter;
mod error;
pub mod eval;
mod event_stream;
mod fence;
pub mod filesystem;
pub mod fork;
mod hooks;
mod knowledge;
pub mod learning;
pub mod memory;
mod messages;
mod past_sessions;
mod persist;
mod request;
mod run;
mod run_loop;
mod run_state;
mod spec;
mod structured;
pub mod summary;
pub mod team;
mod tool_batch;
pub mod trace;
pub mod workflow;

pub use agent::{Agent, AgentBuilder, AgentSettings, ModelChoice};
pub use cancel::{cancel_run, is_running, running_runs};
pub use client_side::ClientSide;
pub use compaction::{CompactError, Compaction, CompactionOutcome};
pub use component::{CarryOn, Component};
pub use config::{
    Checkpoint, HistoryConfig, MemoryConfig, OutputSchema, PastSessionsConfig, ReasoningConfig, RetryConfig,
    SummaryConfig, ToolConfig,
};
pub use error::{BuildError, Result, RunError};
pub use event_stream::EventStream;
pub use fence::{Durable, RunFence};
pub use hooks::{HookError, PostHook, PreHook};
pub use request::{ContinueFrom, ContinueRequest, RunRequest};
pub use run::{RunHandle, RunStream};
pub use spec::{RUN_SPEC_VERSION, RunSpec, SpecError};
pub use trace::{Tracing, TracingBuilder, TracingStats};
