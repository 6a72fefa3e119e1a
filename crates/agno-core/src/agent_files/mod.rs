//! An agent's durable files, as Agno 3.1 keeps them (`agno.fs`, `DbFileSystem` over `agno_fs`):
//! text files keyed by `(namespace, user_id, path)`, where the namespace names a store (by
//! default one per agent, `{agent_id}`) and `user_id` is the user partition (`""` is the shared
//! one). [`FileStore`] is what a database keeps; [`FileSystem`] is one store bound to one
//! partition, with Agno's rules (quotas, line-oriented appends, line edits, search); the path
//! grammar is in [`paths`].

mod fs;
pub mod paths;

use serde::{Deserialize, Serialize};

use crate::{DbError, DbErrorKind, DbResult};

pub use fs::{FileSystem, SearchMatch, Usage};

/// Default per-file cap, in bytes (Agno's `max_file_bytes`).
pub const DEFAULT_MAX_FILE_BYTES: i64 = 1_000_000;
/// Default per-namespace-partition cap, in bytes (Agno's `max_namespace_bytes`).
pub const DEFAULT_MAX_NAMESPACE_BYTES: i64 = 20_000_000;

/// A file's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    /// Its path in the namespace.
    pub path: String,
    /// Its size in UTF-8 bytes.
    pub size_bytes: i64,
    /// Its version: 1 when written first, one more on every change.
    pub version: i64,
    /// When it last changed (epoch seconds).
    pub updated_at: Option<i64>,
}

/// A file with its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// Its metadata.
    pub meta: FileMeta,
    /// Its text.
    pub content: String,
}

/// Where a file operation acts: a namespace and a user partition in it (`""`: the shared one).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    /// The namespace (canonical, placeholders filled).
    pub namespace: String,
    /// The user partition; `""` is the shared one.
    pub user_id: String,
}

/// What a write expects of the file it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Anything: create or replace (last writer wins).
    Any,
    /// No file: create only.
    Absent,
    /// The file at this version (compare and swap).
    Version(i64),
}

/// A failure of a file operation, worded for the model that called it (Agno's messages).
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// A path, namespace, directory or record that breaks the grammar, or a partition that
    /// cannot be chosen (a user-scoped store and a run without a user).
    #[error("{0}")]
    InvalidPath(String),
    /// A write would pass a cap.
    #[error("{message}")]
    Quota {
        /// `"file"` or `"namespace"`.
        scope: &'static str,
        /// The size reached (file) or in use (namespace).
        current: i64,
        /// The cap.
        limit: i64,
        /// What happened.
        message: String,
    },
    /// No such file.
    #[error("file not found: {0}")]
    NotFound(String),
    /// The file exists and may not be replaced.
    #[error("file exists: {0}")]
    Exists(String),
    /// A range or argument the file cannot take.
    #[error("{0}")]
    Invalid(String),
    /// The file changed meanwhile (compare and swap lost).
    #[error("{0} changed concurrently; retry")]
    Changed(String),
    /// The store failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

fn unsupported() -> DbError {
    DbError::new(DbErrorKind::Unsupported, "Agent files are not supported by the configured database")
}

/// Where agent files are kept (`agno_fs`). The SQL databases and the document stores keep them;
/// Redis answers [`DbErrorKind::Unsupported`], as Python Agno's Redis does.
#[async_trait::async_trait]
pub trait FileStore: Send + Sync {
    /// The file at `path`, with its content.
    ///
    /// # Errors
    /// A storage error.
    async fn read_file(&self, at: &Partition, path: &str) -> DbResult<Option<StoredFile>> {
        let _ = (at, path);
        Err(unsupported())
    }

    /// Writes `content` at `path` (version 1 when new, one more otherwise) at `now`.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`] when `expect` does not hold; a storage error.
    async fn write_file(
        &self,
        at: &Partition,
        path: &str,
        content: &str,
        expect: Expect,
        now: i64,
    ) -> DbResult<FileMeta> {
        let _ = (at, path, content, expect, now);
        Err(unsupported())
    }

    /// The files under `directory` (`""`: all), without content, in no particular order.
    ///
    /// # Errors
    /// A storage error.
    async fn list_files(&self, at: &Partition, directory: &str) -> DbResult<Vec<FileMeta>> {
        let _ = (at, directory);
        Err(unsupported())
    }

    /// The files under `directory` with their content (for search and line checks).
    ///
    /// # Errors
    /// A storage error.
    async fn scan_files(&self, at: &Partition, directory: &str) -> DbResult<Vec<StoredFile>> {
        let _ = (at, directory);
        Err(unsupported())
    }

    /// Deletes the file at `path` (only at `expected_version` when given); whether it was.
    ///
    /// # Errors
    /// A storage error.
    async fn delete_file(&self, at: &Partition, path: &str, expected_version: Option<i64>) -> DbResult<bool> {
        let _ = (at, path, expected_version);
        Err(unsupported())
    }

    /// Moves the file at `src` to `dst` in one step (one more version); `None` when `src` does
    /// not exist.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`] when `dst` exists; a storage error.
    async fn rename_file(&self, at: &Partition, src: &str, dst: &str, now: i64) -> DbResult<Option<FileMeta>> {
        let _ = (at, src, dst, now);
        Err(unsupported())
    }

    /// The users holding files in `namespace` (the shared partition left out), sorted.
    ///
    /// # Errors
    /// A storage error.
    async fn file_partitions(&self, namespace: &str) -> DbResult<Vec<String>> {
        let _ = namespace;
        Err(unsupported())
    }
}

/// An agent's filesystem setting (Agno's `Agent(filesystem=...)`): which store it holds and the
/// tools it gets over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSystemSettings {
    /// The namespace, canonical, maybe with placeholders (default `{agent_id}`: one per agent).
    pub namespace: String,
    /// Partition by the run's user: `Some(true)` always, `Some(false)` never, `None` as the OS's
    /// user isolation (shared outside an OS).
    pub user_scoped: Option<bool>,
    /// Only the read tools.
    pub read_only: bool,
    /// Add `delete_file`.
    pub allow_delete: bool,
    /// Exactly these tools (of the nine), when set.
    pub include_tools: Option<Vec<String>>,
    /// Per-file cap in bytes.
    pub max_file_bytes: i64,
    /// Per-partition cap in bytes.
    pub max_namespace_bytes: i64,
    /// Instructions for the system message instead of Agno's default.
    pub instructions: Option<String>,
}

impl Default for FileSystemSettings {
    fn default() -> Self {
        Self {
            namespace: "{agent_id}".to_owned(),
            user_scoped: None,
            read_only: false,
            allow_delete: false,
            include_tools: None,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_namespace_bytes: DEFAULT_MAX_NAMESPACE_BYTES,
            instructions: None,
        }
    }
}

/// Every tool of the filesystem toolkit, in Agno's order.
pub const FILESYSTEM_TOOLS: [&str; 9] = [
    "read_file",
    "write_file",
    "append_file",
    "replace_lines",
    "list_files",
    "search_content",
    "check_lines",
    "move_file",
    "delete_file",
];

const DEFAULT_TOOLS: [&str; 7] =
    ["read_file", "write_file", "append_file", "replace_lines", "list_files", "search_content", "move_file"];
const READ_TOOLS: [&str; 3] = ["read_file", "list_files", "search_content"];
const READ_CAPABLE_TOOLS: [&str; 4] = ["read_file", "list_files", "search_content", "check_lines"];

impl FileSystemSettings {
    /// The settings with `namespace` made canonical and the options checked.
    ///
    /// # Errors
    /// A namespace breaking the grammar, `read_only` with `allow_delete`, an unknown tool name.
    pub fn validated(mut self) -> Result<Self, FsError> {
        self.namespace = paths::normalize_namespace(&self.namespace)?;
        if self.read_only && self.allow_delete {
            return Err(FsError::Invalid("allow_delete=True contradicts read_only=True; pick one.".to_owned()));
        }
        if let Some(unknown) = self.include_tools.iter().flatten().find(|t| !FILESYSTEM_TOOLS.contains(&t.as_str())) {
            return Err(FsError::Invalid(format!(
                "include_tools names {unknown:?}, which is not a filesystem tool; available: {}",
                FILESYSTEM_TOOLS.join(", ")
            )));
        }
        if self.max_file_bytes <= 0 || self.max_namespace_bytes <= 0 {
            return Err(FsError::Invalid("max_file_bytes and max_namespace_bytes must be positive".to_owned()));
        }
        Ok(self)
    }

    /// The tools the agent gets, as Agno's `FileSystemTools` registers them.
    pub fn tool_names(&self) -> Vec<&'static str> {
        match (&self.include_tools, self.read_only) {
            (Some(include), read_only) => {
                let pool: &[&'static str] = if read_only { &READ_CAPABLE_TOOLS } else { &FILESYSTEM_TOOLS };
                pool.iter().copied().filter(|t| include.iter().any(|i| i == t)).collect()
            }
            (None, true) => READ_TOOLS.to_vec(),
            (None, false) => {
                let mut tools = DEFAULT_TOOLS.to_vec();
                if self.allow_delete {
                    tools.push("delete_file");
                }
                tools
            }
        }
    }

    /// Whether a tool the agent gets can change files.
    pub fn can_write(&self) -> bool {
        self.tool_names().iter().any(|t| !READ_CAPABLE_TOOLS.contains(t))
    }

    /// Whether a run's files are partitioned by its user: `user_scoped`, or the OS's isolation
    /// (`os_isolation`) when unset.
    pub fn partitioned(&self, os_isolation: bool) -> bool {
        self.user_scoped.unwrap_or(os_isolation)
    }

    /// The namespace and partition a run of `agent_id` (by `user_id`, maybe none) acts in: the
    /// placeholders filled from the run, the user's partition on a partitioned store (a run with
    /// no user refused), the shared one otherwise or when the namespace names the user already.
    ///
    /// # Errors
    /// A placeholder the run cannot fill, a value that is not one path segment, a partitioned
    /// store and no user.
    pub fn partition_for(
        &self,
        agent_id: Option<&str>,
        team_id: Option<&str>,
        user_id: Option<&str>,
        os_isolation: bool,
    ) -> Result<Partition, FsError> {
        let user_id = user_id.filter(|u| !u.trim().is_empty());
        let partitioned = self.partitioned(os_isolation);
        if partitioned && user_id.is_none() {
            return Err(FsError::InvalidPath(
                "this filesystem is partitioned by user and the run has no user_id".to_owned(),
            ));
        }
        let placeholders = paths::template_placeholders(&self.namespace)?;
        let mut namespace = self.namespace.clone();
        for p in &placeholders {
            let value = match *p {
                "user_id" => user_id,
                "agent_id" => agent_id,
                _ => team_id,
            };
            let Some(value) = value else {
                return Err(FsError::InvalidPath(format!(
                    "this agent's files require {p} for this run and none was provided."
                )));
            };
            namespace = namespace.replace(&format!("{{{p}}}"), &paths::template_value(p, value)?);
        }
        let carries_user = placeholders.contains(&"user_id");
        let user = if partitioned && !carries_user { user_id.unwrap_or_default().to_owned() } else { String::new() };
        Ok(Partition { namespace, user_id: user })
    }

    /// The instructions the agent's system message carries: the setting's, or Agno's default
    /// for its access.
    pub fn system_instructions(&self) -> String {
        self.instructions.clone().unwrap_or_else(|| {
            if self.can_write() { fs::DEFAULT_INSTRUCTIONS } else { fs::READ_ONLY_INSTRUCTIONS }.to_owned()
        })
    }
}
