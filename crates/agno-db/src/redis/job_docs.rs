//! Jobs and events as the Redis queue stores them: a job's JSON document (unknown fields and
//! Agno's session-ordering stamps kept), an event as its sorted-set member.

use agno_core::{DbError, DbErrorKind, DbResult, Job, StoredEvent};
use serde_json::{Map, Value};

/// A job as stored: its text (compared on write), its document (unknown fields kept), and the job.
pub(super) struct Stored {
    pub(super) text: String,
    pub(super) doc: Map<String, Value>,
    pub(super) job: Job,
}

/// Payload fields Agno's queue stamps for session ordering; kept in the document, hidden from
/// [`Job`].
pub(super) const STAMPS: [&str; 2] = ["serialize_session", "session_seq"];

pub(super) fn corrupt(id: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("stored job {id} is not a job document"))
}

pub(super) fn job_from_doc(id: &str, doc: &Map<String, Value>) -> DbResult<Job> {
    let mut doc = doc.clone();
    if let Some(Value::Object(payload)) = doc.get_mut("payload") {
        for stamp in STAMPS {
            payload.remove(stamp);
        }
    }
    serde_json::from_value(Value::Object(doc)).map_err(|e| corrupt(id).with_source(e))
}

/// The document of `job` over `base` (a stored document: its other fields and payload stamps
/// are kept).
pub(super) fn doc_of(job: &Job, base: &Map<String, Value>) -> DbResult<Map<String, Value>> {
    let Value::Object(fields) = serde_json::to_value(job).map_err(|e| corrupt(&job.id).with_source(e))? else {
        return Err(corrupt(&job.id));
    };
    let mut doc = base.clone();
    let stamps: Vec<(&str, Value)> =
        STAMPS.iter().filter_map(|s| base.get("payload").and_then(|p| p.get(*s)).map(|v| (*s, v.clone()))).collect();
    doc.extend(fields);
    if let Some(Value::Object(payload)) = doc.get_mut("payload") {
        for (k, v) in stamps {
            payload.insert(k.to_owned(), v);
        }
    }
    Ok(doc)
}

pub(super) fn serialized(doc: &Map<String, Value>) -> bool {
    doc.get("payload").and_then(|p| p.get("serialize_session")) == Some(&Value::Bool(true))
}

pub(super) fn session_seq(doc: &Map<String, Value>) -> i64 {
    doc.get("payload").and_then(|p| p.get("session_seq")).and_then(Value::as_i64).unwrap_or(0)
}

pub(super) fn str_of<'a>(doc: &'a Map<String, Value>, key: &str) -> &'a str {
    doc.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Agno's `session_blocked`: a serialized job waits while another serialized job of its session
/// runs or is paused, or (while queued) behind an earlier queued one.
pub(super) fn session_blocked(job: &Map<String, Value>, members: &[Map<String, Value>]) -> bool {
    if !serialized(job) {
        return false;
    }
    let order = (session_seq(job), str_of(job, "id"));
    members.iter().any(|other| {
        if str_of(other, "id") == str_of(job, "id")
            || str_of(other, "session_id") != str_of(job, "session_id")
            || !serialized(other)
        {
            return false;
        }
        let status = str_of(other, "status");
        status == "running"
            || status == "paused"
            || (str_of(job, "status") == "queued"
                && status == "queued"
                && (session_seq(other), str_of(other, "id")) < order)
    })
}

/// A string as Python's `json.dumps` writes it (`ensure_ascii`): the session identity Agno hashes.
pub(super) fn python_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

pub(super) fn event_member(e: &StoredEvent) -> String {
    crate::doc::jobs::event_value(e).to_string()
}

pub(super) fn event_of(member: &str) -> Option<StoredEvent> {
    crate::doc::jobs::event_of(&serde_json::from_str(member).ok()?)
}

pub(super) fn too_busy(job_id: &str) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("job {job_id} changed too often concurrently; retry"))
}

#[cfg(test)]
mod tests {
    use super::python_json_string;

    #[test]
    fn session_identity_is_encoded_as_python_json_dumps_does() {
        assert_eq!(python_json_string("sess-1"), "\"sess-1\"");
        assert_eq!(python_json_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(python_json_string("café"), "\"caf\\u00e9\"");
        assert_eq!(python_json_string("😀"), "\"\\ud83d\\ude00\"");
        assert_eq!(python_json_string("\u{1}"), "\"\\u0001\"");
    }
}
