//! Media stored outside the database (Agno 3.1's `MediaStorage`): run media whose bytes were
//! offloaded to a storage backend, with a `media_reference` (`storage_key`, `storage_backend`,
//! `bucket`, `mime_type`, ...) left in the stored run in their place. AgentOS serves them on
//! `GET /sessions/{session_id}/media/{storage_key}` (`routes/media.rs`).
//!
//! The backend here is Agno's `LocalMediaStorage`: a directory, whose absolute path is the
//! references' `bucket`, so agno-rs serves what a Python Agno deployment offloaded to the same
//! directory. A key is a path under the directory and never leaves it: absolute paths, `..`,
//! control characters and links out of the directory are refused as not found.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why media could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// No such object, or a key that does not stay inside the storage.
    #[error("media object not found")]
    NotFound,
    /// The storage could not be read.
    #[error("cannot read media: {0}")]
    Io(#[from] std::io::Error),
}

/// Agno's `LocalMediaStorage`: media files under one directory.
#[derive(Debug, Clone)]
pub struct LocalMediaStorage {
    base: PathBuf,
    bucket: String,
}

impl LocalMediaStorage {
    /// The storage in directory `path` (created when missing, as Agno creates it).
    ///
    /// # Errors
    /// The directory cannot be created or resolved.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(path)?;
        let base = std::fs::canonicalize(path)?;
        let bucket = base.to_string_lossy().into_owned();
        Ok(Self { base, bucket })
    }

    /// Agno's `backend_name`.
    pub fn backend_name(&self) -> &'static str {
        "local"
    }

    /// The directory's absolute path: the `bucket` of the references it wrote.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// True when `reference` names an object of this storage (its backend and bucket; a region
    /// only when both name one, as Agno's `reference_matches_storage`).
    pub fn serves(&self, reference: &Value) -> bool {
        reference.get("storage_backend").and_then(Value::as_str) == Some(self.backend_name())
            && reference.get("bucket").and_then(Value::as_str) == Some(self.bucket.as_str())
    }

    /// The path of `key` inside the directory, when it stays inside.
    fn path_of(&self, key: &str) -> Result<PathBuf, MediaError> {
        let key = key.replace('\\', "/");
        let refused = key.trim().is_empty()
            || key.starts_with('/')
            || key.chars().any(char::is_control)
            || key.split('/').next().is_some_and(|first| first.len() == 2 && first.ends_with(':'))
            || key.split('/').any(|segment| segment == "..");
        if refused {
            return Err(MediaError::NotFound);
        }
        let path = std::fs::canonicalize(self.base.join(&key)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => MediaError::NotFound,
            _ => MediaError::Io(e),
        })?;
        // A link inside the directory must not lead out of it.
        if !path.starts_with(&self.base) || !path.is_file() {
            return Err(MediaError::NotFound);
        }
        Ok(path)
    }

    /// The bytes of object `key`.
    ///
    /// # Errors
    /// [`MediaError::NotFound`] for a missing object or a key that leaves the directory.
    pub async fn download(&self, key: &str) -> Result<Vec<u8>, MediaError> {
        let path = self.path_of(key)?;
        Ok(tokio::fs::read(path).await?)
    }
}

/// The `media_reference` with `storage_key` among the media of a stored run (its input, its
/// messages, its outputs, a team's member responses, a workflow's steps: anywhere in the run).
pub fn find_reference<'a>(run: &'a Value, storage_key: &str) -> Option<&'a Value> {
    match run {
        Value::Object(map) => {
            if let Some(reference) = map.get("media_reference")
                && reference.get("storage_key").and_then(Value::as_str) == Some(storage_key)
            {
                return Some(reference);
            }
            map.values().find_map(|v| find_reference(v, storage_key))
        }
        Value::Array(items) => items.iter().find_map(|v| find_reference(v, storage_key)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn keys_never_leave_the_directory() {
        let root = std::env::temp_dir().join(format!("agno-media-{}", agno_core::new_id()));
        let storage = LocalMediaStorage::open(&root.join("media")).unwrap();
        std::fs::write(root.join("secret.txt"), b"outside").unwrap();
        std::fs::create_dir_all(root.join("media/s1")).unwrap();
        std::fs::write(root.join("media/s1/a.png"), b"png").unwrap();
        assert_eq!(storage.download("s1/a.png").await.unwrap(), b"png");
        assert_eq!(storage.download("s1\\a.png").await.unwrap(), b"png");
        for bad in ["../secret.txt", "s1/../../secret.txt", "/etc/passwd", "", " ", "C:/x", "s1/a.png\n", "s1"] {
            assert!(matches!(storage.download(bad).await, Err(MediaError::NotFound)), "{bad:?}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("secret.txt"), root.join("media/link.txt")).unwrap();
            assert!(matches!(storage.download("link.txt").await, Err(MediaError::NotFound)), "a link out");
        }
        let bucket = storage.bucket().to_owned();
        assert!(storage.serves(&json!({"storage_backend": "local", "bucket": bucket})));
        assert!(!storage.serves(&json!({"storage_backend": "s3", "bucket": storage.bucket()})));
        assert!(!storage.serves(&json!({"storage_backend": "local", "bucket": "/elsewhere"})));
        let run = json!({"input": {"images": [{"media_reference": {"storage_key": "k1"}}]},
                         "member_responses": [{"messages": [{"files": [{"media_reference": {"storage_key": "k2"}}]}]}]});
        assert!(find_reference(&run, "k2").is_some() && find_reference(&run, "k3").is_none());
    }
}
