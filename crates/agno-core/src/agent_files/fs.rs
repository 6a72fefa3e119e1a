//! [`FileSystem`]: one store bound to one partition, with Agno 3.1's rules: per-file and
//! per-partition caps, line-oriented appends (with `unique`), line-range edits, case-insensitive
//! search with the first match's line, exact-line checks. Changes of existing files are compare
//! and swap on the file's version, so concurrent edits never lose one another.

use std::sync::Arc;

use super::paths::{self, build_chunk, normalize_directory, normalize_path};
use super::{Expect, FileMeta, FileStore, FsError, Partition, StoredFile};
use crate::{DbErrorKind, now_epoch_secs};

pub(super) const DEFAULT_INSTRUCTIONS: &str = "You have your own private, durable filesystem for notes that persist \
across sessions and runs. Use it to write, maintain and re-read prose that matters later: decisions with their \
reasoning, running documents on a topic, notes to your future self.

Conventions:
  - Paths are relative, like notes/decisions.md. Group related files in directories.
  - One topic, one file. Add dated entries as things develop; a note is a living document you maintain, not a log \
you only append to.
  - To correct or update part of a file, read it, then call replace_lines with the line numbers you saw. Never \
append a contradiction of what a note already says: fix the wording in place, in the same turn you learn it was \
wrong.
  - To find something, use search_content first: it reports the file and first-match line, which you can pass to \
read_file as start_line. Then answer from what the note says, not from memory.
  - To retire a note that is no longer current, move_file it into an archive/ directory. Do not blank it and do not \
overwrite it: its history may still be needed.
  - Store distilled content, not raw fetched payloads.
  - Never store secrets, passwords, or API keys.
  - Files have size limits. If a write is refused, split the topic into smaller files or archive what is finished. \
Never overwrite a note to make room if you might still need it.";

pub(super) const READ_ONLY_INSTRUCTIONS: &str = "You have read access to a durable filesystem. The files persist \
across sessions and runs.

Use it to look up what has been recorded: decisions, running documents, notes. You cannot change these files - you \
have no tool to write, append, move, or delete.

Conventions:
  - Paths are relative, like notes/decisions.md.
  - Use search_content to find where something is recorded, then read_file to read it.";

/// How many times an edit is retried when another writer changed the file meanwhile.
const EDIT_ATTEMPTS: usize = 8;

/// One file matching a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMatch {
    /// The file.
    pub path: String,
    /// Its size in bytes.
    pub size_bytes: i64,
    /// About 200 characters either side of the first match (`...` where cut).
    pub snippet: String,
    /// The line the first match starts on (from 1).
    pub line: usize,
    /// Occurrences in the whole file.
    pub match_count: usize,
}

/// What a partition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Files.
    pub file_count: i64,
    /// Bytes.
    pub total_bytes: i64,
}

/// One store bound to one partition, with its caps.
#[derive(Clone)]
pub struct FileSystem {
    store: Arc<dyn FileStore>,
    at: Partition,
    max_file_bytes: i64,
    max_namespace_bytes: i64,
}

impl std::fmt::Debug for FileSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSystem").field("at", &self.at).finish_non_exhaustive()
    }
}

fn db(e: crate::DbError) -> FsError {
    FsError::Db(e)
}

/// The first case-insensitive occurrence of `query` in `content`, as Agno's `_build_match`.
pub(crate) fn find_match(meta: &FileMeta, content: &str, query: &str) -> Option<SearchMatch> {
    let lower = content.to_lowercase();
    let q = query.to_lowercase();
    // Offsets in `lower` are offsets in `content` only when lowercasing kept every character's
    // length; where it did not (a few non-ASCII letters), search the text case-sensitively.
    let aligned =
        lower.len() == content.len() && lower.char_indices().map(|(i, _)| i).eq(content.char_indices().map(|(i, _)| i));
    let (haystack, needle) = if aligned { (lower.as_str(), q.as_str()) } else { (content, query) };
    let idx = haystack.find(needle)?;
    let chars_before = content[..idx].chars().count();
    let total_chars = content.chars().count();
    let query_chars = query.chars().count();
    let start = chars_before.saturating_sub(200);
    let end = (chars_before + query_chars + 200).min(total_chars);
    let mut snippet: String = content.chars().skip(start).take(end - start).collect();
    if start > 0 {
        snippet.insert_str(0, "...");
    }
    if end < total_chars {
        snippet.push_str("...");
    }
    Some(SearchMatch {
        path: meta.path.clone(),
        size_bytes: meta.size_bytes,
        snippet,
        line: content[..idx].matches('\n').count() + 1,
        match_count: haystack.matches(needle).count(),
    })
}

fn byte_len(s: &str) -> i64 {
    i64::try_from(s.len()).unwrap_or(i64::MAX)
}

impl FileSystem {
    /// The store `store` at partition `at`, with the caps.
    pub fn new(store: Arc<dyn FileStore>, at: Partition, max_file_bytes: i64, max_namespace_bytes: i64) -> Self {
        Self { store, at, max_file_bytes, max_namespace_bytes }
    }

    /// Where it acts.
    pub fn partition(&self) -> &Partition {
        &self.at
    }

    /// The same store in another user's partition (`""`: the shared one).
    pub fn in_partition(&self, user_id: &str) -> Self {
        let mut other = self.clone();
        other.at.user_id = user_id.to_owned();
        other
    }

    /// The per-partition cap.
    pub fn max_namespace_bytes(&self) -> i64 {
        self.max_namespace_bytes
    }

    /// The file at `path` with its content; `None` when there is none.
    ///
    /// # Errors
    /// An invalid path; a storage error.
    pub async fn read(&self, path: &str) -> Result<Option<StoredFile>, FsError> {
        let path = normalize_path(path)?;
        self.store.read_file(&self.at, &path).await.map_err(db)
    }

    /// The files under `directory`, ordered by path segments.
    ///
    /// # Errors
    /// An invalid directory; a storage error.
    pub async fn list(&self, directory: &str) -> Result<Vec<FileMeta>, FsError> {
        let directory = normalize_directory(directory)?;
        let mut files = self.store.list_files(&self.at, &directory).await.map_err(db)?;
        files.sort_by(|a, b| paths::path_order(&a.path, &b.path));
        Ok(files)
    }

    /// Files and bytes in the partition.
    ///
    /// # Errors
    /// A storage error.
    pub async fn usage(&self) -> Result<Usage, FsError> {
        let files = self.store.list_files(&self.at, "").await.map_err(db)?;
        Ok(Usage { file_count: files.len() as i64, total_bytes: files.iter().map(|f| f.size_bytes).sum() })
    }

    /// The users holding files in this namespace.
    ///
    /// # Errors
    /// A storage error.
    pub async fn partitions(&self) -> Result<Vec<String>, FsError> {
        self.store.file_partitions(&self.at.namespace).await.map_err(db)
    }

    fn file_cap(&self, path: &str, size: i64) -> Result<(), FsError> {
        if size > self.max_file_bytes {
            return Err(FsError::Quota {
                scope: "file",
                current: size,
                limit: self.max_file_bytes,
                message: format!("{path} would be {size} bytes (limit {} per file)", self.max_file_bytes),
            });
        }
        Ok(())
    }

    async fn namespace_cap(&self, growth: i64) -> Result<(), FsError> {
        if growth <= 0 {
            return Ok(());
        }
        let used = self.usage().await?.total_bytes;
        if used + growth > self.max_namespace_bytes {
            return Err(FsError::Quota {
                scope: "namespace",
                current: used,
                limit: self.max_namespace_bytes,
                message: format!("storage is full ({used} of {} bytes)", self.max_namespace_bytes),
            });
        }
        Ok(())
    }

    /// Creates or replaces the file (`overwrite = false`: only creates); a write that races
    /// another is retried on the version it finds, as every edit is.
    ///
    /// # Errors
    /// An invalid path, a cap, [`FsError::Exists`]; a storage error.
    pub async fn write(&self, path: &str, content: &str, overwrite: bool) -> Result<FileMeta, FsError> {
        let path = normalize_path(path)?;
        self.file_cap(&path, byte_len(content))?;
        let meta = self
            .edit(&path, |current| {
                if current.is_some() && !overwrite {
                    return Err(FsError::Exists(path.clone()));
                }
                Ok(Some(content.to_owned()))
            })
            .await?;
        meta.ok_or_else(|| FsError::Exists(path.clone()))
    }

    /// Applies `edit` to the file's content (`None` when there is no file) and writes the result
    /// if the file is still as read; retried when another writer got there first. `edit`
    /// answers the new content, or `None` to leave the file alone.
    async fn edit(
        &self,
        path: &str,
        mut edit: impl FnMut(Option<&StoredFile>) -> Result<Option<String>, FsError>,
    ) -> Result<Option<FileMeta>, FsError> {
        for _ in 0..EDIT_ATTEMPTS {
            let current = self.store.read_file(&self.at, path).await.map_err(db)?;
            let Some(new) = edit(current.as_ref())? else {
                return Ok(current.map(|f| f.meta));
            };
            let size = byte_len(&new);
            self.file_cap(path, size)?;
            self.namespace_cap(size - current.as_ref().map_or(0, |f| f.meta.size_bytes)).await?;
            let expect = current.as_ref().map_or(Expect::Absent, |f| Expect::Version(f.meta.version));
            match self.store.write_file(&self.at, path, &new, expect, now_epoch_secs()).await {
                Ok(meta) => return Ok(Some(meta)),
                Err(e) if e.kind() == DbErrorKind::Conflict => continue,
                Err(e) => return Err(db(e)),
            }
        }
        Err(FsError::Changed(path.to_owned()))
    }

    /// Appends `content` line by line (a fresh line, ending in a newline), creating the file;
    /// `unique` drops lines the file (or the chunk) already holds. Empty content changes nothing.
    /// Returns the file's metadata (`None`: nothing appended to a file that does not exist) and
    /// the bytes added.
    ///
    /// # Errors
    /// An invalid path, a cap; a storage error.
    pub async fn append(&self, path: &str, content: &str, unique: bool) -> Result<(Option<FileMeta>, i64), FsError> {
        let path = normalize_path(path)?;
        let chunk = build_chunk(content);
        let mut added = 0;
        let meta = self
            .edit(&path, |current| {
                let existing = current.map_or("", |f| f.content.as_str());
                let mut chunk = chunk.clone();
                if unique && !chunk.is_empty() {
                    let mut seen: std::collections::HashSet<&str> = existing.split('\n').collect();
                    let kept: Vec<&str> = chunk.split('\n').filter(|l| !l.is_empty() && seen.insert(l)).collect();
                    chunk = build_chunk(&kept.join("\n"));
                }
                if chunk.is_empty() {
                    added = 0;
                    return Ok(None);
                }
                let mut new = existing.to_owned();
                if !new.is_empty() && !new.ends_with('\n') {
                    new.push('\n');
                }
                new.push_str(&chunk);
                added = byte_len(&new) - byte_len(existing);
                Ok(Some(new))
            })
            .await?;
        Ok((meta, added))
    }

    /// Replaces lines `start..=end` (from 1) with `content`, or deletes them when it is empty;
    /// the file's trailing newline is kept.
    ///
    /// # Errors
    /// [`FsError::NotFound`], a range that does not start inside the file, a cap; a storage error.
    pub async fn replace_lines(&self, path: &str, start: i64, end: i64, content: &str) -> Result<FileMeta, FsError> {
        let path = normalize_path(path)?;
        if start < 1 {
            return Err(FsError::Invalid("start_line must be 1 or greater".to_owned()));
        }
        if end < start {
            return Err(FsError::Invalid("end_line must be greater than or equal to start_line".to_owned()));
        }
        let meta = self
            .edit(&path, |current| {
                let Some(file) = current else { return Err(FsError::NotFound(path.clone())) };
                let mut lines: Vec<&str> = file.content.split('\n').collect();
                let trailing = lines.last() == Some(&"");
                if trailing {
                    lines.pop();
                }
                let (start, end) =
                    (usize::try_from(start).unwrap_or(usize::MAX), usize::try_from(end).unwrap_or(usize::MAX));
                if start > lines.len() {
                    return Err(FsError::Invalid(format!(
                        "start_line {start} is past the end of {path} ({} lines)",
                        lines.len()
                    )));
                }
                let mut replacement: Vec<&str> =
                    if content.is_empty() { Vec::new() } else { content.split('\n').collect() };
                if replacement.last() == Some(&"") {
                    replacement.pop();
                }
                let mut new_lines: Vec<&str> = lines[..start - 1].to_vec();
                new_lines.extend(replacement);
                new_lines.extend(&lines[end.min(lines.len())..]);
                let mut new = new_lines.join("\n");
                if !new.is_empty() && trailing {
                    new.push('\n');
                }
                Ok(Some(new))
            })
            .await?;
        meta.ok_or_else(|| FsError::NotFound(path.clone()))
    }

    /// Moves `src` to `dst` (replacing it with `overwrite`).
    ///
    /// # Errors
    /// [`FsError::NotFound`], [`FsError::Exists`], an invalid path; a storage error.
    pub async fn rename(&self, src: &str, dst: &str, overwrite: bool) -> Result<FileMeta, FsError> {
        let (src, dst) = (normalize_path(src)?, normalize_path(dst)?);
        if src == dst {
            let file = self.store.read_file(&self.at, &src).await.map_err(db)?;
            return file.map(|f| f.meta).ok_or(FsError::NotFound(src));
        }
        if overwrite {
            self.store.delete_file(&self.at, &dst, None).await.map_err(db)?;
        }
        match self.store.rename_file(&self.at, &src, &dst, now_epoch_secs()).await {
            Ok(Some(meta)) => Ok(meta),
            Ok(None) => Err(FsError::NotFound(src)),
            Err(e) if e.kind() == DbErrorKind::Conflict => Err(FsError::Exists(dst)),
            Err(e) => Err(db(e)),
        }
    }

    /// Deletes the file; whether it existed.
    ///
    /// # Errors
    /// An invalid path; a storage error.
    pub async fn delete(&self, path: &str) -> Result<bool, FsError> {
        let path = normalize_path(path)?;
        self.store.delete_file(&self.at, &path, None).await.map_err(db)
    }

    /// Files under `directory` holding `query` (case-insensitive), in path order, at most
    /// `limit`.
    ///
    /// # Errors
    /// An invalid directory; a storage error.
    pub async fn search(&self, query: &str, directory: &str, limit: usize) -> Result<Vec<SearchMatch>, FsError> {
        let directory = normalize_directory(directory)?;
        if query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut files = self.store.scan_files(&self.at, &directory).await.map_err(db)?;
        files.sort_by(|a, b| paths::path_order(&a.meta.path, &b.meta.path));
        Ok(files.iter().filter_map(|f| find_match(&f.meta, &f.content, query)).take(limit).collect())
    }

    /// Which of `lines` some file under `directory` holds as a whole line: `(found, missing)`,
    /// each in the input's order.
    ///
    /// # Errors
    /// Too many lines, a line with a newline, an invalid directory; a storage error.
    pub async fn contains(&self, lines: &[String], directory: &str) -> Result<(Vec<String>, Vec<String>), FsError> {
        let directory = normalize_directory(directory)?;
        let lines = paths::normalize_check_lines(lines)?;
        if lines.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let files = self.store.scan_files(&self.at, &directory).await.map_err(db)?;
        let held: std::collections::HashSet<&str> = files.iter().flat_map(|f| f.content.split('\n')).collect();
        Ok(lines.into_iter().partition(|l| held.contains(l.as_str())))
    }
}
