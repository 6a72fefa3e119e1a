//! MCP tools for agno-rs: the tools of a Model Context Protocol server, as agent tools.
//!
//! [`McpToolkit::connect`] starts (stdio) or reaches (streamable HTTP) a server, lists its tools
//! (filtered by `include_tools` / `exclude_tools`, renamed with `tool_name_prefix`) and gives one
//! [`agno_core::DynTool`] per tool. Calls have a timeout; a call that finds the session closed
//! (the server restarted, the child died) reconnects once and retries. Results map to text: text
//! blocks as they are, structured content as JSON, images and audio as a short note with their
//! media type, resource links and embedded resources by URI. A result the server marks as an
//! error is a tool error the model sees, never a failed run.
//!
//! A [`HeaderProvider`] derives HTTP headers from each call's context (its user and session):
//! calls with the same headers share one session, so a server sees each user's credentials on
//! that user's calls.
//!
//! [`McpToolbox`] loads the tools of an MCP Toolbox for Databases server by toolset or name, with
//! `auth_token_getters` (a token per auth service, asked for on every call) and `bound_params`.

mod notes;
mod session;
mod sse;
mod stdio;
mod template;
mod toolbox;
mod toolkit;

pub use session::{HeaderProvider, McpError, Transport};
pub use template::{CallTemplate, HeaderTemplates};
pub use toolbox::{AuthTokenGetter, BoundFn, BoundValue, McpToolbox, TokenFn, ToolboxConfig, ToolboxTool};
pub use toolkit::{DEFAULT_MAX_RESULT_BYTES, McpConfig, McpTool, McpToolkit};
