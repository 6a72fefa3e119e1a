//! The JSON-files backend of [`JsonDb`]: a directory of JSON files, one per table
//! (`agno_sessions.json`, `agno_runs.json`, `agno_schema_versions.json`, ...), each a JSON list
//! of documents shaped as Python Agno's `JsonDb` writes them, so both can use the same directory.
//! Schedules and schedule runs, which Agno's `JsonDb` lacks, are stored the same way
//! (`agno_schedules.json`, `agno_schedule_runs.json`).
//!
//! Every write is a read-modify-write under an exclusive advisory lock on `.agno-json.lock` in the
//! directory (so two processes never lose each other's writes), re-reading the file under the
//! lock, and publishes the new file atomically: a temp file in the same directory, fsync, rename,
//! fsync of the directory. Reads take a shared lock. A file that is not valid JSON is reported,
//! naming it, and never overwritten. File IO runs on the blocking thread pool.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::borrow::Cow;

use agno_core::{DbError, DbErrorKind, DbResult};
use serde_json::Value;

use super::{DocBackend, DocDb, Docs, JsonDb};
use crate::tables::TableNames;

/// The lock file taken for every read (shared) and read-modify-write (exclusive).
const LOCK_FILE: &str = ".agno-json.lock";

/// The JSON-files backend: the directory and this instance's writer queue.
#[derive(Debug)]
pub struct JsonFiles {
    files: Arc<Files>,
    /// Queues this instance's writers before they block a thread on the file lock.
    local: tokio::sync::Mutex<()>,
}

/// The directory and its table files; every method is blocking and expects the lock held.
#[derive(Debug)]
struct Files {
    dir: PathBuf,
    tables: TableNames,
}

fn io_error(what: &str, e: std::io::Error) -> DbError {
    DbError::new(DbErrorKind::Unavailable, format!("{what}: {e}")).with_source(e)
}

impl Files {
    fn path(&self, table: &str) -> PathBuf {
        self.dir.join(format!("{table}.json"))
    }

    /// The documents of a table; a missing file is an empty table.
    ///
    /// # Errors
    /// [`DbErrorKind::Other`] naming the file when it is not a JSON list.
    fn read(&self, table: &str) -> DbResult<Vec<Value>> {
        let path = self.path(table);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&format!("cannot read json table {}", path.display()), e)),
        };
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Array(rows)) => Ok(rows),
            Ok(_) => Err(DbError::new(
                DbErrorKind::Other,
                format!("json table {} is corrupt: it is not a JSON list; fix or move the file", path.display()),
            )),
            Err(e) => Err(DbError::new(
                DbErrorKind::Other,
                format!("json table {} is corrupt: {e}; fix or move the file", path.display()),
            )
            .with_source(e)),
        }
    }

    /// Replaces a table's file atomically (temp file, fsync, rename, directory fsync).
    fn write(&self, table: &str, rows: &[Value]) -> DbResult<()> {
        let path = self.path(table);
        let tmp = self.dir.join(format!(".agno-json-{}.tmp", agno_core::new_id()));
        let result = Self::write_new(&tmp, &path, rows);
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|e| io_error(&format!("cannot write json table {}", path.display()), e))?;
        // Make the rename itself durable.
        if let Ok(dir) = File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    fn write_new(tmp: &Path, path: &Path, rows: &[Value]) -> std::io::Result<()> {
        let file = File::create_new(tmp)?;
        let mut out = BufWriter::new(file);
        serde_json::to_writer_pretty(&mut out, rows)?;
        out.write_all(b"\n")?;
        let file = out.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            // Keep the mode bits of the table being replaced.
            std::fs::set_permissions(tmp, meta.permissions())?;
        }
        std::fs::rename(tmp, path)
    }

    fn lock(&self, exclusive: bool) -> DbResult<File> {
        let path = self.dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_error(&format!("cannot open lock file {}", path.display()), e))?;
        let locked = if exclusive { file.lock() } else { file.lock_shared() };
        locked.map_err(|e| io_error(&format!("cannot lock {}", path.display()), e))?;
        Ok(file)
    }
}

impl JsonDb {
    /// Opens the directory named by `url` (`json://DIR`, `DIR` absolute or relative), creating
    /// it if missing, with Agno's default file names.
    ///
    /// # Errors
    /// [`DbErrorKind::Other`] for a URL without a directory; [`DbErrorKind::Unavailable`] when the
    /// directory cannot be created.
    pub async fn connect(url: &str) -> DbResult<Self> {
        Self::connect_with(url, TableNames::default()).await
    }

    /// Opens the directory with custom table (file) names.
    ///
    /// # Errors
    /// As [`JsonDb::connect`], or [`DbErrorKind::Other`] for invalid table names.
    pub async fn connect_with(url: &str, tables: TableNames) -> DbResult<Self> {
        tables.validate().map_err(|e| DbError::new(DbErrorKind::Other, e))?;
        let trimmed = url.trim();
        let dir = match trimmed.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("json") => rest,
            Some(_) => {
                return Err(DbError::new(
                    DbErrorKind::Other,
                    format!("not a json url: {trimmed:?}; expected json://DIR"),
                ));
            }
            None => trimmed,
        };
        if dir.is_empty() {
            return Err(DbError::new(DbErrorKind::Other, format!("json url {trimmed:?} names no directory")));
        }
        let dir = PathBuf::from(dir);
        let created = dir.clone();
        tokio::task::spawn_blocking(move || std::fs::create_dir_all(&created))
            .await
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("json store task failed: {e}")))?
            .map_err(|e| io_error(&format!("cannot create json db directory {}", dir.display()), e))?;
        Ok(DocDb::with_backend(JsonFiles {
            files: Arc::new(Files { dir, tables }),
            local: tokio::sync::Mutex::new(()),
        }))
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.backend.files.dir
    }
}

/// One locked view of the directory.
struct View<'a>(&'a Files);

impl Docs for View<'_> {
    fn tables(&self) -> &TableNames {
        &self.0.tables
    }

    fn read(&self, table: &str) -> DbResult<Cow<'_, [Value]>> {
        self.0.read(table).map(Cow::Owned)
    }

    fn write(&mut self, table: &str, rows: Vec<Value>) -> DbResult<()> {
        self.0.write(table, &rows)
    }

    fn exists(&self, table: &str) -> bool {
        self.0.path(table).is_file()
    }
}

impl DocBackend for JsonFiles {
    const JOBS: bool = false;

    fn tables(&self) -> &TableNames {
        &self.files.tables
    }

    async fn locked<T, F>(&self, exclusive: bool, f: F) -> DbResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Docs) -> DbResult<T> + Send + 'static,
    {
        let _queued = if exclusive { Some(self.local.lock().await) } else { None };
        let files = Arc::clone(&self.files);
        let task = tokio::task::spawn_blocking(move || {
            let _lock = files.lock(exclusive)?;
            f(&mut View(&files))
        });
        task.await.map_err(|e| DbError::new(DbErrorKind::Other, format!("json store task failed: {e}")))?
    }
}
