//! `/service-accounts` as Python AgentOS 3.1 serves them: a token minted once (only its hash
//! kept) authenticates as `sa:<name>` with exactly its scopes; minting grants only what the
//! caller holds, privileged scopes only on request, never on an OS without authentication;
//! listings never show a token or hash; a revoke refuses the token at once on this replica and
//! frees the name; under isolation a user sees and revokes their own accounts only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{SECRET, TestOs, config, detail, sqlite_url, token};
use serde_json::{Value, json};

fn jwt_os(tag: &str) -> String {
    format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n[db]\nurl = \"{}\"\n\
         [[agents]]\nid = \"echo\"\nmodel = \"test\"\n[[agents]]\nid = \"other\"\nmodel = \"test\"\n",
        serde_json::to_string(SECRET).unwrap(),
        sqlite_url(tag)
    )
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn names(listed: &Value) -> Vec<&str> {
    listed["data"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minted_token_authenticates_with_its_scopes_until_it_is_revoked() {
    let os = TestOs::start(config(&jwt_os("service-accounts-life"))).await;
    let admin = token("root", &["agent_os:admin"]);
    let scopes = json!([{"scope": "agents:read"}, {"scope": "agents:echo:run"}]);
    let minted = os.post_json("/service-accounts", &json!({"name": "ci", "scopes": scopes}), Some(&admin)).await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    let body = &minted.body;
    assert_eq!(
        keys(body),
        [
            "created_at",
            "created_by",
            "expires_at",
            "id",
            "last_used_at",
            "name",
            "principal",
            "revoked_at",
            "scopes",
            "token",
            "token_prefix",
            "user_id"
        ]
    );
    let pat = body["token"].as_str().unwrap().to_owned();
    assert!(pat.starts_with("agno_pat_") && pat.starts_with(body["token_prefix"].as_str().unwrap()), "{body}");
    assert_eq!(
        (&body["principal"], &body["user_id"], &body["created_by"]),
        (&json!("sa:ci"), &json!("root"), &json!("root"))
    );
    let days = (body["expires_at"].as_i64().unwrap() - body["created_at"].as_i64().unwrap()) / 86_400;
    assert_eq!(days, 90, "tokens expire after 90 days unless asked otherwise");
    assert_eq!(
        body["scopes"][1],
        json!({"id": null, "raw": "agents:echo:run", "namespace": "agents", "sub_namespace": "echo", "permission": "run", "value": "allow"})
    );

    // The token is the account: its scopes, its principal as the run's user.
    assert_eq!(os.get("/agents", Some(&pat)).await.status, 200);
    let run = os.post_form("/agents/echo/runs", &[("message", "hi"), ("stream", "false")], Some(&pat)).await;
    assert_eq!((run.status, &run.body["user_id"]), (200, &json!("sa:ci")), "{}", run.body);
    let elsewhere = os.post_form("/agents/other/runs", &[("message", "hi"), ("stream", "false")], Some(&pat)).await;
    assert_eq!(elsewhere.status, 403, "a per-agent grant runs that agent only: {}", elsewhere.body);
    assert_eq!(os.get("/sessions", Some(&pat)).await.status, 403);
    assert_eq!(os.get("/service-accounts", Some(&pat)).await.status, 403);
    let forged = os.get("/agents", Some(&format!("{pat}x"))).await;
    assert_eq!((forged.status, detail(&forged.body).as_str()), (401, "Invalid or expired service account token"));

    // Its use is recorded.
    let listed = os.get("/service-accounts", Some(&admin)).await;
    assert!(listed.body["data"][0]["last_used_at"].as_i64().is_some(), "{}", listed.body);

    // Listings show no token and no hash.
    let listed = os.get("/service-accounts", Some(&admin)).await;
    assert_eq!((listed.status, names(&listed.body)), (200, vec!["ci"]), "{}", listed.body);
    assert!(!listed.body.to_string().contains(&pat[9..]) && !listed.body.to_string().contains("token_hash"));
    assert_eq!(listed.body["meta"]["total_count"], 1);

    // Revoked: refused at once here, revoking again changes nothing, the name is free again.
    let id = body["id"].as_str().unwrap();
    assert_eq!(os.delete(&format!("/service-accounts/{id}"), Some(&admin)).await.status, 204);
    let refused = os.get("/agents", Some(&pat)).await;
    assert_eq!((refused.status, detail(&refused.body).as_str()), (401, "Invalid or expired service account token"));
    assert_eq!(os.delete(&format!("/service-accounts/{id}"), Some(&admin)).await.status, 204);
    let listed = os.get("/service-accounts?include_revoked=false", Some(&admin)).await;
    assert_eq!(names(&listed.body), Vec::<&str>::new());
    let again = os.post_json("/service-accounts", &json!({"name": "ci"}), Some(&admin)).await;
    assert_eq!(again.status, 201, "a revoked name can be minted again: {}", again.body);
    let defaults: Vec<&str> =
        again.body["scopes"].as_array().unwrap().iter().map(|s| s["raw"].as_str().unwrap()).collect();
    assert_eq!(defaults, ["agents:run", "teams:run", "workflows:run", "sessions:read", "config:read"]);
    assert_eq!(os.get("/service-accounts?include_revoked=true", Some(&admin)).await.body["meta"]["total_count"], 2);
    let missing = os.delete("/service-accounts/nope", Some(&admin)).await;
    assert_eq!((missing.status, detail(&missing.body).as_str()), (404, "Service account 'nope' not found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minting_is_refused_with_the_reason_and_stores_nothing() {
    let os = TestOs::start(config(&jwt_os("service-accounts-refusals"))).await;
    let admin = token("root", &["agent_os:admin"]);
    let ann =
        token("ann", &["service_accounts:write", "service_accounts:read", "service_accounts:delete", "agents:run"]);
    let mint = |body: Value, who: &str| {
        let (os, who) = (&os, who.to_owned());
        async move { os.post_json("/service-accounts", &body, Some(&who)).await }
    };
    for (body, status, words) in [
        (json!({"name": "Bad Name"}), 422, "lowercase slug"),
        (json!({"name": "x".repeat(64)}), 422, "at most 63 characters"),
        (json!({"name": "ci", "scopes": [{"scope": "agents:run", "effect": "deny"}]}), 422, "effect must be 'allow'"),
        (json!({"name": "ci", "scopes": ["agents:run"]}), 422, ""),
        (json!({"name": "ci", "expires_in_days": 0}), 422, "greater than or equal to 1"),
        (json!({"name": "ci", "scopes": [{"scope": "nonsense"}]}), 400, "Invalid scope(s): nonsense"),
        (
            json!({"name": "ci", "scopes": [{"scope": "agents:write"}]}),
            400,
            "require allow_privileged_scopes=true: agents:write",
        ),
        (json!({"name": "ci", "scopes": [{"scope": "service_accounts:read"}]}), 400, "service_accounts:read"),
    ] {
        let r = mint(body.clone(), &admin).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert!(detail(&r.body).contains(words), "{body}: {}", r.body);
    }
    // A caller grants only what it holds (per-resource grants inside a family grant count).
    let held =
        mint(json!({"name": "anns", "scopes": [{"scope": "agents:run"}, {"scope": "agents:echo:run"}]}), &ann).await;
    assert_eq!((held.status, &held.body["user_id"]), (201, &json!("ann")), "{}", held.body);
    let beyond =
        mint(json!({"name": "more", "scopes": [{"scope": "agents:run"}, {"scope": "sessions:read"}]}), &ann).await;
    assert_eq!(
        (beyond.status, detail(&beyond.body).as_str()),
        (403, "Cannot grant scope(s) you do not hold: sessions:read")
    );
    let privileged = json!({"name": "boss", "scopes": [{"scope": "agents:write"}], "allow_privileged_scopes": true});
    assert_eq!(mint(privileged.clone(), &ann).await.status, 403);
    assert_eq!(mint(privileged, &admin).await.status, 201, "an admin grants privileged scopes when asked explicitly");
    let taken = mint(json!({"name": "anns"}), &admin).await;
    assert_eq!(
        (taken.status, detail(&taken.body).as_str()),
        (409, "An active service account named 'anns' already exists. Revoke it first to rotate.")
    );
    let never = mint(json!({"name": "forever", "never_expires": true}), &admin).await;
    assert_eq!((never.status, &never.body["expires_at"]), (201, &Value::Null));

    // Isolation: ann sees her own accounts (and workspace-level ones), bob cannot revoke hers.
    let listed = os.get("/service-accounts", Some(&ann)).await;
    assert_eq!(names(&listed.body), ["anns"], "{}", listed.body);
    let by_name = os.get("/service-accounts?sort_by=name&sort_order=asc", Some(&admin)).await;
    assert_eq!(names(&by_name.body), ["anns", "boss", "forever"], "nothing refused was stored");
    let bob = token("bob", &["service_accounts:delete"]);
    let id = held.body["id"].as_str().unwrap();
    assert_eq!(os.delete(&format!("/service-accounts/{id}"), Some(&bob)).await.status, 404);
    assert_eq!(os.get("/agents/echo", Some(held.body["token"].as_str().unwrap())).await.status, 403, "agents:run only");
    assert_eq!(os.get("/service-accounts?limit=101", Some(&admin)).await.status, 422);
}

#[tokio::test]
async fn without_authentication_or_sql_storage_nobody_mints() {
    let open = TestOs::start(config(&format!("[db]\nurl = \"{}\"\n", sqlite_url("service-accounts-open")))).await;
    let r = open.post_json("/service-accounts", &json!({"name": "ci"}), None).await;
    assert_eq!(
        (r.status, detail(&r.body).as_str()),
        (401, "JWT authentication is required to mint a service account.")
    );
    assert_eq!(open.get("/service-accounts", None).await.body["meta"]["total_count"], 0, "nothing was stored");

    let memory =
        TestOs::start(config("[auth]\nmode = \"key\"\nsecurity_key = \"k\"\n[db]\nurl = \"memory://\"\n")).await;
    let r = memory.post_json("/service-accounts", &json!({"name": "ci"}), Some("k")).await;
    assert_eq!(
        (r.status, detail(&r.body).as_str()),
        (503, "Service accounts not supported by the configured database")
    );
    let r = memory.get("/agents", Some("agno_pat_unknown")).await;
    assert_eq!((r.status, detail(&r.body).as_str()), (503, "Authentication is temporarily unavailable"));
}

/// A route's path with placeholders filled in (ids that do not exist: the answer is then the
/// route's own, never an authentication one).
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| match s {
            "{*file}" => "index.html".to_owned(),
            s if s.starts_with('{') => format!("{}-1", s.trim_matches(['{', '}', '*'])),
            s => s.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every route x service-account tokens: a token with exactly the route's scopes passes its
/// authorisation (whatever the handler then answers), one with another scope gets 403, and a
/// revoked one 401 (on every route that is not public).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_enforces_a_service_account_tokens_scopes() {
    use agno_os::routes::{Access, ROUTES};
    let os = TestOs::start(config(&jwt_os("service-accounts-matrix").replace("user_isolation = true\n", ""))).await;
    let admin = token("root", &["agent_os:admin"]);
    let mut tokens: std::collections::BTreeMap<Vec<&str>, String> = std::collections::BTreeMap::new();
    let mint = |scopes: Vec<&'static str>| {
        let os = &os;
        let admin = admin.clone();
        async move {
            let name = format!("m{}", &agno_core::new_id().replace('-', "")[..10]);
            let grants: Vec<Value> = scopes.iter().map(|s| json!({"scope": s})).collect();
            let body = json!({"name": name, "scopes": grants, "allow_privileged_scopes": true});
            let r = os.post_json("/service-accounts", &body, Some(&admin)).await;
            assert_eq!(r.status, 201, "{scopes:?}: {}", r.body);
            (r.body["token"].as_str().unwrap().to_owned(), r.body["id"].as_str().unwrap().to_owned())
        }
    };
    let (other, _) = mint(vec!["evals:read"]).await;
    let (revoked, revoked_id) = mint(vec!["agent_os:admin"]).await;
    assert_eq!(os.delete(&format!("/service-accounts/{revoked_id}"), Some(&admin)).await.status, 204);
    let mut checked = 0;
    for route in ROUTES {
        let path = concrete(route.path);
        let call = |token: String| {
            let req = os.client.request(route.method.clone(), format!("{}{path}", os.base)).bearer_auth(token);
            let req = if matches!(route.method.as_str(), "POST" | "PATCH" | "PUT") {
                req.header("content-type", "application/json").body("{}")
            } else {
                req
            };
            async move { req.send().await.unwrap().status().as_u16() }
        };
        match route.access {
            Access::Public => continue,
            Access::Authenticated => {
                assert!(![401, 403].contains(&call(other.clone()).await), "{} {path}", route.method);
            }
            Access::Scope(scope) => {
                let scopes = common::route_scopes(route.path, scope);
                if !tokens.contains_key(&scopes) {
                    let (t, _) = mint(scopes.clone()).await;
                    tokens.insert(scopes.clone(), t);
                }
                let status = call(tokens[&scopes].clone()).await;
                assert!(
                    ![401, 403].contains(&status) && status != 500,
                    "{} {path} with {scopes:?}: {status}",
                    route.method
                );
                if scope != "evals:read" {
                    assert_eq!(call(other.clone()).await, 403, "{} {path} with evals:read only", route.method);
                }
            }
        }
        // Refused: 401, then 429 once this client's failed lookups pass Agno's 20 a minute.
        let refused = call(revoked.clone()).await;
        assert!([401, 429].contains(&refused), "{} {path} with a revoked token: {refused}", route.method);
        checked += 1;
    }
    assert!(checked > 100, "{checked} routes");
    eprintln!("{checked} routes x {} service-account tokens", tokens.len() + 2);
}

/// As Agno's verifier: a client whose token lookups failed 20 times within a minute is answered
/// 429 (not 401) from then on, while a valid token from the same client still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_bad_tokens_is_throttled_without_locking_out_a_valid_one() {
    let os = TestOs::start(config(&jwt_os("service-accounts-flood"))).await;
    let admin = token("root", &["agent_os:admin"]);
    let minted = os.post_json("/service-accounts", &json!({"name": "ci"}), Some(&admin)).await;
    let pat = minted.body["token"].as_str().unwrap().to_owned();
    for i in 0..20 {
        let r = os.get("/agents", Some(&format!("agno_pat_guess{i}"))).await;
        assert_eq!(r.status, 401, "failure {i}");
    }
    let r = os.get("/agents", Some("agno_pat_guess20")).await;
    assert_eq!((r.status, detail(&r.body).as_str()), (429, "Too many failed authentication attempts"));
    assert_eq!(os.get("/config", Some(&pat)).await.status, 200, "a valid token is never throttled");
}

/// An expired token is refused like a revoked one, also while a verification of it is cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused() {
    let os = TestOs::start(config(&jwt_os("service-accounts-expired"))).await;
    let db = os.os.state.db.clone().unwrap();
    let now = agno_core::now_epoch_secs();
    let (token, hash, prefix) = agno_os::auth::service_accounts::generate_token();
    let account = |id: &str, name: &str, token_hash: String, expires_at: i64| agno_core::ServiceAccount {
        id: id.to_owned(),
        name: name.to_owned(),
        user_id: None,
        token_hash,
        token_prefix: prefix.clone(),
        scopes: vec!["agents:read".to_owned()],
        created_at: now - 100,
        expires_at: Some(expires_at),
        last_used_at: None,
        revoked_at: None,
        created_by: None,
    };
    db.create_service_account(&account("old", "old", hash, now - 1)).await.unwrap();
    let r = os.get("/agents", Some(&token)).await;
    assert_eq!((r.status, detail(&r.body).as_str()), (401, "Invalid or expired service account token"));

    // A token that expires while its verification is cached stops working when it expires.
    let (soon, soon_hash, _) = agno_os::auth::service_accounts::generate_token();
    db.create_service_account(&account("soon", "soon", soon_hash, now + 2)).await.unwrap();
    assert_eq!(os.get("/agents", Some(&soon)).await.status, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while os.get("/agents", Some(&soon)).await.status != 401 {
        assert!(std::time::Instant::now() < deadline, "a token past its expiry still works");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(agno_core::now_epoch_secs() >= now + 2, "refused only once expired");
}
