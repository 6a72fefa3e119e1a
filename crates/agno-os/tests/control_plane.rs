//! The control plane's pages (`/ui`) over HTTP, on a server with JWT auth and user isolation:
//! signing in (a refused or expired token back at the sign-in page with the OS's reason), pages
//! that show only what the viewer's token may read, text from runs escaped, 404 pages for
//! missing ids, and the same-origin rule for everything that acts. The browser walk through the
//! pages is `control_plane_browser.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{PgSchema, SECRET, TestOs, config, sqlite_url, token, token_with};
use serde_json::json;

const USER: &[&str] = &["agents:read", "agents:run", "sessions:read", "traces:read", "approvals:read", "memories:read"];

fn os_config(provider: &FakeProvider) -> String {
    os_config_on(provider, &sqlite_url("control-plane"))
}

fn os_config_on(provider: &FakeProvider, db: &str) -> String {
    format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{secret}]\nuser_isolation = true\n\
         [db]\nurl = \"{db}\"\n[tracing]\nenabled = true\n\
         [[agents]]\nid = \"helper\"\nname = \"Helper\"\ndescription = \"Answers <em>questions</em>\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{url}\", api_key = \"sk\" }}\n",
        secret = serde_json::to_string(SECRET).unwrap(),
        url = provider.base_url()
    )
}

/// A client that keeps no cookies and follows no redirects (each step says what it sends).
fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

fn cookie(token: &str) -> String {
    format!("agno_ui_token={token}")
}

async fn page(os: &TestOs, path: &str, token: Option<&str>) -> (u16, String, Option<String>) {
    let mut req = client().get(format!("{}{path}", os.base));
    if let Some(t) = token {
        req = req.header("cookie", cookie(t));
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let location = resp.headers().get("location").map(|l| l.to_str().unwrap().to_owned());
    (status, resp.text().await.unwrap(), location)
}

#[tokio::test]
async fn signing_in_checks_the_token_as_the_routes_do() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&os_config(&provider))).await;

    // No token: the sign-in page.
    let (status, _, location) = page(&os, "/ui/sessions", None).await;
    assert_eq!((status, location.as_deref()), (303, Some("/ui/sign-in?reason=")));
    let (status, body, _) = page(&os, "/ui/sign-in", None).await;
    assert_eq!(status, 200);
    assert!(body.contains("name=\"token\""), "{body}");

    // A wrong token at the form: refused with the OS's reason, no cookie.
    let form = [("token", "not.a.jwt")];
    let resp = client().post(format!("{}/ui/sign-in", os.base)).form(&form).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.headers().get("set-cookie").is_none());
    assert!(resp.text().await.unwrap().contains("The OS refused this token"));

    // A good one: kept in an HttpOnly, SameSite=Strict cookie for the UI's path only.
    let good = token("ann", USER);
    let resp = client().post(format!("{}/ui/sign-in", os.base)).form(&[("token", good.as_str())]).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 303);
    let set = resp.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(set.starts_with("agno_ui_token=") && set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
    assert!(set.contains("Path=/ui"), "{set}");

    // Posted from another site: refused, whatever the token.
    let resp = client()
        .post(format!("{}/ui/sign-in", os.base))
        .header("sec-fetch-site", "cross-site")
        .form(&[("token", good.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);

    // An expired token in the cookie: back at the sign-in page, saying why.
    let expired = token_with(SECRET, "ann", USER, json!({"exp": chrono::Utc::now().timestamp() - 600}));
    let (status, _, location) = page(&os, "/ui/sessions", Some(&expired)).await;
    assert_eq!(status, 303);
    let location = location.unwrap();
    assert!(location.starts_with("/ui/sign-in?reason=") && location.to_lowercase().contains("expired"), "{location}");
    let (_, body, _) = page(&os, &location, None).await;
    assert!(body.to_lowercase().contains("expired"), "{body}");

    // Signed in: the start page lists the agent, its description escaped.
    let (status, body, _) = page(&os, "/ui/", Some(&good)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Helper") && body.contains("Answers &lt;em&gt;questions&lt;/em&gt;"), "{body}");
}

#[tokio::test]
async fn pages_show_only_what_the_token_may_read_and_escape_what_runs_said() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Scripted::text("<img src=x onerror=alert(2)> done"));
    let os = TestOs::start(config(&os_config(&provider))).await;
    let (ann, bob) = (token("ann", USER), token("bob", USER));
    let message = "<script>alert(1)</script> hello";
    let r = os
        .post_form(
            "/agents/helper/runs",
            &[("message", message), ("stream", "false"), ("session_id", "s-ann")],
            Some(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    // The run's spans are stored as it ends (on their own task): wait for its trace.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while os.get(&format!("/traces?run_id={run_id}"), Some(&ann)).await.body["data"]
        .as_array()
        .is_none_or(|d| d.is_empty())
    {
        assert!(std::time::Instant::now() < deadline, "the run was never traced");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // Ann sees her session, her run and its trace; every text from the run is escaped.
    let (status, body, _) = page(&os, "/ui/sessions?type=agent", Some(&ann)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("/ui/sessions/s-ann?type=agent"), "{body}");
    let (status, body, _) = page(&os, "/ui/sessions/s-ann?type=agent", Some(&ann)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt; hello"), "{body}");
    assert!(!body.contains("<script>alert(1)") && !body.contains("<img src=x"), "{body}");
    let (status, body, _) = page(&os, &format!("/ui/sessions/s-ann/runs/{run_id}?type=agent"), Some(&ann)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("&lt;img src=x onerror=alert(2)&gt; done"), "{body}");
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(body.contains("Open its trace"), "the run's trace is linked: {body}");
    let (status, body, _) = page(&os, "/ui/traces", Some(&ann)).await;
    assert_eq!(status, 200);
    assert!(body.contains("/ui/traces/"), "{body}");

    // Bob sees none of it: an empty listing, and Ann's ids are not found.
    let (status, body, _) = page(&os, "/ui/sessions?type=agent", Some(&bob)).await;
    assert_eq!(status, 200);
    assert!(!body.contains("s-ann"), "{body}");
    let (status, body, _) = page(&os, "/ui/traces", Some(&bob)).await;
    assert_eq!(status, 200);
    assert!(!body.contains("/ui/traces/"), "{body}");
    let (status, body, _) = page(&os, &format!("/ui/sessions/s-ann/runs/{run_id}?type=agent"), Some(&bob)).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("Not found"), "{body}");

    // The session filter expression, run by the store: Ann finds hers, Bob nothing; a filter
    // that is not JSON, or that the route refuses, is a page saying why.
    let filter = |f: &str| {
        format!("/ui/sessions?{}", form_urlencoded::Serializer::new(String::new()).append_pair("filter", f).finish())
    };
    let by_id = filter(r#"{"op": "EQ", "key": "session_id", "value": "s-ann"}"#);
    let (status, body, _) = page(&os, &by_id, Some(&ann)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("/ui/sessions/s-ann?type=agent"), "{body}");
    let (_, body, _) = page(&os, &by_id, Some(&bob)).await;
    assert!(!body.contains("/ui/sessions/s-ann"), "{body}");
    let (status, body, _) = page(&os, &filter("{not json"), Some(&ann)).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("The filter is not JSON"), "{body}");
    let (status, body, _) = page(&os, &filter(r#"{"op": "EQ", "key": "nope", "value": 1}"#), Some(&ann)).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("nope"), "the route's reason: {body}");

    // Missing pages and ids are 404 pages, not errors.
    for path in ["/ui/nowhere", "/ui/traces/no-such-trace", "/ui/chat/agents/nobody", "/ui/schedules/nope"] {
        let (status, body, _) = page(&os, path, Some(&ann)).await;
        assert!(status == 404 || status == 403, "{path}: {status} {body}");
        assert!(body.starts_with("<!DOCTYPE html>"), "{path}: {body}");
    }

    // Sections the token cannot read are not offered.
    let (_, body, _) = page(&os, "/ui/", Some(&ann)).await;
    assert!(!body.contains("/ui/schedules\"") && !body.contains("/ui/metrics\""), "{body}");
    let admin = token("root", &["agent_os:admin"]);
    let (_, body, _) = page(&os, "/ui/", Some(&admin)).await;
    assert!(body.contains("/ui/schedules\"") && body.contains("/ui/metrics\""), "{body}");
}

#[tokio::test]
async fn the_pages_api_answers_only_the_ui_itself() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&os_config(&provider))).await;
    let ann = token("ann", USER);
    let get = |headers: &[(&str, &str)]| {
        let mut req = client().get(format!("{}/ui/api/agents", os.base)).header("cookie", cookie(&ann));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req
    };
    assert_eq!(get(&[]).send().await.unwrap().status().as_u16(), 403, "without X-Agno-UI");
    let cross = get(&[("x-agno-ui", "1"), ("sec-fetch-site", "cross-site")]).send().await.unwrap();
    assert_eq!(cross.status().as_u16(), 403, "from another site");
    let own = get(&[("x-agno-ui", "1"), ("sec-fetch-site", "same-origin")]).send().await.unwrap();
    assert_eq!(own.status().as_u16(), 200, "{:?}", own.text().await);
    let listed: serde_json::Value = own.json().await.unwrap();
    assert_eq!(listed[0]["id"], "helper");
    // The route's own rules apply: without agents:read, 403 from the route itself.
    let reader = token("cat", &["sessions:read"]);
    let resp = client()
        .get(format!("{}/ui/api/agents", os.base))
        .header("cookie", cookie(&reader))
        .header("x-agno-ui", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);

    // An action posted from another origin is refused before it reaches the OS.
    let resp = client()
        .post(format!("{}/ui/approvals/a1/resolve", os.base))
        .header("cookie", cookie(&token("root", &["agent_os:admin"])))
        .header("origin", "http://evil.example")
        .form(&[("status", "approved")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_one_replica_shows_a_run_made_on_the_other_on_postgres() {
    let Some(schema) = PgSchema::new("ui_replicas") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Scripted::text("answered on replica B"));
    let a = TestOs::start(config(&os_config_on(&provider, &schema.url))).await;
    let b = TestOs::start(config(&os_config_on(&provider, &schema.url))).await;
    let ann = token("ann", USER);
    let r = b
        .post_form(
            "/agents/helper/runs",
            &[("message", "hello B"), ("stream", "false"), ("session_id", "s-b")],
            Some(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();

    let (status, body, _) = page(&a, "/ui/sessions?type=agent", Some(&ann)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("/ui/sessions/s-b?type=agent"), "replica A lists the session B ran: {body}");
    let (status, body, _) = page(&a, &format!("/ui/sessions/s-b/runs/{run_id}?type=agent"), Some(&ann)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("answered on replica B") && body.contains("hello B"), "{body}");
    let (_, body, _) = page(&a, "/ui/sessions?type=agent", Some(&token("bob", USER))).await;
    assert!(!body.contains("s-b"), "another user sees none of it on either replica: {body}");
}

#[tokio::test]
async fn the_security_key_signs_in_and_a_proxy_may_send_the_token_itself() {
    let cfg = "[auth]\nmode = \"key\"\nsecurity_key = \"s3cret-key\"\n[db]\nurl = \"memory://\"\n\
               [[agents]]\nid = \"echo\"\nname = \"Echo\"\nmodel = \"test\"\n";
    let os = TestOs::start(config(cfg)).await;
    let resp = client().post(format!("{}/ui/sign-in", os.base)).form(&[("token", "wrong-key")]).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.text().await.unwrap().contains("Invalid authentication token"));
    let resp = client().post(format!("{}/ui/sign-in", os.base)).form(&[("token", "s3cret-key")]).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 303);
    let (status, body, _) = page(&os, "/ui/", Some("s3cret-key")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Echo") && body.contains("/ui/queue\""), "the key is the admin: {body}");
    // A proxy in front sends Authorization itself; no cookie needed.
    let resp = client().get(format!("{}/ui/sessions", os.base)).bearer_auth("s3cret-key").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // Signing out forgets the cookie; another site cannot sign the viewer out.
    let cross = client()
        .post(format!("{}/ui/sign-out", os.base))
        .header("cookie", cookie("s3cret-key"))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    assert!(cross.headers().get("set-cookie").is_none());
    let resp =
        client().post(format!("{}/ui/sign-out", os.base)).header("cookie", cookie("s3cret-key")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 303);
    assert!(resp.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
}
