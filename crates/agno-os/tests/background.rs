//! Background runs through the durable queue: 202 on a committed job, the run visible at once and
//! finished by a worker, Idempotency-Key under concurrent duplicates, 429 beyond the queue depth
//! with no accepted run lost, cancel before start, and a run whose worker died ends in ERROR.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{MySqlDatabase, PgSchema, RedisPrefix, TestOs, config, detail};
use serde_json::Value;

const FAST: &str = "[db]\nurl = \"memory://\"\n[queue]\npoll_interval_ms = 50\nlock_grace_seconds = 2\n\
[[agents]]\nid = \"calc\"\nmodel = \"test\"\n[[agents]]\nid = \"other\"\nmodel = \"test\"\n";

async fn slow(queue: &str, latency_ms: u64) -> (TestOs, FakeProvider) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("done slowly")));
    provider.set_latency(Duration::from_millis(latency_ms));
    let cfg = format!(
        "[db]\nurl = \"memory://\"\n[queue]\npoll_interval_ms = 50\n{queue}\n[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    (TestOs::start(config(&cfg)).await, provider)
}

async fn submit(os: &TestOs, agent: &str, message: &str, key: Option<&str>) -> common::Reply {
    let form = reqwest::multipart::Form::new()
        .text("message", message.to_owned())
        .text("stream", "false")
        .text("background", "true");
    let mut req = os.client.post(format!("{}/agents/{agent}/runs", os.base)).multipart(form);
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.json().await.unwrap_or(Value::Null);
    common::Reply { status, headers, body }
}

async fn wait_status(os: &TestOs, agent: &str, run_id: &str, want: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = os.get(&format!("/agents/{agent}/runs/{run_id}"), None).await;
        if r.status == 200 && want.iter().any(|w| r.body["status"] == *w) {
            return r.body;
        }
        assert!(Instant::now() < deadline, "run {run_id} never reached {want:?}: {:?}", r.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the run's job is released by its worker (its outcome recorded) and returns it.
async fn wait_job(os: &TestOs, run_id: &str) -> agno_core::Job {
    let queue = os.os.state.queue.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = queue.store.get_job(run_id, None).await.unwrap().unwrap();
        if job.locked_by.is_none() && job.status != agno_core::JobStatus::Queued {
            return job;
        }
        assert!(Instant::now() < deadline, "job {run_id} was never settled: {job:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_is_accepted_then_completed_by_a_worker() {
    let os = TestOs::start(config(FAST)).await;
    let r = submit(&os, "calc", "in the background", None).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(r.body["status"], "PENDING");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    assert!(r.body["session_id"].as_str().is_some());
    let seen = os.get(&format!("/agents/calc/runs/{run_id}"), None).await;
    assert_eq!(seen.status, 200, "the run is visible as soon as it is accepted");
    let done = wait_status(&os, "calc", &run_id, &["COMPLETED"]).await;
    assert!(done["content"].as_str().unwrap().contains("in the background"));
    let job = wait_job(&os, &run_id).await;
    assert_eq!(job.status, agno_core::JobStatus::Completed);
    assert_eq!(job.attempt, 1);

    let no_db = TestOs::start(config("[[agents]]\nid = \"calc\"\nmodel = \"test\"\n")).await;
    let r = submit(&no_db, "calc", "x", None).await;
    assert_eq!(r.status, 400);
    assert!(detail(&r.body).contains("database"));
}

/// [`FAST`] on another database.
fn fast_on(db_url: &str) -> String {
    FAST.replace("url = \"memory://\"", &format!("url = \"{db_url}\""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_idempotency_key_makes_one_run_even_under_concurrency() {
    one_key_one_run("memory://").await;
}

/// The same against a real PostgreSQL: the unique indexes decide between concurrent duplicates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_one_idempotency_key_makes_one_run_even_under_concurrency() {
    let Some(schema) = PgSchema::new("idem") else { return };
    one_key_one_run(&schema.url).await;
}

/// The same against Redis: the idempotency key and the job commit in one script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_one_idempotency_key_makes_one_run_even_under_concurrency() {
    let Some(prefix) = RedisPrefix::new("idem") else { return };
    one_key_one_run(&prefix.url).await;
}

/// The same against MariaDB: the unique idempotency scope decides between concurrent duplicates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_mysql_one_idempotency_key_makes_one_run_even_under_concurrency() {
    let Some(db) = MySqlDatabase::new("idem") else { return };
    one_key_one_run(&db.url).await;
}

async fn one_key_one_run(db_url: &str) {
    let os = TestOs::start(config(&fast_on(db_url))).await;
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (client, base) = (os.client.clone(), os.base.clone());
        tasks.push(tokio::spawn(async move {
            let form = reqwest::multipart::Form::new()
                .text("message", "once")
                .text("stream", "false")
                .text("background", "true");
            let resp = client
                .post(format!("{base}/agents/calc/runs"))
                .header("Idempotency-Key", "order-42")
                .multipart(form)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }));
    }
    let mut run_ids = std::collections::HashSet::new();
    for t in tasks {
        let (status, body) = t.await.unwrap();
        assert_eq!(status, 202, "{body}");
        run_ids.insert(body["run_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(run_ids.len(), 1, "every duplicate answers the original run");
    let (jobs, total) = os.os.state.queue.as_ref().unwrap().store.list_jobs(None, Some(500), None).await.unwrap();
    assert_eq!((jobs.len(), total), (1, 1), "exactly one job");
    let run_id = run_ids.into_iter().next().unwrap();
    wait_status(&os, "calc", &run_id, &["COMPLETED"]).await;
    let sessions = os.get("/sessions", None).await;
    assert_eq!(sessions.body["meta"]["total_count"], 1, "duplicates leave no session or run behind");
    let again = submit(&os, "calc", "once", Some("order-42")).await;
    assert_eq!((again.status, again.body["run_id"].as_str()), (202, Some(run_id.as_str())));
    assert_eq!(again.body["status"], "COMPLETED", "a duplicate reports the original's status");
    assert_eq!(submit(&os, "other", "once", Some("order-42")).await.status, 409, "same key, another agent");
    assert_eq!(submit(&os, "calc", "x", Some(&"k".repeat(513))).await.status, 422);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_429_and_loses_no_accepted_run() {
    let (os, _provider) = slow("max_concurrency = 1\nmax_queue_depth = 3", 300).await;
    let mut accepted = Vec::new();
    let mut refused = 0;
    for i in 0..12 {
        let r = submit(&os, "slow", &format!("job {i}"), None).await;
        match r.status {
            202 => accepted.push(r.body["run_id"].as_str().unwrap().to_owned()),
            429 => {
                refused += 1;
                assert!(detail(&r.body).contains("full"));
                assert_eq!(
                    r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
                    Some("1"),
                    "a 429 says when to retry"
                );
            }
            other => panic!("unexpected {other}: {:?}", r.body),
        }
    }
    assert!(refused > 0, "the depth bound refused some submissions");
    assert!(accepted.len() >= 3);
    for run_id in &accepted {
        let run = wait_status(&os, "slow", run_id, &["COMPLETED"]).await;
        assert_eq!(run["content"], "done slowly");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_is_cancelled_before_it_starts() {
    let (os, _provider) = slow("max_concurrency = 1", 800).await;
    let first = submit(&os, "slow", "first", None).await.body["run_id"].as_str().unwrap().to_owned();
    let second = submit(&os, "slow", "second", None).await.body["run_id"].as_str().unwrap().to_owned();
    let c = os.post_form(&format!("/agents/slow/runs/{second}/cancel"), &[], None).await;
    assert_eq!(c.status, 200, "{:?}", c.body);
    wait_status(&os, "slow", &first, &["COMPLETED"]).await;
    let cancelled = wait_status(&os, "slow", &second, &["CANCELLED"]).await;
    assert!(cancelled["content"].is_null(), "it never ran");
    let job = os.os.state.queue.as_ref().unwrap().store.get_job(&second, None).await.unwrap().unwrap();
    assert_eq!(job.status, agno_core::JobStatus::Cancelled);
    // Its log is empty: a tail sends the run's end, built from the stored run, once, and ends.
    let log = frames(resume(&os, "slow", &second, None, None).await).await;
    let names: Vec<&str> = log.iter().map(|f| f.event.as_str()).collect();
    assert_eq!(names, ["RunCancelled"], "{log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_worker_died_ends_in_error() {
    let os = TestOs::start(config(FAST)).await;
    let queue = os.os.state.queue.clone().unwrap();
    // A job claimed by a replica that then died: its lease is already older than the grace. This
    // replica's own worker polls too and may claim a job first (then it simply runs it): the
    // scenario is tried again with a new job until the dead replica holds the claim.
    let mut orphan = None;
    for attempt in 0..20 {
        let id = format!("orphan-{attempt}");
        let mut job = agno_core::Job::agent_run(
            id.as_str(),
            "calc",
            format!("{id}-session"),
            serde_json::json!({"message": "lost"}),
        );
        job.available_at = 0;
        assert!(matches!(queue.store.enqueue_job(&job, 0).await.unwrap(), agno_core::Enqueued::Accepted(_)));
        agno_os::queue::store_pending(&os.os.state, &job).await.unwrap();
        let claimed = queue.store.claim_job("dead-replica", 2, agno_core::now_epoch_secs() - 100).await.unwrap();
        if claimed.is_some_and(|j| j.id == id) {
            orphan = Some(id);
            break;
        }
        wait_status(&os, "calc", &id, &["COMPLETED"]).await;
    }
    let orphan = orphan.expect("in 20 tries the live worker claimed every job before the dead replica");
    let run = wait_status(&os, "calc", &orphan, &["ERROR"]).await;
    assert_eq!(run["content"], agno_os::queue::LOST_WORKER);
    let job = queue.store.get_job(&orphan, None).await.unwrap().unwrap();
    assert_eq!((job.status, job.error.as_deref()), (agno_core::JobStatus::Failed, Some(agno_os::queue::LOST_WORKER)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_list_inspect_and_requeue_jobs() {
    let cfg = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\n{FAST}",
        serde_json::to_string(common::SECRET).unwrap()
    );
    let os = TestOs::start(config(&cfg)).await;
    let admin = common::token("root", &["agent_os:admin"]);
    let user = common::token("u", &["agents:run", "agents:read"]);
    let queue = os.os.state.queue.clone().unwrap();
    let mut job = agno_core::Job::agent_run("lost", "calc", "lost-session", serde_json::json!({"message": "again"}));
    job.available_at = 0;
    queue.store.enqueue_job(&job, 0).await.unwrap();
    agno_os::queue::store_pending(&os.os.state, &job).await.unwrap();
    queue.store.claim_job("dead", 2, agno_core::now_epoch_secs() - 100).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while queue.store.get_job("lost", None).await.unwrap().unwrap().status != agno_core::JobStatus::Failed {
        assert!(Instant::now() < deadline, "the sweeper never failed the job");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(os.get("/queue/stats", Some(&user)).await.status, 403, "operators only");
    let stats = os.get("/queue/stats", Some(&admin)).await;
    assert_eq!(stats.body["jobs"]["failed"], 1, "{:?}", stats.body);
    let failed = os.get("/queue/jobs?status=failed", Some(&admin)).await;
    assert_eq!(failed.body["data"][0]["id"], "lost");
    assert_eq!(failed.body["meta"]["total_count"], 1);
    assert_eq!(os.get("/queue/jobs?status=bogus", Some(&admin)).await.status, 422);
    assert_eq!(os.get("/queue/jobs/lost", Some(&admin)).await.body["status"], "failed");
    assert_eq!(os.get("/queue/jobs/nope", Some(&admin)).await.status, 404);
    let r = os.post_json("/queue/jobs/lost/requeue", &serde_json::json!({}), Some(&admin)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let t = os.get("/agents/calc/runs/lost", Some(&admin)).await;
    assert!(t.body["status"] == "PENDING" || t.body["status"] == "RUNNING" || t.body["status"] == "COMPLETED");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = os.get("/agents/calc/runs/lost", Some(&admin)).await;
        if run.body["status"] == "COMPLETED" {
            assert!(run.body["content"].as_str().unwrap().contains("again"));
            break;
        }
        assert!(Instant::now() < deadline, "the requeued run never completed: {:?}", run.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = os.post_json("/queue/jobs/lost/requeue", &serde_json::json!({}), Some(&admin)).await;
    assert_eq!(r.status, 409, "a completed job is not requeued");
}

/// A fence saying "no longer yours" refuses every write of the run: nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_attempt_cannot_write_its_run() {
    #[derive(Debug)]
    struct Lost;
    #[async_trait::async_trait]
    impl agno_runtime::RunFence for Lost {
        async fn save(&self, _write: agno_core::RunWrite<'_>) -> Result<bool, agno_core::DbError> {
            Ok(false)
        }
    }
    let db: std::sync::Arc<dyn agno_core::Db> = std::sync::Arc::new(agno_db::InMemoryDb::new());
    let agent = agno_runtime::Agent::builder("test").db(db.clone()).build().unwrap();
    let durable = agno_runtime::Durable { fence: Some(std::sync::Arc::new(Lost)), after_event_index: None };
    let req = agno_runtime::RunRequest::new("hello").run_id("fenced").session_id("s").durable(durable);
    let err = agent.arun(req).await.expect_err("the write is refused");
    assert!(err.to_string().contains("newer attempt"), "{err}");
    assert!(db.get_run("fenced", None).await.unwrap().is_none(), "nothing of the stale attempt was stored");
    assert!(db.get_session("s", None, None).await.unwrap().is_none());
}

/// 1,500 submissions against `max_queue_depth = 1000` while the only worker is busy: the excess
/// answers 429, and every accepted run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifteen_hundred_submissions_against_a_depth_of_a_thousand() {
    fifteen_hundred_against_a_thousand("memory://").await;
}

/// The same against a real PostgreSQL, where the depth bound is an advisory lock and a count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_fifteen_hundred_submissions_against_a_depth_of_a_thousand() {
    let Some(schema) = PgSchema::new("depth") else { return };
    fifteen_hundred_against_a_thousand(&schema.url).await;
}

/// The same against Redis, where the depth bound is checked inside the enqueue script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_fifteen_hundred_submissions_against_a_depth_of_a_thousand() {
    let Some(prefix) = RedisPrefix::new("depth") else { return };
    fifteen_hundred_against_a_thousand(&prefix.url).await;
}

/// The same against MariaDB, where depth-bounded enqueues take turns on a row lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_mysql_fifteen_hundred_submissions_against_a_depth_of_a_thousand() {
    let Some(db) = MySqlDatabase::new("depth") else { return };
    fifteen_hundred_against_a_thousand(&db.url).await;
}

async fn fifteen_hundred_against_a_thousand(db_url: &str) {
    let provider = FakeProvider::start().await.unwrap();
    // The first run holds the only worker until every submission is in.
    provider.push(Reply::Delayed(Duration::from_secs(600), Box::new(Reply::text("blocker"))));
    provider.set_fallback(Some(Reply::text("queued answer")));
    let cfg = format!(
        "[db]\nurl = \"{db_url}\"\n[queue]\nmax_concurrency = 1\nmax_queue_depth = 1000\npoll_interval_ms = 20\n\
         [[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&cfg)).await;
    let blocker = submit(&os, "slow", "blocker", None).await.body["run_id"].as_str().unwrap().to_owned();
    wait_status(&os, "slow", &blocker, &["RUNNING"]).await;

    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (client, base, next) = (os.client.clone(), os.base.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= 1500 {
                    break out;
                }
                let form = reqwest::multipart::Form::new()
                    .text("message", format!("n{i}"))
                    .text("stream", "false")
                    .text("background", "true");
                let resp = client.post(format!("{base}/agents/slow/runs")).multipart(form).send().await.unwrap();
                let status = resp.status().as_u16();
                let body: Value = resp.json().await.unwrap();
                out.push((status, body["run_id"].as_str().map(str::to_owned)));
            }
        }));
    }
    let mut accepted = Vec::new();
    let mut refused = 0;
    for t in tasks {
        for (status, run_id) in t.await.unwrap() {
            match status {
                202 => accepted.push(run_id.unwrap()),
                429 => refused += 1,
                other => panic!("unexpected status {other}"),
            }
        }
    }
    assert_eq!(accepted.len(), 1000, "exactly the depth was accepted while the worker was busy");
    assert_eq!(refused, 500);

    // Free the worker: cancel the blocker; every accepted run then completes.
    assert_eq!(os.post_form(&format!("/agents/slow/runs/{blocker}/cancel"), &[], None).await.status, 200);
    // The deadline is on progress, not on the whole drain: the in-memory store rewrites its job
    // table on every change, so its drain takes 90-140 s on a slow machine; a run that never
    // completes still fails the test within 30 s of the last one that did.
    let store = os.os.state.queue.as_ref().unwrap().store.clone();
    let (mut seen, mut progressed) = (0, Instant::now());
    loop {
        let (_, done) = store.list_jobs(Some(agno_core::JobStatus::Completed), Some(1), Some(1)).await.unwrap();
        if done == 1000 {
            break;
        }
        if done > seen {
            (seen, progressed) = (done, Instant::now());
        }
        assert!(
            progressed.elapsed() < Duration::from_secs(30),
            "only {done} of 1000 accepted runs completed, none in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for run_id in accepted.iter().step_by(97) {
        assert_eq!(os.get(&format!("/agents/slow/runs/{run_id}"), None).await.body["status"], "COMPLETED");
    }
}

/// One SSE event with its id.
#[derive(Debug, Clone)]
struct Frame {
    id: String,
    event: String,
    data: String,
}

/// Reads an SSE response to its end (bounded).
async fn frames(resp: reqwest::Response) -> Vec<Frame> {
    use futures::StreamExt;
    if resp.status().as_u16() != 200 {
        panic!("not an SSE answer: {} {}", resp.status(), resp.text().await.unwrap_or_default());
    }
    let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(ev)) = tokio::time::timeout_at(deadline, stream.next()).await {
        let ev = ev.unwrap();
        out.push(Frame { id: ev.id, event: ev.event, data: ev.data });
    }
    assert!(tokio::time::Instant::now() < deadline, "the stream did not end: {out:?}");
    out
}

async fn resume(
    os: &TestOs,
    agent: &str,
    run_id: &str,
    index: Option<&str>,
    header: Option<&str>,
) -> reqwest::Response {
    let mut form = reqwest::multipart::Form::new();
    if let Some(i) = index {
        form = form.text("last_event_index", i.to_owned());
    }
    let mut req = os.client.post(format!("{}/agents/{agent}/runs/{run_id}/resume", os.base)).multipart(form);
    if let Some(h) = header {
        req = req.header("Last-Event-ID", h);
    }
    req.send().await.unwrap()
}

/// `background=true` with `stream=true` tails the durable log: every frame's id is its
/// `event_index`, the ids run without gaps, and a resume after any index (form field or
/// `Last-Event-ID`) yields exactly the rest, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_background_run_resumes_without_gaps_or_duplicates() {
    let os = TestOs::start(config(FAST)).await;
    let form = reqwest::multipart::Form::new().text("message", "tail me").text("background", "true");
    let resp = os.client.post(format!("{}/agents/calc/runs", os.base)).multipart(form).send().await.unwrap();
    let all = frames(resp).await;
    assert_eq!(all.first().map(|f| f.event.as_str()), Some("RunStarted"), "{all:?}");
    assert_eq!(all.last().map(|f| f.event.as_str()), Some("RunCompleted"), "{all:?}");
    for (i, f) in all.iter().enumerate() {
        assert_eq!(f.id, i.to_string(), "ids are the event indexes, without gaps");
        let data: Value = serde_json::from_str(&f.data).unwrap();
        assert_eq!(data["event_index"], i, "{data}");
        assert_eq!(data["event"], f.event.as_str());
    }
    let run_id = serde_json::from_str::<Value>(&all[0].data).unwrap()["run_id"].as_str().unwrap().to_owned();
    wait_status(&os, "calc", &run_id, &["COMPLETED"]).await;

    let k = all.len() / 2;
    let rest = frames(resume(&os, "calc", &run_id, Some(&k.to_string()), None).await).await;
    assert_eq!(
        rest.iter().map(|f| &f.data).collect::<Vec<_>>(),
        all[k + 1..].iter().map(|f| &f.data).collect::<Vec<_>>()
    );
    let by_header = frames(resume(&os, "calc", &run_id, None, Some(&k.to_string())).await).await;
    assert_eq!(by_header.iter().map(|f| &f.id).collect::<Vec<_>>(), rest.iter().map(|f| &f.id).collect::<Vec<_>>());
    let everything = frames(resume(&os, "calc", &run_id, None, None).await).await;
    assert_eq!(everything.len(), all.len(), "no index: the whole log");
    let at_end = frames(resume(&os, "calc", &run_id, Some(&(all.len() - 1).to_string()), None).await).await;
    assert!(at_end.is_empty(), "nothing after the last event, and the stream closes: {at_end:?}");

    for bad in ["-1", "-7", "abc", "1.5"] {
        let r = resume(&os, "calc", &run_id, Some(bad), None).await;
        assert_eq!(r.status().as_u16(), 422, "last_event_index={bad}");
    }
    assert_eq!(resume(&os, "calc", &run_id, None, Some("x")).await.status().as_u16(), 422);
    assert_eq!(resume(&os, "calc", "no-such-run", None, None).await.status().as_u16(), 404, "never an empty 200");
    assert_eq!(resume(&os, "other", &run_id, None, None).await.status().as_u16(), 404, "another agent's run");
}

/// A background run of agent `slow` caught while it runs: its first model turn is quick, the
/// next waits 700 ms, so what resumes it lands mid-run.
async fn running_slow_run(message: &str) -> (TestOs, FakeProvider, String) {
    let (os, provider) = slow("", 10).await;
    provider.push(Reply::text("first"));
    provider.set_latency(Duration::from_millis(700));
    let r = submit(&os, "slow", message, None).await;
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    wait_status(&os, "slow", &run_id, &["RUNNING"]).await;
    (os, provider, run_id)
}

/// A resume while the run executes replays what was logged and follows live events to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_during_the_run_follows_it_live() {
    let (os, _provider, run_id) = running_slow_run("follow me").await;
    let live = frames(resume(&os, "slow", &run_id, None, None).await).await;
    assert_eq!(live.first().map(|f| f.event.as_str()), Some("RunStarted"), "{live:?}");
    assert_eq!(live.last().map(|f| f.event.as_str()), Some("RunCompleted"), "{live:?}");
    let ids: Vec<u64> = live.iter().map(|f| f.id.parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
}

/// Many tails of one live run (they share the replica's reads of its log): each gets every
/// event after its index, once, in order, byte for byte the same as the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tails_of_one_run_get_the_same_events() {
    let (os, _provider, run_id) = running_slow_run("follow me, all of you").await;
    let mut tails = Vec::new();
    for i in 0..24 {
        let (client, base, run_id) = (os.client.clone(), os.base.clone(), run_id.clone());
        tails.push(tokio::spawn(async move {
            // Every third tail resumes after the first event.
            let mut form = reqwest::multipart::Form::new();
            if i % 3 == 0 {
                form = form.text("last_event_index", "0");
            }
            let url = format!("{base}/agents/slow/runs/{run_id}/resume");
            frames(client.post(url).multipart(form).send().await.unwrap()).await
        }));
    }
    let mut seen = Vec::new();
    for t in tails {
        seen.push(t.await.unwrap());
    }
    let everything = &seen[1];
    assert_eq!(everything.first().map(|f| f.event.as_str()), Some("RunStarted"), "{everything:?}");
    assert_eq!(everything.last().map(|f| f.event.as_str()), Some("RunCompleted"), "{everything:?}");
    let ids: Vec<u64> = everything.iter().map(|f| f.id.parse().unwrap()).collect();
    assert!(ids.iter().enumerate().all(|(i, id)| *id == i as u64), "from 0, without gaps: {ids:?}");
    for (i, tail) in seen.iter().enumerate() {
        let want = if i % 3 == 0 { &everything[1..] } else { &everything[..] };
        let got: Vec<(&str, &str)> = tail.iter().map(|f| (f.id.as_str(), f.data.as_str())).collect();
        let want: Vec<(&str, &str)> = want.iter().map(|f| (f.id.as_str(), f.data.as_str())).collect();
        assert_eq!(got, want, "tail {i}");
    }
}

/// Cancelling a running background run: recorded in the database, the worker stops the run and
/// records its end (`RunCancelled` in the log, the run CANCELLED); a second cancel is 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_background_run_is_cancelled_and_records_its_end() {
    let (os, _provider) = slow("", 5_000).await;
    let run_id = submit(&os, "slow", "long", None).await.body["run_id"].as_str().unwrap().to_owned();
    wait_status(&os, "slow", &run_id, &["RUNNING"]).await;
    let c = os.post_form(&format!("/agents/slow/runs/{run_id}/cancel"), &[], None).await;
    assert_eq!(c.status, 200, "{:?}", c.body);
    let run = wait_status(&os, "slow", &run_id, &["CANCELLED"]).await;
    assert_eq!(run["run_id"], run_id.as_str());
    let log = frames(resume(&os, "slow", &run_id, None, None).await).await;
    assert_eq!(log.last().map(|f| f.event.as_str()), Some("RunCancelled"), "{log:?}");
    assert!(!log.last().unwrap().id.is_empty(), "the worker's own event, from the log");
    assert_eq!(wait_job(&os, &run_id).await.status, agno_core::JobStatus::Cancelled);
    // A second cancel: 200 as Agno answers, and nothing changes.
    let again = os.post_form(&format!("/agents/slow/runs/{run_id}/cancel"), &[], None).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(os.get(&format!("/agents/slow/runs/{run_id}"), None).await.body["status"], "CANCELLED", "no change");
}

/// HITL in the background: the paused run keeps its job; continue queues it again under the same
/// run id, and the log goes on from where it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_background_run_continues_under_its_run_id() {
    let cfg = "[db]\nurl = \"memory://\"\n[queue]\npoll_interval_ms = 50\n[[agents]]\nid = \"guarded\"\nmodel = \"test\"\n\
               tools = [{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"] }]\n";
    let os = TestOs::start(config(cfg)).await;
    let run_id = submit(&os, "guarded", "add please", None).await.body["run_id"].as_str().unwrap().to_owned();
    let paused = wait_status(&os, "guarded", &run_id, &["PAUSED"]).await;
    assert_eq!(wait_job(&os, &run_id).await.status, agno_core::JobStatus::Paused);
    let before = frames(resume(&os, "guarded", &run_id, None, None).await).await;
    assert_eq!(before.last().map(|f| f.event.as_str()), Some("RunPaused"), "{before:?}");

    let mut tools = paused["tools"].as_array().unwrap().clone();
    for t in &mut tools {
        t["confirmed"] = Value::Bool(true);
    }
    let tools = Value::Array(tools).to_string();
    let c = os
        .post_form(&format!("/agents/guarded/runs/{run_id}/continue"), &[("tools", &tools), ("stream", "false")], None)
        .await;
    assert_eq!(c.status, 202, "{:?}", c.body);
    assert_eq!(c.body["run_id"], run_id.as_str());
    let done = wait_status(&os, "guarded", &run_id, &["COMPLETED"]).await;
    assert_eq!(done["run_id"], run_id.as_str());
    let job = wait_job(&os, &run_id).await;
    assert_eq!((job.status, job.attempt), (agno_core::JobStatus::Completed, 2), "same job, one more attempt");
    let log = frames(resume(&os, "guarded", &run_id, None, None).await).await;
    let ids: Vec<u64> = log.iter().map(|f| f.id.parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "one numbering across pause and continue: {ids:?}");
    let names: Vec<&str> = log.iter().map(|f| f.event.as_str()).collect();
    assert!(names.contains(&"RunPaused") && names.contains(&"RunContinued"), "{names:?}");
    assert_eq!(names.last(), Some(&"RunCompleted"));
    // No longer paused: answers are refused; a plain continue forks it into a new run (inline).
    let path = format!("/agents/guarded/runs/{run_id}/continue");
    let c = os.post_form(&path, &[("tools", &tools), ("stream", "false")], None).await;
    assert_eq!(c.status, 400, "{:?}", c.body);
    assert!(common::detail(&c.body).contains("waits for no answers"), "{:?}", c.body);
    let c = os.post_form(&path, &[("stream", "false")], None).await;
    assert_eq!(c.status, 200, "{:?}", c.body);
    assert_eq!(c.body["forked_from_run_id"], run_id.as_str());
    assert_eq!(os.get(&format!("/agents/guarded/runs/{run_id}"), None).await.body["status"], "COMPLETED");
}

/// A SQLite file prepared before the OS starts, so the OS finds exactly the state a replica that
/// died between two writes leaves behind.
async fn prepared_sqlite(tag: &str) -> (String, agno_db::SqliteDb) {
    let path = std::env::temp_dir().join(format!("agno-bg-{tag}-{}.db", agno_core::new_id()));
    let url = format!("sqlite://{}", path.display());
    let db = agno_db::SqliteDb::connect(&url).await.unwrap();
    db.create_tables().await.unwrap();
    (url, db)
}

/// Stores `run` (and its session).
async fn put_run(db: &agno_db::SqliteDb, run: &agno_core::RunOutput) {
    use agno_core::{RunStore, SessionStore};
    let session_id = run.session_id.clone().unwrap();
    let mut session = agno_core::AgentSession::new(session_id.clone());
    session.agent_id.clone_from(&run.agent_id);
    let update = agno_core::StateUpdate::keep();
    db.upsert_session(&session, &update).await.unwrap();
    db.upsert_run(run, &session_id, None).await.unwrap();
}

fn pending_run(id: &str, session: &str, created_at: i64) -> agno_core::RunOutput {
    let mut run = agno_core::RunOutput::new(id.to_owned(), session.to_owned());
    run.agent_id = Some("calc".to_owned());
    run.status = agno_core::RunStatus::Pending;
    run.created_at = created_at;
    run
}

/// What a replica dying between two writes leaves is repaired by the survivors: a PENDING run
/// whose job was never committed (never acknowledged) is removed, and a run whose job was swept
/// by a sweeper that died before ending the run is ended ERROR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_left_behind_by_a_dead_replica_are_repaired() {
    use agno_core::JobStore;
    let (url, db) = prepared_sqlite("repair").await;
    let old = agno_core::now_epoch_secs() - 600;
    // 1. The submission died after writing the PENDING run, before committing the job.
    put_run(&db, &pending_run("orphan", "s-orphan", old)).await;
    // 2. A job swept (failed) by a sweeper that died before ending its run.
    let mut job = agno_core::Job::agent_run("swept", "calc", "s-swept", serde_json::json!({"message": "x"}));
    job.created_at = old;
    job.available_at = 0;
    db.enqueue_job(&job, 0).await.unwrap();
    put_run(&db, &pending_run("swept", "s-swept", old)).await;
    db.claim_job("dead", 2, old).await.unwrap().unwrap();
    assert_eq!(db.sweep_jobs(2, old + 100, agno_os::queue::LOST_WORKER).await.unwrap().len(), 1);
    // 3. A fresh PENDING run of a submission in progress is left alone.
    let now = agno_core::now_epoch_secs();
    put_run(&db, &pending_run("fresh", "s-fresh", now + 3600)).await;
    drop(db);

    let cfg = format!(
        "[db]\nurl = \"{url}\"\n[queue]\npoll_interval_ms = 50\nlock_grace_seconds = 2\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n"
    );
    let os = TestOs::start(config(&cfg)).await;
    let swept = wait_status(&os, "calc", "swept", &["ERROR"]).await;
    assert_eq!(swept["content"], agno_os::queue::LOST_WORKER);
    let deadline = Instant::now() + Duration::from_secs(30);
    while os.get("/agents/calc/runs/orphan", None).await.status != 404 {
        assert!(Instant::now() < deadline, "the orphaned PENDING run was never removed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(os.get("/agents/calc/runs/fresh", None).await.body["status"], "PENDING", "young runs are left alone");
}

/// The job of run `run_id` of the agent `slow`, claimed long ago by a worker that died after
/// storing the run with `status` (and `content`): what the job's retry finds. At most
/// `max_attempts` claims. The database's URL, and the database (drop it before the OS starts).
async fn left_by_a_dead_worker(
    run_id: &str,
    max_attempts: i64,
    status: agno_core::RunStatus,
    content: Option<&str>,
) -> (String, agno_db::SqliteDb) {
    use agno_core::JobStore;
    let (url, db) = prepared_sqlite(run_id).await;
    let old = agno_core::now_epoch_secs() - 600;
    let session = format!("s-{run_id}");
    let mut job = agno_core::Job::agent_run(run_id, "slow", &session, serde_json::json!({"message": "once"}));
    job.created_at = old;
    job.available_at = 0;
    job.max_attempts = max_attempts;
    db.enqueue_job(&job, 0).await.unwrap();
    db.claim_job("dead", 2, old).await.unwrap().unwrap();
    let mut run = pending_run(run_id, &session, old);
    run.agent_id = Some("slow".to_owned());
    run.status = status;
    run.content = content.map(|c| serde_json::json!(c));
    put_run(&db, &run).await;
    (url, db)
}

/// The configuration of an OS over `url` serving the agent `slow` (an OpenAI model on
/// `provider`), its queue polling fast (`queue_extra`: more `[queue]` lines).
fn slow_agent_over(url: &str, provider: &FakeProvider, queue_extra: &str) -> String {
    format!(
        "[db]\nurl = \"{url}\"\n[queue]\npoll_interval_ms = 50\nlock_grace_seconds = 2\n{queue_extra}[[agents]]\n\
         id = \"slow\"\nmodel = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    )
}

/// A run stored COMPLETED by an attempt that died before recording the job's outcome is not
/// executed again by the retry: the job is settled completed without calling the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_run_is_not_executed_again_by_a_retry() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("second execution")));
    let (url, _) = left_by_a_dead_worker("done", 3, agno_core::RunStatus::Completed, Some("first execution")).await;
    let os = TestOs::start(config(&slow_agent_over(&url, &provider, ""))).await;
    let job = wait_job(&os, "done").await;
    assert_eq!((job.status, job.attempt), (agno_core::JobStatus::Completed, 2));
    assert_eq!(provider.request_count(), 0, "the model was not called again");
    let run = os.get("/agents/slow/runs/done", None).await;
    assert_eq!(run.body["content"], "first execution");
}

/// A retry that cannot read what the earlier attempt stored (here the stored run is unreadable)
/// does not take it for "nothing stored": it neither runs again nor ends the run, it retries, and
/// the job fails with the storage error once its attempts are spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_that_cannot_read_the_stored_run_does_not_run_again() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("second execution")));
    let (url, db) = left_by_a_dead_worker("unread", 2, agno_core::RunStatus::Running, None).await;
    drop(db);
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let changed = sqlx::query("UPDATE agno_runs SET run_data = '{not json' WHERE run_id = 'unread'")
        .execute(&pool)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(changed, 1);
    pool.close().await;

    let os = TestOs::start(config(&slow_agent_over(&url, &provider, "retry_delay_seconds = 0\n"))).await;
    let job = wait_job(&os, "unread").await;
    assert_eq!(job.status, agno_core::JobStatus::Failed);
    let error = job.error.unwrap_or_default();
    assert!(error.starts_with("cannot read the stored run:"), "{error}");
    assert_eq!(provider.request_count(), 0, "the model was not called over a run it could not read");
}

/// At `max_attempts = 1`, a worker that stored its run COMPLETED and died before recording the
/// job's outcome: the sweeper marks the job completed instead of leaving it failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swept_job_whose_run_completed_is_marked_completed() {
    use agno_core::JobStore;
    let (url, db) = prepared_sqlite("swept-done").await;
    let old = agno_core::now_epoch_secs() - 600;
    let mut job = agno_core::Job::agent_run("finished", "calc", "s-finished", serde_json::json!({"message": "x"}));
    job.created_at = old;
    job.available_at = 0;
    db.enqueue_job(&job, 0).await.unwrap();
    db.claim_job("dead", 2, old).await.unwrap().unwrap();
    let mut run = pending_run("finished", "s-finished", old);
    run.status = agno_core::RunStatus::Completed;
    run.content = Some(serde_json::json!("stored before the crash"));
    put_run(&db, &run).await;
    drop(db);

    let cfg = format!(
        "[db]\nurl = \"{url}\"\n[queue]\npoll_interval_ms = 50\nlock_grace_seconds = 2\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n"
    );
    let os = TestOs::start(config(&cfg)).await;
    let queue = os.os.state.queue.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = queue.store.get_job("finished", None).await.unwrap().unwrap();
        if job.status == agno_core::JobStatus::Completed {
            assert_eq!(job.error, None);
            break;
        }
        assert!(Instant::now() < deadline, "the swept job was never marked completed: {job:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let run = os.get("/agents/calc/runs/finished", None).await;
    assert_eq!(
        (run.body["status"].as_str(), run.body["content"].as_str()),
        (Some("COMPLETED"), Some("stored before the crash"))
    );
}

/// `timeout_seconds` ends a runaway run: the worker cancels it (stored `CANCELLED`, never left
/// `RUNNING`) and fails its job with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_run_is_ended_by_timeout_seconds() {
    let (os, _provider) = slow("timeout_seconds = 1", 60_000).await;
    let r = submit(&os, "slow", "never ends", None).await;
    assert_eq!(r.status, 202);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let job = wait_job(&os, &run_id).await;
    assert_eq!(job.status, agno_core::JobStatus::Failed);
    assert!(job.error.as_deref().is_some_and(|e| e.contains("timed out after 1 s")), "{:?}", job.error);
    let run = wait_status(&os, "slow", &run_id, &["CANCELLED", "ERROR"]).await;
    assert_eq!(run["run_id"], run_id.as_str());
}

/// Retention at the server level: at start the server deletes ended jobs (and their event
/// logs) older than `retention_seconds`; recent ones and paused ones stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_deletes_ended_jobs_past_retention() {
    let url = common::sqlite_url("retention");
    let db = agno_db::open(&url).await.unwrap();
    db.create_tables().await.unwrap();
    let store = db.clone().job_store().unwrap();
    let now = agno_core::now_epoch_secs();
    for (id, ended_at) in [("old-job", now - 7_200), ("recent-job", now - 10)] {
        let job = agno_core::Job::agent_run(id, "calc", format!("s-{id}"), serde_json::json!({"message": "x"}));
        store.enqueue_job(&job, 0).await.unwrap();
        let claimed = store.claim_job("seeder", 60, now).await.unwrap().unwrap();
        let outcome = agno_core::JobOutcome::Settled(agno_core::JobStatus::Completed, None);
        assert!(
            store
                .finish_job(&agno_core::JobLease::new(&claimed.id, "seeder", claimed.attempt), &outcome, ended_at)
                .await
                .unwrap()
        );
    }
    drop(store);
    drop(db);
    let cfg = format!(
        "[db]\nurl = \"{url}\"\n[queue]\nretention_seconds = 3600\npoll_interval_ms = 50\n\
         [[agents]]\nid = \"calc\"\nmodel = \"test\"\n"
    );
    let os = TestOs::start(config(&cfg)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while os.get("/queue/jobs/old-job", None).await.status != 404 {
        assert!(Instant::now() < deadline, "the old job was never deleted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(os.get("/queue/jobs/recent-job", None).await.status, 200, "a recent job stays");
}

/// The real fence: a live worker whose lease another worker takes over mid-run writes nothing
/// further — not its run row, not its events, not the job's outcome — and the new owner's
/// writes stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_worker_whose_lease_is_taken_over_writes_nothing_further() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("the first worker's late answer")));
    provider.set_latency(Duration::from_secs(30));
    let url = common::sqlite_url("takeover");
    let cfg = format!(
        "[db]\nurl = \"{url}\"\n[queue]\nmax_attempts = 3\nlock_grace_seconds = 6\npoll_interval_ms = 50\n\
         [[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&cfg)).await;
    let r = submit(&os, "slow", "who writes last", None).await;
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while provider.request_count() == 0 {
        assert!(Instant::now() < deadline, "the run never reached the model");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Another worker claims the job as if the first one's lease had run out (the store is told
    // the time is two minutes later), and writes the run as the new owner.
    let db = agno_db::open(&url).await.unwrap();
    let store = db.clone().job_store().unwrap();
    // The model answers after 30 s, so the run is live until the takeover stops it (checked
    // here, before the claim: once claimed, the first worker may notice at any moment; its
    // heartbeat, every 2 s, notices at the latest).
    assert!(agno_runtime::is_running(&run_id), "the first worker's run is live at the takeover");
    let later = agno_core::now_epoch_secs() + 120;
    let taken = store.claim_job("thief", 60, later).await.unwrap().expect("the lease is claimable at that time");
    assert_eq!((taken.id.as_str(), taken.attempt), (run_id.as_str(), 2));
    let logged_before = store.read_events(&run_id, -1, 1000).await.unwrap().len();
    let mut run = db.get_run(&run_id, None).await.unwrap().unwrap();
    run.content = Some(serde_json::json!("the new owner's answer"));
    db.upsert_run(&run, &taken.session_id, None).await.unwrap();

    // The first worker was running the run; its next fenced write (an event-log append) is
    // refused, so it stops the run, and writes nothing on the way out.
    let deadline = Instant::now() + Duration::from_secs(20);
    while agno_runtime::is_running(&run_id) {
        assert!(Instant::now() < deadline, "the first worker's run never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stored = db.get_run(&run_id, None).await.unwrap().unwrap();
    assert_eq!(stored.content, Some(serde_json::json!("the new owner's answer")), "the stale worker overwrote the run");
    let events = store.read_events(&run_id, -1, 1000).await.unwrap();
    assert!(events.iter().all(|e| e.attempt == 1), "only attempt 1 wrote events so far");
    assert!(events.len() <= logged_before + 1, "attempt 1 kept logging after the takeover: {events:?}");
    assert!(!events.iter().any(agno_core::StoredEvent::ends_stream), "attempt 1 logged its end: {events:?}");
    let job = store.get_job(&run_id, None).await.unwrap().unwrap();
    assert_eq!(
        (job.locked_by.as_deref(), job.attempt),
        (Some("thief"), 2),
        "the job's outcome was not recorded by the old worker"
    );
    assert_eq!(job.status, agno_core::JobStatus::Running);
}

/// The retry of a run whose worker died mid-run is traced as its own attempt: one trace (the
/// dead attempt's spans died with it) with the run's ids, made by the replica that retried it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_attempt_is_traced_with_the_runs_ids() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("second attempt")));
    let (url, db) = left_by_a_dead_worker("retried", 3, agno_core::RunStatus::Running, None).await;
    drop(db);
    let cfg = format!("{}[tracing]\nenabled = true\n", slow_agent_over(&url, &provider, "retry_delay_seconds = 0\n"));
    let os = TestOs::start(config(&cfg)).await;
    let job = wait_job(&os, "retried").await;
    assert_eq!((job.status, job.attempt), (agno_core::JobStatus::Completed, 2), "{job:?}");
    let tracing = os.os.state.tracing.clone().expect("tracing is on");
    let deadline = Instant::now() + Duration::from_secs(30);
    let trace = loop {
        tracing.flush().await;
        let list = os.get("/traces?run_id=retried", None).await;
        if list.body["meta"]["total_count"] == 1 {
            break list.body["data"][0].clone();
        }
        assert!(Instant::now() < deadline, "no trace of the retried run: {}", list.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!((&trace["name"], &trace["agent_id"]), (&serde_json::json!("Agent.run"), &serde_json::json!("slow")));
    assert_eq!(trace["session_id"], "s-retried");
    assert_eq!(trace["status"], "OK");
    assert_eq!(trace["total_spans"], 2, "the run and its model call: {trace}");
}
