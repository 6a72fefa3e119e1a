//! Tools for agno-rs agents.
//!
//! A tool is declared once, typed, and erased into [`agno_core::DynTool`]:
//! - [`Function::new`] for async closures, [`Function::blocking`] for blocking ones (run on
//!   tokio's blocking pool), each over an argument type that implements `Deserialize` and
//!   `JsonSchema`; the parameter schema is generated from it.
//! - [`Toolkit`] groups tools under a stable `id`, with include/exclude lists, per-tool HITL lists
//!   and per-tool on/off flags (v3 names without the `enable_` prefix; the old names still work
//!   and warn).
//! - [`ToolHook`]s wrap every call as middleware.
//! - [`builtin`] holds the built-in toolkits: calculator, HTTP fetch, files (confined to a root
//!   directory) and shell (off by default).
//!
//! Bad arguments from a model never abort a run: they become a [`agno_core::ToolError`] that the
//! model sees as the call's result.

pub mod builtin;
mod function;
mod hooks;
mod schema;
mod toolkit;

pub use agno_core::{DynTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags};
pub use function::{Function, user_input_fields};
pub use hooks::{Next, ToolHook, call_with_hooks};
pub use schema::{NoArgs, empty_object_schema, parameters_schema};
pub use toolkit::{Toolkit, ToolkitError, id_from_name};
