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

fn messages(v: &Value) -> Vec<(Value, Value)> {
    v["messages"]
        .as_array()
        .map_or_else(Vec::new, |m| m.iter().map(|m| (m["role"].clone(), m["content"].clone())).collect())
}

fn tools(v: &Value) -> Vec<(Value, Value, Value, Value)> {
    v.get("tools").and_then(Value::as_array).map_or_else(Vec::new, |t| {
        t.iter()
            .map(|x| (x["tool_call_id"].clone(), x["tool_name"].clone(), x["tool_args"].clone(), x["result"].clone()))
            .collect()
    })
}

/// Asserts that every session of `expected` reads back from `db` with the same owner, agent,
/// creation time and state, and the same runs in the same order with the same status, content,
/// input, messages and tool calls.
pub async fn assert_matches_agno(db: &dyn SessionStore, expected: &Value) {
    let sessions = expected["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 5, "the fixture holds five sessions");
    for want in sessions {
        let id = want["session_id"].as_str().expect("session_id");
        let got = db.get_session(id, None, None).await.unwrap().unwrap_or_else(|| panic!("session {id} missing"));
        assert_eq!(got.user_id.as_deref(), want["user_id"].as_str(), "{id} user");
        assert_eq!(got.agent_id.as_deref(), want["agent_id"].as_str(), "{id} agent");
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
        for (g, w) in got.runs().iter().zip(want_runs) {
            let rid = w["run_id"].as_str().unwrap_or_default();
            let g = serde_json::to_value(g).expect("run serializes");
            for key in ["status", "content", "input", "created_at", "session_state", "agent_id", "user_id", "model"] {
                assert_eq!(g.get(key), w.get(key), "{id}/{rid}: {key}");
            }
            assert_eq!(messages(&g), messages(w), "{id}/{rid}: messages");
            assert_eq!(tools(&g), tools(w), "{id}/{rid}: tools");
        }
    }
}
