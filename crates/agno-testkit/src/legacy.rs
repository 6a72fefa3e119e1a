//! Legacy-data checks: compare what an adapter reads from migrated Agno 2.x data with what Agno
//! 2.x itself read from it (`fixtures/legacy_v2/expected*.json`, made by `make_fixtures.py`).

// This module is a test helper: failing loudly on a mismatch is its job.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use agno_core::{RunOutput, SessionStore};
use serde_json::Value;

/// The directory of the legacy fixtures.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/legacy_v2")
}

/// A JSON fixture file (`expected.json` for what Agno read from SQLite, `expected_postgres.json`
/// from PostgreSQL).
pub fn expected(name: &str) -> Value {
    let path = fixture_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// Where `got` differs from `want`, as `path: want -> got` lines. A key that is absent on one
/// side and `null` on the other is no difference (Agno's `to_dict` drops `None` fields).
pub fn json_differences(want: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let mut keys: Vec<&String> = w.keys().chain(g.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (wv, gv) = (w.get(k).unwrap_or(&Value::Null), g.get(k).unwrap_or(&Value::Null));
                json_differences(wv, gv, &format!("{path}.{k}"), out);
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                json_differences(wv, gv, &format!("{path}[{i}]"), out);
            }
        }
        (w, g) if w != g => out.push(format!("{path}: {w} -> {g}")),
        _ => {}
    }
}

/// Asserts that every session of `expected` reads back from `db` with the same owner, agent,
/// creation time and state, and the same runs in the same order, each run whole: every field
/// Agno 2.x read (messages, tool calls, metrics, events, model data, ...) is read back equal.
pub async fn assert_matches_agno(db: &dyn SessionStore, expected: &Value) {
    let sessions = expected["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 5, "the fixture holds five sessions");
    assert_eq!(assert_sessions_match_agno(db, expected).await, 16, "the fixture holds sixteen runs");
}

/// [`assert_matches_agno`] for any fixture (agent, team or workflow sessions, each compared with
/// its `agent_id`, `team_id` and `workflow_id`); returns how many runs it compared.
pub async fn assert_sessions_match_agno(db: &dyn SessionStore, expected: &Value) -> usize {
    let sessions = expected["sessions"].as_array().expect("sessions");
    let mut compared = 0;
    for want in sessions {
        let id = want["session_id"].as_str().expect("session_id");
        let got = db.get_session(id, None, None).await.unwrap().unwrap_or_else(|| panic!("session {id} missing"));
        assert_eq!(got.user_id.as_deref(), want["user_id"].as_str(), "{id} user");
        assert_eq!(got.agent_id.as_deref(), want["agent_id"].as_str(), "{id} agent");
        assert_eq!(got.team_id.as_deref(), want["team_id"].as_str(), "{id} team");
        assert_eq!(got.workflow_id.as_deref(), want["workflow_id"].as_str(), "{id} workflow");
        assert_eq!(got.created_at, want["created_at"].as_i64(), "{id} created_at");
        assert_eq!(
            got.session_state().map(|s| Value::Object(s.clone())),
            Some(want["session_data"]["session_state"].clone()),
            "{id} state"
        );
        let want_runs = want["runs"].as_array().expect("runs");
        let got_ids: Vec<&str> = got.runs().iter().map(RunOutput::id).collect();
        let want_ids: Vec<&str> = want_runs.iter().map(|r| r["run_id"].as_str().expect("run_id")).collect();
        assert_eq!(got_ids, want_ids, "{id} run order");
        let mut differences = Vec::new();
        for (g, w) in got.runs().iter().zip(want_runs) {
            let rid = w["run_id"].as_str().unwrap_or_default();
            let g = serde_json::to_value(g).expect("run serializes");
            json_differences(w, &g, &format!("{id}/{rid}"), &mut differences);
            compared += 1;
        }
        assert!(differences.is_empty(), "runs read back differently from Agno 2.x:\n{}", differences.join("\n"));
    }
    compared
}

/// Where Python Agno 3.1 reading the database described by `db_args` (`["sqlite", file]` or
/// `["postgres", sqlalchemy_url, schema]`) differs from what Agno 2.9 read from the same legacy
/// data (`expected`, a fixture file name): whole sessions, and each run through `get_runs` and
/// `get_run` (`scripts/interop/legacy_readback.py`). `None` when no Python Agno is found (the
/// check is skipped; under `CI=true` it fails instead).
///
/// # Panics
/// When the Python check cannot run or reads fewer than the fixture's 16 runs.
pub fn python_readback_differences(what: &str, expected: &str, db_args: &[&str]) -> Option<Vec<String>> {
    python_readback_differences_of(what, expected, db_args, 16)
}

/// [`python_readback_differences`] for a fixture of `runs` runs.
///
/// # Panics
/// When the Python check cannot run or reads another number of runs.
pub fn python_readback_differences_of(
    what: &str,
    expected: &str,
    db_args: &[&str],
    runs: usize,
) -> Option<Vec<String>> {
    let py = crate::agno_python(what)?;
    let script = fixture_dir().join("../../scripts/interop/legacy_readback.py");
    let out = std::process::Command::new(py)
        .arg(script)
        .arg(fixture_dir().join(expected))
        .args(db_args)
        .env("AGNO_TELEMETRY", "false")
        .output()
        .expect("python runs");
    assert!(out.status.success(), "legacy_readback.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).expect("a JSON line");
    let report: Value = serde_json::from_str(last).expect("JSON");
    assert_eq!(report["runs"], runs, "Python read every run of the fixture: {report}");
    Some(report["differences"].as_array().expect("differences").iter().map(|d| d.to_string()).collect())
}
