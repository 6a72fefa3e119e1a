//! Command-line arguments.

use clap::{Args, Parser, Subcommand};

/// agno: run Agno agents from the terminal.
///
/// Models are named `provider:model_id` (openai:gpt-4o-mini, groq:llama-3.3-70b-versatile,
/// ollama:llama3.2, ...). Keys and base URLs come from the provider's usual environment variables
/// (OPENAI_API_KEY, OPENAI_BASE_URL, GROQ_API_KEY, OLLAMA_HOST, ...). The model `test` answers
/// offline and needs no key.
#[derive(Debug, Parser)]
#[command(name = "agno", version, propagate_version = true)]
pub(crate) struct Cli {
    /// Log more (also: AGNO_LOG=debug).
    #[arg(long, short, global = true)]
    pub(crate) verbose: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run an agent, a team or a workflow once on a message and print the answer.
    ///
    /// Examples:
    ///   agno run --model test "What is 2+2?"
    ///   agno run --config agentos.toml --team desk "Write the news"
    ///   agno run --config agentos.toml --workflow review "Draft a post"   (asks at a review pause)
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// Chat with an agent interactively; answers stream as they are generated.
    ///
    /// Type /exit or press Ctrl-D to leave.
    Chat(AgentArgs),
    /// Inspect and migrate a database (schema versions, v2 -> v3 migration, legacy cleanup).
    Db(DbArgs),
    /// Serve agents over HTTP as an AgentOS (Agno 3.1's API; docs at /docs; the control plane,
    /// pages to chat and to look at sessions, traces, approvals, schedules and more, at /ui/ when
    /// it listens on a loopback address, or with [ui] enabled = true).
    ///
    /// Without --config it serves a demo agent on the offline `test` model, so you can try the
    /// API at once: curl -F message=hi -F stream=false http://127.0.0.1:7777/agents/demo/runs
    Serve(ServeArgs),
    /// Inspect and operate the durable queue of background runs (stats, list, requeue).
    Queue(QueueArgs),
    /// Add files to a [[knowledge]] base of an AgentOS config, search it, list its contents.
    ///
    /// Examples:
    ///   agno knowledge add --config agentos.toml docs/ notes.md     (progress bar, a line per failure)
    ///   agno knowledge search --config agentos.toml "how do I deploy?"
    ///   agno knowledge list --config agentos.toml --user ann
    ///   agno knowledge optimize --config agentos.toml                (PgVector: builds the HNSW index)
    #[command(verbatim_doc_comment)]
    Knowledge(KnowledgeArgs),
    /// Create, list and fire cron schedules of an AgentOS config's endpoints, and read their runs.
    ///
    /// `agno serve` with `[scheduler] enabled = true` fires them; `trigger` fires one now.
    ///
    /// Examples:
    ///   agno schedule create --config agentos.toml nightly --cron "0 3 * * *" \
    ///       --endpoint /agents/helper/runs --payload '{"message": "Summarise the day"}' --user ann
    ///   agno schedule list --config agentos.toml
    ///   agno schedule trigger --config agentos.toml nightly --user ann
    ///   agno schedule runs --config agentos.toml nightly --user ann
    #[command(verbatim_doc_comment)]
    Schedule(ScheduleArgs),
    /// Publish, list, read and roll back the agents, teams and workflows kept in the OS database.
    ///
    /// A published component is served by every `agno serve` on that database. `publish` takes
    /// the tables agentos.toml has ([[agents]], [[teams]], [[workflows]]; TOML, YAML or JSON).
    ///
    /// Examples:
    ///   agno component publish --config agentos.toml helper.toml     (creates it, or a new version)
    ///   agno component list --config agentos.toml
    ///   agno component get --config agentos.toml helper --at 2
    ///   agno component rollback --config agentos.toml helper 1
    #[command(verbatim_doc_comment)]
    Component(ComponentArgs),
    /// Run eval cases against the agents of an AgentOS config, for CI: prints a table and exits
    /// with status 1 when a case fails.
    ///
    /// The cases file (TOML, or YAML for .yaml/.yml) lists `[[cases]]` with `name`, `agent`,
    /// `input` and at least one check: `criteria` (a judge grades the answer; `judge_mode` =
    /// "binary" or "numeric" with `judge_threshold`) and/or `expected_tool_calls` (with
    /// `allow_additional_tool_calls`). `judge_model` ("provider:model") picks the judge; by
    /// default the agent's own model judges. Results are stored in the config's [db] when it has one.
    ///
    /// Example:
    ///   agno eval run --config agentos.toml evals.toml
    Eval(EvalArgs),
}

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    #[command(subcommand)]
    pub(crate) command: EvalCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum EvalCommand {
    /// Run the cases of a file.
    Run {
        /// The AgentOS config declaring the agents.
        #[arg(long, short, default_value = "agentos.toml")]
        config: std::path::PathBuf,
        /// The cases file (.toml, .yaml or .yml).
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ComponentArgs {
    /// The AgentOS config whose [db] keeps the components.
    #[arg(long, short, global = true, default_value = "agentos.toml")]
    pub(crate) config: std::path::PathBuf,
    /// Act as this user: what is created is theirs; lists show what they may see.
    #[arg(long, short, global = true)]
    pub(crate) user: Option<String>,
    #[command(subcommand)]
    pub(crate) command: ComponentCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ComponentCommand {
    /// The components, newest first, with the version each serves.
    List {
        /// Only `agent`, `team` or `workflow`.
        #[arg(long = "type")]
        component_type: Option<String>,
        /// Archived ones too.
        #[arg(long)]
        archived: bool,
    },
    /// A component, its served config (or `--version`'s) and its versions, as JSON.
    Get {
        /// The component id.
        id: String,
        /// This version rather than the served one.
        #[arg(long, value_name = "VERSION")]
        at: Option<i64>,
    },
    /// Publish every [[agents]], [[teams]] and [[workflows]] table of FILE (a new component, or a
    /// new version of an existing one); a config that does not build is refused, naming the field.
    Publish {
        /// The file (TOML, YAML or JSON).
        file: std::path::PathBuf,
    },
    /// Serve an earlier published version of a component again.
    Rollback {
        /// The component id.
        id: String,
        /// The published version to serve.
        #[arg(value_name = "VERSION")]
        to: i64,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ScheduleArgs {
    /// The AgentOS config ([db], and the agents, teams and workflows schedules may call).
    #[arg(long, short, global = true, default_value = "agentos.toml")]
    pub(crate) config: std::path::PathBuf,
    /// Act as this user: schedules created are theirs and fire as them; lists show theirs only.
    #[arg(long, short, global = true)]
    pub(crate) user: Option<String>,
    #[command(subcommand)]
    pub(crate) command: ScheduleCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleCommand {
    /// The schedules, with their next firing time.
    List {
        /// Only enabled (true) or disabled (false) schedules.
        #[arg(long)]
        enabled: Option<bool>,
    },
    /// Create a schedule (checked as POST /schedules checks it).
    Create {
        /// Its name (letters, digits, spaces, '.', '_', '-').
        name: String,
        /// Cron expression, 5 fields (minute hour day-of-month month day-of-week) or @daily etc.
        #[arg(long)]
        cron: String,
        /// The endpoint to call, a route of this OS (e.g. /agents/helper/runs).
        #[arg(long)]
        endpoint: String,
        /// HTTP method.
        #[arg(long, default_value = "POST")]
        method: String,
        /// JSON object sent with the call (form fields for a run endpoint: {"message": "..."}).
        #[arg(long)]
        payload: Option<String>,
        /// IANA time zone the cron expression is read in.
        #[arg(long, default_value = "UTC")]
        timezone: String,
        /// Free text.
        #[arg(long)]
        description: Option<String>,
        /// Longest a firing may take, in seconds.
        #[arg(long, default_value_t = 3600)]
        timeout: i64,
        /// Retries of a failed firing.
        #[arg(long, default_value_t = 0)]
        retries: i64,
        /// Seconds between retries.
        #[arg(long, default_value_t = 60)]
        retry_delay: i64,
    },
    /// Fire a schedule now, follow it to its end and print the outcome (exit 1 when it failed).
    Trigger {
        /// Its id or name.
        schedule: String,
    },
    /// A schedule's runs, newest first.
    Runs {
        /// Its id or name.
        schedule: String,
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub(crate) struct KnowledgeArgs {
    /// The AgentOS config declaring the knowledge base ([[knowledge]]) and its [db].
    #[arg(long, short, global = true, default_value = "agentos.toml")]
    pub(crate) config: std::path::PathBuf,
    /// The knowledge base's id (default: the only one of the config).
    #[arg(long, short, global = true)]
    pub(crate) knowledge: Option<String>,
    /// Act as this user: contents added are theirs; searches and lists see theirs plus shared ones.
    #[arg(long, short, global = true)]
    pub(crate) user: Option<String>,
    #[command(subcommand)]
    pub(crate) command: KnowledgeCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum KnowledgeCommand {
    /// Read, chunk, embed and store files and pages (directories are walked; .txt .md .csv
    /// .json .pdf .docx .html; http(s) URLs are downloaded).
    Add {
        /// Files, directories or URLs.
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
        /// Metadata for every file, as a JSON object.
        #[arg(long)]
        metadata: Option<String>,
    },
    /// The best chunks for a query.
    Search {
        /// keyword, vector or hybrid (default: the base's).
        #[arg(long = "type")]
        search_type: Option<String>,
        /// Most results.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// A metadata filter, as JSON (Agno's forms: {"key": "value"} or {"op": "EQ", ...}).
        #[arg(long)]
        filter: Option<String>,
        /// The query.
        #[arg(required = true)]
        query: Vec<String>,
    },
    /// Build the vector store's index over what it holds (PgVector: HNSW or IVFFlat; the
    /// embedded store searches exactly and has nothing to build). Run it after a large `add`.
    Optimize,
    /// The base's contents with their status, newest first.
    List {
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    /// Database URL of the AgentOS (sqlite://FILE, ...).
    #[arg(long, env = "AGNO_DB", global = true)]
    pub(crate) db: Option<String>,
    #[command(subcommand)]
    pub(crate) command: QueueCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum QueueCommand {
    /// Jobs per status.
    Stats,
    /// Jobs, newest first.
    List {
        /// Only jobs with this status (queued, running, paused, completed, failed, cancelled).
        #[arg(long)]
        status: Option<String>,
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Queue a failed or cancelled job again (its run goes back to PENDING).
    Requeue {
        /// The job (= run) id.
        job_id: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The OS configuration (agentos.toml, or .yaml); `${ENV}` references are expanded.
    #[arg(long, short)]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Address to listen on (default: [os] host, else 127.0.0.1).
    #[arg(long)]
    pub(crate) host: Option<String>,
    /// Port (default: [os] port, else 7777).
    #[arg(long, short)]
    pub(crate) port: Option<u16>,
    /// Database URL, overriding [db] url (e.g. sqlite://agno.db).
    #[arg(long)]
    pub(crate) db: Option<String>,
    /// Allow serving without authentication on a non-loopback address.
    #[arg(long)]
    pub(crate) insecure: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    #[command(subcommand)]
    pub(crate) command: DbCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    /// Per-table schema version, pending migrations and legacy runs not yet copied.
    Status {
        /// Database URL: sqlite://FILE, memory://, ...
        #[arg(long, env = "AGNO_DB")]
        db: String,
    },
    /// Apply pending migrations (2.0.0 -> 3.0.0), with progress.
    ///
    /// Non-destructive: the legacy `runs` column is kept as a backup.
    Migrate {
        /// Database URL.
        #[arg(long, env = "AGNO_DB")]
        db: String,
        /// Stop at this schema version (default: the latest, 3.0.0).
        #[arg(long)]
        target: Option<String>,
        /// Show what would be done and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Give a vector table created before agno v3 its `user_id` column, so it can be searched
    /// per user; existing chunks stay shared. Nothing is lost; running it twice changes nothing.
    MigrateVectors {
        /// The SQLite database holding the vector table (sqlite://FILE).
        #[arg(long, env = "AGNO_DB")]
        db: String,
        /// The vector table.
        #[arg(long)]
        table: String,
    },
    /// Drop the legacy `runs` column once every legacy run is in the runs table.
    CleanupLegacyRuns {
        /// Database URL.
        #[arg(long, env = "AGNO_DB")]
        db: String,
        /// Drop it even if some legacy runs were not copied (they are lost).
        #[arg(long)]
        force: bool,
    },
}

/// How the agent is built.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// Model as provider:model_id, or `test` for the offline test model.
    #[arg(long, short, env = "AGNO_MODEL", default_value = "test")]
    pub(crate) model: String,
    /// An instruction for the agent (repeatable).
    #[arg(long, short)]
    pub(crate) instructions: Vec<String>,
    /// A built-in toolkit to give the agent (repeatable): calculator, http, file, shell, websearch
    /// (its provider from TAVILY_API_KEY, BRAVE_API_KEY or SEARXNG_HOST), slack (SLACK_TOKEN). sql and
    /// the toolkits' options are set in agentos.toml (agno run --config F --agent ID).
    #[arg(long = "tool", short = 't')]
    pub(crate) tools: Vec<String>,
    /// Root directory of the `file` toolkit.
    #[arg(long, default_value = ".")]
    pub(crate) base_dir: String,
    /// An MCP server whose tools the agent gets: a command run over stdio ("npx -y
    /// @modelcontextprotocol/server-everything") or an http(s) URL: streamable HTTP, or MCP's older
    /// SSE transport when the path ends in /sse (repeatable).
    #[arg(long)]
    pub(crate) mcp: Vec<String>,
    /// Agent name.
    #[arg(long, default_value = "Agno")]
    pub(crate) name: String,
    /// Store sessions and runs in this database (sqlite://agno.db, ...); history is sent with
    /// each run. Default: kept in memory for this process only.
    #[arg(long, env = "AGNO_DB")]
    pub(crate) db: Option<String>,
    /// Session to continue (default: a new one).
    #[arg(long)]
    pub(crate) session_id: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    /// An image to send with the message (png, jpg, gif, webp; repeatable).
    #[arg(long = "image", value_name = "PATH")]
    pub(crate) images: Vec<std::path::PathBuf>,
    /// A document to send with the message (pdf, txt, md, csv, json; repeatable).
    #[arg(long = "file", value_name = "PATH")]
    pub(crate) files: Vec<std::path::PathBuf>,
    /// Run a component of this AgentOS config (agentos.toml) instead of the agent the flags
    /// describe; name it with --agent-id, --team or --workflow. Its [db] stores the run.
    #[arg(long, short = 'c')]
    pub(crate) config: Option<std::path::PathBuf>,
    /// The config's agent to run.
    #[arg(long, requires = "config", conflicts_with_all = ["team", "workflow"])]
    pub(crate) agent_id: Option<String>,
    /// The config's team to run.
    #[arg(long, requires = "config", conflicts_with = "workflow")]
    pub(crate) team: Option<String>,
    /// The config's workflow to run; a review pause is answered at the terminal.
    #[arg(long, requires = "config")]
    pub(crate) workflow: Option<String>,
    /// Stream the answer as it is generated.
    #[arg(long, short)]
    pub(crate) stream: bool,
    /// Print the whole run record as JSON (Agno's RunOutput shape) instead of the answer.
    #[arg(long, conflicts_with = "stream")]
    pub(crate) json: bool,
    /// Trace the run and print its span tree to stderr after the answer: the run, each model
    /// call (with its tokens) and each tool call, with their times.
    #[arg(long, conflicts_with = "config")]
    pub(crate) trace: bool,
    /// The message.
    #[arg(required = true)]
    pub(crate) message: Vec<String>,
}
