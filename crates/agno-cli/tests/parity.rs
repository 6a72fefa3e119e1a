//! Shape parity with Python AgentOS 3.1: the same scripted sequence of requests (runs, streamed
//! runs, sessions, memories, metrics, evals, config, agents, errors) against `agno serve` and a
//! Python AgentOS started from the CI venv, both serving agent `demo` on the same fake OpenAI
//! model. `scripts/interop/shape_parity.py` compares status codes, content types and JSON shapes
//! (key sets and types, recursively); any difference outside its documented allow-list fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{
    repo_file, scratch_dir, slow_agent_config, start_python_agentos, start_serve_logged, start_serve_with_env,
};

/// Runs `scripts/interop/shape_parity.py` (suite `suite`) against both servers and asserts that
/// it ran at least `min_steps` steps and found no difference outside its allow-list.
fn assert_shape_parity(python: &str, rs_port: u16, py_base: &str, suite: &str, min_steps: u64) {
    assert_shape_parity_with(python, rs_port, py_base, &["--suite", suite], min_steps);
}

/// [`assert_shape_parity`] with the script's arguments after `--rs` and `--py`.
fn assert_shape_parity_with(python: &str, rs_port: u16, py_base: &str, args: &[&str], min_steps: u64) {
    let out = Command::new(python)
        .arg(repo_file("scripts/interop/shape_parity.py"))
        .args(["--rs", &format!("http://127.0.0.1:{rs_port}"), "--py", py_base])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "shape_parity.py failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad report ({e}): {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    assert!(report["steps"].as_u64().unwrap() >= min_steps, "{report}");
    eprintln!("documented differences seen: {}", report["allowed"]);
    assert_eq!(
        report["differences"],
        serde_json::json!({}),
        "agno serve differs from Python AgentOS 3.1 (fix it, or document it in the README and the allow-list):\n{}",
        serde_json::to_string_pretty(&report["differences"]).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_serve_answers_with_python_agentos_shapes() {
    let Some(python) = agno_testkit::agno_python("the shape parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("parity");

    let (_python, py_base) =
        start_python_agentos(&python, &provider, &dir, &format!("sqlite://{}", dir.join("python.db").display()), &[])
            .await;

    let config = python_agentos_twin(&dir, &provider, "");
    // Models named by string in requests (`/optimize-memories`) reach the fake provider.
    let base_url = provider.base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-test")];
    let (_rs, rs_port) = start_serve_with_env(&config, &dir.join("agno-rs.log"), &env).await;

    assert_shape_parity(&python, rs_port, &py_base, "main", 40);
}

/// The `agentos.toml` (in `dir`, on a SQLite file there) of what `python_agentos.py` serves:
/// agent `demo` (named Demo, history on), workflow `flow` and team `desk`, on the fake provider;
/// `extra` is appended.
fn python_agentos_twin(dir: &std::path::Path, provider: &FakeProvider, extra: &str) -> std::path::PathBuf {
    let db_url = format!("sqlite://{}", dir.join("agno-rs.db").display());
    python_agentos_twin_on(dir, provider, extra, &db_url)
}

/// [`python_agentos_twin`] on the database `db_url`.
fn python_agentos_twin_on(
    dir: &std::path::Path,
    provider: &FakeProvider,
    extra: &str,
    db_url: &str,
) -> std::path::PathBuf {
    let config = slow_agent_config(dir, "agentos.toml", db_url, &provider.base_url(), "");
    let toml = std::fs::read_to_string(&config)
        .unwrap()
        .replace("id = \"slow\"\n", "id = \"demo\"\nname = \"Demo\"\nadd_history_to_context = true\n")
        + "[[workflows]]\nid = \"flow\"\nname = \"Flow\"\ndescription = \"Draft then polish\"\n\
           [[workflows.steps]]\nname = \"draft\"\nagent = \"demo\"\n\
           [[workflows.steps]]\nname = \"polish\"\ntype = \"loop\"\nmax_iterations = 2\n\
           steps = [{ name = \"again\", agent = \"demo\" }]\n"
        + &format!(
            "[[teams]]\nid = \"desk\"\nname = \"Desk\"\ndescription = \"A desk\"\nmembers = [\"demo\"]\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n",
            provider.base_url()
        )
        + extra;
    std::fs::write(&config, toml).unwrap();
    config
}

/// With tracing on both sides (Python's `tracing=True`, agno-rs's `[tracing]`), an agent, a team
/// and a workflow run are traced and every trace route answers in Python AgentOS's shapes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the traces parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("tparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--tracing".into()]).await;
    let config = python_agentos_twin(&dir, &provider, "[tracing]\nenabled = true\n");
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "traces", 25);
}

/// With an agent whose `add` needs an admin's approval on both sides (Python's `@approval`,
/// agno-rs's `approval_required_tools`), every `/approvals` route and the continue gate answer in
/// Python AgentOS's shapes and statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the approvals parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    // The echo calls the first tool of a request with no arguments: `add` pauses on both sides.
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("aparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--approvals".into()]).await;
    let approver = format!(
        "[[agents]]\nid = \"approver\"\nname = \"Approver\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], approval_required_tools = [\"add\"] }}]\n",
        provider.base_url()
    );
    let config = python_agentos_twin(&dir, &provider, &approver);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "approvals", 25);
}

/// With components kept in the OS database on both sides, every `/components` route and
/// `/registry` answer in Python AgentOS's shapes and statuses: a component's life, a team and a
/// workflow pinning it, and bad input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn component_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the components parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir("cparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--components".into()]).await;
    let config = python_agentos_twin(&dir, &provider, "");
    // The catalog's models read the environment Python AgentOS is given (its key, the fake server).
    let base_url = provider.base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-test")];
    let (_rs, rs_port) = start_serve_with_env(&config, &dir.join("agno-rs.log"), &env).await;

    assert_shape_parity(&python, rs_port, &py_base, "components", 75);
}

/// Both servers verify the same HS256 secret and keep service accounts in their database: minting
/// (defaults, privileged, every refusal), listing, a token used within and beyond its scopes,
/// revoking and a revoked token answer alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the service accounts parity check against Python AgentOS") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("saparity");
    let secret = "parity-secret-0123456789abcdef0123";
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let extra = ["--components".into(), "--jwt-secret".into(), secret.into()];
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &extra).await;
    let auth = format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{secret}\"]\nalgorithm = \"HS256\"\n");
    let config = python_agentos_twin(&dir, &provider, &auth);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    let args = ["--suite", "service_accounts", "--jwt-secret", secret];
    assert_shape_parity_with(&python, rs_port, &py_base, &args, 27);
}

/// Both servers serve agent `notes` with Agno's `filesystem=True` over stores seeded alike by
/// Python Agno's own `FileSystem` (scripts/interop/seed_files.py, on each side's database): the
/// listings, a directory, previews, search and every refusal answer alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the filesystem parity check against Python AgentOS") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("fsparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--filesystem".into()]).await;
    let notes = format!(
        "[[agents]]\nid = \"notes\"\nname = \"Notes\"\nfilesystem = true\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n",
        provider.base_url()
    );
    let rs_db = format!("sqlite://{}", dir.join("agno-rs.db").display());
    let seeded = std::process::Command::new(&python)
        .arg(repo_file("scripts/interop/seed_files.py"))
        .arg(&rs_db)
        .output()
        .unwrap();
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    let config = python_agentos_twin_on(&dir, &provider, &notes, &rs_db);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "filesystem", 23);
}

/// Both servers keep learnings in their SQLite database: creating every kind of record (and each
/// refusal), reading, listing, the users, replacing and deleting answer alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learning_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the learnings parity check against Python AgentOS") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("lparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &[]).await;
    let config = python_agentos_twin(&dir, &provider, "");
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "learnings", 31);
}

/// Python AgentOS 3.1.10 and `agno serve` (both with the security key) on one SQLite file: a
/// token either mints authenticates on the other (one table, one hash), and one revoked through
/// agno-rs is refused by Python AgentOS once its own verification cache lets go (its default
/// 30 s is set to 0 here), one revoked through Python by agno-rs within its 500 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_are_shared_with_python_agentos_on_one_database() {
    let Some(python) = agno_testkit::agno_python("the service accounts interop check with Python AgentOS") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir("sainterop");
    let db = format!("sqlite://{}", dir.join("shared.db").display());
    let key = "shared-root-key";
    let config =
        python_agentos_twin_on(&dir, &provider, &format!("[auth]\nmode = \"key\"\nsecurity_key = \"{key}\"\n"), &db);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;
    let rs = format!("http://127.0.0.1:{rs_port}");
    let env = [("OS_SECURITY_KEY", key), ("SERVICE_ACCOUNT_CACHE_TTL_SECONDS", "0")];
    let (_python, py) =
        common::start_python_agentos_with_env(&python, &provider, &dir, &db, &["--components".into()], &env).await;
    let client = reqwest::Client::new();
    let mint = |base: &str, name: &str| {
        let request = client
            .post(format!("{base}/service-accounts"))
            .bearer_auth(key)
            .json(&serde_json::json!({"name": name, "scopes": [{"scope": "agents:read"}]}));
        async move {
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), 201);
            r.json::<serde_json::Value>().await.unwrap()
        }
    };
    let agents = |base: &str, token: &str| {
        let request = client.get(format!("{base}/agents")).bearer_auth(token);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    let from_python = mint(&py, "from-python").await;
    let from_rs = mint(&rs, "from-rs").await;
    let (py_token, rs_token) = (from_python["token"].as_str().unwrap(), from_rs["token"].as_str().unwrap());
    assert_eq!(agents(&rs, py_token).await, 200, "agno-rs accepts a token Python AgentOS minted");
    assert_eq!(agents(&py, rs_token).await, 200, "Python AgentOS accepts a token agno-rs minted");
    // Each lists the other's account, field for field.
    let listed = |base: &str| {
        let request = client.get(format!("{base}/service-accounts?sort_by=name&sort_order=asc")).bearer_auth(key);
        async move { request.send().await.unwrap().json::<serde_json::Value>().await.unwrap()["data"].clone() }
    };
    assert_eq!(listed(&rs).await, listed(&py).await);
    // Revocations cross over.
    let revoke = |base: &str, id: &str| {
        let request = client.delete(format!("{base}/service-accounts/{id}")).bearer_auth(key);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(revoke(&rs, from_python["id"].as_str().unwrap()).await, 204);
    assert_eq!(agents(&py, py_token).await, 401, "Python refuses its own token agno-rs revoked");
    assert_eq!(revoke(&py, from_rs["id"].as_str().unwrap()).await, 204);
    let deadline = Instant::now() + Duration::from_secs(15);
    while agents(&rs, rs_token).await != 401 {
        assert!(Instant::now() < deadline, "agno-rs still accepts a token Python AgentOS revoked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// With an agent compacting when asked on both sides (Python's `Compaction(compact_at_tokens=None,
/// uncompacted_runs=1)`, agno-rs's `compaction = { compact_at_tokens = 0, uncompacted_runs = 1 }`),
/// `POST .../sessions/{id}/compact` answers in Python AgentOS's shapes and statuses: a fold, the
/// declines, and a missing session, agent or another agent's session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_route_answers_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the compaction parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("cparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--compaction".into()]).await;
    let folder = format!(
        "[[agents]]\nid = \"folder\"\nname = \"Folder\"\nadd_history_to_context = true\n\
         compaction = {{ compact_at_tokens = 0, uncompacted_runs = 1 }}\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n",
        provider.base_url()
    );
    let config = python_agentos_twin(&dir, &provider, &folder);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "compaction", 12);
}

/// Both servers serve the A2A interface (Python's `a2a_interface=True`, agno-rs's `[a2a]`): agent
/// cards, `message/send` (blocking, non-blocking, in a context), `tasks/get`, `tasks/cancel`, a
/// stream and bad input answer in the same shapes, except the differences the README documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the A2A parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("a2aparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--a2a".into()]).await;
    let config = python_agentos_twin(&dir, &provider, "[a2a]\nenabled = true\n");
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "a2a", 15);
}

/// Both servers serve agent `demo` over AG-UI (Python's `interfaces=[AGUI(agent=demo)]`, agno-rs's
/// `[agui] agent = "demo"`): `/status`, a streamed turn (with and without state), a turn whose
/// model calls the client's own tool, tool messages answering nothing and a malformed input
/// answer in the same shapes and event sequences.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agui_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the AG-UI parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("aguiparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--agui".into()]).await;
    let config = python_agentos_twin(&dir, &provider, "[agui]\nenabled = true\nagent = \"demo\"\n");
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "agui", 6);
}

/// One database and one media directory, two servers: media a Python Agno 3.1.10 agent offloaded
/// to its `LocalMediaStorage` is answered alike by Python AgentOS 3.1.10 and agno-rs on
/// `GET /sessions/{session_id}/media/{storage_key}` (status, content type, `nosniff`, the bytes),
/// and so are a key of no session, a missing session, a wrong session type and a key outside the
/// directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_media_is_served_as_python_agentos_serves_it() {
    let Some(python) = agno_testkit::agno_python("the session media parity check against Python AgentOS") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("a pixel")));
    let dir = scratch_dir("mparity");
    let (db_file, media) = (dir.join("shared.db"), dir.join("media"));
    let out = Command::new(&python)
        .arg(repo_file("scripts/interop/agno_interop.py"))
        .args(["media-run", db_file.to_str().unwrap(), "pics", &provider.base_url(), media.to_str().unwrap(), "u1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let written: serde_json::Value =
        serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    let key = written["run"]["input"]["images"][0]["media_reference"]["storage_key"].as_str().unwrap().to_owned();
    let db = format!("sqlite://{}", db_file.display());
    let media_arg = ["--media-dir".into(), media.clone().into_os_string()];
    let (_python, py) = start_python_agentos(&python, &provider, &dir, &db, &media_arg).await;
    let extra = format!("[media_storage]\npath = {}\n", serde_json::to_string(&media.to_string_lossy()).unwrap());
    let config = python_agentos_twin_on(&dir, &provider, &extra, &db);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;
    let rs = format!("http://127.0.0.1:{rs_port}");
    let client = reqwest::Client::new();
    for path in [
        format!("/sessions/pics/media/{key}"),
        format!("/sessions/pics/media/{key}?type=agent&user_id=u1"),
        format!("/sessions/pics/media/{key}?type=team"),
        "/sessions/pics/media/not-a-key.png".to_owned(),
        format!("/sessions/nope/media/{key}"),
        "/sessions/pics/media/..%2F..%2Fshared.db".to_owned(),
    ] {
        let mut answers = Vec::new();
        for base in [&rs, &py] {
            let r = client.get(format!("{base}{path}")).send().await.unwrap();
            let header = |name: &str| r.headers().get(name).map(|v| v.to_str().unwrap_or_default().to_owned());
            let head = (r.status().as_u16(), header("content-type"), header("x-content-type-options"));
            let body = r.bytes().await.unwrap().to_vec();
            answers.push((head, body));
        }
        assert_eq!(answers[0], answers[1], "{path}: agno-rs (left) and Python AgentOS (right) answer alike");
    }
}

/// One database, two servers: an approval a run paused on in agno-rs is listed and resolved by a
/// Python AgentOS 3.1.10, and the agno-rs run then continues on that decision; one a Python run
/// paused on is resolved by agno-rs, and Python's continue runs on it. The record is read alike by
/// both, field for field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_shared_with_python_agentos_on_one_database() {
    let Some(python) = agno_testkit::agno_python("the approvals interop check with Python AgentOS") else { return };
    let dir = scratch_dir("ainterop");
    let db = format!("sqlite://{}", dir.join("shared.db").display());
    approvals_interop(&python, &dir, &db).await;
}

/// [`approvals_are_shared_with_python_agentos_on_one_database`] on PostgreSQL (one schema).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_approvals_are_shared_with_python_agentos() {
    let Some(python) = agno_testkit::agno_python("the approvals interop check on PostgreSQL") else { return };
    let Some(schema) = common::postgres_schema("ainterop") else { return };
    approvals_interop(&python, &scratch_dir("ainterop-pg"), &schema.url).await;
}

async fn approvals_interop(python: &str, dir: &std::path::Path, db: &str) {
    let (python, dir) = (python.to_owned(), dir.to_owned());
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let approver = format!(
        "[[agents]]\nid = \"approver\"\nname = \"Approver\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], approval_required_tools = [\"add\"] }}]\n",
        provider.base_url()
    );
    let config = python_agentos_twin_on(&dir, &provider, &approver, db);
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;
    let rs = format!("http://127.0.0.1:{rs_port}");
    let (_python, py) = start_python_agentos(&python, &provider, &dir, db, &["--approvals".into()]).await;
    let client = reqwest::Client::new();
    let post_form = |base: &str, path: &str, form: Vec<(&'static str, String)>| {
        let request = client.post(format!("{base}{path}")).form(&form);
        async move {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<serde_json::Value>().await.unwrap_or_default())
        }
    };
    let post_json = |base: &str, path: &str, body: serde_json::Value| {
        let request = client.post(format!("{base}{path}")).json(&body);
        async move {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<serde_json::Value>().await.unwrap_or_default())
        }
    };

    for (writer, resolver, session) in [(&rs, &py, "interop-rs"), (&py, &rs, "interop-py")] {
        let run_form = vec![
            ("message", "add please".to_owned()),
            ("stream", "false".to_owned()),
            ("session_id", session.to_owned()),
            ("user_id", "u1".to_owned()),
        ];
        let (status, paused) = post_form(writer, "/agents/approver/runs", run_form).await;
        assert_eq!((status, paused["status"].as_str()), (200, Some("PAUSED")), "{writer}: {paused}");
        let run_id = paused["run_id"].as_str().unwrap().to_owned();
        let approval_id = paused["tools"][0]["approval_id"].as_str().expect("stamped").to_owned();
        let (_, by_writer) = get_both(writer, &format!("/approvals/{approval_id}")).await;
        let (status, by_resolver) = get_both(resolver, &format!("/approvals/{approval_id}")).await;
        assert_eq!(status, 200, "{resolver} reads {writer}'s approval: {by_resolver}");
        assert_eq!(by_resolver, by_writer, "read alike");
        assert_eq!(
            (by_resolver["status"].as_str(), by_resolver["run_id"].as_str()),
            (Some("pending"), Some(run_id.as_str()))
        );
        assert_eq!((by_resolver["user_id"].as_str(), by_resolver["tool_name"].as_str()), (Some("u1"), Some("add")));
        let (_, listed) = get_both(resolver, "/approvals?status=pending").await;
        assert!(listed["data"].as_array().unwrap().iter().any(|a| a["id"] == approval_id.as_str()), "{listed}");

        let body = serde_json::json!({"status": "approved", "resolved_by": "admin"});
        let (status, resolved) = post_json(resolver, &format!("/approvals/{approval_id}/resolve"), body).await;
        assert_eq!((status, resolved["status"].as_str()), (200, Some("approved")), "{resolved}");
        let (status, again) =
            post_json(writer, &format!("/approvals/{approval_id}/resolve"), serde_json::json!({"status": "rejected"}))
                .await;
        assert_eq!(status, 409, "the writer sees it resolved: {again}");

        let form = vec![("stream", "false".to_owned()), ("session_id", session.to_owned())];
        let (status, done) = post_form(writer, &format!("/agents/approver/runs/{run_id}/continue"), form).await;
        assert_eq!(
            (status, done["status"].as_str()),
            (200, Some("COMPLETED")),
            "{writer} continues on the decision: {done}"
        );
        assert_eq!(done["tools"][0]["confirmed"], true, "{done}");
        let (_, after) = get_both(resolver, &format!("/approvals/{approval_id}")).await;
        assert_eq!(after["run_status"], "COMPLETED", "the record follows its run: {after}");
    }
}

/// `/continue` beyond a pause, on both servers with the same scripted model: regenerate (the
/// original marked REGENERATED), a fork from the last user message, a follow-up `input` to a
/// completed run (which forks it), and refused combinations. Each server's runs, read back, carry
/// the same lineage (`forked_from_run_id` naming the same run of the sequence,
/// `forked_from_message_index`, `regenerated_from`, status) and the same messages (roles and
/// contents).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_variants_store_the_lineage_python_agentos_stores() {
    let Some(python) = agno_testkit::agno_python("the continue lineage check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("lineage");
    let py_db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py) = start_python_agentos(&python, &provider, &dir, &py_db, &[]).await;
    let config = python_agentos_twin(&dir, &provider, "");
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;
    let rs = format!("http://127.0.0.1:{rs_port}");
    let (from_rs, from_py) = (lineage_sequence(&rs).await, lineage_sequence(&py).await);
    assert_eq!(from_rs, from_py, "agno-rs (left) and Python AgentOS (right) store different lineages");
}

/// Runs the continue sequence on `base`; what it stored, with run ids named by their place in
/// the sequence (`r0`, `r1`, ...), and the statuses of the refused requests.
async fn lineage_sequence(base: &str) -> serde_json::Value {
    use serde_json::{Value, json};
    let client = reqwest::Client::new();
    let session = format!("lineage-{}", &agno::core::new_id()[..8]);
    let post = |path: String, fields: Vec<(&'static str, String)>| {
        let mut form = vec![("stream", "false".to_owned()), ("session_id", session.clone())];
        form.extend(fields);
        let request = client.post(format!("{base}{path}")).form(&form);
        async move {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or_default())
        }
    };
    let mut ids: Vec<String> = Vec::new();
    let (status, first) =
        post("/agents/demo/runs".into(), vec![("message", "hello there".into()), ("user_id", "u1".into())]).await;
    assert_eq!(status, 200, "{base}: {first}");
    ids.push(first["run_id"].as_str().unwrap().to_owned());
    let steps: Vec<(usize, Vec<(&'static str, String)>)> = vec![
        (0, vec![("regenerate", "true".into())]),
        (1, vec![("continue_from", "last_user".into()), ("fork", "true".into())]),
        (2, vec![("input", "and one more thing".into())]),
        (
            3,
            vec![
                ("regenerate", "true".into()),
                ("replace_original", "false".into()),
                ("additional_instructions", "shorter".into()),
            ],
        ),
    ];
    for (from, fields) in steps {
        let (status, run) = post(format!("/agents/demo/runs/{}/continue", ids[from]), fields).await;
        assert_eq!(status, 200, "{base}: continue of r{from}: {run}");
        ids.push(run["run_id"].as_str().unwrap().to_owned());
    }
    let mut refused = serde_json::Map::new();
    for (name, fields) in [
        ("regenerate and fork", vec![("regenerate", "true".to_owned()), ("fork", "true".to_owned())]),
        ("replace_original alone", vec![("replace_original", "true".to_owned())]),
        (
            "input and additional_instructions",
            vec![
                ("regenerate", "true".to_owned()),
                ("input", "a".to_owned()),
                ("additional_instructions", "b".to_owned()),
            ],
        ),
        ("regenerate from an index", vec![("regenerate", "true".to_owned()), ("continue_from", "1".to_owned())]),
        ("continue_from not a boundary", vec![("continue_from", "soon".to_owned())]),
    ] {
        let (status, body) = post(format!("/agents/demo/runs/{}/continue", ids[4]), fields).await;
        refused.insert(name.to_owned(), json!([status, body["detail"]]));
    }
    let name = |id: &Value| -> Value {
        id.as_str().and_then(|id| ids.iter().position(|i| i == id)).map_or(Value::Null, |i| json!(format!("r{i}")))
    };
    let mut runs = Vec::new();
    for id in &ids {
        let r = client.get(format!("{base}/agents/demo/runs/{id}?session_id={session}")).send().await.unwrap();
        let run: Value = r.json().await.unwrap();
        let messages: Vec<Value> =
            run["messages"].as_array().into_iter().flatten().map(|m| json!([m["role"], m["content"]])).collect();
        runs.push(json!({
            "status": run["status"],
            "forked_from_run_id": name(&run["forked_from_run_id"]),
            "forked_from_message_index": run["forked_from_message_index"],
            "regenerated_from": name(&run["regenerated_from"]),
            "content": run["content"],
            "messages": messages,
        }));
    }
    json!({"runs": runs, "refused": refused})
}

/// What both servers must answer alike of a trace (`TraceSummary` or `TraceDetail`, its tree
/// node by node): everything but the human-readable `duration` (Python's SQLite upsert stores a
/// fractional `duration_ms`, which Python shows as `94.0039…ms` and agno-rs rounds).
fn comparable_trace(trace: &serde_json::Value) -> serde_json::Value {
    match trace {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "duration" | "search_time_ms"))
                .map(|(k, v)| (k.clone(), comparable_trace(v)))
                .collect(),
        ),
        serde_json::Value::Array(items) => serde_json::Value::Array(items.iter().map(comparable_trace).collect()),
        other => other.clone(),
    }
}

/// Runs an agent and a workflow on `base` (a traced server) and waits until it lists 2 traces;
/// their ids.
async fn traced_runs(base: &str) -> Vec<String> {
    let client = reqwest::Client::new();
    for (path, session) in [("/agents/demo/runs", "interop-a"), ("/workflows/flow/runs", "interop-w")] {
        let form = [("message", "trace me"), ("stream", "false"), ("session_id", session), ("user_id", "u1")];
        let r = client.post(format!("{base}{path}")).form(&form).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}: {}", r.text().await.unwrap_or_default());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, listed) = get_both(base, "/traces").await;
        let ids: Vec<String> = listed["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["trace_id"].as_str().map(str::to_owned))
            .collect();
        if ids.len() >= 2 {
            return ids;
        }
        assert!(Instant::now() < deadline, "{base} did not list 2 traces within 30 s: {listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Traces written by either side are read alike by both: Python AgentOS 3.1.10 serving the
/// database agno-rs traced answers `/traces` and each `/traces/{id}` (names, kinds, parent links,
/// token counts, inputs and outputs) as agno-rs does, and agno-rs serving the database Python
/// traced answers as Python does; on SQLite files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_are_read_alike_by_both_servers_whoever_wrote_them() {
    let Some(python) = agno_testkit::agno_python("the traces interop check against Python AgentOS") else { return };
    let dir = scratch_dir("tinterop");
    let python_db = format!("sqlite://{}", dir.join("python.db").display());
    let rs_db = format!("sqlite://{}", dir.join("agno-rs.db").display());
    traces_interop(&python, &dir, &python_db, &rs_db, true).await;
}

/// [`traces_are_read_alike_by_both_servers_whoever_wrote_them`] on PostgreSQL: each side writes
/// its traces into a schema of its own, and reads the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_traces_are_read_alike_by_both_servers_whoever_wrote_them() {
    let Some(python) = agno_testkit::agno_python("the traces interop check on PostgreSQL") else { return };
    let (Some(python_db), Some(rs_db)) = (common::postgres_schema("tpy"), common::postgres_schema("trs")) else {
        return;
    };
    let dir = scratch_dir("tinterop-pg");
    traces_interop(&python, &dir, &python_db.url, &rs_db.url, true).await;
}

/// [`traces_are_read_alike_by_both_servers_whoever_wrote_them`] on MariaDB, a database each, in
/// one direction: agno-rs serves Python's traces as Python does. Not the other: Python Agno 3.1.10
/// reflects an existing table, MariaDB's JSON column reflects as LONGTEXT, and Agno then reads a
/// span's attributes as a string and answers `/traces` 500 ("'str' object has no attribute
/// 'get'"), for traces it wrote itself as well, from its next process on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_mysql_traces_are_read_alike_by_both_servers_whoever_wrote_them() {
    let Some(python) = agno_testkit::agno_python("the traces interop check on MariaDB") else { return };
    let (Some(python_db), Some(rs_db)) =
        (agno_testkit::services::MySqlDatabase::new("tpy"), agno_testkit::services::MySqlDatabase::new("trs"))
    else {
        return;
    };
    let dir = scratch_dir("tinterop-mysql");
    traces_interop(&python, &dir, &python_db.url, &rs_db.url, false).await;
}

/// Python AgentOS traces runs into `python_db`, agno serve into `rs_db`; then agno serve serves
/// Python's database and, when `python_reads_ours`, Python serves agno-rs's, each answering the
/// trace routes as the writer does.
async fn traces_interop(python: &str, dir: &std::path::Path, python_db: &str, rs_db: &str, python_reads_ours: bool) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));

    // Each side traces its own runs into its own database.
    let (py_writer, py_base) = start_python_agentos(python, &provider, dir, python_db, &["--tracing".into()]).await;
    let config = python_agentos_twin_on(dir, &provider, "[tracing]\nenabled = true\n", rs_db);
    let (rs_writer, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;
    let rs_base = format!("http://127.0.0.1:{rs_port}");
    let python_traces = traced_runs(&py_base).await;
    let rs_traces = traced_runs(&rs_base).await;

    // Then each reads the other's: a Python AgentOS on agno-rs's database, agno-rs on Python's.
    let py_dir = dir.join("py-reader");
    std::fs::create_dir_all(&py_dir).unwrap();
    let (_py_reader, py_reader_base) = start_python_agentos(python, &provider, &py_dir, rs_db, &[]).await;
    let rs_dir = dir.join("rs-reader");
    std::fs::create_dir_all(&rs_dir).unwrap();
    let reader_config = slow_agent_config(&rs_dir, "agentos.toml", python_db, &provider.base_url(), "");
    let (_rs_reader, rs_reader_port) = start_serve_logged(&reader_config, &rs_dir.join("agno-rs.log")).await;
    let rs_reader_base = format!("http://127.0.0.1:{rs_reader_port}");

    let directions = [
        ("Python's traces", &python_traces, &py_base, &rs_reader_base),
        ("agno-rs's traces", &rs_traces, &rs_base, &py_reader_base),
    ];
    for (what, ids, writer, reader) in directions.into_iter().take(if python_reads_ours { 2 } else { 1 }) {
        let (s1, listed_by_writer) = get_both(writer, "/traces").await;
        let (s2, listed_by_reader) = get_both(reader, "/traces").await;
        assert_eq!((s1, s2), (200, 200), "{what}");
        assert_eq!(comparable_trace(&listed_by_reader), comparable_trace(&listed_by_writer), "{what}: the list");
        for id in ids {
            let (s1, by_writer) = get_both(writer, &format!("/traces/{id}")).await;
            let (s2, by_reader) = get_both(reader, &format!("/traces/{id}")).await;
            assert_eq!((s1, s2), (200, 200), "{what}: {id}");
            assert!(by_writer["tree"][0]["spans"].as_array().is_some_and(|s| !s.is_empty()), "{what}: {by_writer}");
            assert_eq!(comparable_trace(&by_reader), comparable_trace(&by_writer), "{what}: trace {id}");
        }
        let (_, stats_by_writer) = get_both(writer, "/trace_session_stats").await;
        let (_, stats_by_reader) = get_both(reader, "/trace_session_stats").await;
        assert_eq!(comparable_trace(&stats_by_reader), comparable_trace(&stats_by_writer), "{what}: session stats");
    }
    drop((py_writer, rs_writer));
}

/// GET `path` on a server: status and JSON body.
async fn get_both(base: &str, path: &str) -> (u16, serde_json::Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

/// Workflow and team sessions written by Python Agno 3.1 itself (a real `Workflow` run with a
/// bare string input, a team run with a member run) are served by `agno serve` exactly as a Python
/// AgentOS serves them from the same database: the session lists, details and run lists answer
/// the same JSON, value for value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflow_and_team_sessions_python_wrote_are_served_as_python_agentos_serves_them() {
    let Some(python) = agno_testkit::agno_python("the workflow session parity check against Python AgentOS") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir("wf-parity");
    let db_file = dir.join("shared.db");
    let out = Command::new(&python)
        .arg(repo_file("scripts/interop/agno_interop.py"))
        .args(["write-workflow", db_file.to_str().unwrap(), "py-wf"])
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let (_python, py_base) =
        start_python_agentos(&python, &provider, &dir, &format!("sqlite://{}", db_file.display()), &[]).await;
    let config =
        slow_agent_config(&dir, "agentos.toml", &format!("sqlite://{}", db_file.display()), &provider.base_url(), "");
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;
    let rs_base = format!("http://127.0.0.1:{rs_port}");

    for path in [
        "/sessions/py-wf/runs?type=workflow",
        "/sessions/py-wf-team/runs?type=team",
        "/sessions/py-wf?type=workflow",
        "/sessions/py-wf-team?type=team",
        "/sessions?type=workflow",
        "/sessions?type=team",
    ] {
        let (rs_status, mut rs) = get_both(&rs_base, path).await;
        let (py_status, mut py) = get_both(&py_base, path).await;
        // Timings differ by nature.
        for body in [&mut rs, &mut py] {
            if let Some(meta) = body.get_mut("meta").and_then(serde_json::Value::as_object_mut) {
                meta.remove("search_time_ms");
            }
        }
        assert_eq!((rs_status, py_status), (200, 200), "{path}: agno-rs {rs}, Python {py}");
        assert_eq!(rs, py, "{path}: agno serve differs from Python AgentOS");
    }
    let (_, runs) = get_both(&rs_base, "/sessions/py-wf/runs?type=workflow").await;
    assert_eq!(runs[0]["run_input"], "hello world", "{runs}");
}

/// The `/knowledge` routes of `agno serve` answer as a Python AgentOS 3.1 with one knowledge base
/// (LanceDb with an offline embedder there, the embedded store here): the same statuses and
/// JSON shapes for upload, status, list, get, search in every mode, delete and bad requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the knowledge parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir("kparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let knowledge = [std::ffi::OsString::from("--knowledge-dir"), dir.join("lance").into_os_string()];
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &knowledge).await;

    let db_url = format!("sqlite://{}", dir.join("agno-rs.db").display());
    let config = slow_agent_config(&dir, "agentos.toml", &db_url, &provider.base_url(), "");
    let toml = std::fs::read_to_string(&config).unwrap() + "[[knowledge]]\nid = \"docs\"\nembedder = \"hash:256\"\n";
    std::fs::write(&config, toml).unwrap();
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "knowledge", 15);
}

/// The `/schedules` routes of `agno serve` answer as a Python AgentOS 3.1 with its scheduler on:
/// the same statuses and JSON shapes for create, list, get, patch, enable, disable, trigger (a
/// background run of agent `demo` followed to its end), runs and delete, and for bad input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_routes_answer_as_python_agentos_does() {
    let Some(python) = agno_testkit::agno_python("the schedules parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("the nightly report")));
    let dir = scratch_dir("sparity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--scheduler".into()]).await;

    let db_url = format!("sqlite://{}", dir.join("agno-rs.db").display());
    let config = slow_agent_config(&dir, "agentos.toml", &db_url, &provider.base_url(), "");
    let toml = std::fs::read_to_string(&config).unwrap().replace("id = \"slow\"\n", "id = \"demo\"\nname = \"Demo\"\n")
        + "[scheduler]\nenabled = true\nrun_poll_interval_ms = 100\n";
    std::fs::write(&config, toml).unwrap();
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    assert_shape_parity(&python, rs_port, &py_base, "schedules", 25);
}

/// The official Python MCP client (`scripts/interop/mcp_client.py`) against `url`, making
/// `calls` (tool, JSON arguments) in order.
fn mcp_client(python: &str, url: &str, calls: &[(&str, serde_json::Value)]) -> serde_json::Value {
    let mut cmd = Command::new(python);
    cmd.arg(repo_file("scripts/interop/mcp_client.py")).args(["--url", url]);
    for (tool, args) in calls {
        cmd.arg("--call").arg(tool).arg(args.to_string());
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad client output ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Where the JSON shapes of `a` and `b` differ (object keys and value types, recursively; the
/// first element of arrays), as `path: what` lines.
fn shape_differences(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()).collect::<std::collections::BTreeSet<_>>() {
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => shape_differences(&format!("{path}.{key}"), p, q, out),
                    (Some(_), None) => out.push(format!("{path}.{key}: only agno-rs has it")),
                    (None, Some(_)) => out.push(format!("{path}.{key}: only Python has it")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if let (Some(p), Some(q)) = (x.first(), y.first()) {
                shape_differences(&format!("{path}[0]"), p, q, out);
            } else if x.is_empty() != y.is_empty() {
                out.push(format!("{path}: {} vs {} items", x.len(), y.len()));
            }
        }
        // A value one side leaves null is not a shape difference.
        (Value::Null, _) | (_, Value::Null) => {}
        _ if kind(a) != kind(b) => out.push(format!("{path}: {} vs {}", kind(a), kind(b))),
        _ => {}
    }
}

/// `/mcp` offers Python AgentOS 3.1's tools (`mcp_server=True`) with the same parameters, and
/// answers the same calls with the same shapes, through the official Python MCP client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_endpoint_offers_python_agentos_tools_and_answers_in_its_shapes() {
    let Some(python) = agno_testkit::agno_python("the /mcp parity check against Python AgentOS") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("mcp-parity");
    let db = format!("sqlite://{}", dir.join("python.db").display());
    let (_python, py_base) = start_python_agentos(&python, &provider, &dir, &db, &["--mcp".into()]).await;

    let db_url = format!("sqlite://{}", dir.join("agno-rs.db").display());
    let config =
        slow_agent_config(&dir, "agentos.toml", &db_url, &provider.base_url(), "[mcp_server]\nenabled = true\n");
    let toml = std::fs::read_to_string(&config)
        .unwrap()
        .replace("id = \"slow\"\n", "id = \"demo\"\nname = \"Demo\"\nadd_history_to_context = true\n")
        + &format!(
            "[[teams]]\nid = \"desk\"\nname = \"Desk\"\ndescription = \"A desk\"\nmembers = [\"demo\"]\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n\
             [[workflows]]\nid = \"flow\"\nname = \"Flow\"\ndescription = \"Draft then polish\"\n\
             [[workflows.steps]]\nname = \"draft\"\nagent = \"demo\"\n",
            provider.base_url()
        );
    std::fs::write(&config, toml).unwrap();
    let (_rs, rs_port) = start_serve_logged(&config, &dir.join("agno-rs.log")).await;

    let calls = [
        ("get_agentos_config", serde_json::json!({})),
        ("run_agent", serde_json::json!({"agent_id": "demo", "message": "hello over mcp", "session_id": "mcp-s1"})),
        ("run_team", serde_json::json!({"team_id": "desk", "message": "hello team", "session_id": "mcp-s2"})),
        ("run_workflow", serde_json::json!({"workflow_id": "flow", "message": "hello flow", "session_id": "mcp-s3"})),
        ("get_sessions", serde_json::json!({})),
        ("get_session_runs", serde_json::json!({"session_id": "mcp-s1"})),
        ("run_agent", serde_json::json!({"agent_id": "nobody", "message": "x"})),
        ("get_session_runs", serde_json::json!({"session_id": "no-such-session"})),
    ];
    let rs = mcp_client(&python, &format!("http://127.0.0.1:{rs_port}/mcp"), &calls);
    let py = mcp_client(&python, &format!("{py_base}/mcp"), &calls);
    assert!(rs.get("error").is_none() && py.get("error").is_none(), "agno-rs: {rs}\nPython: {py}");
    assert_eq!(rs["tools"], py["tools"], "the same tools with the same parameters");
    let mut differences = Vec::new();
    for (i, (tool, _)) in calls.iter().enumerate() {
        let (a, b) = (&rs["calls"][i], &py["calls"][i]);
        if a["is_error"] != b["is_error"] {
            differences.push(format!(
                "call {i} ({tool}): is_error {} vs {}: {} / {}",
                a["is_error"], b["is_error"], a["text"], b["text"]
            ));
        }
        shape_differences(&format!("call {i} ({tool})"), &a["structured"], &b["structured"], &mut differences);
    }
    assert_eq!(rs["calls"][6]["text"], py["calls"][6]["text"], "a refusal is worded as Python words it");
    println!("agno-rs: {rs}\nPython: {py}");
    assert!(differences.is_empty(), "agno-rs /mcp differs from Python AgentOS 3.1:\n{}", differences.join("\n"));
}
