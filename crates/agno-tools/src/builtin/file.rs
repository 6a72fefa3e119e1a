//! The `file` toolkit: read, list, search, save and (off by default) delete files, every path
//! confined to one base directory.
//!
//! A path from the model is relative to the base. Absolute paths, `..` that climbs out, and
//! symbolic links that resolve outside the base are refused before any IO. The confinement is a
//! check made at call time, not a sandbox: it does not defend against another process swapping
//! directories for symbolic links while a call runs.

use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::http::truncate_chars;
use crate::{Function, ToolError, Toolkit};

/// Files larger than this are not read.
const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

/// `search_files` returns at most this many paths.
const MAX_SEARCH_RESULTS: usize = 500;

/// `search_files` looks at most at this many directory entries.
const MAX_SEARCH_VISITS: usize = 200_000;

/// Longest accepted `search_files` pattern, in characters.
const MAX_PATTERN_CHARS: usize = 1_000;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ReadArgs {
    /// Path of the file, relative to the base directory.
    path: String,
    /// Maximum number of characters to return (default: the whole file).
    max_chars: Option<usize>,
}

/// Arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ListArgs {
    /// Directory to list, relative to the base directory (default: the base directory itself).
    path: Option<String>,
}

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// Glob pattern: `*` matches any characters except `/`, `**` also matches `/`, `?` matches
    /// one character. A pattern without `/` is matched against file names at any depth
    /// (`*.md`); a pattern with `/` against whole relative paths (`docs/*.md`, `**/test_*.py`).
    pattern: String,
}

/// Arguments of `save_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SaveArgs {
    /// Path of the file, relative to the base directory. Missing parent directories are created.
    path: String,
    /// The text to write.
    contents: String,
    /// Replace the file if it exists (default true).
    overwrite: Option<bool>,
}

/// Arguments of `delete_file`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteArgs {
    /// Path of the file or empty directory to delete, relative to the base directory.
    path: String,
}

/// The base directory every path is confined to.
#[derive(Debug)]
struct Root {
    base: PathBuf,
}

fn io_error(what: &str, path: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        ErrorKind::NotFound => ToolError::execution(format!("{what} {path:?} failed: not found")),
        _ => ToolError::execution(format!("{what} {path:?} failed: {e}")),
    }
}

impl Root {
    fn canonical_base(&self) -> Result<PathBuf, ToolError> {
        fs::canonicalize(&self.base)
            .map_err(|e| ToolError::execution(format!("base directory {} is not accessible: {e}", self.base.display())))
    }

    /// `path` as a location inside the base directory (the canonical base when `path` is empty
    /// or `.`). `..` is resolved by name, so the OS never sees it.
    fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let base = self.canonical_base()?;
        let mut parts: Vec<&OsStr> = Vec::new();
        for component in Path::new(path).components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(ToolError::invalid_arguments(format!("path {path:?} escapes the base directory")));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::invalid_arguments(format!(
                        "path {path:?} is absolute; paths must be relative to the base directory"
                    )));
                }
            }
        }
        let full = parts.iter().fold(base.clone(), |acc, part| acc.join(part));
        ensure_inside(&base, &full, path)?;
        Ok(full)
    }
}

/// Fails unless the deepest existing ancestor of `full` (`full` itself when it exists), with
/// every symbolic link resolved, lies inside `base`.
fn ensure_inside(base: &Path, full: &Path, path: &str) -> Result<(), ToolError> {
    for ancestor in full.ancestors() {
        match fs::symlink_metadata(ancestor) {
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            _ => {}
        }
        // It exists (possibly as a dangling link, which then fails to resolve and is refused).
        let real = fs::canonicalize(ancestor)
            .map_err(|e| ToolError::execution(format!("path {path:?} cannot be resolved: {e}")))?;
        if real.starts_with(base) {
            return Ok(());
        }
        return Err(ToolError::invalid_arguments(format!("path {path:?} resolves outside the base directory")));
    }
    Err(ToolError::execution(format!("path {path:?} cannot be resolved: the base directory is gone")))
}

fn read_file(root: &Root, args: ReadArgs) -> Result<Value, ToolError> {
    let path = args.path;
    let full = root.resolve(&path)?;
    let meta = fs::metadata(&full).map_err(|e| io_error("reading file", &path, &e))?;
    if meta.is_dir() {
        return Err(ToolError::execution(format!("path {path:?} is a directory; use list_files")));
    }
    if !meta.is_file() {
        return Err(ToolError::execution(format!("path {path:?} is not a regular file")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(ToolError::execution(format!(
            "file {path:?} is too large to read ({} bytes; the limit is {MAX_READ_BYTES})",
            meta.len()
        )));
    }
    let bytes = fs::read(&full).map_err(|e| io_error("reading file", &path, &e))?;
    let mut contents =
        String::from_utf8(bytes).map_err(|_| ToolError::execution(format!("file {path:?} is not utf-8 text")))?;
    let truncated = args.max_chars.is_some_and(|max| truncate_chars(&mut contents, max));
    Ok(json!({ "path": path, "contents": contents, "truncated": truncated }))
}

fn list_files(root: &Root, args: ListArgs) -> Result<Value, ToolError> {
    let path = args.path.unwrap_or_default();
    let full = root.resolve(&path)?;
    let meta = fs::metadata(&full).map_err(|e| io_error("listing directory", &path, &e))?;
    if !meta.is_dir() {
        return Err(ToolError::execution(format!("path {path:?} is not a directory")));
    }
    let entries = fs::read_dir(&full).map_err(|e| io_error("listing directory", &path, &e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error("listing directory", &path, &e))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        // A link to a directory is listed as one; following it later is still confined.
        let is_dir = match entry.file_type() {
            Ok(t) if t.is_symlink() => fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()),
            Ok(t) => t.is_dir(),
            Err(_) => false,
        };
        if is_dir {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    Ok(Value::from(names))
}

/// One element of a compiled glob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A literal character.
    Char(char),
    /// `?`: one character other than `/`.
    One,
    /// `*`: any characters other than `/`.
    Star,
    /// `**`: any characters.
    AnyPath,
    /// `**/`: nothing, or any characters ending in `/`.
    AnyDirs,
}

fn compile(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            '?' => tokens.push(Token::One),
            '*' if chars.get(i + 1) == Some(&'*') => {
                while chars.get(i + 1) == Some(&'*') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&'/') {
                    i += 1;
                    tokens.push(Token::AnyDirs);
                } else {
                    tokens.push(Token::AnyPath);
                }
            }
            '*' => tokens.push(Token::Star),
            c => tokens.push(Token::Char(c)),
        }
        i += 1;
    }
    tokens
}

/// True when `tokens` match all of `text` (dynamic programming, linear memory, no backtracking).
fn matches(tokens: &[Token], text: &[char]) -> bool {
    // `prev[j]`: the tokens so far match `text[..j]`.
    let mut prev = vec![false; text.len() + 1];
    prev[0] = true;
    let mut next = vec![false; text.len() + 1];
    for token in tokens {
        next[0] = matches!(token, Token::Star | Token::AnyPath | Token::AnyDirs) && prev[0];
        let mut reached = prev[0];
        for (j, &c) in text.iter().enumerate() {
            next[j + 1] = match token {
                Token::Char(t) => prev[j] && c == *t,
                Token::One => prev[j] && c != '/',
                Token::Star => prev[j + 1] || (next[j] && c != '/'),
                Token::AnyPath => prev[j + 1] || next[j],
                Token::AnyDirs => prev[j + 1] || (c == '/' && reached),
            };
            reached |= prev[j + 1];
        }
        std::mem::swap(&mut prev, &mut next);
    }
    prev[text.len()]
}

fn search_files(root: &Root, args: SearchArgs) -> Result<Value, ToolError> {
    let pattern = args.pattern;
    if pattern.is_empty() {
        return Err(ToolError::invalid_arguments("pattern is empty"));
    }
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(ToolError::invalid_arguments(format!("pattern is longer than {MAX_PATTERN_CHARS} characters")));
    }
    let by_path = pattern.contains('/');
    let tokens = compile(pattern.strip_prefix("./").unwrap_or(&pattern));
    let base = root.canonical_base()?;

    let mut found = Vec::new();
    let mut visits = 0;
    let mut truncated = false;
    // Depth-first over (directory, its path relative to the base); links are never followed.
    let mut stack = vec![(base, String::new())];
    'walk: while let Some((dir, rel_dir)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(fs::DirEntry::file_name);
        let mut subdirs = Vec::new();
        for entry in entries {
            visits += 1;
            if visits > MAX_SEARCH_VISITS {
                truncated = true;
                break 'walk;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = format!("{rel_dir}{name}");
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let subject: Vec<char> = if by_path { rel.chars().collect() } else { name.chars().collect() };
            if matches(&tokens, &subject) {
                if found.len() == MAX_SEARCH_RESULTS {
                    truncated = true;
                    break 'walk;
                }
                found.push(if is_dir { format!("{rel}/") } else { rel.clone() });
            }
            if is_dir {
                subdirs.push((entry.path(), format!("{rel}/")));
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    found.sort();
    Ok(json!({
        "pattern": pattern,
        "matches_found": found.len(),
        "files": found,
        "truncated": truncated,
    }))
}

/// A file name in the target's directory that no other writer uses.
fn temp_path(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Writes `contents` to a new temporary file beside `target`, then renames it over `target`, so
/// `target` is either the old file or the whole new one, never a partial write.
fn write_atomically(target: &Path, contents: &[u8]) -> std::io::Result<()> {
    let temp = temp_path(target);
    let mut file = OpenOptions::new().write(true).create_new(true).open(&temp)?;
    let written = file
        .write_all(contents)
        .and_then(|()| file.sync_all())
        .and_then(|()| match fs::metadata(target) {
            // Keep the mode of the file being replaced.
            Ok(old) if old.is_file() => fs::set_permissions(&temp, old.permissions()),
            _ => Ok(()),
        })
        .and_then(|()| fs::rename(&temp, target));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

fn save_file(root: &Root, args: SaveArgs) -> Result<Value, ToolError> {
    let path = args.path;
    fs::create_dir_all(&root.base)
        .map_err(|e| ToolError::execution(format!("base directory {} cannot be created: {e}", root.base.display())))?;
    let full = root.resolve(&path)?;
    let base = root.canonical_base()?;
    if full == base {
        return Err(ToolError::invalid_arguments(format!("path {path:?} names no file")));
    }
    if let Some(parent) = full.parent() {
        fs::create_dir_all(parent).map_err(|e| io_error("creating the parent directories of", &path, &e))?;
        ensure_inside(&base, parent, &path)?;
    }
    match fs::symlink_metadata(&full) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::execution(format!("path {path:?} is a directory")));
        }
        Ok(_) if !args.overwrite.unwrap_or(true) => {
            return Err(ToolError::execution(format!("file {path:?} already exists and overwrite is false")));
        }
        _ => {}
    }
    write_atomically(&full, args.contents.as_bytes()).map_err(|e| io_error("saving file", &path, &e))?;
    Ok(json!({ "path": path, "bytes_written": args.contents.len() }))
}

fn delete_file(root: &Root, args: DeleteArgs) -> Result<Value, ToolError> {
    let path = args.path;
    let full = root.resolve(&path)?;
    if full == root.canonical_base()? {
        return Err(ToolError::invalid_arguments("the base directory itself cannot be deleted"));
    }
    let meta = fs::symlink_metadata(&full).map_err(|e| io_error("deleting", &path, &e))?;
    if meta.is_dir() {
        fs::remove_dir(&full).map_err(|e| io_error("deleting directory", &path, &e))?;
    } else {
        fs::remove_file(&full).map_err(|e| io_error("deleting file", &path, &e))?;
    }
    Ok(json!({ "path": path, "deleted": true }))
}

/// The file toolkit (name and id `file`), confined to `base_dir`.
///
/// Tools, each returning JSON text:
/// - `read_file(path, max_chars)` → `{"path", "contents", "truncated"}` (UTF-8 files up to 10 MiB);
/// - `list_files(path)` → the sorted names in a directory, directories suffixed `/`;
/// - `search_files(pattern)` → `{"pattern", "matches_found", "files", "truncated"}`, a recursive
///   glob (`*`, `?`, `**`) over relative paths, at most 500 results, symbolic links not followed;
/// - `save_file(path, contents, overwrite)` → `{"path", "bytes_written"}`, creating parent
///   directories and writing through a temporary file and a rename, so a crash never leaves a
///   half-written file;
/// - `delete_file(path)` → `{"path", "deleted"}`, a file or an empty directory; off by default
///   (turn it on with `.set("delete_file", true)` or the option `delete_file = true`).
///
/// Every path is relative to `base_dir`. Absolute paths, `..` that escapes, and symbolic links
/// resolving outside `base_dir` are refused. `base_dir` must exist, except that `save_file`
/// creates it. All tools do blocking IO on tokio's blocking pool.
pub fn file_tools(base_dir: PathBuf) -> Toolkit {
    let root = Arc::new(Root { base: base_dir });
    Toolkit::new("file")
        .tool(confined(
            &root,
            "read_file",
            "Read a UTF-8 text file inside the base directory. Returns JSON with the contents, cut to \
             max_chars characters when given.",
            read_file,
        ))
        .tool(confined(
            &root,
            "list_files",
            "List the names in a directory inside the base directory (the base itself by default), \
             sorted, with directories suffixed by '/'.",
            list_files,
        ))
        .tool(confined(
            &root,
            "search_files",
            "Find files and directories under the base directory whose names (or, when the pattern \
             contains '/', whose relative paths) match a glob pattern with *, ** and ?. Returns at \
             most 500 relative paths.",
            search_files,
        ))
        .tool(confined(
            &root,
            "save_file",
            "Save text to a file inside the base directory, creating parent directories. Replaces an \
             existing file unless overwrite is false.",
            save_file,
        ))
        .tool_off_by_default(confined(
            &root,
            "delete_file",
            "Delete a file or an empty directory inside the base directory.",
            delete_file,
        ))
}

/// A blocking tool running `f` against the shared base directory.
fn confined<A>(root: &Arc<Root>, name: &str, description: &str, f: fn(&Root, A) -> Result<Value, ToolError>) -> Function
where
    A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
{
    let root = Arc::clone(root);
    Function::blocking(name, description, move |args: A| f(&root, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(pattern: &str, text: &str) -> bool {
        matches(&compile(pattern), &text.chars().collect::<Vec<_>>())
    }

    #[test]
    fn glob_wildcards() {
        assert!(glob("*.txt", "a.txt"));
        assert!(glob("*.txt", ".txt"));
        assert!(!glob("*.txt", "a.txt.bak"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("*", "a/b"));
        assert!(glob("**", "a/b"));
        assert!(glob("src/*.rs", "src/main.rs"));
        assert!(!glob("src/*.rs", "src/x/main.rs"));
        assert!(glob("**/*.rs", "main.rs"));
        assert!(glob("**/*.rs", "a/b/main.rs"));
        assert!(glob("a/**/b", "a/b"));
        assert!(glob("a/**/b", "a/x/y/b"));
        assert!(!glob("a/**/b", "ab"));
        assert!(glob("a**b", "a/x/b"));
        assert!(!glob("abc", "abd"));
        assert!(glob("", ""));
    }
}
