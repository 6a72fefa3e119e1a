//! The names agno-rs shares with Python Agno 3.1, read from the Python Agno in the CI venv rather
//! than written on both sides: the scope each route requires (Agno's default scope mappings, with
//! its A2A interface's), the
//! scope names, the admin scope, the default CORS origins and the model `error_id`s that Agno
//! has. Needs `AGNO_PYTHON` (`.ci/run` creates the venv); without it the test fails under `CI`
//! and says so elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeSet;
use std::time::Duration;

use agno_core::ModelErrorKind;
use agno_os::routes::{Access, ROUTES};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

/// What the Python side answers for our routes (as `{"method", "path"}` on stdin).
const SCRIPT: &str = r#"
import json, re, sys
from agno.os.scopes import AgentOSScope, get_all_scopes, get_default_scope_mappings, get_required_scopes_for_route
from agno.os.utils import resolve_origins
import agno.exceptions as exceptions
from agno.os.interfaces.a2a.scopes import get_a2a_scope_mappings

routes = json.load(sys.stdin)
mappings = get_default_scope_mappings()
# What AgentOS merges in when it serves the A2A interface (agno-rs's `[a2a]`).
mappings.update(get_a2a_scope_mappings("/a2a"))
# And its AG-UI interface for an agent, at Agno's default prefix (agno-rs's `[agui] agent`).
from agno.agent import Agent
from agno.os.interfaces.agui import AGUI
mappings.update(AGUI(agent=Agent(id="any")).get_scope_mappings())
required = [get_required_scopes_for_route(mappings, r["method"], re.sub(r"\{[^}]+\}", "x", r["path"])) for r in routes]
source = open(exceptions.__file__).read()
print(json.dumps({
    "required": required,
    "scopes": sorted({scope for scopes in mappings.values() for scope in scopes} | set(get_all_scopes())),
    "admin": AgentOSScope.ADMIN.value,
    "origins": resolve_origins(),
    "error_ids": sorted(set(re.findall(r'self\.error_id = "([a-z_]+)"', source))),
}))
"#;

/// Routes whose scope is decided elsewhere in Agno, so that its default mappings name none, with
/// why ours names one. The list must not grow without a reason.
const DECIDED_ELSEWHERE: &[(&str, &str, &str)] = &[
    ("POST", "/agents/{agent_id}/runs/{run_id}/resume", "Agno checks only the run's owner; we also ask run access"),
    ("POST", "/teams/{team_id}/runs/{run_id}/resume", "as for agents"),
    ("POST", "/workflows/{workflow_id}/runs/{run_id}/resume", "as for agents"),
    (
        "POST",
        "/agents/{agent_id}/sessions/{session_id}/fork",
        "Agno's route dependency asks run access to the agent, as we do",
    ),
    ("POST", "/teams/{team_id}/sessions/{session_id}/fork", "as for agents"),
    ("POST", "/agents/{agent_id}/sessions/{session_id}/compact", "as fork: Agno's route dependency asks run access"),
    ("POST", "/sessions/search", "not in Agno 3.1.10 (3.1.11's); a search only reads sessions: sessions:read"),
    ("GET", "/queue/jobs", "Agno's queue router requires the admin scope itself"),
    ("GET", "/queue/jobs/{job_id}", "as /queue/jobs"),
    ("POST", "/queue/jobs/{job_id}/requeue", "as /queue/jobs"),
    ("GET", "/queue/stats", "as /queue/jobs"),
    ("GET", "/mcp", "Agno's MCP server authorises each tool by the route it calls"),
    ("POST", "/mcp", "as GET /mcp"),
    ("DELETE", "/mcp", "as GET /mcp"),
];

async fn python_answers(py: &str, routes: &Value) -> Value {
    let mut child = tokio::process::Command::new(py)
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(routes.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("python answers in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"))
}

#[tokio::test]
async fn scopes_origins_and_error_ids_are_python_agnos() {
    let Some(py) = agno_testkit::agno_python("the names shared with Python Agno") else { return };
    let scoped: Vec<_> = ROUTES
        .iter()
        .filter_map(|r| match r.access {
            Access::Scope(scope) => Some((r.method.as_str(), r.path, scope)),
            Access::Public | Access::Authenticated => None,
        })
        .collect();
    assert!(scoped.len() > 60, "{} scoped routes", scoped.len());
    let request: Vec<Value> = scoped.iter().map(|(m, p, _)| json!({"method": m, "path": p})).collect();
    let python = python_answers(&py, &Value::from(request)).await;

    let mut elsewhere = Vec::new();
    for ((method, path, scope), required) in scoped.iter().zip(python["required"].as_array().unwrap()) {
        let required: Vec<&str> = required.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        if required.is_empty() {
            elsewhere.push((*method, *path));
            continue;
        }
        assert_eq!(required, [*scope], "{method} {path}: Agno requires {required:?}, we require {scope}");
    }
    let expected: BTreeSet<(&str, &str)> = DECIDED_ELSEWHERE.iter().map(|(m, p, _)| (*m, *p)).collect();
    let elsewhere: BTreeSet<(&str, &str)> = elsewhere.into_iter().collect();
    assert_eq!(elsewhere, expected, "routes Agno's default mappings leave to the route itself");

    let names: BTreeSet<&str> = python["scopes"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    let admin = python["admin"].as_str().unwrap();
    assert_eq!(agno_os::auth::scopes::DEFAULT_ADMIN_SCOPE, admin);
    for (method, path, scope) in &scoped {
        assert!(*scope == admin || names.contains(scope), "{method} {path}: {scope} is not one of Agno's scopes");
    }

    let origins: Vec<&str> = python["origins"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(agno_os::cors::DEFAULT_ORIGINS.to_vec(), origins, "the default CORS origins");

    let ids: BTreeSet<&str> = python["error_ids"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(ids.len() > 10, "{ids:?}");
    for kind in ModelErrorKind::ALL {
        assert_eq!(kind.is_agnos(), ids.contains(kind.id()), "{kind:?} ({}) against Agno's {ids:?}", kind.id());
    }
}
