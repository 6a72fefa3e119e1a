//! The `websearch` toolkit (Agno's `WebSearchTools` names: `web_search`, `web_search_news`;
//! flags `search_web`, `search_news`) through a configurable provider:
//!
//! - `tavily`: `POST <base>/search` (`Authorization: Bearer <key>`, base `TAVILY_API_BASE_URL`,
//!   default `https://api.tavily.com`, key `TAVILY_API_KEY`); news with `topic = "news"`.
//! - `brave`: `GET <base>/res/v1/web/search` and `/res/v1/news/search`
//!   (`X-Subscription-Token: <key>`, base `BRAVE_API_BASE_URL`, default
//!   `https://api.search.brave.com`, key `BRAVE_API_KEY`).
//! - `searxng`: `GET <host>/search?format=json` (`host`, or `SEARXNG_HOST`; no key); news with
//!   `categories=news`. The instance must enable the JSON format.
//!
//! Every provider's answer becomes `{"query", "results": [{"title", "url", "content"}]}` (plus
//! Tavily's `answer`, and a `published` date where the provider gives one), so an agent's prompt
//! does not depend on the provider. Provider errors (a bad key, a quota, a disabled format) are
//! tool errors with the provider's message.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::BuiltinError;
use crate::{Function, ToolError, Toolkit};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Provider {
    Tavily,
    Brave,
    Searxng,
}

#[derive(Debug)]
struct Search {
    provider: Provider,
    key: String,
    base: String,
    fixed_max_results: Option<u32>,
    search_depth: String,
    engines: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// What to search for.
    query: String,
    /// How many results (default 5).
    max_results: Option<u32>,
}

fn result(title: &Value, url: &Value, content: &Value, published: Option<&Value>) -> Value {
    let mut r = json!({"title": title, "url": url, "content": content});
    if let Some(p) = published.filter(|p| !p.is_null()) {
        r["published"] = p.clone();
    }
    r
}

impl Search {
    fn label(&self) -> &'static str {
        match self.provider {
            Provider::Tavily => "tavily",
            Provider::Brave => "brave",
            Provider::Searxng => "searxng",
        }
    }

    async fn answer(&self, request: reqwest::RequestBuilder) -> Result<Value, ToolError> {
        let label = self.label();
        let response = request.send().await.map_err(|e| ToolError::execution(format!("{label} search failed: {e}")))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| ToolError::execution(format!("{label} search failed: {e}")))?;
        if !status.is_success() {
            let parsed: Option<Value> = serde_json::from_str(&text).ok();
            let message = parsed
                .as_ref()
                .and_then(|v| {
                    ["/detail/error", "/error/detail", "/error/message", "/detail", "/error", "/message"]
                        .iter()
                        .find_map(|p| v.pointer(p).and_then(Value::as_str))
                })
                .map(str::to_owned)
                .unwrap_or_else(|| text.chars().take(300).collect());
            let what = match (self.provider, status.as_u16()) {
                (_, 401 | 403) if self.provider != Provider::Searxng => " (check the API key)",
                (Provider::Searxng, 403) => " (enable the json format in the instance's settings.yml: search.formats)",
                (_, 429) => " (rate limit or quota reached)",
                _ => "",
            };
            return Err(ToolError::execution(format!("{label} search answered HTTP {status}{what}: {message}")));
        }
        serde_json::from_str(&text).map_err(|e| ToolError::execution(format!("{label} search answered non-JSON: {e}")))
    }

    async fn search(&self, args: SearchArgs, news: bool) -> Result<Value, ToolError> {
        let query = args.query.trim().to_owned();
        if query.is_empty() {
            return Err(ToolError::invalid_arguments("query is empty: say what to search for"));
        }
        let max = self.fixed_max_results.or(args.max_results).unwrap_or(5).clamp(1, 20);
        let client = super::http::client()?;
        let mut out = json!({"query": query});
        let results: Vec<Value> = match self.provider {
            Provider::Tavily => {
                let mut body = json!({
                    "query": query, "max_results": max, "search_depth": self.search_depth, "include_answer": true,
                });
                if news {
                    body["topic"] = json!("news");
                }
                let request = client.post(format!("{}/search", self.base)).bearer_auth(&self.key).json(&body);
                let answer = self.answer(request).await?;
                if let Some(a) = answer.get("answer").filter(|a| a.is_string()) {
                    out["answer"] = a.clone();
                }
                answer
                    .get("results")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|r| result(&r["title"], &r["url"], &r["content"], r.get("published_date")))
                    .collect()
            }
            Provider::Brave => {
                let path = if news { "news" } else { "web" };
                let request = client
                    .get(format!("{}/res/v1/{path}/search", self.base))
                    .header("X-Subscription-Token", &self.key)
                    .header("Accept", "application/json")
                    .query(&[("q", query.as_str()), ("count", &max.to_string())]);
                let answer = self.answer(request).await?;
                let list = if news { answer.get("results") } else { answer.pointer("/web/results") };
                list.and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|r| result(&r["title"], &r["url"], &r["description"], r.get("age")))
                    .collect()
            }
            Provider::Searxng => {
                let mut query_params = vec![("q", query.clone()), ("format", "json".to_owned())];
                if news {
                    query_params.push(("categories", "news".to_owned()));
                }
                if let Some(engines) = &self.engines {
                    query_params.push(("engines", engines.clone()));
                }
                let request = client.get(format!("{}/search", self.base)).query(&query_params);
                let answer = self.answer(request).await?;
                answer
                    .get("results")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|r| result(&r["title"], &r["url"], &r["content"], r.get("publishedDate")))
                    .collect()
            }
        };
        out["results"] = Value::Array(results.into_iter().take(max as usize).collect());
        Ok(out)
    }
}

/// Options of the `websearch` toolkit read here (the rest are flags and Toolkit options).
pub(super) const OPTIONS: &[&str] =
    &["provider", "api_key", "base_url", "host", "fixed_max_results", "search_depth", "engines"];

fn option(options: &Map<String, Value>, key: &str) -> Result<Option<String>, BuiltinError> {
    match options.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(BuiltinError::Option {
            toolkit: "websearch".into(),
            message: format!("{key} must be a non-empty string"),
        }),
    }
}

/// The web search toolkit (name and id `websearch`) over `provider` (`tavily`, `brave` or
/// `searxng`; by default the one whose key the environment has: `TAVILY_API_KEY`,
/// `BRAVE_API_KEY`, then `SEARXNG_HOST`), with `api_key`, `base_url` / `host`, `fixed_max_results`, `search_depth`
/// (Tavily) and `engines` (SearXNG) from `options`.
///
/// # Errors
/// [`BuiltinError::Option`] naming a missing provider, key or host, or a bad option.
pub fn websearch_tools(options: &Map<String, Value>) -> Result<Toolkit, BuiltinError> {
    let err = |message: String| BuiltinError::Option { toolkit: "websearch".into(), message };
    let env = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let provider = match option(options, "provider")?.as_deref() {
        Some("tavily") => Provider::Tavily,
        Some("brave") => Provider::Brave,
        Some("searxng") => Provider::Searxng,
        Some(other) => return Err(err(format!("provider must be tavily, brave or searxng, not {other:?}"))),
        // Not given: the provider whose key (or host) the environment has.
        None if env("TAVILY_API_KEY").is_some() => Provider::Tavily,
        None if env("BRAVE_API_KEY").is_some() => Provider::Brave,
        None if env("SEARXNG_HOST").is_some() => Provider::Searxng,
        None => {
            return Err(err(
                "give provider = \"tavily\", \"brave\" or \"searxng\" (or set TAVILY_API_KEY, BRAVE_API_KEY or SEARXNG_HOST)".into(),
            ));
        }
    };
    let (key_var, base_var, default_base) = match provider {
        Provider::Tavily => ("TAVILY_API_KEY", "TAVILY_API_BASE_URL", "https://api.tavily.com"),
        Provider::Brave => ("BRAVE_API_KEY", "BRAVE_API_BASE_URL", "https://api.search.brave.com"),
        Provider::Searxng => ("", "SEARXNG_HOST", ""),
    };
    let key = match provider {
        Provider::Searxng => String::new(),
        _ => option(options, "api_key")?
            .or_else(|| env(key_var))
            .ok_or_else(|| err(format!("{key_var} is not set: set it, or give api_key = \"${{{key_var}}}\"")))?,
    };
    let base_option =
        if provider == Provider::Searxng { option(options, "host")? } else { option(options, "base_url")? };
    let base =
        base_option.or_else(|| env(base_var)).or_else(|| Some(default_base.to_owned()).filter(|b| !b.is_empty()));
    let base = base
        .ok_or_else(|| err("searxng needs host = \"https://searx.example.org\" (or SEARXNG_HOST)".into()))?
        .trim_end_matches('/')
        .to_owned();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(err(format!("the provider's address must be an http(s) URL, not {base:?}")));
    }
    let fixed_max_results = match options.get("fixed_max_results") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|n| (1..=20).contains(n))
                .ok_or_else(|| err("fixed_max_results must be a number from 1 to 20".into()))? as u32,
        ),
    };
    let search_depth = option(options, "search_depth")?.unwrap_or_else(|| "basic".to_owned());
    let engines = match options.get("engines") {
        None => None,
        Some(Value::Array(list)) => Some(
            list.iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| err("engines must be a list of engine names".into()))?
                .join(","),
        ),
        Some(_) => return Err(err("engines must be a list of engine names".into())),
    };
    let search = Arc::new(Search { provider, key, base, fixed_max_results, search_depth, engines });
    let tool = |name: &str, description: &str, news: bool| {
        Function::with_state(name, description, &search, move |search, a: SearchArgs| async move {
            search.search(a, news).await
        })
    };
    Ok(Toolkit::new("websearch")
        .with_instructions(
            "Search the web for facts you do not know or that may have changed; cite the URLs of the results you use.",
        )
        .flagged_tool(
            "search_web",
            true,
            tool("web_search", "Search the web. Returns JSON: {query, results: [{title, url, content}]}.", false),
        )
        .flagged_tool(
            "search_news",
            true,
            tool(
                "web_search_news",
                "Search recent news. Returns JSON: {query, results: [{title, url, content, published}]}.",
                true,
            ),
        )
        .legacy_flag("enable_search", "search_web")
        .legacy_flag("enable_news", "search_news"))
}
