//! Agent files of the document stores (`agno_fs`: one document per file, the columns of Agno's
//! table as keys). Every change is a read-modify-write under the backend's exclusive lock, so
//! the version checks hold as the SQL family's conditional updates do.

use agno_core::agent_files::paths::path_in_directory;
use agno_core::agent_files::{Expect, FileMeta, FileStore, Partition, StoredFile};
use agno_core::{DbError, DbErrorKind, DbResult};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{DocBackend, DocDb, key_of};

fn is_at(doc: &Value, p: &Partition) -> bool {
    key_of(doc, "namespace") == Some(p.namespace.as_str()) && key_of(doc, "user_id").unwrap_or("") == p.user_id
}

fn file_of(doc: &Value) -> StoredFile {
    let int = |k: &str| doc.get(k).and_then(Value::as_i64);
    StoredFile {
        meta: FileMeta {
            path: key_of(doc, "path").unwrap_or_default().to_owned(),
            size_bytes: int("size_bytes").unwrap_or_default(),
            version: int("version").unwrap_or_default(),
            updated_at: int("updated_at"),
        },
        content: key_of(doc, "content").unwrap_or_default().to_owned(),
    }
}

fn conflict(message: String) -> DbError {
    DbError::new(DbErrorKind::Conflict, message)
}

#[async_trait]
impl<B: DocBackend> FileStore for DocDb<B> {
    async fn read_file(&self, p: &Partition, path: &str) -> DbResult<Option<StoredFile>> {
        let (p, path) = (p.clone(), path.to_owned());
        self.read(move |docs| {
            let table = docs.tables().files.clone();
            Ok(docs.read(&table)?.iter().find(|d| is_at(d, &p) && key_of(d, "path") == Some(&path)).map(file_of))
        })
        .await
    }

    async fn write_file(
        &self,
        p: &Partition,
        path: &str,
        content: &str,
        expect: Expect,
        now: i64,
    ) -> DbResult<FileMeta> {
        let (p, path, content) = (p.clone(), path.to_owned(), content.to_owned());
        self.write(move |docs| {
            let table = docs.tables().files.clone();
            let mut rows = docs.read(&table)?.into_owned();
            let size = i64::try_from(content.len()).unwrap_or(i64::MAX);
            let found = rows.iter().position(|d| is_at(d, &p) && key_of(d, "path") == Some(&path));
            let version = match (found.map(|i| file_of(&rows[i]).meta.version), expect) {
                (Some(_), Expect::Absent) => return Err(conflict(format!("file exists: {path}"))),
                (None, Expect::Version(_)) => return Err(conflict(format!("{path} no longer exists"))),
                (Some(v), Expect::Version(e)) if v != e => return Err(conflict(format!("{path} changed meanwhile"))),
                (Some(v), _) => v + 1,
                (None, _) => 1,
            };
            let created_at = found.and_then(|i| rows[i].get("created_at").and_then(Value::as_i64)).unwrap_or(now);
            let doc = json!({
                "namespace": p.namespace, "path": path, "content": content, "size_bytes": size,
                "version": version, "created_at": created_at, "updated_at": now, "user_id": p.user_id,
            });
            match found {
                Some(i) => rows[i] = doc,
                None => rows.push(doc),
            }
            docs.write(&table, rows)?;
            Ok(FileMeta { path, size_bytes: size, version, updated_at: Some(now) })
        })
        .await
    }

    async fn list_files(&self, p: &Partition, directory: &str) -> DbResult<Vec<FileMeta>> {
        Ok(self.scan_files(p, directory).await?.into_iter().map(|f| f.meta).collect())
    }

    async fn scan_files(&self, p: &Partition, directory: &str) -> DbResult<Vec<StoredFile>> {
        let (p, directory) = (p.clone(), directory.to_owned());
        self.read(move |docs| {
            let table = docs.tables().files.clone();
            Ok(docs
                .read(&table)?
                .iter()
                .filter(|d| is_at(d, &p) && path_in_directory(key_of(d, "path").unwrap_or_default(), &directory))
                .map(file_of)
                .collect())
        })
        .await
    }

    async fn delete_file(&self, p: &Partition, path: &str, expected_version: Option<i64>) -> DbResult<bool> {
        let (p, path) = (p.clone(), path.to_owned());
        self.write(move |docs| {
            let table = docs.tables().files.clone();
            let mut rows = docs.read(&table)?.into_owned();
            let before = rows.len();
            rows.retain(|d| {
                !(is_at(d, &p)
                    && key_of(d, "path") == Some(&path)
                    && expected_version.is_none_or(|v| file_of(d).meta.version == v))
            });
            let deleted = rows.len() < before;
            if deleted {
                docs.write(&table, rows)?;
            }
            Ok(deleted)
        })
        .await
    }

    async fn rename_file(&self, p: &Partition, src: &str, dst: &str, now: i64) -> DbResult<Option<FileMeta>> {
        let (p, src, dst) = (p.clone(), src.to_owned(), dst.to_owned());
        self.write(move |docs| {
            let table = docs.tables().files.clone();
            let mut rows = docs.read(&table)?.into_owned();
            if rows.iter().any(|d| is_at(d, &p) && key_of(d, "path") == Some(&dst)) {
                return Err(conflict(format!("file exists: {dst}")));
            }
            let Some(doc) = rows.iter_mut().find(|d| is_at(d, &p) && key_of(d, "path") == Some(&src)) else {
                return Ok(None);
            };
            let version = file_of(doc).meta.version + 1;
            if let Some(m) = doc.as_object_mut() {
                m.insert("path".to_owned(), json!(dst));
                m.insert("version".to_owned(), json!(version));
                m.insert("updated_at".to_owned(), json!(now));
            }
            let meta = file_of(doc).meta;
            docs.write(&table, rows)?;
            Ok(Some(meta))
        })
        .await
    }

    async fn file_partitions(&self, namespace: &str) -> DbResult<Vec<String>> {
        let namespace = namespace.to_owned();
        self.read(move |docs| {
            let table = docs.tables().files.clone();
            let users: std::collections::BTreeSet<String> = docs
                .read(&table)?
                .iter()
                .filter(|d| key_of(d, "namespace") == Some(namespace.as_str()))
                .filter_map(|d| key_of(d, "user_id").filter(|u| !u.is_empty()).map(str::to_owned))
                .collect();
            Ok(users.into_iter().collect())
        })
        .await
    }
}
