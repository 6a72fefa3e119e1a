//! An agent's filesystem tools (Agno 3.1's `FileSystemTools`): `read_file`, `write_file`,
//! `append_file`, `replace_lines`, `list_files`, `search_content`, `check_lines`, `move_file`,
//! `delete_file` over the agent's store in the agent's database. Each call acts in the partition
//! of the run that makes it (its user on a partitioned store), taken from the run's context,
//! never from the model's arguments. Failures are answered as Agno's `"Error: ..."` strings, so
//! the model can correct itself; nothing is written half-way.

use std::sync::Arc;

use agno_core::agent_files::paths::{build_chunk, normalize_directory, path_order};
use agno_core::agent_files::{FileMeta, FileStore, FileSystem, FileSystemSettings, FsError};
use agno_core::{Db, ToolContext, ToolError};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::{Value, json};

/// Most entries `list_files` shows of each kind.
const MAX_DIR_ENTRIES: usize = 200;
/// Longest whole-file read, in characters.
const MAX_READ_CHARS: usize = 100_000;

/// What every tool of one agent's toolkit shares.
#[derive(Debug)]
struct Bound {
    store: Arc<dyn Db>,
    settings: FileSystemSettings,
    agent_id: String,
}

impl Bound {
    /// The agent's store in the partition of the run making the call.
    fn for_call(&self, ctx: &ToolContext) -> Result<FileSystem, FsError> {
        let agent_id = ctx.agent_id.as_deref().unwrap_or(&self.agent_id);
        let at = self.settings.partition_for(Some(agent_id), None, ctx.user_id.as_deref(), false)?;
        let store: Arc<dyn FileStore> = Arc::clone(&self.store) as Arc<dyn FileStore>;
        Ok(FileSystem::new(store, at, self.settings.max_file_bytes, self.settings.max_namespace_bytes))
    }
}

/// A failure as the model reads it (Agno's wording).
fn answer(e: FsError, path: &str) -> String {
    match e {
        FsError::Quota { scope: "file", current, limit, .. } => format!(
            "Error: {path} would be {current} bytes (limit {limit} per file). Split the topic into smaller files (or \
             partition by date) and retry."
        ),
        FsError::Quota { current, limit, .. } => format!(
            "Error: storage is full ({current} of {limit} bytes). Free space only if you have a tool for it and only \
             from files you are certain are obsolete (see list_files). Never overwrite or discard records you might \
             still need to make room; if nothing is safely disposable, stop and report that storage is full."
        ),
        FsError::Db(e) => {
            tracing::error!(error = %e, "filesystem tool failed");
            format!("Error: {e}")
        }
        other => format!("Error: {other}"),
    }
}

fn format_size(size: i64) -> String {
    let mut size = size as f64;
    for unit in ["B", "KB", "MB"] {
        if size < 1024.0 {
            return if unit == "B" { format!("{}B", size as i64) } else { format!("{size:.1}{unit}") };
        }
        size /= 1024.0;
    }
    format!("{size:.1}GB")
}

fn format_time(at: Option<i64>) -> Value {
    at.and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map_or(Value::Null, |t| Value::String(t.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

/// Lines of `text` numbered from `start`, `cat -n` style.
fn numbered(text: &str, start: usize) -> String {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines.iter().enumerate().map(|(i, l)| format!("{:6}\t{l}", i + start)).collect::<Vec<_>>().join("\n")
}

fn line_count(text: &str) -> usize {
    let n = text.split('\n').count();
    if text.ends_with('\n') || text.is_empty() { n - 1 } else { n }
}

/// `*` and `?` glob of one name (Python's `fnmatch`, without classes).
fn glob(name: &str, pattern: &str) -> bool {
    fn go(n: &[char], p: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(n, &p[1..]) || (!n.is_empty() && go(&n[1..], p)),
            (Some('?'), Some(_)) => go(&n[1..], &p[1..]),
            (Some(a), Some(b)) if a == b => go(&n[1..], &p[1..]),
            _ => false,
        }
    }
    go(&name.chars().collect::<Vec<_>>(), &pattern.chars().collect::<Vec<_>>())
}

fn dot() -> String {
    ".".to_owned()
}
fn yes() -> bool {
    true
}
fn three() -> usize {
    3
}
fn ten() -> usize {
    10
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// File path, e.g. "notes/decisions.md".
    path: String,
    /// Optional 1-indexed first line to return.
    start_line: Option<i64>,
    /// Optional 1-indexed last line to return (inclusive).
    end_line: Option<i64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ListArgs {
    /// Directory to list (default "." = top level), e.g. "seen".
    #[serde(default = "dot")]
    directory: String,
    /// Optional glob to filter names, e.g. "*.md".
    pattern: Option<String>,
    /// If True, walk the directory tree up to max_depth levels deep.
    #[serde(default)]
    recursive: bool,
    /// Depth limit when recursive=True (default 3).
    #[serde(default = "three")]
    max_depth: usize,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// Substring to search for.
    query: String,
    /// Directory to scope the search (default "." = everything).
    #[serde(default = "dot")]
    directory: String,
    /// Maximum matching files to return (default 10).
    #[serde(default = "ten")]
    limit: usize,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CheckArgs {
    /// The records to check, e.g. a list of URLs or IDs. Max 200. Pass each record in exactly the
    /// form you will store it.
    lines: Vec<String>,
    /// Directory to scope the check (default "." = everything), e.g. "seen".
    #[serde(default = "dot")]
    directory: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WriteArgs {
    /// File path, e.g. "state/last-run.md". Parent folders are implicit.
    path: String,
    /// The complete new file content.
    content: String,
    /// If False, fail when the file already exists (default True).
    #[serde(default = "yes")]
    overwrite: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct AppendArgs {
    /// File path, e.g. "seen/2026-07-24.md". Parent folders are implicit.
    path: String,
    /// One or more lines to append.
    content: String,
    /// If True, skip lines the file already contains.
    #[serde(default)]
    unique: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ReplaceArgs {
    /// File path, e.g. "notes/decisions.md".
    path: String,
    /// First line to replace, 1-indexed.
    start_line: i64,
    /// Last line to replace, inclusive.
    end_line: i64,
    /// Replacement lines. Empty deletes the range.
    #[serde(default)]
    content: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct MoveArgs {
    /// Source file path.
    src: String,
    /// Destination path. Parent folders are implicit.
    dst: String,
    /// If True, replace dst if it exists (default False).
    #[serde(default)]
    overwrite: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct DeleteArgs {
    /// File path to delete.
    path: String,
}

async fn read_file(fs: FileSystem, a: ReadArgs) -> Result<String, FsError> {
    let Some(file) = fs.read(&a.path).await? else { return Ok(format!("Error: file not found: {}", a.path)) };
    let contents = file.content;
    let total = line_count(&contents);
    if total == 0 {
        return Ok(format!("({} is empty)", a.path));
    }
    if a.start_line.is_none() && a.end_line.is_none() {
        let chars = contents.chars().count();
        if chars > MAX_READ_CHARS {
            return Ok(format!(
                "Error: file too long to read whole ({chars} chars, {total} lines; limit {MAX_READ_CHARS} chars). \
                 Read a range with start_line/end_line, or use search_content first: it reports each matching \
                 file's first-match line."
            ));
        }
        return Ok(numbered(&contents, 1));
    }
    let start = a.start_line.unwrap_or(1);
    let end = a.end_line.unwrap_or(total as i64);
    if start < 1 {
        return Ok(format!("Error: start_line must be 1 or greater (got {start})."));
    }
    if end < 1 {
        return Ok(format!("Error: end_line must be 1 or greater (got {end})."));
    }
    if start > total as i64 {
        return Ok(format!("Error: start_line {start} is past the end of {}, which has {total} lines.", a.path));
    }
    if end < start {
        return Ok(format!("Error: end_line {end} is before start_line {start}."));
    }
    let (start, end) = (start as usize, (end as usize).min(total));
    let chunk = contents.split('\n').skip(start - 1).take(end + 1 - start).collect::<Vec<_>>().join("\n");
    Ok(numbered(&chunk, start))
}

async fn list_files(fs: FileSystem, a: ListArgs) -> Result<String, FsError> {
    let files = fs.list(&a.directory).await?;
    let directory = normalize_directory(&a.directory)?;
    let prefix_len = if directory.is_empty() { 0 } else { directory.split('/').count() };
    let depth_cap = if a.recursive { a.max_depth + 1 } else { 1 };
    let pattern = a.pattern.as_deref().filter(|p| !p.is_empty());
    let mut file_entries = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for meta in &files {
        let segments: Vec<&str> = meta.path.split('/').collect();
        let rel = segments.len().saturating_sub(prefix_len);
        if rel <= depth_cap && pattern.is_none_or(|p| glob(segments[segments.len() - 1], p)) {
            file_entries.push(meta);
        }
        for k in 1..=rel.saturating_sub(1).min(depth_cap) {
            let dir = segments[..prefix_len + k].join("/");
            if pattern.is_none_or(|p| glob(dir.rsplit('/').next().unwrap_or(&dir), p)) {
                dirs.insert(dir);
            }
        }
    }
    let mut dirs: Vec<String> = dirs.into_iter().collect();
    dirs.sort_by(|a, b| path_order(a, b));
    let more_dirs = dirs.len().saturating_sub(MAX_DIR_ENTRIES);
    dirs.truncate(MAX_DIR_ENTRIES);
    let more_files = file_entries.len().saturating_sub(MAX_DIR_ENTRIES);
    file_entries.truncate(MAX_DIR_ENTRIES);
    let mut entries: Vec<(String, Value)> = file_entries
        .iter()
        .map(|m: &&FileMeta| {
            let v = json!({"path": m.path, "type": "file", "size": format_size(m.size_bytes), "updated": format_time(m.updated_at)});
            (m.path.clone(), v)
        })
        .chain(dirs.into_iter().map(|d| (d.clone(), json!({"path": d, "type": "dir", "size": null, "updated": null}))))
        .collect();
    entries.sort_by(|a, b| path_order(&a.0, &b.0));
    let mut entries: Vec<Value> = entries.into_iter().map(|(_, v)| v).collect();
    if more_files > 0 {
        entries
            .push(json!({"path": format!("...and {more_files} more"), "type": "file", "size": null, "updated": null}));
    }
    if more_dirs > 0 {
        entries.push(json!({"path": format!("...and {more_dirs} more"), "type": "dir", "size": null, "updated": null}));
    }
    let usage = fs.usage().await?;
    let out = json!({
        "directory": a.directory,
        "pattern": a.pattern,
        "recursive": a.recursive,
        "files": entries,
        "usage": {"files": usage.file_count, "bytes_used": usage.total_bytes, "bytes_limit": fs.max_namespace_bytes()},
    });
    Ok(serde_json::to_string_pretty(&out).unwrap_or_default())
}

async fn search_content(fs: FileSystem, a: SearchArgs) -> Result<String, FsError> {
    if a.query.trim().is_empty() {
        return Ok("Error: query cannot be empty".to_owned());
    }
    let found = fs.search(&a.query, &a.directory, a.limit).await?;
    let files: Vec<Value> = found
        .iter()
        .map(|m| {
            json!({"file": m.path, "line": m.line, "matches": m.match_count, "size": format_size(m.size_bytes), "snippet": m.snippet})
        })
        .collect();
    let out = json!({"query": a.query, "matches_found": files.len(), "files": files});
    Ok(serde_json::to_string_pretty(&out).unwrap_or_default())
}

async fn check_lines(fs: FileSystem, a: CheckArgs) -> Result<String, FsError> {
    let (found, missing) = fs.contains(&a.lines, &a.directory).await?;
    Ok(serde_json::to_string_pretty(&json!({"found": found, "missing": missing})).unwrap_or_default())
}

async fn write_file(fs: FileSystem, a: WriteArgs) -> Result<String, FsError> {
    match fs.write(&a.path, &a.content, a.overwrite).await {
        Ok(meta) => Ok(format!("Wrote {} bytes to {}", meta.size_bytes, a.path)),
        Err(FsError::Exists(_)) => Ok(format!("Error: file exists and overwrite=False: {}", a.path)),
        Err(e) => Err(e),
    }
}

async fn append_file(fs: FileSystem, a: AppendArgs) -> Result<String, FsError> {
    let (meta, added) = fs.append(&a.path, &a.content, a.unique).await?;
    let now = meta.map_or(0, |m| m.size_bytes);
    Ok(if a.unique {
        if added <= 0 {
            format!("Appended nothing to {}: every line was already present (still {now} bytes)", a.path)
        } else {
            format!("Appended {added} bytes to {}, skipping lines already present (now {now} bytes)", a.path)
        }
    } else {
        format!("Appended {} bytes to {} (now {now} bytes)", build_chunk(&a.content).len(), a.path)
    })
}

async fn replace_lines(fs: FileSystem, a: ReplaceArgs) -> Result<String, FsError> {
    let meta = fs.replace_lines(&a.path, a.start_line, a.end_line, &a.content).await?;
    let action = if a.content.is_empty() { "Deleted" } else { "Replaced" };
    Ok(format!("{action} lines {}-{} in {} (now {} bytes)", a.start_line, a.end_line, a.path, meta.size_bytes))
}

async fn move_file(fs: FileSystem, a: MoveArgs) -> Result<String, FsError> {
    match fs.rename(&a.src, &a.dst, a.overwrite).await {
        Ok(_) => Ok(format!("Moved {} -> {}", a.src, a.dst)),
        Err(FsError::NotFound(_)) => Ok(format!("Error: file not found: {}", a.src)),
        Err(FsError::Exists(_)) if !a.overwrite => Ok(format!("Error: dst exists and overwrite=False: {}", a.dst)),
        Err(FsError::Exists(_)) => Ok(format!(
            "Error: could not move to {}; it may have changed concurrently. Retry or use another name.",
            a.dst
        )),
        Err(e) => Err(e),
    }
}

async fn delete_file(fs: FileSystem, a: DeleteArgs) -> Result<String, FsError> {
    Ok(if fs.delete(&a.path).await? {
        format!("Deleted {}", a.path)
    } else {
        format!("Error: file not found: {}", a.path)
    })
}

/// One tool: its arguments read, the store bound to the call's partition, the outcome (or the
/// failure, worded for the model) as its text.
fn tool<A, F, Fut>(bound: &Arc<Bound>, name: &str, description: &str, subject: fn(&A) -> String, f: F) -> Function
where
    A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
    F: Fn(FileSystem, A) -> Fut + Send + Sync + Copy + 'static,
    Fut: std::future::Future<Output = Result<String, FsError>> + Send + 'static,
{
    let bound = Arc::clone(bound);
    Function::with_context(name, description, move |args: A, ctx: ToolContext| {
        let bound = Arc::clone(&bound);
        async move {
            let path = subject(&args);
            let out = match bound.for_call(&ctx) {
                Ok(fs) => f(fs, args).await,
                Err(e) => Err(e),
            };
            Ok::<_, ToolError>(out.unwrap_or_else(|e| answer(e, &path)))
        }
    })
}

/// The filesystem tools `settings` gives agent `agent_id` over `store` (Agno's selection: the
/// notes seven, `delete_file` with `allow_delete`, the three read tools when `read_only`,
/// exactly `include_tools` when set).
pub fn filesystem_tools(store: Arc<dyn Db>, settings: FileSystemSettings, agent_id: &str) -> Vec<Function> {
    let names = settings.tool_names();
    let bound = Arc::new(Bound { store, settings, agent_id: agent_id.to_owned() });
    let mut tools = Vec::new();
    for name in names {
        let t = match name {
            "read_file" => tool(
                &bound,
                name,
                "Read a file from your files, returning `cat -n` style line-numbered output. Each line is prefixed with its 1-indexed line number; the numbers are display only: never include them in content you pass to write_file, append_file or replace_lines.",
                |a: &ReadArgs| a.path.clone(),
                read_file,
            ),
            "list_files" => tool(
                &bound,
                name,
                "List your files. Entries are {\"path\", \"type\", \"size\", \"updated\"}, where type is \"file\" or \"dir\". The result also reports total usage against your storage limit.",
                |a: &ListArgs| a.directory.clone(),
                list_files,
            ),
            "search_content" => tool(
                &bound,
                name,
                "Search your files for text (case-insensitive substring match). Each result gives the line number of the first match, so you can follow up with read_file(path, start_line=..., end_line=...).",
                |a: &SearchArgs| a.directory.clone(),
                search_content,
            ),
            "check_lines" => tool(
                &bound,
                name,
                "Check which of these exact lines already exist in your files (whole-line matching). Use this before acting on items so you never repeat work, then record the new ones with append_file (one per line).",
                |a: &CheckArgs| a.directory.clone(),
                check_lines,
            ),
            "write_file" => tool(
                &bound,
                name,
                "Create or overwrite a file. For adding records to a log-style file, use append_file instead, since it cannot clobber existing lines.",
                |a: &WriteArgs| a.path.clone(),
                write_file,
            ),
            "append_file" => tool(
                &bound,
                name,
                "Append lines to a file, creating it if needed. Line-oriented: appended content always starts on a fresh line and ends with a newline. Keep one record per line.",
                |a: &AppendArgs| a.path.clone(),
                append_file,
            ),
            "replace_lines" => tool(
                &bound,
                name,
                "Replace lines start_line through end_line with new content, or delete them. Read the file (or search it) first to get the line numbers, which are 1-indexed and inclusive on both ends. Leave content empty to delete the range.",
                |a: &ReplaceArgs| a.path.clone(),
                replace_lines,
            ),
            "move_file" => tool(&bound, name, "Move or rename a file.", |a: &MoveArgs| a.src.clone(), move_file),
            _ => tool(
                &bound,
                name,
                "Delete a file. This cannot be undone.",
                |a: &DeleteArgs| a.path.clone(),
                delete_file,
            ),
        };
        tools.push(t);
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_format_as_agno() {
        assert_eq!(format_size(512), "512B");
        assert_eq!(format_size(2048), "2.0KB");
        assert_eq!(numbered("a\nb\n", 5), "     5\ta\n     6\tb");
        assert_eq!(line_count("a\nb\n"), 2);
        assert_eq!(line_count("a\nb"), 2);
        assert!(glob("notes.md", "*.md") && !glob("notes.txt", "*.md") && glob("a1", "a?"));
    }
}
