//! agno-rs: the Agno agent framework in Rust.
//!
//! This facade re-exports the public API; `use agno::prelude::*` brings in what most programs
//! need.
//!
//! ```
//! use agno::prelude::*;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct AddArgs {
//!     /// First number.
//!     a: f64,
//!     /// Second number.
//!     b: f64,
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let add = Function::new("add", "Add two numbers.", |args: AddArgs| async move { Ok(args.a + args.b) });
//! let agent = Agent::builder("test").name("Calculator").function(add).build()?;
//! let output = agent.run("What is 2+2?")?;
//! assert_eq!(output.status, RunStatus::Completed);
//! assert_eq!(output.tools.as_ref().map(Vec::len), Some(1));
//! # Ok(()) }
//! ```
//!
//! | crate | what it holds |
//! |---|---|
//! | [`core`] | run model, events, sessions, `Model` / `DynTool` / storage traits |
//! | [`models`] | OpenAI Chat Completions and compatible presets, `TestModel`, `FunctionModel` |
//! | [`tools`] | function tools, toolkits, hooks, built-in toolkits |
//! | [`db`] | storage adapters |
//! | [`runtime`] | `Agent`, the run loop, HITL, cancellation |

pub use agno_core as core;
pub use agno_db as db;
pub use agno_models as models;
pub use agno_runtime as runtime;
pub use agno_tools as tools;

/// The common imports.
pub mod prelude {
    pub use agno_core::{
        AgentSession, Db, DynTool, EventData, Message, Model, RunEvent, RunInput, RunOutput, RunRequirement, RunStatus,
        ToolContext, ToolError, ToolExecution,
    };
    pub use agno_db::InMemoryDb;
    pub use agno_models::{FunctionModel, TestModel, model_from_str};
    pub use agno_runtime::{
        Agent, AgentBuilder, ContinueRequest, HistoryConfig, OutputSchema, RetryConfig, RunError, RunRequest,
        RunStream, ToolConfig,
    };
    pub use agno_tools::{Function, ToolHook, Toolkit};
}
