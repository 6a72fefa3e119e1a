//! What the OS serves, as configured: models, tools, agents, teams, workflows and their steps,
//! knowledge bases.

use serde::Deserialize;
use serde_json::{Map, Value};

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
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// `embedded` (default: the OS's SQLite database, or an in-memory one with `memory://`) or
    /// a `sqlite://` URL.
    pub vector_db: Option<String>,
    /// Table of the chunks (default `agno_vectors_<id>`).
    pub table: Option<String>,
    /// `none` (default: keyword search), `hash:<dimensions>` (offline), `openai:<model>`
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`; any OpenAI-compatible server), `mistral:<model>`,
    /// `ollama:<model>` (`OLLAMA_HOST`), `cohere:<model>`, `gemini:<model>` or `voyage:<model>`
    /// (their `*_API_KEY`, and `*_BASE_URL` to point elsewhere).
    pub embedder: Option<String>,
    /// The embedder's dimensions (default 1536 for OpenAI).
    pub dimensions: Option<usize>,
    /// Chunker (`FixedSizeChunker`, `RecursiveChunker`, `DocumentChunker`, `MarkdownChunker`).
    pub chunker: Option<String>,
    /// Chunk size in characters (default 5000).
    pub chunk_size: Option<usize>,
    /// Chunk overlap in characters (default 0).
    pub chunk_overlap: Option<usize>,
    /// Results per search (default 10).
    pub max_results: Option<usize>,
    /// Default search type (`vector` with an embedder, else `keyword`; or `hybrid`).
    pub search_type: Option<String>,
    /// Let uploaded URLs point at loopback, private or link-local addresses (default false: a
    /// caller cannot make the server read its internal network).
    pub allow_private_urls: Option<bool>,
    /// Most chunks one content may be cut into (50,000 by default); a content that would make
    /// more is refused (422 at upload when its length alone says so, else `failed` with the
    /// reason).
    pub max_chunks_per_content: Option<usize>,
    /// Remote content sources (Agno's `content_sources`): S3 or S3-compatible buckets whose
    /// objects `POST /knowledge/remote-content` ingests.
    #[serde(default)]
    pub sources: Vec<SourceSpec>,
}

/// One remote content source (`[[knowledge.sources]]`), as Agno's `S3Config`.
///
/// ```toml
/// [[knowledge.sources]]
/// id = "handbook"
/// name = "Company handbook"
/// type = "s3"
/// bucket = "docs"
/// prefix = "handbook/"
/// endpoint = "http://127.0.0.1:9000"    # an S3-compatible server; default AWS (or AWS_ENDPOINT_URL)
/// region = "us-east-1"
/// ```
///
/// Credentials are `aws_access_key_id` and `aws_secret_access_key` (Agno's names; write
/// `"${VAR}"` to keep them in the environment), else the environment's `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY` (or the variables `access_key_id_env` and `secret_access_key_env`
/// name); none: unsigned requests (a public bucket).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// Its id (`config_id` of the upload, `source_id` of the routes).
    pub id: String,
    /// Display name (default: the id).
    pub name: Option<String>,
    /// `s3` (the only type for now).
    #[serde(rename = "type", default = "s3")]
    pub kind: String,
    /// The bucket.
    pub bucket: String,
    /// The prefix listed and ingested by default.
    pub prefix: Option<String>,
    /// The server (default `AWS_ENDPOINT_URL`, else `https://s3.<region>.amazonaws.com`).
    pub endpoint: Option<String>,
    /// The region (default `AWS_REGION`, else `us-east-1`).
    pub region: Option<String>,
    /// The access key id (Agno's `aws_access_key_id`; use `${VAR}` to keep it out of the file).
    pub aws_access_key_id: Option<String>,
    /// The secret (Agno's `aws_secret_access_key`; use `${VAR}`).
    pub aws_secret_access_key: Option<String>,
    /// The variable holding the access key id when none is given (default `AWS_ACCESS_KEY_ID`).
    pub access_key_id_env: Option<String>,
    /// The variable holding the secret (default `AWS_SECRET_ACCESS_KEY`).
    pub secret_access_key_env: Option<String>,
    /// Free metadata shown with the source.
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

fn s3() -> String {
    "s3".to_owned()
}

impl SourceSpec {
    /// The source, its credentials read from the environment now.
    ///
    /// # Errors
    /// A type other than `s3`, or one credential variable set without the other.
    pub fn source(&self) -> Result<agno_knowledge::S3Source, String> {
        if self.kind != "s3" {
            return Err(format!("source {}: type {:?} is not supported (only \"s3\")", self.id, self.kind));
        }
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let region = self.region.clone().or_else(|| env("AWS_REGION")).unwrap_or_else(|| "us-east-1".to_owned());
        let endpoint = self
            .endpoint
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
        let key_var = self.access_key_id_env.as_deref().unwrap_or("AWS_ACCESS_KEY_ID");
        let secret_var = self.secret_access_key_env.as_deref().unwrap_or("AWS_SECRET_ACCESS_KEY");
        let given = (self.aws_access_key_id.clone(), self.aws_secret_access_key.clone());
        let (key, secret) = match given {
            (None, None) => (env(key_var), env(secret_var)),
            other => other,
        };
        let credentials = match (key, secret) {
            (Some(k), Some(s)) => Some(agno_core::aws_sigv4::AwsCredentials {
                access_key_id: k,
                secret_access_key: s,
                session_token: env("AWS_SESSION_TOKEN").filter(|_| self.aws_access_key_id.is_none()),
            }),
            (None, None) => None,
            _ => {
                return Err(format!(
                    "source {}: give both the access key id and the secret (aws_access_key_id and \
                     aws_secret_access_key, or {key_var} and {secret_var}), or neither",
                    self.id
                ));
            }
        };
        Ok(agno_knowledge::S3Source {
            id: self.id.clone(),
            name: self.name.clone().unwrap_or_else(|| self.id.clone()),
            bucket: self.bucket.clone(),
            prefix: self.prefix.clone(),
            endpoint,
            region,
            credentials,
            metadata: self.metadata.clone(),
        })
    }
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
        id: Option<String>,
        /// Base URL.
        base_url: Option<String>,
        /// Environment variable holding the key.
        api_key_env: Option<String>,
        /// The key itself (write `"${MY_KEY}"` to keep it out of the file).
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
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// The model (required, unless the agent is a remote A2A agent: `a2a_url`).
    #[serde(default)]
    pub model: Option<ModelSpec>,
    /// A remote A2A agent (any framework) this agent is: its A2A base URL, where
    /// `/.well-known/agent-card.json` is (`http://host/a2a/agents/<id>` for an AgentOS). Each run
    /// sends its input to it in the A2A context of the run's session.
    pub a2a_url: Option<String>,
    /// Headers sent to the remote A2A agent (`{ Authorization = "Bearer ${TOKEN}" }`).
    #[serde(default)]
    pub a2a_headers: std::collections::BTreeMap<String, String>,
    /// Instructions.
    pub instructions: Option<Lines>,
    /// Toolkits.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Send earlier runs of the session to the model.
    pub add_history_to_context: Option<bool>,
    /// How many earlier runs.
    pub num_history_runs: Option<usize>,
    /// Extract the user's memories after each run (needs the database).
    pub update_memory_on_run: Option<bool>,
    /// Give the model the `update_user_memory` tool.
    pub enable_agentic_memory: Option<bool>,
    /// Give the model the `update_session_state` tool, which merges its updates into the
    /// session state (Agno's `enable_agentic_state`).
    pub enable_agentic_state: Option<bool>,
    /// Put the session state in the system message.
    pub add_session_state_to_context: Option<bool>,
    /// Put the user's memories in the system message (default: on when memories are kept).
    pub add_memories_to_context: Option<bool>,
    /// Rewrite the session's summary after each run (needs the database).
    pub enable_session_summaries: Option<bool>,
    /// Put the session's summary in the system message (default: on with summaries).
    pub add_session_summary_to_context: Option<bool>,
    /// The id of a `[[knowledge]]` base the agent searches (`search_knowledge_base` tool).
    pub knowledge: Option<String>,
    /// Add references found for the user's input to the user message.
    pub add_knowledge_to_context: Option<bool>,
    /// Give the model the `search_knowledge_base` tool (default on with a knowledge base).
    pub search_knowledge: Option<bool>,
    /// Give the model `search_past_sessions` and `read_past_session` over the user's other
    /// sessions (needs the database).
    pub search_past_sessions: Option<bool>,
    /// How many past sessions `search_past_sessions` lists (default 20).
    pub num_past_sessions_to_search: Option<usize>,
    /// How many runs of each past session it previews (default 3).
    pub num_past_session_runs_in_search: Option<usize>,
    /// Most tool calls per run.
    pub tool_call_limit: Option<usize>,
    /// The approval of a paused call of a tool listed in `approval_required_tools` expires after
    /// this many seconds undecided (the call is then rejected); unset, it waits until resolved.
    pub approval_timeout_seconds: Option<u64>,
    /// When runs are written while they execute: `"runs"` (at start and end, the default) or
    /// `"tool-batch"` (also after each model turn's tool results: a checkpoint the run can be
    /// read back at), as Agno's `checkpoint`.
    pub checkpoint: Option<String>,
    /// Fold the session's older history into a summary (Agno's `compaction`; needs the
    /// database): `true` folds only when asked (`POST .../sessions/{id}/compact`), a table sets
    /// Agno's fields (see [`CompactionSpec`]).
    pub compaction: Option<CompactionSpec>,
    /// Ask for markdown.
    pub markdown: Option<bool>,
    /// Durable files in the OS's database (Agno's `filesystem`): `true` (one store per agent,
    /// partitioned by user when `[auth] user_isolation` is on), or a table of Agno's
    /// `FileSystem` fields (see [`FileSystemSpec`]).
    pub filesystem: Option<FileSystemSpec>,
    /// Learn about the users (Agno's `learning`; needs the database): `true` (their profile and
    /// memories after every run), or a table of stores and modes (see [`LearningSpec`]).
    pub learning: Option<LearningSpec>,
}

/// An agent's `learning`: `true`, or a table naming each store's mode (`true` is the store's
/// default mode, as Agno's `LearningMachine(user_profile=True, ...)`).
///
/// ```toml
/// [[agents]]
/// id = "assistant"
/// model = "openai:gpt-4o-mini"
/// learning = { user_profile = "always", user_memory = "agentic", entity_memory = "always" }
/// ```
#[derive(Debug, Clone)]
pub enum LearningSpec {
    /// `true`: profile and memories, always; `false`: none.
    On(bool),
    /// Per store.
    Settings(serde_json::Map<String, serde_json::Value>),
}

impl<'de> Deserialize<'de> for LearningSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Bool(on) => Ok(LearningSpec::On(on)),
            serde_json::Value::Object(m) => Ok(LearningSpec::Settings(m)),
            other => Err(serde::de::Error::custom(format!("learning must be true, false or a table, not {other}"))),
        }
    }
}

impl LearningSpec {
    /// The config (`None` for `false`).
    ///
    /// # Errors
    /// An unknown store or mode, or a store agno-rs does not learn with.
    pub fn config(&self) -> Result<Option<agno_runtime::learning::LearningConfig>, String> {
        use agno_runtime::learning::{LearningConfig, LearningMode};
        let table = match self {
            LearningSpec::On(false) => return Ok(None),
            LearningSpec::On(true) => return Ok(Some(LearningConfig::default())),
            LearningSpec::Settings(t) => t,
        };
        let mut config = LearningConfig { user_profile: None, user_memory: None, ..LearningConfig::default() };
        for (key, value) in table {
            let mode = |default: LearningMode| -> Result<Option<LearningMode>, String> {
                match value {
                    serde_json::Value::Bool(false) | serde_json::Value::Null => Ok(None),
                    serde_json::Value::Bool(true) => Ok(Some(default)),
                    serde_json::Value::String(m) => LearningMode::parse(m).map(Some).ok_or_else(|| {
                        format!("{key} = {m:?}: a mode is \"always\", \"agentic\", \"propose\" or \"hitl\"")
                    }),
                    serde_json::Value::Object(c) => match c.get("mode").and_then(|m| m.as_str()) {
                        Some(m) => {
                            LearningMode::parse(m).map(Some).ok_or_else(|| format!("{key}.mode = {m:?} is not a mode"))
                        }
                        None => Ok(Some(default)),
                    },
                    other => Err(format!("{key} must be true, false, a mode or a table, not {other}")),
                }
            };
            match key.as_str() {
                "user_profile" => config.user_profile = mode(LearningMode::Always)?,
                "user_memory" => config.user_memory = mode(LearningMode::Always)?,
                // Agno's entity memory is agentic by default.
                "entity_memory" => config.entity_memory = mode(LearningMode::Agentic)?,
                "namespace" => {
                    config.entity_namespace =
                        value.as_str().filter(|n| !n.is_empty()).ok_or("namespace must be a name")?.to_owned();
                }
                "max_updates_per_run" => {
                    config.max_updates_per_run = value
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|n| *n > 0)
                        .ok_or("max_updates_per_run must be a positive integer")?;
                }
                "session_context" | "decision_log" | "learned_knowledge" if mode(LearningMode::Always)?.is_none() => {}
                "session_context" | "decision_log" | "learned_knowledge" => {
                    return Err(format!(
                        "the {key} store is not implemented by agno-rs yet (it learns user_profile, user_memory and \
                         entity_memory); remove it or set it to false"
                    ));
                }
                other => return Err(format!("unknown store {other:?} (user_profile, user_memory, entity_memory)")),
            }
        }
        Ok(Some(config))
    }
}

/// An agent's `filesystem`: `true`, or a table of Agno's `FileSystem.to_dict()` fields.
///
/// ```toml
/// [[agents]]
/// id = "notes"
/// model = "openai:gpt-4o-mini"
/// filesystem = { namespace = "team-notes", allow_delete = true, max_file_bytes = 200000 }
/// ```
#[derive(Debug, Clone)]
pub enum FileSystemSpec {
    /// `true`: the default store; `false`: none.
    On(bool),
    /// Agno's fields.
    Settings(FileSystemTable),
}

/// The fields of a `filesystem` table (Agno's names and defaults).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSystemTable {
    /// The namespace (default `{agent_id}`); may hold `{user_id}`, `{agent_id}`, `{team_id}`.
    pub namespace: Option<String>,
    /// Partition by the run's user (default: as `[auth] user_isolation`).
    pub user_scoped: Option<bool>,
    /// Only the read tools.
    pub read_only: Option<bool>,
    /// Add `delete_file`.
    pub allow_delete: Option<bool>,
    /// Exactly these tools.
    pub include_tools: Option<Vec<String>>,
    /// Per-file cap in bytes (default 1,000,000).
    pub max_file_bytes: Option<i64>,
    /// Per-partition cap in bytes (default 20,000,000).
    pub max_namespace_bytes: Option<i64>,
    /// Instructions instead of Agno's default.
    pub instructions: Option<String>,
    /// Where Agno keeps the files (`{"type": "db", ...}` in a stored config): always the OS's
    /// database here; another backend is refused.
    pub backend: Option<serde_json::Value>,
    /// Agno's marker of a namespace already canonical.
    pub namespace_is_normalized: Option<bool>,
}

impl<'de> Deserialize<'de> for FileSystemSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spec;
        impl<'de> serde::de::Visitor<'de> for Spec {
            type Value = FileSystemSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false, or a table of filesystem settings")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<FileSystemSpec, E> {
                Ok(FileSystemSpec::On(on))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<FileSystemSpec, M::Error> {
                FileSystemTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(FileSystemSpec::Settings)
            }
        }
        deserializer.deserialize_any(Spec)
    }
}

impl FileSystemSpec {
    /// The settings (`None` for `false`), partitioned by user as `os_isolation` when the spec
    /// leaves it unset (as AgentOS applies its `user_isolation` to every agent store).
    ///
    /// # Errors
    /// A backend other than the database, or settings Agno refuses.
    pub fn settings(&self, os_isolation: bool) -> Result<Option<agno_core::FileSystemSettings>, String> {
        let defaults = agno_core::FileSystemSettings::default();
        let settings = match self {
            FileSystemSpec::On(false) => return Ok(None),
            FileSystemSpec::On(true) => defaults,
            FileSystemSpec::Settings(t) => {
                if let Some(kind) = t.backend.as_ref().and_then(|b| b.get("type")).and_then(|k| k.as_str())
                    && kind != "db"
                {
                    return Err(format!("backend type {kind:?}: agno-rs keeps agent files in the OS's database only"));
                }
                agno_core::FileSystemSettings {
                    namespace: t.namespace.clone().unwrap_or(defaults.namespace),
                    user_scoped: t.user_scoped,
                    read_only: t.read_only.unwrap_or(false),
                    allow_delete: t.allow_delete.unwrap_or(false),
                    include_tools: t.include_tools.clone(),
                    max_file_bytes: t.max_file_bytes.unwrap_or(defaults.max_file_bytes),
                    max_namespace_bytes: t.max_namespace_bytes.unwrap_or(defaults.max_namespace_bytes),
                    instructions: t.instructions.clone(),
                }
            }
        };
        let mut settings = settings.validated().map_err(|e| e.to_string())?;
        settings.user_scoped.get_or_insert(os_isolation);
        Ok(Some(settings))
    }
}

/// An agent's `compaction`: `true`, or a table of Agno's `Compaction` fields.
///
/// ```toml
/// [[agents]]
/// id = "long-chat"
/// model = "openai:gpt-4o-mini"
/// compaction = { compact_at_tokens = 60000, uncompacted_runs = 5, instructions = "Keep every ticket id" }
/// ```
#[derive(Debug, Clone)]
pub enum CompactionSpec {
    /// `true`: fold only when asked; `false`: no compaction.
    On(bool),
    /// Agno's fields.
    Settings(CompactionTable),
}

/// `true`/`false` or a table; a table's own error (an unknown key, a wrong type) is kept, so
/// it names the key.
impl<'de> Deserialize<'de> for CompactionSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spec;
        impl<'de> serde::de::Visitor<'de> for Spec {
            type Value = CompactionSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false, or a table of compaction settings")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<CompactionSpec, E> {
                Ok(CompactionSpec::On(on))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<CompactionSpec, M::Error> {
                CompactionTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(CompactionSpec::Settings)
            }
        }
        deserializer.deserialize_any(Spec)
    }
}

/// The fields of a `compaction` table (Agno's names and defaults).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionTable {
    /// Fold automatically once the context reaches this many tokens (default 150000; `0`: only
    /// when asked, as Agno's `None`).
    pub compact_at_tokens: Option<usize>,
    /// Keep the newest runs verbatim (default 5).
    pub uncompacted_runs: Option<usize>,
    /// Keep about this many tokens verbatim instead (not with `uncompacted_runs`).
    pub uncompacted_tokens: Option<usize>,
    /// Store the folded messages with the record (default true).
    pub store_compacted_messages: Option<bool>,
    /// Give the agent `search_compacted_history` over them (default: as storing).
    pub search_compacted_messages: Option<bool>,
    /// Extra guidance for the summarizer.
    pub instructions: Option<String>,
    /// Skip a fold that would not shrink the context (default false).
    pub enforce_min_fold_ratio: Option<bool>,
    /// With `enforce_min_fold_ratio`: how many times the kept tail the folded span must be
    /// (default 2.0).
    pub min_fold_ratio: Option<f64>,
}

impl CompactionSpec {
    /// The settings, or why they are refused; `None` for `false`.
    ///
    /// # Errors
    /// A message naming the contradiction.
    pub fn settings(&self) -> Result<Option<agno_core::CompactionSettings>, String> {
        let t = match self {
            CompactionSpec::On(false) => return Ok(None),
            CompactionSpec::On(true) => {
                return Ok(Some(agno_core::CompactionSettings { compact_at_tokens: None, ..Default::default() }));
            }
            CompactionSpec::Settings(t) => t,
        };
        if t.uncompacted_runs.is_some() && t.uncompacted_tokens.is_some() {
            return Err("uncompacted_runs and uncompacted_tokens cannot both be set - they describe the same kept \
                        tail in different units"
                .to_owned());
        }
        let defaults = agno_core::CompactionSettings::default();
        let store = t.store_compacted_messages.unwrap_or(true);
        let settings = agno_core::CompactionSettings {
            compact_at_tokens: match t.compact_at_tokens {
                Some(0) => None,
                Some(n) => Some(n),
                None => defaults.compact_at_tokens,
            },
            uncompacted_runs: if t.uncompacted_tokens.is_some() {
                None
            } else {
                t.uncompacted_runs.or(defaults.uncompacted_runs)
            },
            uncompacted_tokens: t.uncompacted_tokens,
            store_compacted_messages: store,
            search_compacted_messages: t.search_compacted_messages.unwrap_or(store),
            instructions: t.instructions.clone(),
            enforce_min_fold_ratio: t.enforce_min_fold_ratio.unwrap_or(defaults.enforce_min_fold_ratio),
            min_fold_ratio: t.min_fold_ratio.unwrap_or(defaults.min_fold_ratio),
        };
        settings.validate()?;
        Ok(Some(settings))
    }
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
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// `coordinate` (default), `route`, `broadcast` or `tasks`.
    pub mode: Option<String>,
    /// Tasks mode: the most iterations over the task list (default 10).
    pub max_iterations: Option<u32>,
    /// The leader's model.
    pub model: ModelSpec,
    /// Ids of the member agents and teams.
    pub members: Vec<String>,
    /// Instructions for the leader.
    pub instructions: Option<Lines>,
    /// Send the team's earlier runs to the leader (default false, as Agno's `Team`).
    pub add_history_to_context: Option<bool>,
    /// How many earlier runs.
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
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Default session state.
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
    pub description: Option<String>,
    /// `step` (default), `steps`, `loop`, `condition`, `router` or `parallel`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Id of the agent a step runs.
    pub agent: Option<String>,
    /// Id of the workflow a step runs.
    pub workflow: Option<String>,
    /// Id of the team a step runs.
    pub team: Option<String>,
    /// Retries of a failed step (default 3).
    pub max_retries: Option<u32>,
    /// Go on after a step that failed every attempt.
    pub skip_on_failure: Option<bool>,
    /// The inner steps of a group (a router's choices).
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// A condition's else branch.
    #[serde(default)]
    pub else_steps: Vec<StepSpec>,
    /// A loop's iteration limit (default 3).
    pub max_iterations: Option<u32>,
    /// A loop's iterations each start from the previous one's output.
    pub forward_iteration_output: Option<bool>,
    /// A condition's expression (CEL subset over `input`, `previous_step_content`,
    /// `previous_step_outputs`, `additional_data`, `session_state`); default true.
    pub condition: Option<String>,
    /// A router's expression naming the choice (or a list of choices) to run; default the first.
    pub selector: Option<String>,
    /// Review by a person (Agno's `HumanReview`).
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
    pub confirmation_message: Option<String>,
    /// Ask for input before the step runs (a router: the reviewer picks the route).
    #[serde(default)]
    pub requires_user_input: bool,
    /// What is asked for.
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
    pub output_review_message: Option<String>,
    /// Ask for approval after each loop iteration.
    #[serde(default)]
    pub requires_iteration_review: bool,
    /// The question.
    pub iteration_review_message: Option<String>,
    /// `skip` (default), `cancel`, `else` (condition) or `retry`.
    pub on_reject: Option<String>,
    /// `skip` (default), `fail` or `pause`.
    pub on_error: Option<String>,
    /// Most retries a reviewer may ask for (default 3).
    pub max_retries: Option<u32>,
    /// Seconds a pause waits before `on_timeout` applies.
    pub timeout: Option<u64>,
    /// `cancel` (default), `skip` or `approve`.
    pub on_timeout: Option<String>,
}
