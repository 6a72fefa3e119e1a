//! `agentos.toml` (YAML accepted too): the OS, its database, auth and agents.
//!
//! `${NAME}` anywhere in the file is replaced by the environment variable `NAME` before parsing
//! (`${NAME:-default}` gives a default); a missing variable without a default is an error that
//! names it. Unknown keys are refused, so a typo never silently disables a setting.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

/// A configuration problem, with what to change.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML/YAML for this schema.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (line and column included).
        message: String,
    },
    /// A `${VAR}` is not set.
    #[error(
        "config {path} uses ${{{name}}} but the environment variable {name} is not set (set it, or write ${{{name}:-default}})"
    )]
    MissingEnv {
        /// The file.
        path: String,
        /// The variable.
        name: String,
    },
    /// A setting is not acceptable.
    #[error("{0}")]
    Invalid(String),
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsConfig {
    /// The OS itself.
    #[serde(default)]
    pub os: OsSection,
    /// Its database.
    #[serde(default)]
    pub db: Option<DbSection>,
    /// Authentication and authorisation; absent means none.
    #[serde(default)]
    pub auth: Option<AuthSection>,
    /// The agents served.
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
    /// The teams served.
    #[serde(default)]
    pub teams: Vec<TeamSpec>,
    /// The workflows served.
    #[serde(default)]
    pub workflows: Vec<WorkflowSpec>,
    /// Background runs (the durable queue).
    #[serde(default)]
    pub queue: crate::queue::QueueSettings,
    /// Knowledge bases, served under `/knowledge` and attached to agents by id.
    #[serde(default)]
    pub knowledge: Vec<KnowledgeSpec>,
    /// The scheduler (`/schedules` and the poller firing them).
    #[serde(default)]
    pub scheduler: crate::scheduler::SchedulerSettings,
    /// AgentOS as an MCP server (`/mcp`).
    #[serde(default)]
    pub mcp_server: crate::mcp_server::McpServerSettings,
}

/// `[[knowledge]]`: a knowledge base whose contents rows live in the OS database.
///
/// ```toml
/// [[knowledge]]
/// id = "docs"
/// vector_db = "embedded"      # chunks in the OS's SQLite file (or sqlite://other.db)
/// embedder = "none"           # keyword search only; "openai:text-embedding-3-small", "hash:256"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeSpec {
    /// Id (the `knowledge_id` of the routes; agents name it in `knowledge`).
    pub id: String,
    /// Display name (default: the id).
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// `embedded` (default: the OS's SQLite database, or an in-memory one with `memory://`) or
    /// a `sqlite://` URL.
    #[serde(default)]
    pub vector_db: Option<String>,
    /// Table of the chunks (default `agno_vectors_<id>`).
    #[serde(default)]
    pub table: Option<String>,
    /// `none` (default: keyword search), `hash:<dimensions>` (offline), `openai:<model>`
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`; any OpenAI-compatible server), `mistral:<model>`,
    /// `ollama:<model>` (`OLLAMA_HOST`), `cohere:<model>`, `gemini:<model>` or `voyage:<model>`
    /// (their `*_API_KEY`, and `*_BASE_URL` to point elsewhere).
    #[serde(default)]
    pub embedder: Option<String>,
    /// The embedder's dimensions (default 1536 for OpenAI).
    #[serde(default)]
    pub dimensions: Option<usize>,
    /// Chunker (`FixedSizeChunker`, `RecursiveChunker`, `DocumentChunker`, `MarkdownChunker`).
    #[serde(default)]
    pub chunker: Option<String>,
    /// Chunk size in characters (default 5000).
    #[serde(default)]
    pub chunk_size: Option<usize>,
    /// Chunk overlap in characters (default 0).
    #[serde(default)]
    pub chunk_overlap: Option<usize>,
    /// Results per search (default 10).
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Default search type (`vector` with an embedder, else `keyword`; or `hybrid`).
    #[serde(default)]
    pub search_type: Option<String>,
    /// Let uploaded URLs point at loopback, private or link-local addresses (default false: a
    /// caller cannot make the server read its internal network).
    #[serde(default)]
    pub allow_private_urls: Option<bool>,
    /// Most chunks one content may be cut into (50,000 by default); a content that would make
    /// more is refused (422 at upload when its length alone says so, else `failed` with the
    /// reason).
    #[serde(default)]
    pub max_chunks_per_content: Option<usize>,
}

/// `[os]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsSection {
    /// OS id (`/info`, `/config`).
    #[serde(default = "default_os_id")]
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Address to listen on.
    #[serde(default = "default_host")]
    pub host: String,
    /// Port (7777 by default, as Agno).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Largest accepted request body, in bytes (10 MiB by default).
    #[serde(default = "default_body_limit")]
    pub max_body_bytes: usize,
    /// Seconds between SSE heartbeat comments on an idle stream (15 by default; at most 15).
    #[serde(default = "default_heartbeat")]
    pub sse_heartbeat_seconds: u64,
    /// How long a shutdown (SIGTERM, Ctrl-C) may take, in seconds (30 by default): in-flight
    /// runs finish within it; those still running near its end are cancelled and stored.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace_seconds: u64,
    /// Browser origins allowed to call the OS (CORS); absent or empty: Agno's defaults
    /// (`http://localhost:3000` and Agno's hosted UIs).
    #[serde(default)]
    pub cors_allowed_origins: Option<Vec<String>>,
    /// A regular expression for more allowed origins, matched against the whole `Origin`.
    #[serde(default)]
    pub cors_origin_regex: Option<String>,
    /// Largest text field of a form, in bytes (1 MiB by default, as Python AgentOS); 413 beyond.
    #[serde(default = "default_form_field_limit")]
    pub max_form_field_bytes: usize,
    /// Seconds an idle keep-alive connection stays open (5 by default, as uvicorn).
    #[serde(default = "default_keep_alive")]
    pub keep_alive_timeout_seconds: u64,
    /// Seconds a client has to send a request's headers (30 by default).
    #[serde(default = "default_header_timeout")]
    pub header_read_timeout_seconds: u64,
    /// Seconds a request body may stall between two reads (60 by default, as nginx); 408 beyond.
    #[serde(default = "default_body_timeout")]
    pub body_read_timeout_seconds: u64,
    /// Seconds a whole request body may take (300 by default); 408 beyond.
    #[serde(default = "default_body_deadline")]
    pub body_read_deadline_seconds: u64,
    /// Slowest average rate of a request body once it has been read for 10 s, in bytes per
    /// second (1024 by default); 408 below, so a client trickling a byte at a time cannot hold a
    /// connection (0 turns the check off).
    #[serde(default = "default_min_body_rate")]
    pub min_body_bytes_per_second: u64,
    /// Connections served at once (1024 by default). At the cap, a new connection takes the place
    /// of the longest-idle connection that is not doing work (waiting for its headers, trickling
    /// a body, idle between requests); when every connection is working, new ones wait to be
    /// accepted.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections from one client address (256 by default). Beyond, the address's own idle or
    /// slow connections are closed first; when all of them are working the new one is answered
    /// 503. Behind a reverse proxy (every connection from one address) set it to
    /// `max_connections`.
    #[serde(default = "default_max_connections_per_client")]
    pub max_connections_per_client: usize,
    /// Length of the listen backlog (2048 by default).
    #[serde(default = "default_backlog")]
    pub listen_backlog: u32,
    /// Deepest nesting of a JSON text a request may carry (a JSON body, or a form field holding
    /// JSON such as `session_state`), 24 by default; 422 beyond. MariaDB stores JSON up to 31
    /// levels and a value is kept up to a few levels inside its record, so raise it only on
    /// other databases.
    #[serde(default = "default_json_depth")]
    pub max_json_depth: usize,
    /// Most values an example of an `output_schema` may hold (10,000 by default): a schema
    /// whose smallest valid answer is larger (`minItems: 1000000000`) is refused with 422.
    #[serde(default = "default_schema_values")]
    pub max_schema_values: usize,
    /// Bytes of events a stream may hold for a client that does not read them (8 MiB by
    /// default); beyond, the stream is cut (the run goes on and is stored, as for a client that
    /// left).
    #[serde(default = "default_sse_buffer")]
    pub sse_buffer_bytes: usize,
}

impl Default for OsSection {
    fn default() -> Self {
        Self {
            id: default_os_id(),
            name: None,
            description: None,
            host: default_host(),
            port: default_port(),
            max_body_bytes: default_body_limit(),
            sse_heartbeat_seconds: default_heartbeat(),
            shutdown_grace_seconds: default_shutdown_grace(),
            cors_allowed_origins: None,
            cors_origin_regex: None,
            max_form_field_bytes: default_form_field_limit(),
            keep_alive_timeout_seconds: default_keep_alive(),
            header_read_timeout_seconds: default_header_timeout(),
            body_read_timeout_seconds: default_body_timeout(),
            body_read_deadline_seconds: default_body_deadline(),
            min_body_bytes_per_second: default_min_body_rate(),
            max_connections: default_max_connections(),
            max_connections_per_client: default_max_connections_per_client(),
            listen_backlog: default_backlog(),
            max_json_depth: default_json_depth(),
            max_schema_values: default_schema_values(),
            sse_buffer_bytes: default_sse_buffer(),
        }
    }
}

impl OsSection {
    /// The CORS origin policy these settings describe.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a regular expression that does not compile.
    pub fn cors_policy(&self) -> Result<crate::cors::OriginPolicy, ConfigError> {
        crate::cors::OriginPolicy::new(self.cors_allowed_origins.as_deref(), self.cors_origin_regex.as_deref())
            .map_err(ConfigError::Invalid)
    }
}

fn default_os_id() -> String {
    "agno-rs".to_owned()
}
fn default_host() -> String {
    "127.0.0.1".to_owned()
}
fn default_port() -> u16 {
    7777
}
fn default_body_limit() -> usize {
    10 * 1024 * 1024
}
fn default_heartbeat() -> u64 {
    15
}
fn default_form_field_limit() -> usize {
    1024 * 1024
}
fn default_keep_alive() -> u64 {
    5
}
fn default_header_timeout() -> u64 {
    30
}
fn default_body_timeout() -> u64 {
    60
}
fn default_body_deadline() -> u64 {
    300
}
fn default_min_body_rate() -> u64 {
    1024
}
fn default_max_connections_per_client() -> usize {
    256
}
fn default_max_connections() -> usize {
    1024
}
fn default_backlog() -> u32 {
    2048
}
fn default_json_depth() -> usize {
    24
}
fn default_schema_values() -> usize {
    agno_core::SchemaLimits::DEFAULT.max_values
}
fn default_sse_buffer() -> usize {
    8 * 1024 * 1024
}
fn default_shutdown_grace() -> u64 {
    crate::serve::DEFAULT_SHUTDOWN_GRACE.as_secs()
}

/// `[db]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbSection {
    /// Database URL (`sqlite://agno.db`, `postgresql://...`, `memory://`, ...).
    pub url: String,
    /// Id of this database in `/config` and `/databases/{db_id}/migrate`.
    #[serde(default)]
    pub id: Option<String>,
}

/// How callers authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Everyone is admin.
    #[default]
    None,
    /// `Authorization: Bearer <security key>`; the key holder is admin.
    Key,
    /// Signed JWTs with scopes.
    Jwt,
}

/// `[auth]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// The mode.
    #[serde(default)]
    pub mode: AuthMode,
    /// Security key for `mode = "key"` (or `OS_SECURITY_KEY`).
    #[serde(default)]
    pub security_key: Option<String>,
    /// JWT verification keys, tried in turn: HMAC secrets, or PEM public keys (RSA, EC).
    #[serde(default)]
    pub verification_keys: Vec<String>,
    /// A JWKS file whose keys are tried first (by `kid`).
    #[serde(default)]
    pub jwks_file: Option<String>,
    /// Accepted algorithm (`HS256`, `RS256`, `ES256`, ...). Tokens signed otherwise are refused.
    #[serde(default)]
    pub algorithm: Option<String>,
    /// Check the `aud` claim against `audience`.
    #[serde(default)]
    pub verify_audience: bool,
    /// Accepted audience(s).
    #[serde(default)]
    pub audience: Vec<String>,
    /// Scope granting everything (`agent_os:admin`).
    #[serde(default)]
    pub admin_scope: Option<String>,
    /// Force a non-admin caller's `sub` as `user_id` on every read and write.
    #[serde(default)]
    pub user_isolation: bool,
    /// Removed in Agno v3: refused with a pointer to `verification_keys`.
    #[serde(default)]
    pub secret_key: Option<String>,
}

/// A model given as `"provider:id"` or as a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ModelSpec {
    /// `"openai:gpt-4o-mini"`, `"test"`.
    Short(String),
    /// `{ provider = "openai", id = "llama3", base_url = "...", api_key_env = "..." }`.
    Full {
        /// Provider.
        provider: String,
        /// Model id.
        #[serde(default)]
        id: Option<String>,
        /// Base URL.
        #[serde(default)]
        base_url: Option<String>,
        /// Environment variable holding the key.
        #[serde(default)]
        api_key_env: Option<String>,
        /// The key itself (write `"${MY_KEY}"` to keep it out of the file).
        #[serde(default)]
        api_key: Option<String>,
    },
}

/// A tool given by name (`"calculator"`) or as a table with options.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ToolSpec {
    /// A built-in toolkit by name.
    Name(String),
    /// `{ toolkit = "file", base_dir = "..." }`.
    Table(Map<String, Value>),
}

/// Text given as one string or a list of lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Lines {
    /// One string.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Lines {
    /// As a list.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Lines::One(s) => vec![s],
            Lines::Many(v) => v,
        }
    }
}

/// `[[agents]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Agent id (used in routes).
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// The model.
    pub model: ModelSpec,
    /// Instructions.
    #[serde(default)]
    pub instructions: Option<Lines>,
    /// Toolkits.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Send earlier runs of the session to the model.
    #[serde(default)]
    pub add_history_to_context: Option<bool>,
    /// How many earlier runs.
    #[serde(default)]
    pub num_history_runs: Option<usize>,
    /// Extract the user's memories after each run (needs the database).
    #[serde(default)]
    pub update_memory_on_run: Option<bool>,
    /// Give the model the `update_user_memory` tool.
    #[serde(default)]
    pub enable_agentic_memory: Option<bool>,
    /// Put the user's memories in the system message (default: on when memories are kept).
    #[serde(default)]
    pub add_memories_to_context: Option<bool>,
    /// Rewrite the session's summary after each run (needs the database).
    #[serde(default)]
    pub enable_session_summaries: Option<bool>,
    /// Put the session's summary in the system message (default: on with summaries).
    #[serde(default)]
    pub add_session_summary_to_context: Option<bool>,
    /// The id of a `[[knowledge]]` base the agent searches (`search_knowledge_base` tool).
    #[serde(default)]
    pub knowledge: Option<String>,
    /// Add references found for the user's input to the user message.
    #[serde(default)]
    pub add_knowledge_to_context: Option<bool>,
    /// Give the model the `search_knowledge_base` tool (default on with a knowledge base).
    #[serde(default)]
    pub search_knowledge: Option<bool>,
    /// Give the model `search_past_sessions` and `read_past_session` over the user's other
    /// sessions (needs the database).
    #[serde(default)]
    pub search_past_sessions: Option<bool>,
    /// How many past sessions `search_past_sessions` lists (default 20).
    #[serde(default)]
    pub num_past_sessions_to_search: Option<usize>,
    /// How many runs of each past session it previews (default 3).
    #[serde(default)]
    pub num_past_session_runs_in_search: Option<usize>,
    /// Most tool calls per run.
    #[serde(default)]
    pub tool_call_limit: Option<usize>,
    /// Ask for markdown.
    #[serde(default)]
    pub markdown: Option<bool>,
}

/// `[[teams]]`: a leader model over members (agents or other teams, by id).
///
/// ```toml
/// [[teams]]
/// id = "desk"
/// mode = "coordinate"        # coordinate | route | broadcast
/// model = "openai:gpt-4o-mini"
/// members = ["writer", "checker"]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    /// Team id (used in routes).
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// `coordinate` (default), `route`, `broadcast` or `tasks`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Tasks mode: the most iterations over the task list (default 10).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// The leader's model.
    pub model: ModelSpec,
    /// Ids of the member agents and teams.
    pub members: Vec<String>,
    /// Instructions for the leader.
    #[serde(default)]
    pub instructions: Option<Lines>,
    /// Send the team's earlier runs to the leader (default false, as Agno's `Team`).
    #[serde(default)]
    pub add_history_to_context: Option<bool>,
    /// How many earlier runs.
    #[serde(default)]
    pub num_history_runs: Option<usize>,
}

/// `[[workflows]]`: steps over the configured agents (and other workflows).
///
/// ```toml
/// [[workflows]]
/// id = "review"
/// name = "Draft then check"
/// [[workflows.steps]]
/// name = "draft"
/// agent = "writer"
/// [[workflows.steps]]
/// name = "check"
/// type = "condition"
/// condition = 'input.contains("urgent")'
/// steps = [{ name = "escalate", agent = "lead" }]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// Workflow id (used in routes).
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Default session state.
    #[serde(default)]
    pub session_state: Option<serde_json::Map<String, serde_json::Value>>,
    /// The steps, in order.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
}

/// One entry of a workflow's `steps`: a step running an agent or a workflow, or (with `type`) a
/// group of steps.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// Step name (unique among its siblings).
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// `step` (default), `steps`, `loop`, `condition`, `router` or `parallel`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Id of the agent a step runs.
    #[serde(default)]
    pub agent: Option<String>,
    /// Id of the workflow a step runs.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Id of the team a step runs.
    #[serde(default)]
    pub team: Option<String>,
    /// Retries of a failed step (default 3).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Go on after a step that failed every attempt.
    #[serde(default)]
    pub skip_on_failure: Option<bool>,
    /// The inner steps of a group (a router's choices).
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// A condition's else branch.
    #[serde(default)]
    pub else_steps: Vec<StepSpec>,
    /// A loop's iteration limit (default 3).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// A loop's iterations each start from the previous one's output.
    #[serde(default)]
    pub forward_iteration_output: Option<bool>,
    /// A condition's expression (CEL subset over `input`, `previous_step_content`,
    /// `previous_step_outputs`, `additional_data`, `session_state`); default true.
    #[serde(default)]
    pub condition: Option<String>,
    /// A router's expression naming the choice (or a list of choices) to run; default the first.
    #[serde(default)]
    pub selector: Option<String>,
    /// Review by a person (Agno's `HumanReview`).
    #[serde(default)]
    pub human_review: Option<HumanReviewSpec>,
}

/// `human_review = { ... }` of a workflow step: Agno's `HumanReview` fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanReviewSpec {
    /// Ask for a yes or no before the step runs.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// The question.
    #[serde(default)]
    pub confirmation_message: Option<String>,
    /// Ask for input before the step runs (a router: the reviewer picks the route).
    #[serde(default)]
    pub requires_user_input: bool,
    /// What is asked for.
    #[serde(default)]
    pub user_input_message: Option<String>,
    /// The fields to fill: `{ name, field_type, description, required, allowed_values }`.
    #[serde(default)]
    pub user_input_schema: Vec<agno_core::StepInputField>,
    /// A router's reviewer may pick several routes.
    #[serde(default)]
    pub allow_multiple_selections: bool,
    /// Ask for approval of the output after the step ran.
    #[serde(default)]
    pub requires_output_review: bool,
    /// The question.
    #[serde(default)]
    pub output_review_message: Option<String>,
    /// Ask for approval after each loop iteration.
    #[serde(default)]
    pub requires_iteration_review: bool,
    /// The question.
    #[serde(default)]
    pub iteration_review_message: Option<String>,
    /// `skip` (default), `cancel`, `else` (condition) or `retry`.
    #[serde(default)]
    pub on_reject: Option<String>,
    /// `skip` (default), `fail` or `pause`.
    #[serde(default)]
    pub on_error: Option<String>,
    /// Most retries a reviewer may ask for (default 3).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Seconds a pause waits before `on_timeout` applies.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// `cancel` (default), `skip` or `approve`.
    #[serde(default)]
    pub on_timeout: Option<String>,
}

/// Replaces `${NAME}` / `${NAME:-default}` with environment values.
fn interpolate(text: &str, path: &str) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (std::env::var(name).ok(), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(ConfigError::MissingEnv { path: path.to_owned(), name: name.to_owned() }),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl OsConfig {
    /// Reads a `.toml`, `.yaml` or `.yml` file.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file and what is wrong.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        let yaml = matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"));
        Self::parse(&text, yaml, &shown)
    }

    /// Parses configuration text (`yaml` selects YAML, else TOML); `origin` names it in errors.
    ///
    /// # Errors
    /// As [`OsConfig::load`].
    pub fn parse(text: &str, yaml: bool, origin: &str) -> Result<Self, ConfigError> {
        let text = interpolate(text, origin)?;
        let parse_error = |message: String| ConfigError::Parse { path: origin.to_owned(), message };
        let config: OsConfig = if yaml {
            yaml_serde::from_str(&text).map_err(|e| parse_error(e.to_string()))?
        } else {
            toml::from_str(&text).map_err(|e| parse_error(e.to_string()))?
        };
        config.validate()?;
        Ok(config)
    }

    /// The configuration of `agno serve` without a file: one demo agent on the offline `test`
    /// model, an in-memory database, no auth (loopback only).
    pub fn demo() -> Self {
        OsConfig {
            os: OsSection {
                id: "agno-rs-demo".to_owned(),
                name: Some("agno-rs demo".to_owned()),
                ..OsSection::default()
            },
            db: Some(DbSection { url: "memory://".to_owned(), id: None }),
            auth: None,
            agents: vec![AgentSpec {
                id: "demo".to_owned(),
                name: Some("Demo Agent".to_owned()),
                description: Some(
                    "Answers with the offline test model; configure a real model in agentos.toml.".into(),
                ),
                model: ModelSpec::Short("test".to_owned()),
                instructions: None,
                tools: vec![ToolSpec::Name("calculator".to_owned())],
                add_history_to_context: Some(true),
                num_history_runs: None,
                update_memory_on_run: None,
                enable_agentic_memory: None,
                add_memories_to_context: None,
                enable_session_summaries: None,
                add_session_summary_to_context: None,
                knowledge: None,
                add_knowledge_to_context: None,
                search_knowledge: None,
                search_past_sessions: None,
                num_past_sessions_to_search: None,
                num_past_session_runs_in_search: None,
                tool_call_limit: None,
                markdown: None,
            }],
            teams: Vec::new(),
            workflows: Vec::new(),
            queue: crate::queue::QueueSettings::default(),
            knowledge: Vec::new(),
            scheduler: crate::scheduler::SchedulerSettings::default(),
            mcp_server: crate::mcp_server::McpServerSettings::default(),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(auth) = &self.auth {
            if auth.secret_key.is_some() {
                return Err(ConfigError::Invalid(
                    "[auth] secret_key was removed in Agno v3: list your keys in verification_keys instead, e.g. \
                     verification_keys = [\"${JWT_SECRET}\"]"
                        .to_owned(),
                ));
            }
            if auth.mode == AuthMode::Jwt && auth.verification_keys.is_empty() && auth.jwks_file.is_none() {
                return Err(ConfigError::Invalid(
                    "[auth] mode = \"jwt\" needs verification_keys (HMAC secrets or PEM public keys) or a jwks_file"
                        .to_owned(),
                ));
            }
        }
        if !(1..=15).contains(&self.os.sse_heartbeat_seconds) {
            return Err(ConfigError::Invalid(
                "[os] sse_heartbeat_seconds must be between 1 and 15 (proxies close idle streams)".to_owned(),
            ));
        }
        self.os.cors_policy()?;
        let positive = [
            ("keep_alive_timeout_seconds", self.os.keep_alive_timeout_seconds),
            ("header_read_timeout_seconds", self.os.header_read_timeout_seconds),
            ("body_read_timeout_seconds", self.os.body_read_timeout_seconds),
            ("body_read_deadline_seconds", self.os.body_read_deadline_seconds),
            ("max_connections", self.os.max_connections as u64),
            ("max_connections_per_client", self.os.max_connections_per_client as u64),
            ("listen_backlog", u64::from(self.os.listen_backlog)),
            ("max_form_field_bytes", self.os.max_form_field_bytes as u64),
            ("max_json_depth", self.os.max_json_depth as u64),
            ("max_schema_values", self.os.max_schema_values as u64),
            ("sse_buffer_bytes", self.os.sse_buffer_bytes as u64),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(ConfigError::Invalid(format!("[os] {name} must be at least 1")));
        }
        if !(1..=3600).contains(&self.os.shutdown_grace_seconds) {
            return Err(ConfigError::Invalid(
                "[os] shutdown_grace_seconds must be between 1 and 3600 (runs still executing at its end are cancelled)"
                    .to_owned(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for agent in &self.agents {
            if agent.id.is_empty() || agent.id.contains('/') {
                return Err(ConfigError::Invalid(format!(
                    "agent id {:?} must be non-empty and contain no '/'",
                    agent.id
                )));
            }
            if !seen.insert(agent.id.as_str()) {
                return Err(ConfigError::Invalid(format!("two agents have the id {:?}", agent.id)));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for team in &self.teams {
            if team.id.is_empty() || team.id.contains('/') {
                return Err(ConfigError::Invalid(format!(
                    "team id {:?} must be non-empty and contain no '/'",
                    team.id
                )));
            }
            if !seen.insert(team.id.as_str()) {
                return Err(ConfigError::Invalid(format!("two teams have the id {:?}", team.id)));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for workflow in &self.workflows {
            if workflow.id.is_empty() || workflow.id.contains('/') {
                return Err(ConfigError::Invalid(format!(
                    "workflow id {:?} must be non-empty and contain no '/'",
                    workflow.id
                )));
            }
            if !seen.insert(workflow.id.as_str()) {
                return Err(ConfigError::Invalid(format!("two workflows have the id {:?}", workflow.id)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn toml_with_env_and_defaults() {
        let text = r#"
[os]
id = "demo"
port = 8000
[db]
url = "${AGNO_RS_TEST_UNSET_URL:-sqlite://x.db}"
[auth]
mode = "jwt"
verification_keys = ["k1", "k2"]
user_isolation = true
[[agents]]
id = "a"
model = "test"
instructions = "Be brief."
tools = ["calculator", { toolkit = "file", base_dir = "/tmp" }]
[[agents]]
id = "b"
model = { provider = "openai", id = "llama3", base_url = "http://127.0.0.1:1/v1" }
"#;
        let c = OsConfig::parse(text, false, "test.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.os.port, 8000);
        assert_eq!(c.db.map(|d| d.url).as_deref(), Some("sqlite://x.db"));
        assert_eq!(c.auth.map(|a| a.verification_keys.len()), Some(2));
        assert_eq!(c.agents.len(), 2);
    }

    #[test]
    fn refuses_secret_key_unknown_keys_and_missing_env() {
        let err = OsConfig::parse("[auth]\nmode = \"jwt\"\nsecret_key = \"s\"\n", false, "c.toml").unwrap_err();
        assert!(err.to_string().contains("verification_keys"), "{err}");
        let err = OsConfig::parse("[os]\nprot = 1\n", false, "c.toml").unwrap_err();
        assert!(err.to_string().contains("prot"), "{err}");
        let err = OsConfig::parse("[db]\nurl = \"${AGNO_RS_SURELY_UNSET}\"\n", false, "c.toml").unwrap_err();
        assert!(err.to_string().contains("AGNO_RS_SURELY_UNSET"), "{err}");
    }

    #[test]
    fn yaml_is_accepted() {
        let c = OsConfig::parse("os:\n  id: y\nagents:\n  - id: a\n    model: test\n", true, "c.yaml")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.os.id, "y");
        assert_eq!(c.agents[0].id, "a");
    }
}
