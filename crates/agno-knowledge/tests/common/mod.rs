//! Shared by the knowledge tests: the repository's corpus and metadata literals.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::PathBuf;

use serde_json::{Map, Value};

/// The 30 documents of `fixtures/knowledge/corpus` as (file name, bytes), sorted by name.
pub fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/knowledge/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

/// A JSON object literal as metadata.
pub fn meta(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}
