//! `agentos.toml` (YAML accepted too): the OS, its database, auth and agents. The settings of
//! the server itself are in [`os`] (`[os]`, `[db]`, `[auth]`), what it serves in [`components`]
//! (models, tools, agents, teams, workflows, knowledge bases).
//!
//! `${NAME}` anywhere in the file is replaced by the environment variable `NAME` before parsing
//! (`${NAME:-default}` gives a default); a missing variable without a default is an error that
//! names it. Unknown keys are refused, so a typo never silently disables a setting.

use std::path::Path;

use serde::Deserialize;

mod components;
mod os;
mod services;
pub mod stored;

pub use components::*;
pub use os::*;
pub use services::*;

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
    pub db: Option<DbSection>,
    /// Authentication and authorisation; absent means none.
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
    pub queue: QueueSettings,
    /// Knowledge bases, served under `/knowledge` and attached to agents by id.
    #[serde(default)]
    pub knowledge: Vec<KnowledgeSpec>,
    /// The scheduler (`/schedules` and the poller firing them).
    #[serde(default)]
    pub scheduler: SchedulerSettings,
    /// AgentOS as an MCP server (`/mcp`).
    #[serde(default)]
    pub mcp_server: McpServerSettings,
    /// Tracing of runs (`/traces`).
    #[serde(default)]
    pub tracing: TracingSettings,
    /// The components published in the database (`/components`): served beside these.
    #[serde(default)]
    pub components: ComponentsSettings,
    /// The A2A interface (`/a2a`): every agent, team and workflow over the Agent2Agent protocol.
    #[serde(default)]
    pub a2a: A2aSettings,
    /// The AG-UI interface (`/agui`): one agent or team for AG-UI front-ends.
    #[serde(default)]
    pub agui: AguiSettings,
    /// The control plane's pages (`/ui`).
    #[serde(default)]
    pub ui: UiSettings,
    /// Where run media offloaded out of the database is kept (`/sessions/{id}/media/{key}`).
    pub media_storage: Option<MediaStorageSettings>,
}

/// `[media_storage]`: Agno's `LocalMediaStorage`, a directory of media files.
///
/// ```toml
/// [media_storage]
/// path = "./media_storage"   # the directory Agno's LocalMediaStorage(base_path=...) writes
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaStorageSettings {
    /// `local` (the only backend).
    pub backend: Option<String>,
    /// The directory (created when missing).
    pub path: String,
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
                model: Some(ModelSpec::Short("test".to_owned())),
                a2a_url: None,
                a2a_headers: std::collections::BTreeMap::new(),
                instructions: None,
                tools: vec![ToolSpec::Name("calculator".to_owned())],
                add_history_to_context: Some(true),
                num_history_runs: None,
                update_memory_on_run: None,
                enable_agentic_memory: None,
                enable_agentic_state: None,
                add_session_state_to_context: None,
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
                approval_timeout_seconds: None,
                checkpoint: None,
                compaction: None,
                markdown: None,
                filesystem: None,
                learning: None,
            }],
            teams: Vec::new(),
            workflows: Vec::new(),
            queue: QueueSettings::default(),
            knowledge: Vec::new(),
            scheduler: SchedulerSettings::default(),
            components: ComponentsSettings::default(),
            mcp_server: McpServerSettings::default(),
            tracing: TracingSettings::default(),
            a2a: A2aSettings::default(),
            ui: UiSettings::default(),
            agui: AguiSettings::default(),
            media_storage: None,
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
        for agent in &self.agents {
            match (&agent.model, &agent.a2a_url) {
                (None, None) => {
                    return Err(ConfigError::Invalid(format!(
                        "[[agents]] {:?} needs a model (model = \"openai:gpt-4o-mini\"), or a2a_url = \"https://...\" for a remote A2A agent",
                        agent.id
                    )));
                }
                (Some(_), Some(_)) => {
                    return Err(ConfigError::Invalid(format!(
                        "[[agents]] {:?} has both a model and an a2a_url: a remote A2A agent brings its own model; keep one",
                        agent.id
                    )));
                }
                _ => {}
            }
        }
        if self.agui.enabled {
            let prefix = &self.agui.prefix;
            let segment_ok =
                |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.~".contains(c));
            let valid =
                prefix.is_empty() || prefix.strip_prefix('/').is_some_and(|rest| rest.split('/').all(segment_ok));
            if !valid {
                return Err(ConfigError::Invalid(format!(
                    "[agui] prefix {prefix:?} must be a path like \"/copilot\" (segments of letters, digits, -, _, ., ~; no trailing /)"
                )));
            }
            let agent = self.agui.agent.as_ref().map(|id| (id, self.agents.iter().any(|a| &a.id == id)));
            let team = self.agui.team.as_ref().map(|id| (id, self.teams.iter().any(|t| &t.id == id)));
            match (agent, team) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(ConfigError::Invalid(
                        "[agui] needs one of agent = \"<agent id>\" or team = \"<team id>\": the component AG-UI clients talk to"
                            .to_owned(),
                    ));
                }
                (Some((id, false)), None) | (None, Some((id, false))) => {
                    return Err(ConfigError::Invalid(format!(
                        "[agui] names {id:?}, which no [[agents]] or [[teams]] entry has"
                    )));
                }
                _ => {}
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

    /// `compaction` reads `true`/`false` or a table; a wrong key or value is named, and
    /// contradicting settings are refused with the reason.
    #[test]
    fn compaction_settings_are_read_and_their_errors_named() {
        let agent = |compaction: &str| format!("[[agents]]\nid = \"a\"\nmodel = \"test\"\ncompaction = {compaction}\n");
        let read = |compaction: &str| {
            OsConfig::parse(&agent(compaction), false, "t.toml").map(|c| c.agents[0].compaction.clone())
        };
        let manual = read("true").unwrap().unwrap().settings().unwrap().unwrap();
        assert_eq!((manual.compact_at_tokens, manual.uncompacted_runs), (None, Some(5)));
        assert!(read("false").unwrap().unwrap().settings().unwrap().is_none());
        let table = read("{ compact_at_tokens = 60000, uncompacted_tokens = 8000, enforce_min_fold_ratio = true }")
            .unwrap()
            .unwrap()
            .settings()
            .unwrap()
            .unwrap();
        assert_eq!(
            (table.compact_at_tokens, table.uncompacted_runs, table.uncompacted_tokens),
            (Some(60000), None, Some(8000))
        );
        assert!(table.enforce_min_fold_ratio && table.search_compacted_messages);
        let typo = read("{ compact_at_token = 10 }").unwrap_err().to_string();
        assert!(typo.contains("compact_at_token"), "{typo}");
        let wrong = read("\"yes\"").unwrap_err().to_string();
        assert!(wrong.contains("true, false, or a table of compaction settings"), "{wrong}");
        let both = read("{ uncompacted_runs = 3, uncompacted_tokens = 100 }").unwrap().unwrap().settings();
        assert!(both.unwrap_err().contains("cannot both be set"));
        let search = read("{ store_compacted_messages = false, search_compacted_messages = true }").unwrap().unwrap();
        assert!(search.settings().unwrap_err().contains("store_compacted_messages"));
    }

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
        let agui = |prefix: &str| {
            let text = format!(
                "[agui]\nenabled = true\nagent = \"a\"\nprefix = \"{prefix}\"\n[[agents]]\nid = \"a\"\nmodel = \"test\"\n"
            );
            OsConfig::parse(&text, false, "c.toml")
        };
        for bad in ["copilot", "/copilot/", "/co pilot", "/{id}", "//x"] {
            let err = agui(bad).unwrap_err();
            assert!(err.to_string().contains("[agui] prefix"), "{bad}: {err}");
        }
        for good in ["", "/copilot", "/ui/v1.0"] {
            assert!(agui(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn yaml_is_accepted() {
        let c = OsConfig::parse("os:\n  id: y\nagents:\n  - id: a\n    model: test\n", true, "c.yaml")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.os.id, "y");
        assert_eq!(c.agents[0].id, "a");
    }
}
