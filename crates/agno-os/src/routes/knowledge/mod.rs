//! `/knowledge`: contents of the `[[knowledge]]` bases (upload, list, get, status, patch, delete) and
//! search, in Agno's shapes. Uploads answer 202 with the `processing` row and are ingested as a
//! job of the durable queue (`queue::ingest`: bounded, claimed by any replica, taken over after a
//! crash, cancelled by deleting the content); `status` tells when they are searchable. Under user isolation a caller
//! uploads as itself and sees (and deletes) its own contents plus shared ones (shared ones are
//! deleted only by admins or without isolation).

pub mod remote;
mod upload_url;

use crate::routes::guard::Caller;
use crate::routes::query::Query;
use std::sync::Arc;

use agno_core::{Filter, KnowledgeQuery, KnowledgeRow, KnowledgeSort};
use agno_knowledge::{ChunkingError, Content, ContentKind, ContentPatch, Knowledge};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::FormField;
use super::params::{Paging, iso, json_body, sort_order};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::queue::ingest::{ChunkingSpec, IngestSpec};
use crate::state::AppState;
use upload_url::{is_pattern_space, upload_url};

/// The base named by `knowledge_id`, or the only one.
pub(crate) fn pick<'a>(state: &'a AppState, knowledge_id: Option<&str>) -> ApiResult<&'a Arc<Knowledge>> {
    let bases = state.knowledge.as_slice();
    match knowledge_id.filter(|id| !id.is_empty()) {
        Some(id) => bases
            .iter()
            .find(|k| k.name() == id)
            .ok_or_else(|| ApiError::not_found(format!("Knowledge base '{id}' not found"))),
        None => match bases {
            [] => Err(super::unbuilt::no_knowledge()),
            [only] => Ok(only),
            _ => {
                let ids: Vec<&str> = bases.iter().map(|k| k.name()).collect();
                Err(ApiError::bad_request(format!(
                    "Several knowledge bases are configured: pass knowledge_id (one of {})",
                    ids.join(", ")
                )))
            }
        },
    }
}

/// The contents database of a base (every base of the OS has the OS database).
fn contents(k: &Knowledge) -> ApiResult<&Arc<dyn agno_core::Db>> {
    k.contents().ok_or_else(|| {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "this knowledge base has no contents database: configure [db]")
    })
}

/// A row as Agno's `ContentResponseSchema`.
fn content_json(row: &KnowledgeRow) -> Value {
    json!({
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "type": row.kind,
        "size": row.size.filter(|s| *s > 0).map_or_else(|| "0".to_owned(), |s| s.to_string()),
        "linked_to": Value::Null,
        "metadata": row.metadata,
        "access_count": Value::Null,
        "status": row.status.as_deref().map_or("processing", status_of),
        "status_message": row.status_message,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at.or(row.created_at)),
    })
}

/// Agno's `ContentStatus` for a stored status (unknown ones read as processing).
fn status_of(stored: &str) -> &'static str {
    let s = stored.to_ascii_lowercase();
    if s.contains("failed") {
        "failed"
    } else if s.contains("completed") {
        "completed"
    } else if s.contains("partial") {
        "partial"
    } else {
        "processing"
    }
}

/// Query of the content routes.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct KnowledgeParams {
    /// The knowledge base (default: the only one).
    knowledge_id: Option<String>,
    /// Accepted for compatibility; every base uses the OS database.
    #[allow(dead_code)]
    db_id: Option<String>,
}

/// Query of `GET /knowledge/content`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListParams {
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(extend("enum" = ["created_at", "updated_at", "name"]))]
    sort_by: Option<String>,
    #[schemars(extend("enum" = ["asc", "desc"]))]
    sort_order: Option<String>,
    knowledge_id: Option<String>,
    #[allow(dead_code)]
    db_id: Option<String>,
}

/// `GET /knowledge/content`: the base's contents the caller can see, paginated.
pub async fn list_content(Caller { state, principal }: Caller, Query(q): Query<ListParams>) -> ApiResult<Json<Value>> {
    let k = pick(&state, q.knowledge_id.as_deref())?;
    let paging = Paging::new(q.limit, q.page)?;
    let sort_by = match q.sort_by.as_deref() {
        None | Some("created_at") => KnowledgeSort::CreatedAt,
        Some("updated_at") => KnowledgeSort::UpdatedAt,
        Some("name") => KnowledgeSort::Name,
        Some(other) => {
            return Err(ApiError::unprocessable(format!(
                "cannot sort by {other:?}: use created_at, updated_at or name"
            ))
            .at("query", "sort_by"));
        }
    };
    let query = KnowledgeQuery {
        user_id: principal.user_scope(None),
        linked_to: Some(k.name().to_owned()),
        limit: Some(paging.limit),
        page: Some(paging.page),
        sort_by,
        sort_order: sort_order(q.sort_order.as_deref())?,
    };
    let (rows, total) = contents(k)?.get_knowledge_contents(&query).await?;
    Ok(paging.respond(rows.iter().map(content_json).collect(), total))
}

/// The row `content_id` of base `k` if the caller can see it.
async fn visible_row(k: &Knowledge, principal: &Principal, content_id: &str) -> ApiResult<KnowledgeRow> {
    contents(k)?
        .get_knowledge_content(content_id, principal.user_scope(None).as_deref())
        .await?
        .filter(|row| row.linked_to.as_deref().is_none_or(|l| l == k.name()))
        .ok_or_else(|| ApiError::not_found(format!("Content not found: {content_id}")))
}

/// The base the query names and its row `content_id`, if the caller can see it: what the
/// routes of one content start from.
async fn addressed<'a>(
    state: &'a AppState,
    principal: &Principal,
    q: &KnowledgeParams,
    content_id: &str,
) -> ApiResult<(&'a Arc<Knowledge>, KnowledgeRow)> {
    let k = pick(state, q.knowledge_id.as_deref())?;
    Ok((k, visible_row(k, principal, content_id).await?))
}

/// What `GET /knowledge/content/{content_id}` and its `/status` answer about a content.
pub trait ContentView {
    /// The answer for the row.
    fn answer(row: &KnowledgeRow) -> Value;
}

/// The content (`GET /knowledge/content/{content_id}`).
#[derive(Debug)]
pub struct Detail;

impl ContentView for Detail {
    fn answer(row: &KnowledgeRow) -> Value {
        content_json(row)
    }
}

/// Its processing status (`GET /knowledge/content/{content_id}/status`).
#[derive(Debug)]
pub struct Status;

impl ContentView for Status {
    fn answer(row: &KnowledgeRow) -> Value {
        json!({
            "id": row.id,
            "status": row.status.as_deref().map_or("processing", status_of),
            "status_message": row.status_message.clone().unwrap_or_default(),
        })
    }
}

/// `GET /knowledge/content/{content_id}` and `.../status`: the content the caller can see, as `V`.
pub async fn content<V: ContentView>(
    Caller { state, principal }: Caller,
    Path(content_id): Path<String>,
    Query(q): Query<KnowledgeParams>,
) -> ApiResult<Json<Value>> {
    let (_, row) = addressed(&state, &principal, &q, &content_id).await?;
    Ok(Json(V::answer(&row)))
}

/// `DELETE /knowledge/content/{content_id}`: deletes the content's chunks and row; answers
/// `{"id"}`. 404 for a content the caller cannot see or (a shared one under isolation) may
/// not delete.
pub async fn delete_content(
    Caller { state, principal }: Caller,
    Path(content_id): Path<String>,
    Query(q): Query<KnowledgeParams>,
) -> ApiResult<Json<Value>> {
    let (k, _) = addressed(&state, &principal, &q, &content_id).await?;
    let scope = principal.user_scope(None);
    let removed = k.remove_content(&content_id, scope.as_deref()).await.map_err(knowledge_error)?;
    if !removed {
        return Err(ApiError::not_found(format!("Content not found: {content_id}")));
    }
    // As Python: the id of what was deleted.
    Ok(Json(json!({ "id": content_id })))
}

/// `DELETE /knowledge/content`: deletes every content of the base the caller may delete (under
/// user isolation, the caller's own; shared ones stay unless the caller is unscoped). Answers
/// `"success"`, as Python AgentOS.
pub async fn delete_all_content(
    Caller { state, principal }: Caller,
    Query(q): Query<KnowledgeParams>,
) -> ApiResult<Json<Value>> {
    let k = pick(&state, q.knowledge_id.as_deref())?;
    contents(k)?;
    let scope = principal.user_scope(None);
    let removed = k.remove_all_content(scope.as_deref()).await.map_err(knowledge_error)?;
    tracing::info!(knowledge = k.name(), removed, "deleted all content");
    Ok(Json(Value::String("success".to_owned())))
}

/// The fields of `PATCH /knowledge/content/{content_id}`.
pub const UPDATE_FORM: &[FormField] = &[
    FormField::optional("name", "string", "Content name."),
    FormField::optional("description", "string", "Content description."),
    FormField::optional("metadata", "object", "JSON object merged into the content's metadata (and its chunks')."),
    FormField::optional(
        "reader_id",
        "string",
        "A reader of /knowledge/config (checked; as in Agno it does not re-read the content).",
    ),
];

/// The readers `/knowledge/config` lists: id, Agno's class name, description, file types.
/// The ids of the readers `/knowledge/config` lists.
pub(crate) fn reader_ids() -> Vec<&'static str> {
    READERS.iter().map(|(id, ..)| *id).collect()
}

const READERS: &[(&str, &str, &str, &[&str])] = &[
    ("text", "TextReader", "Handles plain text files", &[".txt"]),
    ("markdown", "MarkdownReader", "Processes Markdown documents", &[".md", ".markdown"]),
    ("csv", "CsvReader", "Parses CSV files, a line per row", &[".csv"]),
    ("json", "JsonReader", "Processes JSON, a document per element of an array", &[".json"]),
    ("pdf", "PdfReader", "Extracts the text of PDF documents, a document per page", &[".pdf"]),
    ("docx", "DocxReader", "Extracts the text of Word documents (.docx)", &[".docx"]),
    ("html", "WebsiteReader", "Extracts the text of HTML pages", &[".html", ".htm"]),
];

/// `PATCH /knowledge/content/{content_id}`: changes the name, description or metadata of a
/// content (metadata is merged, into its chunks too, so filters see it at once). Under user
/// isolation only the caller's own content; 404 otherwise.
pub async fn update_content(
    Caller { state, principal }: Caller,
    Path(content_id): Path<String>,
    Query(q): Query<KnowledgeParams>,
    request: Request,
) -> ApiResult<Json<Value>> {
    let k = pick(&state, q.knowledge_id.as_deref())?;
    contents(k)?;
    let form = Form::read(request, &state.limits).await?;
    let field = |name: &str| form.text(name).map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    // A JSON part, as the API document says: null is no change; an empty part is not JSON.
    let metadata = match form.text("metadata") {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Some(m),
            Ok(Value::Null) => None,
            Ok(_) => return Err(ApiError::bad_request("metadata must be a JSON object")),
            Err(_) => return Err(ApiError::bad_request("Invalid JSON format for metadata")),
        },
    };
    if let Some(reader) = field("reader_id").filter(|r| !READERS.iter().any(|(id, ..)| id == r)) {
        return Err(ApiError::bad_request(format!("Invalid reader_id: {reader}")));
    }
    visible_row(k, &principal, &content_id).await?;
    let patch = ContentPatch { name: field("name"), description: field("description"), metadata };
    let scope = principal.user_scope(None);
    let row = k
        .update_content(&content_id, scope.as_deref(), patch)
        .await
        .map_err(knowledge_error)?
        .ok_or_else(|| ApiError::not_found(format!("Content not found: {content_id}")))?;
    Ok(Json(content_json(&row)))
}

fn knowledge_error(e: agno_core::KnowledgeError) -> ApiError {
    match e {
        agno_core::KnowledgeError::Db(db) => ApiError::from(db),
        agno_core::KnowledgeError::Filter(m) => ApiError::bad_request(format!("invalid filters: {m}")),
        agno_core::KnowledgeError::Unsupported(m) => ApiError::bad_request(m),
        e @ agno_core::KnowledgeError::NeedsMigration { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        other => ApiError::internal(other.to_string()),
    }
}

/// The fields every content-making form has: description, metadata and the chunker.
const DESCRIPTION: FormField = FormField::optional("description", "string", "Description.");
const METADATA: FormField = FormField::optional("metadata", "object", "JSON object of metadata.");
const CHUNKER: FormField = FormField::optional("chunker", "string", "Chunker (e.g. MarkdownChunker).");
const CHUNK_SIZE: FormField = FormField::optional("chunk_size", "integer", "Chunk size in characters.");
const CHUNK_OVERLAP: FormField = FormField::optional("chunk_overlap", "integer", "Chunk overlap in characters.");

/// The fields of `POST /knowledge/content`.
pub const UPLOAD_FORM: &[FormField] = &[
    FormField::optional("name", "string", "Content name (default: the file's)."),
    DESCRIPTION,
    METADATA,
    FormField::optional("file", "string", "The file (txt, md, csv, json, pdf, docx, html)."),
    FormField::optional("text_content", "string", "Text to index instead of a file."),
    FormField::optional("url", "string", "An http(s) URL to read instead."),
    CHUNKER,
    CHUNK_SIZE,
    CHUNK_OVERLAP,
];

/// The `metadata` field of an upload form: a JSON object; as Agno, JSON null is no metadata and
/// anything else that is not an object is kept under `"value"`.
fn form_metadata(form: &Form) -> Map<String, Value> {
    match form.text("metadata").map(str::trim).filter(|m| !m.is_empty()) {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) => Map::new(),
            _ => Map::from_iter([("value".to_owned(), Value::String(text.to_owned()))]),
        },
    }
}

fn number(form: &Form, name: &str) -> ApiResult<Option<usize>> {
    match form.text(name).map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        // From 0 to i64's largest, as the API document says.
        Some(t) => t.parse::<i64>().ok().and_then(|n| usize::try_from(n).ok()).map(Some).ok_or_else(|| {
            ApiError::unprocessable(format!("{name} must be a whole number from 0 to {}, not {t:?}", i64::MAX))
                .at("body", name)
        }),
    }
}

/// `POST /knowledge/content`: accepts a file or `text_content`, answers 202 with the row
/// (`processing`) and queues its ingestion. Bad metadata or chunker settings are
/// refused before anything is stored; unreadable content ends `failed` with the reason.
pub async fn upload_content(
    Caller { state, principal }: Caller,
    Query(q): Query<KnowledgeParams>,
    request: Request,
) -> ApiResult<Response> {
    let k = Arc::clone(pick(&state, q.knowledge_id.as_deref())?);
    contents(&k)?;
    let mut form = Form::read(request, &state.limits).await?;
    let metadata = form_metadata(&form);
    let chunking_spec = match (form.text("chunker"), number(&form, "chunk_size")?, number(&form, "chunk_overlap")?) {
        (None, None, None) => None,
        (chunker, chunk_size, chunk_overlap) => {
            Some(ChunkingSpec { chunker: chunker.map(str::to_owned), chunk_size, chunk_overlap })
        }
    };
    // An unknown chunker or an empty chunk size is refused here. An overlap as large as the chunks
    // is accepted and the content fails with the reason, as Python Agno does: the API's document
    // cannot say that one field must be smaller than another.
    let (chunking, refused_sizes) = match chunking_spec.as_ref().map(ChunkingSpec::chunking).transpose() {
        Ok(chunking) => (chunking, None),
        Err(e @ ChunkingError::OverlapTooLarge { .. }) => (None, Some(e.to_string())),
        Err(e @ ChunkingError::UnknownName(_)) => {
            return Err(ApiError::unprocessable(e.to_string()).at("body", "chunker"));
        }
        Err(e @ ChunkingError::EmptyChunks) => {
            return Err(ApiError::unprocessable(e.to_string()).at("body", "chunk_size"));
        }
    };
    // Checked whenever it is sent (also beside a file, which wins), as the document says.
    let url = form.text("url").filter(|u| !u.trim_matches(is_pattern_space).is_empty()).map(upload_url).transpose()?;
    let name = form.text("name").map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
    let description = form.text("description").unwrap_or_default().to_owned();
    let mut content = if let Some(file) = form.take_file("file") {
        let mut c = Content::file(file.file_name.clone(), file.bytes.to_vec());
        c.type_label = file.content_type.clone().filter(|t| !t.is_empty() && t != "application/octet-stream");
        if let Some(name) = &name {
            // A chosen name keeps the file's reader.
            c.kind = Some(ContentKind::from_name(&file.file_name).unwrap_or(ContentKind::Text));
            c.name.clone_from(name);
        }
        c.source = Some(format!("upload:{}", file.file_name));
        c
    } else if let Some(text) = form.text("text_content").filter(|t| !t.trim().is_empty()) {
        let mut c = Content::text(name.clone().unwrap_or_else(|| "text".to_owned()), text);
        c.source = Some("manual".to_owned());
        c.type_label = Some("manual".to_owned());
        c
    } else if let Some(url) = url {
        let mut c = Content::url(url);
        if let Some(name) = &name {
            c.name.clone_from(name);
        }
        c
    } else {
        return Err(ApiError::bad_request("Send a file, text_content or url to upload"));
    };
    content.description = description;
    content.metadata = metadata;
    content.user_id = principal.user_scope(None).or(content.user_id);
    let k = match chunking {
        Some(chunking) => Arc::new(k.as_ref().clone().chunking(chunking)),
        None => k,
    };
    k.check_content(&content)
        .map_err(|e| ApiError::unprocessable(e).with_type("too_many_chunks").at("body", "chunk_size"))?;
    let row = k.accept(&content).await.map_err(knowledge_error)?;
    // As Python answers an accepted upload: what the request said, nothing measured yet.
    let accepted = json!({
        "id": row.id,
        "name": row.name,
        "description": form.text("description"),
        "type": Value::Null,
        "size": Value::Null,
        "linked_to": Value::Null,
        "metadata": row.metadata,
        "access_count": Value::Null,
        "status": "processing",
        "status_message": Value::Null,
        "created_at": Value::Null,
        "updated_at": Value::Null,
    });
    match refused_sizes {
        Some(reason) => {
            if let (Some(db), Some(id)) = (k.contents(), row.id.as_deref()) {
                crate::queue::ingest::end_content(db.as_ref(), id, &reason).await;
            }
        }
        None => start_ingestion(&state, k, content, row, chunking_spec, None).await?,
    }
    Ok((StatusCode::ACCEPTED, Json(accepted)).into_response())
}

/// Ingests `content`, accepted as `row` (`processing`): a job of the durable queue (its id the
/// content's, or `job_id` for an ingestion again of a content), or, on a database without one
/// (JSON files), in this process, not durably, at most `LOCAL_INGESTIONS` at a time (the others
/// wait their turn).
///
/// # Errors
/// The queue refuses the job (full, or the database fails); the content then ends `failed`.
pub(crate) async fn start_ingestion(
    state: &AppState,
    k: Arc<Knowledge>,
    content: Content,
    row: agno_core::KnowledgeRow,
    chunking: Option<ChunkingSpec>,
    job_id: Option<String>,
) -> ApiResult<()> {
    let content_id = row.id.clone().unwrap_or_default();
    match &state.queue {
        Some(queue) => {
            let spec = IngestSpec::new(k.name(), &content_id, &content, chunking);
            super::background::enqueue_ingestion(state, queue, &spec, job_id).await
        }
        None => {
            tokio::spawn(async move {
                let Ok(_turn) = LOCAL_INGESTIONS.acquire().await else { return };
                if let Err(e) = k.process(&content, row).await {
                    tracing::error!(error = %e, "storing the knowledge content's status failed");
                }
            });
            Ok(())
        }
    }
}

/// Ingestions run at once in this process when the database has no job queue (with one, the
/// queue's `max_concurrency` bounds them).
static LOCAL_INGESTIONS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(8);

/// Body of `POST /knowledge/search` (Agno's `VectorSearchRequestSchema`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct SearchRequest {
    /// The query.
    query: String,
    /// The knowledge base (default: the only one).
    #[serde(default)]
    knowledge_id: Option<String>,
    /// Accepted for compatibility.
    #[serde(default)]
    #[allow(dead_code)]
    db_id: Option<String>,
    /// `vector`, `keyword` or `hybrid` (default: the base's).
    #[serde(default)]
    #[schemars(extend("enum" = ["vector", "keyword", "hybrid"]))]
    search_type: Option<String>,
    /// Most results (default: the base's `max_results`).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    max_results: Option<usize>,
    /// Metadata filters (Agno's forms: `{key: value}` or a FilterExpr object; a list of them is
    /// taken too).
    #[serde(default)]
    #[schemars(with = "Option<Map<String, Value>>")]
    filters: Option<Value>,
    /// Paging of the results: `{limit, page}`.
    #[serde(default)]
    #[schemars(with = "Option<Value>")]
    meta: Option<Value>,
}

/// `POST /knowledge/search`: documents for a query, paginated, visible to the caller.
pub async fn search(Caller { state, principal }: Caller, body: Bytes) -> ApiResult<Json<Value>> {
    let req: SearchRequest = json_body(&body)?;
    let k = pick(&state, req.knowledge_id.as_deref())?;
    let search_type = req
        .search_type
        .as_deref()
        .map(crate::build::knowledge::parse_search_type)
        .transpose()
        .map_err(|e| ApiError::unprocessable(e).at("body", "search_type"))?;
    let filter = req
        .filters
        .as_ref()
        .filter(|f| !f.is_null())
        .map(Filter::from_json)
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("invalid filters: {e}")))?;
    let meta = req.meta.as_ref();
    let get = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok());
    let paging = Paging::new(get("limit"), get("page"))?;
    let user = principal.user_scope(None);
    let found = k
        .search_with(&req.query, req.max_results, filter.as_ref(), user.as_deref(), search_type)
        .await
        .map_err(knowledge_error)?;
    let total = found.len();
    let page: Vec<Value> = found
        .iter()
        .skip((paging.page - 1).saturating_mul(paging.limit))
        .take(paging.limit)
        .map(|d| {
            json!({
                "id": d.id,
                "content": d.content,
                "name": d.name,
                "meta_data": d.meta_data,
                "usage": Value::Null,
                "reranking_score": d.reranking_score,
                "content_id": d.content_id,
                "content_origin": Value::Null,
                "size": d.content.chars().count(),
            })
        })
        .collect();
    Ok(paging.respond(page, total as u64))
}

/// `GET /knowledge/config`: readers, chunkers and the vector store of the base.
pub async fn config(State(state): State<AppState>, Query(q): Query<KnowledgeParams>) -> ApiResult<Json<Value>> {
    let k = pick(&state, q.knowledge_id.as_deref())?;
    let chunker_names = ["FixedSizeChunker", "RecursiveChunker", "DocumentChunker", "MarkdownChunker"];
    let readers: Map<String, Value> = READERS
        .iter()
        .map(|(id, name, description, types)| {
            let reader = json!({
                "id": id, "name": name, "description": description, "chunkers": chunker_names,
                "content_types": types, "unavailable_content_types": Value::Null,
            });
            ((*id).to_owned(), reader)
        })
        .collect();
    let readers_for_type: Map<String, Value> = READERS
        .iter()
        .flat_map(|(id, _, _, types)| types.iter().map(move |t| ((*t).to_owned(), json!([id]))))
        .collect();
    let search_types: Vec<&str> = if k.has_embedder() { vec!["vector", "keyword", "hybrid"] } else { vec!["keyword"] };
    let chunker = |key: &str, description: &str| json!({"key": key, "name": key, "description": description, "metadata": {"chunk_size": 5000, "chunk_overlap": 0}});
    Ok(Json(json!({
        "readers": readers,
        "readersForType": readers_for_type,
        "chunkers": {
            "FixedSizeChunker": chunker("FixedSizeChunker", "Splits text into chunks of a fixed size"),
            "RecursiveChunker": chunker("RecursiveChunker", "Splits at the strongest separator within the size"),
            "DocumentChunker": chunker("DocumentChunker", "Packs whole paragraphs up to the size"),
            "MarkdownChunker": chunker("MarkdownChunker", "Packs Markdown sections up to the size"),
        },
        "filters": [],
        "vector_dbs": [{
            "id": k.vector_db_id(),
            "name": "SqliteVectorDb",
            "description": k.description_text(),
            "search_types": search_types,
        }],
        "remote_content_sources": remote::config_sources(k),
        "unavailable_readers": {},
        "unavailable_chunkers": {},
    })))
}
