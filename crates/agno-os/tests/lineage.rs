//! A run's lineage. Checkpoints: an agent with `checkpoint = "tool-batch"` writes its run after
//! each model turn's tool results, so a run still executing can be read back at that boundary;
//! the checkpoint routes list a run's boundaries and give the run as it stood at one of them, for
//! agents and teams. Session forks: a copy of a session whose runs all have fresh ids. Precise
//! errors for bad input, and nothing of another user's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

fn os_config(provider: &FakeProvider, checkpoint: &str) -> String {
    let model = format!(
        "model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{secret}]\nuser_isolation = true\n\
         [db]\nurl = \"memory://\"\n[queue]\npoll_interval_ms = 20\n\
         [[agents]]\nid = \"calc\"\n{model}{checkpoint}\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"] }}]\n\
         [[teams]]\nid = \"desk\"\nmembers = [\"calc\"]\n{model}",
        secret = serde_json::to_string(SECRET).unwrap()
    )
}

fn add_call() -> Scripted {
    Scripted::ToolCalls { content: None, calls: vec![("add".into(), json!({"a": 2, "b": 3}).to_string())] }
}

async fn checkpoints(os: &TestOs, run_id: &str, session: &str, who: &str) -> Value {
    let r = os.get(&format!("/agents/calc/runs/{run_id}/checkpoints?session_id={session}"), Some(who)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_batch_checkpoint_is_readable_while_the_run_goes_on() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&os_config(&provider, "checkpoint = \"tool-batch\"\n"))).await;
    let alice = token("alice", &["agents:read", "agents:run"]);
    let bob = token("bob", &["agents:read", "agents:run"]);
    provider.push_all([add_call(), Scripted::Delayed(Duration::from_secs(2), Box::new(Scripted::text("it is 5")))]);
    let form = [("message", "add 2 and 3"), ("stream", "false"), ("background", "true"), ("session_id", "s1")];
    let r = os.post_form("/agents/calc/runs", &form, Some(&alice)).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();

    // While the second model call is still on its way, the run is stored at its checkpoint: the
    // end of what it has so far, marked RUNNING.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (listed, run) = loop {
        let listed = checkpoints(&os, &run_id, "s1", &alice).await;
        let run = os.get(&format!("/agents/calc/runs/{run_id}?session_id=s1"), Some(&alice)).await.body;
        // The run is stored RUNNING when it starts (its user message alone): wait for the
        // boundary after the tool's result.
        let at_tool = |c: &Value| c["status"] == "RUNNING" && c["message_role"] == "tool";
        if listed["checkpoints"].as_array().is_some_and(|l| l.iter().any(at_tool)) {
            break (listed, run);
        }
        assert!(Instant::now() < deadline, "no checkpoint was written: {listed}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(run["status"], "RUNNING", "read back mid-run: {run}");
    assert_eq!(run["tools"][0]["result"], r#"{"operation":"addition","result":5.0}"#, "the tool's result is stored");
    let first = &listed["checkpoints"][0];
    assert_eq!(listed["checkpoints"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!((first["reason"].as_str(), first["status"].as_str()), (Some("end"), Some("RUNNING")));
    assert_eq!(first["message_role"], "tool");
    assert_eq!(first["checkpoint_id"], "1");
    let at = first["message_index"].as_u64().unwrap();
    assert_eq!(run["last_checkpoint_at_message_index"], at);
    assert_eq!(run["messages"].as_array().unwrap().len() as u64, at);

    // The run ends; its checkpoint stays, and its end is listed after it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = os.get(&format!("/agents/calc/runs/{run_id}?session_id=s1"), Some(&alice)).await.body;
        if run["status"] == "COMPLETED" {
            break;
        }
        assert!(Instant::now() < deadline, "the run never completed: {run}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listed = checkpoints(&os, &run_id, "s1", &alice).await;
    let list = listed["checkpoints"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> =
        list.iter().map(|c| (c["checkpoint_id"].as_str().unwrap(), c["reason"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("1", "checkpoint"), ("2", "end")], "{listed}");
    assert_eq!(list[1]["is_latest"], true);
    assert_eq!(list[1]["message_preview"], "it is 5");
    assert_eq!((listed["run_id"].as_str(), listed["session_id"].as_str()), (Some(run_id.as_str()), Some("s1")));

    // The run as it stood at its checkpoint.
    let path = format!("/agents/calc/runs/{run_id}/checkpoints/{at}?session_id=s1");
    let snap = os.get(&path, Some(&alice)).await;
    assert_eq!(snap.status, 200, "{:?}", snap.body);
    assert_eq!(snap.body["checkpoint"]["checkpoint_id"], "1");
    assert_eq!(snap.body["checkpoint"]["reason"], "snapshot");
    assert_eq!(snap.body["snapshot"]["messages"].as_array().unwrap().len() as u64, at);
    assert_eq!(snap.body["snapshot"]["tools"].as_array().unwrap().len(), 1);
    // Cut inside the tool exchange: snapped back to before the call.
    let inside =
        os.get(&format!("/agents/calc/runs/{run_id}/checkpoints/{}?session_id=s1", at - 1), Some(&alice)).await;
    let kept = inside.body["snapshot"]["messages"].as_array().unwrap();
    assert!(kept.iter().all(|m| m["tool_calls"].is_null()), "no call without its result: {kept:?}");
    assert_eq!(inside.body["snapshot"]["tools"], json!([]));

    // Bad input, and another user's run.
    let past = os.get(&format!("/agents/calc/runs/{run_id}/checkpoints/99?session_id=s1"), Some(&alice)).await;
    assert_eq!(past.status, 400, "{:?}", past.body);
    assert!(detail(&past.body).starts_with("message_index must be between 0 and"), "{:?}", past.body);
    let negative = os.get(&format!("/agents/calc/runs/{run_id}/checkpoints/-1?session_id=s1"), Some(&alice)).await;
    assert_eq!(negative.status, 400);
    let word = os.get(&format!("/agents/calc/runs/{run_id}/checkpoints/last?session_id=s1"), Some(&alice)).await;
    assert_eq!(word.status, 422, "{:?}", word.body);
    let no_session = os.get(&format!("/agents/calc/runs/{run_id}/checkpoints"), Some(&alice)).await;
    assert_eq!(no_session.status, 422);
    let other_session = os.get(&format!("/agents/calc/runs/{run_id}/checkpoints?session_id=s2"), Some(&alice)).await;
    assert_eq!(other_session.status, 404);
    for path in [format!("/agents/calc/runs/{run_id}/checkpoints?session_id=s1"), path.clone()] {
        assert_eq!(os.get(&path, Some(&bob)).await.status, 404, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tool_batch_a_run_has_only_its_end_and_teams_list_theirs() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let alice = token("alice", &["agents:read", "agents:run", "teams:read", "teams:run"]);
    provider.push_all([add_call(), Scripted::text("it is 5")]);
    let r = os
        .post_form("/agents/calc/runs", &[("message", "add"), ("stream", "false"), ("session_id", "s1")], Some(&alice))
        .await;
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let listed = checkpoints(&os, &run_id, "s1", &alice).await;
    let list = listed["checkpoints"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{listed}");
    assert_eq!((list[0]["reason"].as_str(), list[0]["status"].as_str()), (Some("end"), Some("COMPLETED")));
    assert!(r.body["last_checkpoint_at_message_index"].is_null());

    provider.push_all([Scripted::text("the desk answers")]);
    let r = os
        .post_form("/teams/desk/runs", &[("message", "hi"), ("stream", "false"), ("session_id", "t1")], Some(&alice))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let team_run = r.body["run_id"].as_str().unwrap().to_owned();
    let t = os.get(&format!("/teams/desk/runs/{team_run}/checkpoints?session_id=t1"), Some(&alice)).await;
    assert_eq!(t.status, 200, "{:?}", t.body);
    let last = t.body["checkpoints"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!((last["reason"].as_str(), last["message_preview"].as_str()), (Some("end"), Some("the desk answers")));
    let snap = os.get(&format!("/teams/desk/runs/{team_run}/checkpoints/1?session_id=t1"), Some(&alice)).await;
    assert_eq!(snap.status, 200, "{:?}", snap.body);
    assert_eq!(snap.body["snapshot"]["messages"].as_array().unwrap().len(), 1);
    let agent_path = os.get(&format!("/agents/calc/runs/{team_run}/checkpoints?session_id=t1"), Some(&alice)).await;
    assert_eq!(agent_path.status, 404, "a team's run is not the agent's");
}

/// A fork copies every run of a session under fresh ids into a new session of the same
/// component; the source is untouched; another user's session, a missing or an empty one is
/// nothing to fork; another component's session is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_fork_copies_its_runs_under_fresh_ids() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::text("noted")));
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let alice =
        token("alice", &["agents:read", "agents:run", "teams:read", "teams:run", "sessions:read", "sessions:write"]);
    let bob = token("bob", &["agents:read", "agents:run", "sessions:read"]);
    let mut source_runs = Vec::new();
    for message in ["first", "second"] {
        let r = os
            .post_form(
                "/agents/calc/runs",
                &[("message", message), ("stream", "false"), ("session_id", "src")],
                Some(&alice),
            )
            .await;
        source_runs.push(r.body["run_id"].as_str().unwrap().to_owned());
    }
    let r = os.post_form("/agents/calc/sessions/src/fork", &[], Some(&alice)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["forked_from_session_id"], "src");
    let fork = r.body["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, "src");

    let copied = os.get(&format!("/sessions/{fork}/runs"), Some(&alice)).await;
    assert_eq!(copied.status, 200, "{:?}", copied.body);
    let ids: Vec<String> =
        copied.body.as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids.len(), 2);
    let mut inputs = Vec::new();
    for (id, original) in ids.iter().zip(&source_runs) {
        assert_ne!(id, original, "a fresh run id");
        let run = os.get(&format!("/agents/calc/runs/{id}?session_id={fork}"), Some(&alice)).await.body;
        assert_eq!(run["session_id"], fork.as_str(), "{run}");
        assert_eq!(run["forked_from_session_id"], "src");
        inputs.push(run["input"]["input_content"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(inputs, ["first", "second"], "in order");
    let session = os.get(&format!("/sessions/{fork}"), Some(&alice)).await;
    assert_eq!((session.body["agent_id"].as_str(), session.body["user_id"].as_str()), (Some("calc"), Some("alice")));
    let stored = os.os.state.db.as_ref().unwrap().get_session(&fork, None, Some(0)).await.unwrap().unwrap();
    assert_eq!(stored.session_data.unwrap()["forked_from_session_id"], "src", "the stored lineage");
    let source = os.get("/sessions/src/runs", Some(&alice)).await;
    let ids: Vec<&str> = source.body.as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, source_runs, "the source is untouched");

    // The copy goes on on its own: a run there leaves the source as it was.
    let r = os
        .post_form(
            "/agents/calc/runs",
            &[("message", "third"), ("stream", "false"), ("session_id", &fork)],
            Some(&alice),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(os.get(&format!("/sessions/{fork}/runs"), Some(&alice)).await.body.as_array().unwrap().len(), 3);
    assert_eq!(os.get("/sessions/src/runs", Some(&alice)).await.body.as_array().unwrap().len(), 2);

    // Nothing to fork: another user's, a missing and an empty session; another component's.
    for (path, who) in [("/agents/calc/sessions/src/fork", &bob), ("/agents/calc/sessions/missing/fork", &alice)] {
        let r = os.post_form(path, &[], Some(who)).await;
        assert_eq!((r.status, detail(&r.body)), (400, "Source session has no runs to fork.".to_owned()), "{path}");
    }
    let r =
        os.post_json("/sessions?type=agent", &json!({"session_id": "empty", "agent_id": "calc"}), Some(&alice)).await;
    assert!(r.status < 300, "{:?}", r.body);
    assert_eq!(os.post_form("/agents/calc/sessions/empty/fork", &[], Some(&alice)).await.status, 400);
    let team = os.post_form("/teams/desk/sessions/src/fork", &[], Some(&alice)).await;
    assert_eq!(team.status, 404, "an agent's session is not the team's: {:?}", team.body);
    let listed = os.get("/sessions?type=agent", Some(&bob)).await;
    assert!(!listed.body.to_string().contains(&fork), "bob sees nothing of it");
}

/// A team's run goes on beyond its end as an agent's does: a plain continue of a finished run
/// forks it, a regenerate replaces its answer (the original REGENERATED), `input` asks a
/// follow-up; each branch is a run of the team, stored with its lineage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_run_forks_regenerates_and_follows_up() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let alice = token("alice", &["teams:read", "teams:run"]);
    provider.push_all([Scripted::text("the desk answers")]);
    let r = os
        .post_form(
            "/teams/desk/runs",
            &[("message", "hi desk"), ("stream", "false"), ("session_id", "t1")],
            Some(&alice),
        )
        .await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("COMPLETED")), "{:?}", r.body);
    let first = r.body["run_id"].as_str().unwrap().to_owned();
    let go = |run: &str, fields: &[(&'static str, &'static str)]| {
        let mut form = vec![("stream", "false"), ("session_id", "t1")];
        form.extend_from_slice(fields);
        let path = format!("/teams/desk/runs/{run}/continue");
        let (os, alice) = (&os, alice.clone());
        async move { os.post_form(&path, &form, Some(&alice)).await }
    };

    provider.push_all([Scripted::text("the desk answers again")]);
    let fork = go(&first, &[]).await;
    assert_eq!(fork.status, 200, "{:?}", fork.body);
    let fork_id = fork.body["run_id"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, first);
    assert_eq!(
        (fork.body["forked_from_run_id"].as_str(), fork.body["team_id"].as_str()),
        (Some(first.as_str()), Some("desk"))
    );
    assert_eq!(fork.body["content"], "the desk answers again");

    provider.push_all([Scripted::text("a better answer")]);
    let regenerated = go(&fork_id, &[("regenerate", "true")]).await;
    assert_eq!(regenerated.status, 200, "{:?}", regenerated.body);
    assert_eq!(regenerated.body["regenerated_from"], fork_id.as_str());
    assert_eq!(regenerated.body["content"], "a better answer");
    let replaced = os.get(&format!("/teams/desk/runs/{fork_id}?session_id=t1"), Some(&alice)).await;
    assert_eq!(replaced.body["status"], "REGENERATED");

    let last = regenerated.body["run_id"].as_str().unwrap().to_owned();
    provider.push_all([Scripted::text("and the follow-up")]);
    let follow = go(&last, &[("input", "one more question")]).await;
    assert_eq!(follow.status, 200, "{:?}", follow.body);
    let said: Vec<&str> =
        follow.body["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(said.contains(&"one more question") && said.contains(&"and the follow-up"), "{said:?}");
    // The regenerated run's answer is not in what the follow-up's leader was sent.
    let sent = provider.requests().last().map(|r| r.body.to_string()).unwrap_or_default();
    assert!(!sent.contains("the desk answers again"), "a REGENERATED run stays out of history: {sent}");
    assert_eq!(
        os.get(&format!("/teams/desk/runs/{first}?session_id=t1"), Some(&alice)).await.body["status"],
        "COMPLETED"
    );
}
