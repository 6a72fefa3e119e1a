//! Remote content sources (`[[knowledge.sources]]`, Agno's `content_sources`): S3 or
//! S3-compatible buckets. `GET /knowledge/{id}/sources` and `.../sources/{source_id}/files` list
//! them; `POST /knowledge/remote-content` makes one content per object (a key, or every object
//! under a folder `path/`) and ingests each through the durable queue, the worker reading the
//! object itself (`s3://<source>/<key>`), so a restart mid-ingestion loses nothing;
//! `POST /knowledge/content/{id}/refresh` re-ingests a content whose object changed (its ETag)
//! and leaves an unchanged one alone.

use std::sync::Arc;

use agno_core::{KnowledgeRow, now_epoch_secs};
use agno_knowledge::{Content, Knowledge, S3Error, S3Source};
use axum::Json;
use axum::extract::{Path, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{KnowledgeParams, content_json, contents, form_metadata, number, pick, start_ingestion};
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::queue::ingest::ChunkingSpec;
use crate::routes::FormField;
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// The fields of `POST /knowledge/remote-content`.
pub const REMOTE_FORM: &[FormField] = &[
    FormField::required("config_id", "string", "The source (`[[knowledge.sources]] id`)."),
    FormField::required("path", "string", "An object's key, or a folder ending in `/` (every object under it)."),
    FormField::optional("name", "string", "Content name (default: the key; a folder's objects: name/relative key)."),
    super::DESCRIPTION,
    super::METADATA,
    FormField::optional("reader_id", "string", "Accepted for compatibility; the reader follows the key's extension."),
    super::CHUNKER,
    super::CHUNK_SIZE,
    super::CHUNK_OVERLAP,
];

/// A source's failure as these routes answer it.
fn s3_error(e: S3Error) -> ApiError {
    match e {
        S3Error::NoSuchBucket(_) | S3Error::NoSuchKey(_) => ApiError::not_found(e.to_string()),
        S3Error::Credentials(detail) => {
            tracing::warn!(%detail, "an S3 source refused its credentials");
            ApiError::unauthenticated("Invalid or missing AWS credentials for this source")
        }
        S3Error::Other(detail) => ApiError::new(StatusCode::BAD_GATEWAY, format!("Failed to list files: {detail}")),
    }
}

fn source_json(s: &S3Source, with_prefix: bool) -> Value {
    json!({"id": s.id, "name": s.name, "type": "s3", "metadata": s.metadata,
           "prefix": if with_prefix { s.prefix.clone() } else { None }})
}

/// `/knowledge/config`'s `remote_content_sources` (Agno leaves `prefix` out there).
pub(crate) fn config_sources(k: &Knowledge) -> Value {
    if k.sources().is_empty() {
        return Value::Null;
    }
    Value::Array(k.sources().iter().map(|s| source_json(s, false)).collect())
}

fn source<'a>(k: &'a Knowledge, id: &str) -> ApiResult<&'a Arc<S3Source>> {
    k.source(id).ok_or_else(|| ApiError::not_found(format!("Content source not found: {id}")))
}

/// `GET /knowledge/{knowledge_id}/sources`.
pub async fn list_sources(Caller { state, .. }: Caller, Path(knowledge_id): Path<String>) -> ApiResult<Json<Value>> {
    let k = pick(&state, Some(&knowledge_id))?;
    Ok(Json(Value::Array(k.sources().iter().map(|s| source_json(s, true)).collect())))
}

/// Query of `GET /knowledge/{knowledge_id}/sources/{source_id}/files`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FilesQuery {
    /// The prefix to list (default: the source's).
    prefix: Option<String>,
    /// Files per page (1 to 1000, default 100).
    limit: Option<usize>,
    /// Page, from 1.
    page: Option<usize>,
    /// `/` (default: one level, with folders) or empty (every object below).
    delimiter: Option<String>,
    /// Accepted for compatibility.
    #[allow(dead_code)]
    db_id: Option<String>,
}

/// The media type of a file name, by its extension.
fn content_type(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "txt" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "html" | "htm" => "text/html",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        _ => return None,
    })
}

fn last_segment(key: &str) -> &str {
    key.trim_end_matches('/').rsplit('/').next().unwrap_or(key)
}

/// `GET /knowledge/{knowledge_id}/sources/{source_id}/files`: a page of the objects under a
/// prefix, and (on the first page) its folders.
pub async fn list_files(
    Caller { state, .. }: Caller,
    Path((knowledge_id, source_id)): Path<(String, String)>,
    Query(q): Query<FilesQuery>,
) -> ApiResult<Json<Value>> {
    let paging = super::super::params::Paging::new(Some(q.limit.unwrap_or(100)), q.page)?.at_most(1000)?;
    let (page, limit) = (paging.page, paging.limit);
    let k = pick(&state, Some(&knowledge_id))?;
    let s = source(k, &source_id)?;
    let delimiter = q.delimiter.as_deref().unwrap_or("/");
    let listing = s.list(q.prefix.as_deref(), delimiter).await.map_err(s3_error)?;
    let prefix = q.prefix.clone().or_else(|| s.prefix.clone()).unwrap_or_default();
    let files: Vec<Value> = listing
        .objects
        .iter()
        .filter(|o| o.key != prefix && !o.key.ends_with('/'))
        .map(|o| {
            let name = last_segment(&o.key);
            json!({"key": o.key, "name": name, "size": o.size, "last_modified": o.last_modified,
                   "content_type": content_type(name)})
        })
        .collect();
    let folders: Vec<Value> = if page == 1 {
        listing.folders.iter().map(|p| json!({"prefix": p, "name": last_segment(p), "is_empty": false})).collect()
    } else {
        Vec::new()
    };
    let total = files.len();
    let page_files: Vec<Value> = files.into_iter().skip((page - 1) * limit).take(limit).collect();
    Ok(Json(json!({
        "source_id": s.id,
        "source_name": s.name,
        "prefix": q.prefix.unwrap_or_default(),
        "folders": folders,
        "files": page_files,
        "meta": {"page": page, "limit": limit, "total_pages": total.div_ceil(limit), "total_count": total, "search_time_ms": 0.0},
    })))
}

/// Where a content came from, as Agno records it under `metadata._agno`, with the object's
/// entity tag (what a refresh compares).
fn provenance(s: &S3Source, key: &str, etag: Option<&str>) -> Value {
    json!({"source_type": "s3", "s3_bucket": s.bucket, "s3_object_name": key, "source_config_id": s.id,
           "source_config_name": s.name, "s3_region": s.region, "s3_etag": etag})
}

/// `POST /knowledge/remote-content`: one content per object (202 with the first; `contents`
/// lists every one), each ingested through the durable queue.
pub async fn upload_remote_content(
    Caller { state, principal }: Caller,
    Query(q): Query<KnowledgeParams>,
    request: Request,
) -> ApiResult<Response> {
    let k = Arc::clone(pick(&state, q.knowledge_id.as_deref())?);
    contents(&k)?;
    let form = Form::read(request, &state.limits).await?;
    let required = |field: &str| {
        form.text(field)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| ApiError::unprocessable("Field required").with_type("missing").at("body", field))
    };
    let (config_id, path) = (required("config_id")?, required("path")?);
    let Some(s) = k.source(&config_id).cloned() else {
        return Err(ApiError::bad_request(format!(
            "Unknown content source: {config_id}. Check /knowledge/config for available sources."
        )));
    };
    let metadata = form_metadata(&form);
    let chunking = match (form.text("chunker"), number(&form, "chunk_size")?, number(&form, "chunk_overlap")?) {
        (None, None, None) => None,
        (chunker, chunk_size, chunk_overlap) => {
            let spec = ChunkingSpec { chunker: chunker.map(str::to_owned), chunk_size, chunk_overlap };
            spec.chunking().map_err(|e| ApiError::unprocessable(e.to_string()).at("body", "chunker"))?;
            Some(spec)
        }
    };
    let name = form.text("name").map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
    let description = form.text("description").unwrap_or_default().to_owned();
    let folder = path.ends_with('/');
    let listing = s.list(Some(&path), "").await.map_err(s3_error)?;
    let objects: Vec<_> = listing
        .objects
        .into_iter()
        .filter(|o| !o.key.ends_with('/') && if folder { o.key.starts_with(&path) } else { o.key == path })
        .collect();
    if objects.is_empty() {
        return Err(ApiError::not_found(if folder {
            format!("No objects under {path} in source {config_id}")
        } else {
            format!("Object {path} does not exist in source {config_id}")
        }));
    }
    let mut accepted = Vec::new();
    for o in &objects {
        let content_name = match (&name, folder) {
            (Some(n), true) => format!("{n}/{}", &o.key[path.len()..]),
            (Some(n), false) => n.clone(),
            (None, _) => o.key.clone(),
        };
        let mut c = Content::url(format!("s3://{}/{}", s.id, o.key));
        c.name = content_name;
        c.description.clone_from(&description);
        c.source = Some(format!("s3://{}/{}", s.bucket, o.key));
        c.type_label = Some("s3".to_owned());
        c.metadata = metadata.clone();
        c.metadata.insert("_agno".to_owned(), provenance(&s, &o.key, o.etag.as_deref()));
        c.user_id = principal.user_scope(None);
        let row = k.accept(&c).await.map_err(super::knowledge_error)?;
        accepted.push(row.clone());
        start_ingestion(&state, Arc::clone(&k), c, row, chunking.clone(), None).await?;
    }
    let mut body = content_json(&accepted[0]);
    body["status"] = json!("processing");
    body["contents"] = Value::Array(accepted.iter().map(|r| json!({"id": r.id, "name": r.name})).collect());
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// `POST /knowledge/content/{content_id}/refresh`: a content read from a source is re-ingested
/// when its object changed (202, `processing`) and left alone when it did not (200, as it is).
pub async fn refresh_content(
    Caller { state, principal }: Caller,
    Path(content_id): Path<String>,
    Query(q): Query<KnowledgeParams>,
) -> ApiResult<Response> {
    let k = Arc::clone(pick(&state, q.knowledge_id.as_deref())?);
    let db = Arc::clone(contents(&k)?);
    let row = db
        .get_knowledge_content(&content_id, principal.user_scope(None).as_deref())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Content not found: {content_id}")))?;
    if row.user_id.is_none() && !principal.admin {
        return Err(ApiError::forbidden("Cannot refresh shared content"));
    }
    let agno = row.metadata.as_ref().and_then(|m| m.get("_agno")).cloned().unwrap_or(Value::Null);
    let (Some(source_id), Some(key)) = (agno["source_config_id"].as_str(), agno["s3_object_name"].as_str()) else {
        return Err(ApiError::bad_request("Content has no source URL to refresh from"));
    };
    let s = source(&k, source_id)?.clone();
    let listing = s.list(Some(key), "").await.map_err(s3_error)?;
    let Some(object) = listing.objects.into_iter().find(|o| o.key == key) else {
        return Err(ApiError::not_found(format!("Object {key} no longer exists in source {source_id}")));
    };
    if object.etag.is_some()
        && object.etag.as_deref() == agno["s3_etag"].as_str()
        && row.status.as_deref() != Some("failed")
    {
        return Ok((StatusCode::OK, Json(content_json(&row))).into_response());
    }
    let mut metadata = row.metadata.clone().unwrap_or_default();
    metadata.insert("_agno".to_owned(), provenance(&s, key, object.etag.as_deref()));
    let reopened = KnowledgeRow {
        metadata: Some(metadata.clone()),
        status: Some("processing".to_owned()),
        status_message: None,
        updated_at: Some(now_epoch_secs()),
        ..row
    };
    db.upsert_knowledge_content(&reopened).await?;
    let mut c = Content::url(format!("s3://{}/{key}", s.id));
    c.name.clone_from(&reopened.name);
    c.description.clone_from(&reopened.description);
    c.source = Some(format!("s3://{}/{key}", s.bucket));
    c.type_label = Some("s3".to_owned());
    c.metadata = metadata;
    c.user_id.clone_from(&reopened.user_id);
    let job = format!("{content_id}-refresh-{}", agno_core::new_id());
    start_ingestion(&state, k, c, reopened.clone(), None, Some(job)).await?;
    Ok((StatusCode::ACCEPTED, Json(content_json(&reopened))).into_response())
}
