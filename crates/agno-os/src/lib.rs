//! AgentOS for agno-rs: serves agents over HTTP with Agno 3.1's routes, form fields, JSON shapes
//! and SSE framing, so Agno's own clients work against it.
//!
//! - [`config`]: `agentos.toml` / YAML, `${ENV}` interpolation;
//! - [`app::AgentOs`]: the OS built from a config, and its axum router; [`build`] what it serves;
//! - [`routes`]: the route table (method, path, scope, handler) everything else derives from;
//! - [`auth`]: security key or JWT (`verification_keys`), Agno's RBAC scopes, user isolation;
//! - [`cors`]: browser origins, preflights answered before auth, as Agno's AgentOS;
//! - [`serve`]: binding (refusing an open OS on a public address) and graceful shutdown;
//! - `ui`: the control plane's pages at `/ui`, rendered from the routes called as the viewer.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let os = agno_os::app::AgentOs::from_config(&agno_os::config::OsConfig::demo()).await?;
//! let listener = agno_os::serve::bind(&os, "127.0.0.1:7777".parse()?, false).await?;
//! agno_os::serve::serve(&os, listener, agno_os::serve::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

pub mod app;
pub mod auth;
pub mod build;
pub mod config;
pub mod coordination;
pub mod cors;
pub mod error;
pub mod form;
mod in_process;
pub mod input;
pub mod mcp_server;
pub mod media;
mod multipart;
pub mod published;
pub mod queue;
pub mod routes;
pub mod scheduler;
pub mod serve;
pub mod sse;
pub mod state;
pub mod tail;
mod trace_retention;
mod ui;
