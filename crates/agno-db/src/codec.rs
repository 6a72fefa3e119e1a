//! Conversions between stored rows and the run model, shared by every adapter: run type
//! inference, JSON column decoding (SQLAlchemy writes `null` as text), and the merge of the runs
//! table with a legacy v2 `runs` blob.

use agno_core::DbResult;
use agno_core::{AgentSession, DbError, DbErrorKind, RunOutput};
use serde_json::{Map, Value};

/// Characters of a first run's text input read for a session's name in listings (a name shows
/// 200; one more tells it was cut).
pub(crate) const FIRST_INPUT_CHARS: usize = 201;

/// `agent`, `team` or `workflow`, as Agno's `get_run_type` decides for a run dict.
pub(crate) fn run_type(run: &Value) -> &'static str {
    let has = |k: &str| run.get(k).is_some_and(|v| !v.is_null() && v.as_str() != Some(""));
    if has("agent_id") || has("agent_name") {
        "agent"
    } else if has("team_id") || has("team_name") {
        "team"
    } else {
        "workflow"
    }
}

/// A nullable JSON column: SQL NULL, a JSON text `null`, or a value.
pub(crate) fn json_column(text: Option<String>) -> Result<Option<Value>, DbError> {
    match text {
        None => Ok(None),
        Some(t) => match serde_json::from_str::<Value>(&t) {
            Ok(Value::Null) => Ok(None),
            // Agno 2.x's SQLite adapter encoded JSON columns twice: a JSON string holding JSON.
            Ok(Value::String(inner)) if inner.starts_with(['{', '[']) => match serde_json::from_str::<Value>(&inner) {
                Ok(Value::Null) => Ok(None),
                Ok(v) => Ok(Some(v)),
                Err(_) => Ok(Some(Value::String(inner))),
            },
            Ok(v) => Ok(Some(v)),
            Err(e) => Err(DbError::new(DbErrorKind::Other, format!("stored JSON is corrupt: {e}")).with_source(e)),
        },
    }
}

/// A JSON column holding an object.
pub(crate) fn object_column(text: Option<String>) -> Result<Option<Map<String, Value>>, DbError> {
    Ok(match json_column(text)? {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    })
}

/// Parses a stored run, normalised as Agno's `from_dict` normalises it, so a run reads back as
/// Python Agno reads it (see [`normalize_run`]).
pub(crate) fn decode_run(mut value: Value) -> Result<RunOutput, DbError> {
    // A workflow run's events are workflow events (and its agents' events), a team run's are
    // team events (and its members'), not an agent's: they are kept as stored, in the record's
    // extra fields.
    let mut workflow_events = None;
    if let Value::Object(run) = &mut value {
        normalize_run(run);
        if is_workflow_run(run) || is_team_run(run) {
            workflow_events = run.remove("events");
        }
    }
    let mut run: RunOutput = serde_json::from_value(value).map_err(|e| {
        DbError::new(DbErrorKind::Other, format!("stored run is not a valid run record: {e}")).with_source(e)
    })?;
    if let Some(events) = workflow_events {
        run.extra.insert("events".to_owned(), events);
    }
    Ok(run)
}

/// A workflow's own run (not an agent or team run inside a workflow).
fn is_workflow_run(run: &Map<String, Value>) -> bool {
    let set = |k: &str| run.get(k).is_some_and(|v| !v.is_null());
    set("workflow_id") && !set("agent_id") && !set("team_id")
}

/// A team's own run (not a member's).
fn is_team_run(run: &Map<String, Value>) -> bool {
    let set = |k: &str| run.get(k).is_some_and(|v| !v.is_null());
    set("team_id") && !set("agent_id")
}

/// Agno's `from_dict` rules: `events` is always a list (empty when none were stored); an empty
/// `tools` list is no tools; an empty media list (`images`, `videos`, `audio`, `files`) is no
/// media; a team run's `member_responses` and a workflow run's `step_executor_runs` are read by
/// the same rules.
fn normalize_run(run: &mut Map<String, Value>) {
    if run.get("events").is_none_or(Value::is_null) {
        run.insert("events".to_owned(), Value::Array(Vec::new()));
    }
    for key in ["tools", "images", "videos", "audio", "files"] {
        if run.get(key).and_then(Value::as_array).is_some_and(Vec::is_empty) {
            run.remove(key);
        }
    }
    for nested in ["member_responses", "step_executor_runs"] {
        if let Some(Value::Array(runs)) = run.get_mut(nested) {
            for inner in runs {
                if let Value::Object(inner) = inner {
                    normalize_run(inner);
                }
            }
        }
    }
}

/// The records of a listing that decode, each given with its key (when it could be read): a row
/// that does not decode (JSON a writer could store but no reader can parse, a column of the
/// wrong type) is left out with a warning naming its table and key, so one bad row never turns
/// a whole listing into an error. Reading that record alone still reports why it cannot be read.
pub(crate) fn readable<T>(
    what: &'static str,
    decoded: impl IntoIterator<Item = (Option<String>, DbResult<T>)>,
) -> Vec<T> {
    decoded
        .into_iter()
        .filter_map(|(key, record)| {
            record
                .map_err(|error| {
                    let key = key.as_deref().unwrap_or("(unreadable key)");
                    tracing::warn!(record = what, key, %error, "a stored record cannot be read; it is left out of the listing");
                })
                .ok()
        })
        .collect()
}

/// Decodes one run of a listing (a session's runs, `get_runs`). A record that does not decode is
/// left out with a warning naming it, so one unreadable row never turns a whole listing into an
/// error; reading that run alone (`get_run`) still reports why it cannot be read.
pub(crate) fn decode_listed_run(value: Value) -> Option<RunOutput> {
    let run_id = value.get("run_id").and_then(Value::as_str).unwrap_or("(no run_id)").to_owned();
    decode_run(value).map_err(|e| skip_unreadable_run(&run_id, &e)).ok()
}

/// Logs a run a listing leaves out.
pub(crate) fn skip_unreadable_run(run_id: &str, error: &DbError) {
    tracing::warn!(run_id, %error, "a stored run cannot be read; it is left out of the listing");
}

/// Serialises a value for a JSON column.
pub(crate) fn to_json_text<T: serde::Serialize>(value: &T) -> Result<String, DbError> {
    serde_json::to_string(value)
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode record as JSON: {e}")).with_source(e))
}

/// A record as the JSON document it is stored as (its serialised fields, in order).
pub(crate) fn to_doc<T: serde::Serialize>(record: &T) -> DbResult<Map<String, Value>> {
    match serde_json::to_value(record) {
        Ok(Value::Object(doc)) => Ok(doc),
        Ok(_) => Err(DbError::new(DbErrorKind::Other, "a record did not encode as a JSON object")),
        Err(e) => Err(DbError::new(DbErrorKind::Other, format!("cannot encode record as JSON: {e}")).with_source(e)),
    }
}

/// Merges runs from the runs table (in `run_index` order) with a legacy blob (in its stored
/// order): blob order first with the table's version substituted per `run_id`, then table-only
/// runs. The table wins on conflicts; blob-only runs are kept.
pub(crate) fn merge_legacy_runs(table: Vec<RunOutput>, legacy: Option<Value>) -> Result<Vec<RunOutput>, DbError> {
    let legacy = match legacy {
        Some(Value::Array(list)) => list,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(list)) => list,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    if legacy.is_empty() {
        return Ok(table);
    }
    let mut table: Vec<Option<RunOutput>> = table.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(table.len() + legacy.len());
    for item in legacy {
        let Some(run_id) = item.get("run_id").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        match table.iter_mut().find(|r| r.as_ref().is_some_and(|r| r.id() == run_id)) {
            Some(slot) => out.extend(slot.take()),
            None => out.extend(decode_listed_run(item)),
        }
    }
    out.extend(table.into_iter().flatten());
    Ok(out)
}

/// Only the session's latest `limit` runs.
pub(crate) fn keep_latest(mut runs: Vec<RunOutput>, limit: Option<usize>) -> Vec<RunOutput> {
    if let Some(limit) = limit {
        let skip = runs.len().saturating_sub(limit);
        runs.drain(..skip);
    }
    runs
}

/// The session type stored in `session_type`.
pub(crate) fn session_type_of(session: &AgentSession) -> &'static str {
    session.session_type().as_str()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Stored floats (durations, time to first token) survive a read and a write bit for bit:
    /// serde_json's default float parser may be one ulp off; `float_roundtrip` is required.
    #[test]
    fn floats_round_trip_exactly() {
        for text in ["0.010706516000027477", "0.027542747000097734", "0.012200408000353491", "1e-7", "123456.789"] {
            let run = json!({"run_id": "r", "metrics": {"duration": serde_json::from_str::<Value>(text).unwrap()}});
            let decoded = decode_run(run).unwrap();
            let encoded = to_json_text(&decoded).unwrap();
            let again: Value = serde_json::from_str(&encoded).unwrap();
            let original: f64 = text.parse().unwrap();
            assert_eq!(again["metrics"]["duration"].as_f64(), Some(original), "{text} -> {encoded}");
        }
    }

    /// Runs read back normalised as Agno's `RunOutput.from_dict` does.
    #[test]
    fn runs_are_normalised_as_agno_reads_them() {
        let run = decode_run(json!({"run_id": "r", "tools": []})).unwrap();
        let v = serde_json::to_value(&run).unwrap();
        assert_eq!(v["events"], json!([]));
        assert!(v.get("tools").is_none());
    }
}
