//! `/filesystem/*`: browsing the agents' durable files, as Python AgentOS 3.1 serves it
//! (`filesystem:read`). A store is found through the agents the caller may read (a namespace no
//! readable agent holds is not found); a caller reads their own partition of a partitioned store,
//! an admin every partition (the shared one first) or one named by `user_id`. Nothing here
//! writes: the agents' tools do.

use std::collections::BTreeMap;

use agno_core::agent_files::paths::{normalize_directory, normalize_path, path_order};
use agno_core::agent_files::{FileStore, FileSystem, FsError, Partition};
use axum::Json;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;
use crate::state::AppState;

/// Longest preview of `GET /filesystem/content`, in characters.
const MAX_PREVIEW_CHARS: usize = 100_000;

/// A store an agent holds, as the caller reads it.
struct Store {
    /// Bound to the caller's own partition (the shared one on a store not partitioned).
    fs: FileSystem,
    /// Partitioned by user.
    partitioned: bool,
    /// The agents holding it that the caller may read.
    holders: Vec<String>,
}

fn fs_error(e: FsError) -> ApiError {
    match e {
        FsError::InvalidPath(m) | FsError::Invalid(m) => ApiError::bad_request(m),
        FsError::Db(e) => e.into(),
        other => ApiError::bad_request(other.to_string()),
    }
}

/// The agents the caller may read, or the one asked for (403 when they may not read it).
fn agent_ids(state: &AppState, principal: &Principal, asked: Option<&str>) -> ApiResult<Vec<String>> {
    let readable = principal.accessible("agents", "read");
    if let Some(id) = asked {
        if readable.as_ref().is_some_and(|ids| !ids.iter().any(|i| i == id)) {
            return Err(ApiError::forbidden("Insufficient permissions: agents:read is required"));
        }
        return Ok(vec![id.to_owned()]);
    }
    if readable.as_ref().is_some_and(Vec::is_empty) {
        return Err(ApiError::forbidden("Insufficient permissions: agents:read is required"));
    }
    let mut ids = <super::agents::Agents as super::component::Kind>::ids(state);
    if let Some(readable) = readable {
        ids.retain(|id| readable.contains(id));
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// The store agent `id` holds, bound for the caller: 404 for an agent not served or without
/// files, 403 when isolation needs an identity the caller lacks, 400 when its namespace cannot be
/// bound for the caller.
fn agent_store(state: &AppState, principal: &Principal, id: &str) -> ApiResult<(FileSystem, bool)> {
    let served = state.any_agent(id).ok_or_else(|| ApiError::not_found("Agent not found"))?;
    let settings =
        served.agent.filesystem().ok_or_else(|| ApiError::not_found("This agent does not have a filesystem"))?;
    let db = state.require_db()?;
    if state.auth.user_isolation && !principal.admin && principal.subject.is_none() {
        return Err(ApiError::forbidden("A user identity is required when user isolation is enabled"));
    }
    let isolation = state.auth.user_isolation;
    let user = principal.subject.as_deref();
    let at = match settings.partition_for(Some(id), None, user, isolation) {
        Ok(at) => at,
        // An admin without an identity of their own browses from the shared partition.
        Err(_) if principal.admin && user.is_none() => {
            let mut shared = settings.clone();
            shared.user_scoped = Some(false);
            shared.partition_for(Some(id), None, None, false).map_err(fs_error)?
        }
        Err(e) => return Err(fs_error(e)),
    };
    let store: std::sync::Arc<dyn FileStore> = std::sync::Arc::clone(db) as std::sync::Arc<dyn FileStore>;
    let fs = FileSystem::new(store, at, settings.max_file_bytes, settings.max_namespace_bytes);
    Ok((fs, settings.partitioned(isolation)))
}

/// The stores of `ids` (each once, with every holder), narrowed to `namespace`; `strict`: an
/// agent without one is an error rather than skipped.
fn stores(
    state: &AppState,
    principal: &Principal,
    ids: &[String],
    namespace: Option<&str>,
    strict: bool,
) -> ApiResult<Vec<Store>> {
    let mut found: BTreeMap<Partition, Store> = BTreeMap::new();
    for id in ids {
        let (fs, partitioned) = match agent_store(state, principal, id) {
            Ok(s) => s,
            Err(e) if !strict && [400, 404].contains(&e.status.as_u16()) => continue,
            Err(e) => return Err(e),
        };
        if namespace.is_some_and(|n| n != fs.partition().namespace) {
            continue;
        }
        found
            .entry(fs.partition().clone())
            .or_insert_with(|| Store { fs, partitioned, holders: Vec::new() })
            .holders
            .push(id.clone());
    }
    Ok(found.into_values().collect())
}

/// The one store a browse request addresses (by namespace, by agent, or both), or 404.
fn one_store(
    state: &AppState,
    principal: &Principal,
    agent: Option<&str>,
    namespace: Option<&str>,
) -> ApiResult<Store> {
    if agent.is_none() && namespace.is_none() {
        return Err(ApiError::bad_request("Provide a namespace, an agent_id, or both"));
    }
    let ids = agent_ids(state, principal, agent)?;
    let mut found = stores(state, principal, &ids, namespace, agent.is_some())?;
    match found.len() {
        0 => Err(ApiError::not_found("Filesystem not found")),
        _ => {
            let mut store = found.swap_remove(0);
            store.holders.sort();
            Ok(store)
        }
    }
}

/// The partitions a request reads: the one named (the caller's own, any for an admin), every
/// partition of a partitioned store for an admin naming none (the shared one first), else the
/// caller's.
async fn views(store: &Store, principal: &Principal, user_id: Option<&str>) -> ApiResult<Vec<FileSystem>> {
    if let Some(user) = user_id {
        if !principal.admin && principal.subject.as_deref() != Some(user) {
            return Err(ApiError::forbidden("Only an admin may browse another user's files"));
        }
        return Ok(vec![store.fs.in_partition(user)]);
    }
    if principal.admin && store.partitioned {
        let mut all = vec![store.fs.in_partition("")];
        for user in store.fs.partitions().await.map_err(fs_error)? {
            all.push(store.fs.in_partition(&user));
        }
        return Ok(all);
    }
    Ok(vec![store.fs.clone()])
}

fn owner(fs: &FileSystem) -> Value {
    let user = &fs.partition().user_id;
    if user.is_empty() { Value::Null } else { Value::String(user.clone()) }
}

fn meta(page: usize, limit: usize, total: usize) -> Value {
    json!({"page": page, "limit": limit, "total_pages": total.div_ceil(limit), "total_count": total, "search_time_ms": 0.0})
}

fn paged<T: Clone>(items: &[T], page: usize, limit: usize) -> Vec<T> {
    items.iter().skip((page - 1) * limit).take(limit).cloned().collect()
}

/// Sorts `entries` as Agno does (`type`, `size` or `updated_at`; directories stay first unless by
/// type), ties by path; none keeps the order given.
fn sort_entries(entries: &mut Vec<Value>, sort_by: Option<&str>, descending: bool) {
    let Some(by) = sort_by else { return };
    let kind = |e: &Value| e.get("type").and_then(Value::as_str).unwrap_or("file").to_owned();
    let path = |e: &Value| e.get("path").and_then(Value::as_str).unwrap_or_default().to_owned();
    let num = |e: &Value, k: &str| e.get(k).and_then(Value::as_i64).unwrap_or(0);
    entries.sort_by(|a, b| {
        let first = match by {
            "type" => kind(a).cmp(&kind(b)),
            "size" => num(a, "size_bytes").cmp(&num(b, "size_bytes")),
            _ => num(a, "updated_at").cmp(&num(b, "updated_at")),
        };
        first.then_with(|| path_order(&path(a), &path(b)))
    });
    if descending {
        entries.reverse();
    }
    if by != "type" {
        let (dirs, files): (Vec<Value>, Vec<Value>) = entries.drain(..).partition(|e| kind(e) == "directory");
        entries.extend(dirs);
        entries.extend(files);
    }
}

/// Paging and sorting shared by the listings (Agno's bounds: `page >= 1`, `1 <= limit <= 100`).
fn page_bounds(page: Option<usize>, limit: Option<usize>) -> ApiResult<(usize, usize)> {
    let paging = super::params::Paging::new(Some(limit.unwrap_or(50)), page)?.at_most(100)?;
    Ok((paging.page, paging.limit))
}

fn sort_args(sort_by: Option<&str>, sort_order: Option<&str>) -> ApiResult<(Option<String>, bool)> {
    if sort_by.is_some_and(|b| !["type", "size", "updated_at"].contains(&b)) {
        let expected = "'type', 'size' or 'updated_at'";
        return Err(ApiError::unprocessable(format!("Input should be {expected}"))
            .with_type("literal_error")
            .at("query", "sort_by")
            .with_ctx(json!({"expected": expected})));
    }
    let descending = match sort_order.map(str::to_ascii_lowercase).as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(_) => {
            return Err(ApiError::unprocessable("Input should be 'asc' or 'desc'")
                .with_type("enum")
                .at("query", "sort_order")
                .with_ctx(json!({"expected": "'asc' or 'desc'"})));
        }
    };
    Ok((sort_by.map(str::to_owned), descending))
}

fn query_text(query: Option<&str>, required: bool) -> ApiResult<Option<String>> {
    match query {
        None if required => Err(ApiError::unprocessable("Field required").with_type("missing").at("query", "query")),
        None => Ok(None),
        Some(q) if q.is_empty() || q.chars().count() > 200 => {
            Err(ApiError::unprocessable("String should have between 1 and 200 characters").at("query", "query"))
        }
        Some(q) => Ok(Some(q.to_owned())),
    }
}

/// `/config`'s `filesystem` (Agno's `FileSystemConfig`): each store the caller's agents hold, its
/// backend, limits and whether it is partitioned by user, with the agents holding it (`access`
/// only when read-only).
pub(crate) fn config_namespaces(state: &AppState, principal: &Principal) -> Value {
    let Some(db_id) = state.db.as_ref().map(|_| state.db_id.to_string()) else { return json!({"namespaces": []}) };
    let on_postgres = state.db_url_redacted.as_deref().is_some_and(|u| u.starts_with("postgres"));
    let mut namespaces: BTreeMap<String, Value> = BTreeMap::new();
    for id in agent_ids(state, principal, None).unwrap_or_default() {
        let Some(served) = state.any_agent(&id) else { continue };
        let Some(settings) = served.agent.filesystem() else { continue };
        let isolation = state.auth.user_isolation;
        let namespace = settings
            .partition_for(Some(&id), None, principal.subject.as_deref(), false)
            .map_or_else(|_| settings.namespace.clone(), |p| p.namespace);
        let user_isolation = settings.partitioned(isolation) || settings.namespace.contains("{user_id}");
        let mut agent = json!({"id": id});
        if !settings.can_write() {
            agent["access"] = json!("read_only");
        }
        let entry = namespaces.entry(namespace.clone()).or_insert_with(|| {
            json!({
                "backend_type": "db",
                "db_id": db_id,
                "db_schema": on_postgres.then_some("fs"),
                "table_name": "agno_fs",
                "namespace": namespace,
                "user_isolation": user_isolation,
                "max_file_bytes": settings.max_file_bytes,
                "max_namespace_bytes": settings.max_namespace_bytes,
                "agents": [],
            })
        });
        if let Some(agents) = entry["agents"].as_array_mut() {
            agents.push(agent);
        }
    }
    // As Agno's: a field without a value (`db_schema` off PostgreSQL) is left out.
    json!({"namespaces": namespaces.into_values().map(super::without_nulls).collect::<Vec<_>>()})
}

/// Query of `GET /filesystem/files`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FilesQuery {
    /// Filter by agent ID.
    agent_id: Option<String>,
    /// Filter by resolved namespace.
    namespace: Option<String>,
    /// Search file contents (1 to 200 characters).
    query: Option<String>,
    /// Sort by `type`, `size` or `updated_at`; the default order is by path.
    sort_by: Option<String>,
    /// `asc` (default) or `desc`.
    sort_order: Option<String>,
    /// 1-indexed page number.
    page: Option<usize>,
    /// Page size (1 to 100, default 50).
    limit: Option<usize>,
}

/// `GET /filesystem/files`: the files of every store the caller's agents hold (or those of one
/// agent, or one namespace), with content matches when `query` is given.
pub async fn list_files(Caller { state, principal }: Caller, Query(q): Query<FilesQuery>) -> ApiResult<Json<Value>> {
    let (page, limit) = page_bounds(q.page, q.limit)?;
    let (sort_by, descending) = sort_args(q.sort_by.as_deref(), q.sort_order.as_deref())?;
    let text = query_text(q.query.as_deref(), false)?.map(|t| t.trim().to_owned());
    let ids = agent_ids(&state, &principal, q.agent_id.as_deref())?;
    let found = stores(&state, &principal, &ids, q.namespace.as_deref(), q.agent_id.is_some())?;
    let mut rows = Vec::new();
    for store in &found {
        let mut holders = store.holders.clone();
        holders.sort();
        for view in views(store, &principal, None).await? {
            let files = view.list("").await.map_err(fs_error)?;
            let ns = view.partition().namespace.clone();
            match text.as_deref().filter(|t| !t.is_empty()) {
                None => rows.extend(files.iter().map(|f| {
                    json!({"namespace": ns, "path": f.path, "agent_ids": holders, "size_bytes": f.size_bytes,
                           "version": f.version, "updated_at": f.updated_at, "user_id": owner(&view),
                           "snippet": null, "line": null, "match_count": null})
                })),
                Some(t) => {
                    let by_path: BTreeMap<&str, &agno_core::FileMeta> =
                        files.iter().map(|f| (f.path.as_str(), f)).collect();
                    for m in view.search(t, "", files.len().max(1)).await.map_err(fs_error)? {
                        let f = by_path.get(m.path.as_str());
                        rows.push(json!({"namespace": ns, "path": m.path, "agent_ids": holders,
                            "size_bytes": m.size_bytes, "version": f.map(|f| f.version),
                            "updated_at": f.and_then(|f| f.updated_at), "user_id": owner(&view),
                            "snippet": m.snippet, "line": m.line, "match_count": m.match_count}));
                    }
                }
            }
        }
    }
    let key = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    rows.sort_by(|a, b| {
        key(a, "namespace")
            .to_lowercase()
            .cmp(&key(b, "namespace").to_lowercase())
            .then_with(|| path_order(&key(a, "path"), &key(b, "path")))
            .then_with(|| key(a, "user_id").cmp(&key(b, "user_id")))
    });
    sort_entries(&mut rows, sort_by.as_deref(), descending);
    let total = rows.len();
    Ok(Json(json!({"entries": paged(&rows, page, limit), "meta": meta(page, limit, total)})))
}

/// Query of `GET /filesystem/entries`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EntriesQuery {
    /// Resolved namespace of the filesystem to browse.
    namespace: Option<String>,
    /// Agent holding the filesystem; alone, selects that agent's filesystem.
    agent_id: Option<String>,
    /// Relative directory inside the filesystem (default: the root).
    directory: Option<String>,
    /// Sort by `type`, `size` or `updated_at`; the default order is directories, then files, by path.
    sort_by: Option<String>,
    /// `asc` (default) or `desc`.
    sort_order: Option<String>,
    /// 1-indexed page number.
    page: Option<usize>,
    /// Page size (1 to 100, default 50).
    limit: Option<usize>,
}

/// The files and directories directly under `directory` of one partition.
async fn entries_of(view: &FileSystem, directory: &str) -> ApiResult<Vec<Value>> {
    let prefix = if directory.is_empty() { String::new() } else { format!("{directory}/") };
    let mut dirs: BTreeMap<String, (i64, Option<i64>)> = BTreeMap::new();
    let mut files = Vec::new();
    for f in view.list(directory).await.map_err(fs_error)? {
        let relative = f.path.strip_prefix(&prefix).unwrap_or(&f.path);
        match relative.split_once('/') {
            Some((name, _)) => {
                let d = dirs.entry(format!("{prefix}{name}")).or_insert((0, None));
                d.0 += f.size_bytes;
                d.1 = d.1.max(f.updated_at);
            }
            None => files
                .push(json!({"path": f.path, "type": "file", "size_bytes": f.size_bytes, "version": f.version,
                                      "updated_at": f.updated_at, "user_id": owner(view)})),
        }
    }
    let mut dirs: Vec<Value> = dirs
        .into_iter()
        .map(|(path, (size, at))| {
            json!({"path": path, "type": "directory", "size_bytes": size, "version": null,
                                          "updated_at": at, "user_id": owner(view)})
        })
        .collect();
    let path = |v: &Value| v.get("path").and_then(Value::as_str).unwrap_or_default().to_owned();
    dirs.sort_by(|a, b| path_order(&path(a), &path(b)));
    files.sort_by(|a, b| path_order(&path(a), &path(b)));
    dirs.extend(files);
    Ok(dirs)
}

/// `GET /filesystem/entries`: one directory of one store, with the store's usage.
pub async fn list_entries(
    Caller { state, principal }: Caller,
    Query(q): Query<EntriesQuery>,
) -> ApiResult<Json<Value>> {
    let (page, limit) = page_bounds(q.page, q.limit)?;
    let (sort_by, descending) = sort_args(q.sort_by.as_deref(), q.sort_order.as_deref())?;
    let store = one_store(&state, &principal, q.agent_id.as_deref(), q.namespace.as_deref())?;
    let directory = normalize_directory(q.directory.as_deref().unwrap_or("")).map_err(fs_error)?;
    let views = views(&store, &principal, None).await?;
    let (mut dirs, mut files): (BTreeMap<String, Value>, Vec<Value>) = (BTreeMap::new(), Vec::new());
    let (mut file_count, mut total_bytes) = (0, 0);
    for view in &views {
        for e in entries_of(view, &directory).await? {
            let path = e.get("path").and_then(Value::as_str).unwrap_or_default().to_owned();
            if e.get("type").and_then(Value::as_str) == Some("file") {
                files.push(e);
                continue;
            }
            match dirs.get_mut(&path) {
                None => {
                    dirs.insert(path, e);
                }
                // Several partitions share the directory: sizes add up, it has no single owner.
                Some(existing) => {
                    let size = existing["size_bytes"].as_i64().unwrap_or(0) + e["size_bytes"].as_i64().unwrap_or(0);
                    existing["size_bytes"] = json!(size);
                    existing["updated_at"] = json!(existing["updated_at"].as_i64().max(e["updated_at"].as_i64()));
                    if existing["user_id"] != e["user_id"] {
                        existing["user_id"] = Value::Null;
                    }
                }
            }
        }
        let usage = view.usage().await.map_err(fs_error)?;
        file_count += usage.file_count;
        total_bytes += usage.total_bytes;
    }
    let path = |v: &Value| v.get("path").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut entries: Vec<Value> = dirs.into_values().collect();
    entries.sort_by(|a, b| path_order(&path(a), &path(b)));
    if views.len() > 1 {
        let user = |v: &Value| v.get("user_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        files.sort_by(|a, b| path_order(&path(a), &path(b)).then_with(|| user(a).cmp(&user(b))));
    }
    entries.extend(files);
    sort_entries(&mut entries, sort_by.as_deref(), descending);
    let total = entries.len();
    Ok(Json(json!({
        "namespace": store.fs.partition().namespace,
        "agent_ids": store.holders,
        "directory": directory,
        "entries": paged(&entries, page, limit),
        "usage": {"file_count": file_count, "total_bytes": total_bytes, "bytes_limit": store.fs.max_namespace_bytes()},
        "meta": meta(page, limit, total),
    })))
}

/// Query of `GET /filesystem/content`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ContentQuery {
    /// Resolved namespace of the filesystem to browse.
    namespace: Option<String>,
    /// Agent holding the filesystem.
    agent_id: Option<String>,
    /// Relative file path inside the filesystem.
    path: Option<String>,
    /// User partition to read: your own, or any user's for an admin.
    user_id: Option<String>,
    /// Character offset into the file.
    offset: Option<usize>,
    /// Characters to return (1 to 100000).
    limit: Option<usize>,
}

/// `GET /filesystem/content`: a preview of one file, continued from `offset`.
pub async fn read_content(
    Caller { state, principal }: Caller,
    Query(q): Query<ContentQuery>,
) -> ApiResult<Json<Value>> {
    let Some(path) = q.path.as_deref() else {
        return Err(ApiError::unprocessable("Field required").with_type("missing").at("query", "path"));
    };
    let offset = q.offset.unwrap_or(0);
    let limit = q.limit.unwrap_or(MAX_PREVIEW_CHARS);
    if limit == 0 || limit > MAX_PREVIEW_CHARS {
        return Err(
            ApiError::unprocessable(format!("Input should be between 1 and {MAX_PREVIEW_CHARS}")).at("query", "limit")
        );
    }
    let store = one_store(&state, &principal, q.agent_id.as_deref(), q.namespace.as_deref())?;
    // One file lives in one partition: an admin naming none reads the shared one.
    let view = views(&store, &principal, q.user_id.as_deref()).await?.swap_remove(0);
    let path = normalize_path(path).map_err(fs_error)?;
    let file = view.read(&path).await.map_err(fs_error)?.ok_or_else(|| ApiError::not_found("File not found"))?;
    let chars: Vec<char> = file.content.chars().collect();
    let end = (offset + limit).min(chars.len());
    let preview: String = chars.get(offset.min(end)..end).map(|c| c.iter().collect()).unwrap_or_default();
    let content = &file.content;
    let line_count =
        if content.is_empty() { 0 } else { content.matches('\n').count() + usize::from(!content.ends_with('\n')) };
    Ok(Json(json!({
        "namespace": view.partition().namespace,
        "agent_ids": store.holders,
        "path": file.meta.path,
        "content": preview,
        "size_bytes": file.meta.size_bytes,
        "version": file.meta.version,
        "updated_at": file.meta.updated_at,
        "user_id": owner(&view),
        "line_count": line_count,
        "truncated": end < chars.len(),
        "offset": offset,
        "limit": limit,
        "next_offset": (end < chars.len()).then_some(end),
    })))
}

/// Query of `GET /filesystem/search`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchQuery {
    /// Resolved namespace of the filesystem to browse.
    namespace: Option<String>,
    /// Agent holding the filesystem.
    agent_id: Option<String>,
    /// Text to find (1 to 200 characters, case-insensitive).
    query: Option<String>,
    /// Relative directory to search under (default: everything).
    directory: Option<String>,
    /// User partition to search: your own, or any user's for an admin.
    user_id: Option<String>,
    /// 1-indexed page number.
    page: Option<usize>,
    /// Page size (1 to 100, default 50).
    limit: Option<usize>,
}

/// `GET /filesystem/search`: content matches in one store.
pub async fn search(Caller { state, principal }: Caller, Query(q): Query<SearchQuery>) -> ApiResult<Json<Value>> {
    let (page, limit) = page_bounds(q.page, q.limit)?;
    let text = query_text(q.query.as_deref(), true)?.unwrap_or_default();
    let store = one_store(&state, &principal, q.agent_id.as_deref(), q.namespace.as_deref())?;
    let directory = normalize_directory(q.directory.as_deref().unwrap_or("")).map_err(fs_error)?;
    let mut matches = Vec::new();
    for view in views(&store, &principal, q.user_id.as_deref()).await? {
        for m in view.search(&text, &directory, usize::MAX).await.map_err(fs_error)? {
            matches.push(json!({"path": m.path, "size_bytes": m.size_bytes, "snippet": m.snippet, "line": m.line,
                                "match_count": m.match_count, "user_id": owner(&view)}));
        }
    }
    let total = matches.len();
    Ok(Json(json!({
        "namespace": store.fs.partition().namespace,
        "agent_ids": store.holders,
        "query": text,
        "directory": directory,
        "entries": paged(&matches, page, limit),
        "meta": meta(page, limit, total),
    })))
}
