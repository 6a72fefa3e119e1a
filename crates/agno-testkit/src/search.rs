//! Web search APIs of the fake server, in each provider's published wire format, with
//! deterministic results derived from the query (`Result {n} for {query}`):
//!
//! - Tavily, `POST /tavily/search` (<https://docs.tavily.com/documentation/api-reference/endpoint/search>):
//!   `Authorization: Bearer tvly-...` (or `api_key` in the body, as older clients send it); body
//!   `{query, max_results (0-20, default 5), topic, include_answer, search_depth, ...}`; answer
//!   `{query, answer, images, results: [{title, url, content, score, raw_content}],
//!   response_time}`; errors `{"detail": {"error": "..."}}` (401 for a missing or `tvly-bad` key,
//!   400 for a missing query).
//! - Brave, `GET /brave/res/v1/web/search` and `/brave/res/v1/news/search`
//!   (<https://api-dashboard.search.brave.com/app/documentation/web-search/get-started>):
//!   `X-Subscription-Token`, `q`, `count` (1-20, default 20); answer `{type: "search", query:
//!   {original}, web: {type: "search", results: [{title, url, description}]}}`, news `{type:
//!   "news", results: [{title, url, description, age}]}`; 422 without `q`, 401 for a bad token.
//! - SearXNG, `GET /searxng/search` (<https://docs.searxng.org/dev/search_api.html>): `q`,
//!   `format=json` (else 403, as an instance without the JSON format answers), `categories`,
//!   `engines`; answer `{query, number_of_results, results: [{title, url, content, engine,
//!   category, publishedDate}], answers, suggestions, unresponsive_engines}`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

fn slug(query: &str) -> String {
    query.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join("-")
}

fn item(query: &str, n: usize, news: bool) -> (String, String, String) {
    let kind = if news { "News" } else { "Result" };
    (
        format!("{kind} {n} for {query}"),
        format!("https://example.com/{}/{n}", slug(query)),
        format!("{kind} {n} says something about {query}."),
    )
}

fn json_status(status: u16, body: Value) -> Response {
    (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), axum::Json(body)).into_response()
}

fn query_params(query: Option<&str>) -> Vec<(String, String)> {
    form_pairs(query.unwrap_or_default())
}

/// `application/x-www-form-urlencoded` pairs (a query string).
pub(crate) fn form_pairs(text: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(text.as_bytes()).into_owned().collect()
}

fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Tavily's `/search`.
pub(crate) fn tavily(headers: &HeaderMap, body: &Value) -> Response {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let key = bearer.or_else(|| body.get("api_key").and_then(Value::as_str));
    match key {
        Some(k) if k.starts_with("tvly-") && k != "tvly-bad" => {}
        _ => return json_status(401, json!({"detail": {"error": "Unauthorized: missing or invalid API key."}})),
    }
    let Some(query) = body.get("query").and_then(Value::as_str).filter(|q| !q.trim().is_empty()) else {
        return json_status(400, json!({"detail": {"error": "Query is missing."}}));
    };
    let max = body.get("max_results").and_then(Value::as_u64).unwrap_or(5);
    if max > 20 {
        return json_status(400, json!({"detail": {"error": "max_results must be between 0 and 20."}}));
    }
    let news = body.get("topic").and_then(Value::as_str) == Some("news");
    let results: Vec<Value> = (1..=max as usize)
        .map(|n| {
            let (title, url, content) = item(query, n, news);
            let mut r =
                json!({"title": title, "url": url, "content": content, "score": 1.0 / n as f64, "raw_content": null});
            if news {
                r["published_date"] = json!("Mon, 30 Nov 2026 12:00:00 GMT");
            }
            r
        })
        .collect();
    let mut answer = json!({"query": query, "images": [], "results": results, "response_time": 0.42});
    if body.get("include_answer").is_some_and(|a| a.as_bool() == Some(true) || a.is_string()) {
        answer["answer"] = json!(format!("In short: {query}."));
    } else {
        answer["answer"] = Value::Null;
    }
    json_status(200, answer)
}

/// Brave's `/res/v1/{web,news}/search`.
pub(crate) fn brave(headers: &HeaderMap, query: Option<&str>, news: bool) -> Response {
    let token = headers.get("x-subscription-token").and_then(|v| v.to_str().ok());
    if token.is_none_or(|t| t.is_empty() || t == "bad") {
        return json_status(
            401,
            json!({"type": "ErrorResponse", "error": {
                "id": "fake", "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid."
            }}),
        );
    }
    let params = query_params(query);
    let Some(q) = param(&params, "q").filter(|q| !q.trim().is_empty()) else {
        return json_status(
            422,
            json!({"type": "ErrorResponse", "error": {
                "id": "fake", "status": 422, "code": "VALIDATION", "detail": "Unable to validate request parameter(s)",
                "meta": {"errors": [{"loc": ["query", "q"], "msg": "field required"}]}
            }}),
        );
    };
    let count = param(&params, "count").and_then(|c| c.parse::<usize>().ok()).unwrap_or(20).min(20);
    let results: Vec<Value> = (1..=count)
        .map(|n| {
            let (title, url, description) = item(q, n, news);
            let mut r = json!({"title": title, "url": url, "description": description, "type": "search_result"});
            if news {
                r["age"] = json!("2 hours ago");
            }
            r
        })
        .collect();
    if news {
        json_status(200, json!({"type": "news", "query": {"original": q}, "results": results}))
    } else {
        json_status(
            200,
            json!({
                "type": "search",
                "query": {"original": q, "more_results_available": false},
                "web": {"type": "search", "results": results, "family_friendly": true},
            }),
        )
    }
}

/// SearXNG's `/search`.
pub(crate) fn searxng(query: Option<&str>) -> Response {
    let params = query_params(query);
    if param(&params, "format") != Some("json") {
        return (StatusCode::FORBIDDEN, "403 Forbidden").into_response();
    }
    let Some(q) = param(&params, "q").filter(|q| !q.trim().is_empty()) else {
        return (StatusCode::BAD_REQUEST, "400 Bad Request: no query").into_response();
    };
    let news = param(&params, "categories").is_some_and(|c| c.split(',').any(|c| c == "news"));
    let engine = param(&params, "engines").and_then(|e| e.split(',').next()).unwrap_or("duckduckgo").to_owned();
    let results: Vec<Value> = (1..=10)
        .map(|n| {
            let (title, url, content) = item(q, n, news);
            json!({
                "title": title, "url": url, "content": content, "engine": engine, "engines": [engine],
                "category": if news { "news" } else { "general" },
                "publishedDate": if news { json!("2026-11-30T12:00:00") } else { Value::Null },
                "score": 1.0 / n as f64,
            })
        })
        .collect();
    json_status(
        200,
        json!({
            "query": q, "number_of_results": 0, "results": results, "answers": [], "corrections": [],
            "infoboxes": [], "suggestions": [], "unresponsive_engines": [],
        }),
    )
}
