//! CORS as Python AgentOS answers it: preflights from allowed origins answered before auth in
//! every auth mode, unknown origins (and `null`) refused with 400, CORS headers on every response
//! to an allowed origin (errors included), none for others, configured origins replacing Agno's
//! defaults, a full-match origin regex; a preflight has no side effects and CORS never widens what
//! auth allows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{SECRET, TestOs, config, token};
use reqwest::Method;

const AGENT: &str = "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n";

fn auth_modes() -> Vec<(&'static str, String)> {
    vec![
        ("none", AGENT.to_owned()),
        ("key", format!("[auth]\nmode = \"key\"\nsecurity_key = \"s3cret-key\"\n{AGENT}")),
        ("jwt", format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\n{AGENT}")),
        (
            "jwt + isolation",
            format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n{AGENT}"),
        ),
    ]
}

async fn preflight(os: &TestOs, path: &str, origin: &str, method: &str, headers: Option<&str>) -> reqwest::Response {
    let mut req = os
        .client
        .request(Method::OPTIONS, format!("{}{path}", os.base))
        .header("origin", origin)
        .header("access-control-request-method", method);
    if let Some(h) = headers {
        req = req.header("access-control-request-headers", h);
    }
    req.send().await.unwrap()
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflights_are_answered_as_agno_does_in_every_auth_mode() {
    for (mode, cfg) in auth_modes() {
        let os = TestOs::start(config(&cfg)).await;
        for origin in agno_os::cors::DEFAULT_ORIGINS {
            let resp = preflight(&os, "/agents/calc/runs", origin, "POST", Some("content-type,authorization")).await;
            assert_eq!(resp.status(), 200, "{mode}: preflight from {origin}");
            assert_eq!(header(&resp, "access-control-allow-origin"), Some(origin), "{mode}");
            assert_eq!(header(&resp, "access-control-allow-credentials"), Some("true"), "{mode}");
            assert_eq!(header(&resp, "access-control-allow-headers"), Some("content-type,authorization"), "{mode}");
            assert_eq!(header(&resp, "access-control-max-age"), Some("600"), "{mode}");
            let methods = header(&resp, "access-control-allow-methods").unwrap();
            for m in ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"] {
                assert!(methods.contains(m), "{mode}: {m} in {methods}");
            }
        }
        // Every path, routed or not, answers the preflight (it never reaches routing or auth).
        for path in ["/sessions", "/memories?user_id=u", "/config", "/no/such/route"] {
            let resp = preflight(&os, path, "http://localhost:3000", "GET", Some("content-type")).await;
            assert_eq!(resp.status(), 200, "{mode}: {path}");
        }
        for (origin, why) in [
            ("http://evil.example", "unknown origin"),
            ("null", "opaque origin"),
            ("http://localhost:3001", "other port"),
            ("https://os.agno.com.evil.example", "suffix"),
        ] {
            let resp = preflight(&os, "/agents/calc/runs", origin, "POST", None).await;
            assert_eq!(resp.status(), 400, "{mode}: {why}");
            assert!(header(&resp, "access-control-allow-origin").is_none(), "{mode}: {why}");
            assert_eq!(resp.text().await.unwrap(), "Disallowed CORS origin");
        }
        let resp =
            preflight(&os, "/agents/calc/runs", "http://localhost:3000", "POST", Some("content-type, bad header"))
                .await;
        assert_eq!(resp.status(), 400, "{mode}: malformed Access-Control-Request-Headers");
        assert!(header(&resp, "access-control-allow-origin").is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_carry_cors_headers_for_allowed_origins_only_and_auth_still_decides() {
    let cfg = format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\n{AGENT}");
    let os = TestOs::start(config(&cfg)).await;
    let get = |origin: &'static str, token: Option<String>| {
        let mut req = os
            .client
            .get(format!("{}/agents", os.base))
            .header("origin", origin)
            .header("content-type", "application/json");
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    // Without a token: still 401 (CORS never widens auth), but readable by the allowed origin.
    let resp = get("http://localhost:3000", None).await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(header(&resp, "access-control-allow-origin"), Some("http://localhost:3000"));
    assert_eq!(header(&resp, "access-control-allow-credentials"), Some("true"));
    assert_eq!(header(&resp, "access-control-expose-headers"), Some("*"));
    let resp = get("http://localhost:3000", Some(token("u1", &["agents:read"]))).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "access-control-allow-origin"), Some("http://localhost:3000"));
    // Another origin gets the answer (a browser will not show it) but never the allow header.
    let resp = get("http://evil.example", Some(token("u1", &["agents:read"]))).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(header(&resp, "access-control-allow-origin").is_none());
    // No wildcard origin anywhere.
    let resp = get("https://os.agno.com", None).await.unwrap();
    assert_eq!(header(&resp, "access-control-allow-origin"), Some("https://os.agno.com"));

    // A preflight has no side effects: no run, no session.
    let resp = preflight(&os, "/agents/calc/runs", "http://localhost:3000", "POST", Some("authorization")).await;
    assert_eq!(resp.status(), 200);
    let sessions = os.get("/sessions", Some(&token("admin", &["agent_os:admin"]))).await;
    assert_eq!(sessions.body["data"].as_array().map(Vec::len), Some(0), "{:?}", sessions.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_origins_replace_the_defaults_and_the_regex_matches_whole_origins() {
    let cfg = format!(
        "[os]\ncors_allowed_origins = [\"https://app.example.com\"]\ncors_origin_regex = 'https://[a-z0-9]+\\.preview\\.example\\.com'\n{AGENT}"
    );
    let os = TestOs::start(config(&cfg)).await;
    for (origin, allowed) in [
        ("https://app.example.com", true),
        ("https://pr1.preview.example.com", true),
        ("http://localhost:3000", false),
        ("https://os.agno.com", false),
        ("https://pr1.preview.example.com.evil.example", false),
        ("https://x.pr1.preview.example.com", false),
    ] {
        let resp = preflight(&os, "/agents", origin, "GET", None).await;
        assert_eq!(resp.status(), if allowed { 200 } else { 400 }, "{origin}");
        assert_eq!(header(&resp, "access-control-allow-origin").is_some(), allowed, "{origin}");
    }
    let bad =
        agno_os::config::OsConfig::parse(&format!("[os]\ncors_origin_regex = '(unclosed'\n{AGENT}"), false, "t.toml");
    let err = bad.unwrap_err().to_string();
    assert!(err.contains("cors_origin_regex"), "{err}");
}
