//! The fake provider HTTP server: lifecycle ([`FakeProvider`]), routing and request recording.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use axum::routing::any;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::openai;
use crate::script::{RecordedRequest, Reply, Shared};

/// A fake model-provider HTTP server speaking real provider wire formats (currently the OpenAI
/// Chat Completions API under `/v1`).
///
/// Cheap to clone: all clones share the same server and script. The server runs in a tokio
/// task until [`FakeProvider::shutdown`] is called or the last handle is dropped.
#[derive(Debug, Clone)]
pub struct FakeProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

impl FakeProvider {
    /// Bind `127.0.0.1:0` and start serving in a background tokio task.
    ///
    /// Must be called from within a tokio runtime.
    pub async fn start() -> std::io::Result<FakeProvider> {
        Self::start_on(0).await
    }

    /// Bind `127.0.0.1:port` (0: any free port) and start serving in a background tokio task.
    ///
    /// Must be called from within a tokio runtime.
    pub async fn start_on(port: u16) -> std::io::Result<FakeProvider> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let app = router(Arc::clone(&shared));
        let task_shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let signal = async move { task_shared.shutdown_requested().await };
            // Serving only ends with shutdown or a fatal listener error; nothing to report to.
            let _ = axum::serve(listener, app).with_graceful_shutdown(signal).await;
        });
        Ok(FakeProvider { inner: Arc::new(Inner { addr, shared }) })
    }

    /// Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.inner.addr)
    }

    /// Root URL of the server, e.g. `http://127.0.0.1:PORT`. The search APIs live under
    /// `/tavily` (Tavily's base URL), `/brave` (Brave's) and `/searxng` (a SearXNG host); Slack's
    /// Web API under `/slack/api/`.
    pub fn root_url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    /// Append a reply to the FIFO script; each chat-completion request consumes one.
    pub fn push(&self, reply: Reply) {
        self.inner.shared.push(reply);
    }

    /// Append several replies to the FIFO script, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.inner.shared.push_all(replies);
    }

    /// Reply used (cloned) whenever the script is empty. `None` (the default) answers HTTP 500
    /// `{"error":{"message":"fake provider: no scripted reply left",...}}`.
    pub fn set_fallback(&self, reply: Option<Reply>) {
        self.inner.shared.set_fallback(reply);
    }

    /// Delay applied before answering each chat-completion request (so, when streaming, also
    /// before the first chunk).
    pub fn set_latency(&self, latency: Duration) {
        self.inner.shared.set_latency(latency);
    }

    /// Delay applied before answering each embeddings request (so that an ingestion can be
    /// caught, or killed, while it embeds).
    pub fn set_embedding_latency(&self, latency: Duration) {
        self.inner.shared.set_embedding_latency(latency);
    }

    /// Every request received (including invalid ones), in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.shared.requests()
    }

    /// Number of requests received so far (including invalid ones).
    pub fn request_count(&self) -> usize {
        self.inner.shared.request_count()
    }

    /// Stop serving: no new connections are accepted and pending delays are cut short.
    pub fn shutdown(&self) {
        self.inner.shared.shutdown();
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(openai::CHAT_COMPLETIONS_PATH, any(chat_completions))
        .route(openai::MODELS_PATH, any(models))
        .route(crate::anthropic::MESSAGES_PATH, any(model_call::<crate::anthropic::Messages>))
        .route(crate::ollama::CHAT_PATH, any(model_call::<crate::ollama::Chat>))
        .route(crate::responses::RESPONSES_PATH, any(model_call::<crate::responses::Responses>))
        .route("/model/{model}/{action}", any(bedrock))
        .route("/openai/deployments/{deployment}/chat/completions", any(azure))
        .route(crate::embeddings::EMBEDDINGS_PATH, any(embeddings))
        .route("/api/embed", any(embeddings))
        .route("/v2/embed", any(embeddings))
        .route("/v1beta/models/{spec}", any(embeddings))
        // google-genai 3 calls Gemini's v1 path.
        .route("/v1/models/{spec}", any(embeddings))
        .route("/tavily/search", any(tavily))
        .route("/brave/res/v1/web/search", any(brave))
        .route("/brave/res/v1/news/search", any(brave))
        .route("/searxng/search", any(searxng))
        .route("/slack/api/{method}", any(slack))
        .fallback(not_found)
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

/// Record a request and return its parsed body.
fn record(shared: &Shared, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Value {
    let body = serde_json::from_slice(body).unwrap_or(Value::Null);
    let headers = headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect();
    shared.record(RecordedRequest {
        path: uri.path().to_owned(),
        headers,
        body: body.clone(),
        query: uri.query().unwrap_or_default().to_owned(),
    });
    body
}

fn method_not_allowed(method: &Method, uri: &Uri) -> Response {
    openai::error_response(405, &format!("fake provider: method {method} not allowed on {}", uri.path()), None)
}

/// Records the request; its parsed body when it came with `expected` (else the caller answers
/// 405 with [`method_not_allowed`]).
fn accept(
    shared: &Shared,
    expected: &Method,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Option<Value> {
    let body = record(shared, uri, headers, body);
    (method == expected).then_some(body)
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match accept(&shared, &Method::POST, &method, &uri, &headers, &body) {
        Some(body) => openai::chat_completions(&shared, &headers, &body).await,
        None => method_not_allowed(&method, &uri),
    }
}

/// A model endpoint answered in wire format `W` (POST only).
async fn model_call<W: crate::wire::Wire + Default>(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match accept(&shared, &Method::POST, &method, &uri, &headers, &body) {
        Some(body) => crate::wire::serve(&shared, &W::default(), &headers, &body).await,
        None => method_not_allowed(&method, &uri),
    }
}

/// Amazon Bedrock's `converse` and `converse-stream`; the signature is checked against the raw
/// request.
async fn bedrock(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(parsed) = accept(&shared, &Method::POST, &method, &uri, &headers, &body) else {
        return method_not_allowed(&method, &uri);
    };
    let path = uri.path();
    let stream = path.ends_with("/converse-stream");
    if !stream && !path.ends_with("/converse") {
        return openai::error_response(404, &format!("fake provider: unknown Bedrock action {path}"), None);
    }
    let wire = crate::bedrock::Converse { stream, method, path: path.to_owned(), raw_body: body.to_vec() };
    crate::wire::serve(&shared, &wire, &headers, &parsed).await
}

/// Azure OpenAI's deployment route: Chat Completions behind `api-key` and `api-version`
/// (<https://learn.microsoft.com/en-us/azure/ai-services/openai/reference>).
async fn azure(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(parsed) = accept(&shared, &Method::POST, &method, &uri, &headers, &body) else {
        return method_not_allowed(&method, &uri);
    };
    let query = crate::search::form_pairs(uri.query().unwrap_or_default());
    if !query.iter().any(|(k, v)| k == "api-version" && !v.is_empty()) {
        return openai::error_response(404, "Resource not found (the api-version query parameter is required)", None);
    }
    if headers.get("api-key").is_none() && headers.get("authorization").is_none() {
        return openai::error_response(
            401,
            "Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.",
            None,
        );
    }
    crate::wire::serve(&shared, &openai::Chat, &headers, &parsed).await
}

/// Every provider's embeddings route (and Gemini's generation), told apart by path: OpenAI's (and Voyage's)
/// `/v1/embeddings`, Ollama's `/api/embed`, Cohere's `/v2/embed`, Gemini's
/// `/v1beta/models/{model}:batchEmbedContents`.
async fn embeddings(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(body) = accept(&shared, &Method::POST, &method, &uri, &headers, &body) else {
        return method_not_allowed(&method, &uri);
    };
    // Gemini's generation shares the path prefix of its embeddings.
    let path = uri.path();
    if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
        let query = crate::search::form_pairs(uri.query().unwrap_or_default());
        let wire = crate::gemini::Generate {
            stream: path.ends_with(":streamGenerateContent"),
            keyed_in_query: query.iter().any(|(k, _)| k == "key"),
        };
        return crate::wire::serve(&shared, &wire, &headers, &body).await;
    }
    let latency = shared.embedding_latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match uri.path() {
        "/api/embed" => crate::embeddings::ollama(&body),
        "/v2/embed" => crate::embeddings::cohere(&body),
        path => match path.strip_prefix("/v1beta/models/").or_else(|| path.strip_prefix("/v1/models/")) {
            Some(spec) => crate::embeddings::gemini(spec, &body),
            None => crate::embeddings::embeddings(&body),
        },
    }
}

async fn tavily(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match accept(&shared, &Method::POST, &method, &uri, &headers, &body) {
        Some(body) => crate::search::tavily(&headers, &body),
        None => method_not_allowed(&method, &uri),
    }
}

async fn brave(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match accept(&shared, &Method::GET, &method, &uri, &headers, &body) {
        Some(_) => crate::search::brave(&headers, uri.query(), uri.path().contains("/news/")),
        None => method_not_allowed(&method, &uri),
    }
}

async fn searxng(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match accept(&shared, &Method::GET, &method, &uri, &headers, &body) {
        Some(_) => crate::search::searxng(uri.query()),
        None => method_not_allowed(&method, &uri),
    }
}

/// Slack's Web API: any method, GET with a query or POST with a JSON body.
async fn slack(
    State(shared): State<Arc<Shared>>,
    axum::extract::Path(api_method): axum::extract::Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = record(&shared, &uri, &headers, &body);
    shared.slack.call(&api_method, &headers, uri.query(), &body)
}

async fn models(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match accept(&shared, &Method::GET, &method, &uri, &headers, &body) {
        Some(_) => openai::models_response(),
        None => method_not_allowed(&method, &uri),
    }
}

async fn not_found(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    record(&shared, &uri, &headers, &body);
    openai::error_response(404, &format!("fake provider: unknown route {method} {}", uri.path()), None)
}
