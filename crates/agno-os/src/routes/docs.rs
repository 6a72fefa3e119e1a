//! `/openapi.json`, generated from the route table, and `/docs`, Swagger UI served from assets
//! built into the binary (works offline).

use std::sync::{Arc, OnceLock};

use axum::Json;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::{Map, Value, json};

use super::{Access, ROUTES, RequestBody, RouteSpec};

/// The query parameters a route reads, from the schema of the type its handler reads them into.
fn query_parameters(query: Option<fn() -> schemars::Schema>) -> Vec<Value> {
    let Some(schema) = query.map(|f| f()) else { return Vec::new() };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    properties
        .into_iter()
        .map(|(name, prop)| {
            let mut p =
                json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": prop});
            if let Some(d) = p["schema"].get("description").cloned() {
                p["description"] = d;
            }
            p
        })
        .collect()
}

/// A route's `requestBody`, with the schemas it refers to added to `generator`.
fn request_body(body: RequestBody, generator: &mut schemars::SchemaGenerator) -> Option<Value> {
    match body {
        RequestBody::None => None,
        RequestBody::Json(schema) => Some(json!({
            "required": true,
            "content": {"application/json": {"schema": schema(generator).to_value()}},
        })),
        RequestBody::OptionalJson(schema) => Some(json!({
            "required": false,
            "content": {"application/json": {"schema": schema(generator).to_value()}},
        })),
        RequestBody::Form(fields) => {
            // A field holding JSON is a JSON part (`encoding`), as OpenAPI describes JSON in forms.
            let properties: Map<String, Value> =
                fields.iter().map(|f| (f.name.to_owned(), form_field_schema(f))).collect();
            let encoding: Map<String, Value> = fields
                .iter()
                .filter(|f| matches!(f.kind, "object" | "array"))
                .map(|f| (f.name.to_owned(), json!({"contentType": "application/json"})))
                .collect();
            let required: Vec<&str> = fields.iter().filter(|f| f.required).map(|f| f.name).collect();
            let schema = json!({"type": "object", "properties": properties, "required": required});
            let media = |schema: &Value| {
                let mut m = json!({"schema": schema});
                if !encoding.is_empty() {
                    m["encoding"] = Value::Object(encoding.clone());
                }
                m
            };
            // Forms are read in either encoding; the multipart one is documented, where JSON
            // fields are parts of their own.
            Some(json!({
                "required": !required.is_empty(),
                "content": {"multipart/form-data": media(&schema)},
            }))
        }
    }
}

/// A form field's schema: its type, and the rules its handlers apply to it (a boolean is any of
/// the words [`crate::form::Form::bool`] reads; a message is not empty; an event index is a
/// whole number from 0; a reader is one of `/knowledge/config`'s; JSON lists hold objects).
fn form_field_schema(f: &super::FormField) -> Value {
    let mut schema = json!({"type": f.kind, "description": f.description});
    match (f.kind, f.name) {
        ("boolean", _) => {
            schema = json!({"description": f.description, "anyOf": [{"type": "boolean"},
                {"type": "string", "pattern": crate::form::Form::BOOL_PATTERN}]});
        }
        (_, "message") => schema["minLength"] = json!(1),
        ("array", "step_requirements") => {
            schema["items"] =
                json!({"type": "object", "required": ["step_id"], "properties": {"step_id": {"type": "string"}}});
        }
        ("array", "tools") => {
            schema["items"] = json!({"type": "object", "required": ["tool_call_id"], "properties": {"tool_call_id": {"type": "string"}}});
        }
        (_, "last_event_index") => {
            schema["minimum"] = json!(0);
            schema["maximum"] = json!(i64::MAX);
        }
        (_, "reader_id") => schema["enum"] = json!(super::knowledge::reader_ids()),
        ("array", _) => schema["items"] = json!({"type": "object"}),
        // JSON `null` is no object (an empty part is refused).
        ("object", _) if !f.required => schema["type"] = json!(["object", "null"]),
        ("string", _) if f.required => schema["minLength"] = json!(1),
        _ => {}
    }
    // An optional number may be sent empty, which is no number, as FastAPI reads a form.
    if !f.required && f.kind == "integer" && schema["type"] == "integer" {
        if let Some(number) = schema.as_object_mut() {
            number.remove("description");
        }
        schema = json!({"description": f.description, "anyOf": [schema, {"type": "string", "maxLength": 0}]});
    }
    // An optional text may be absent, which Agno's document (FastAPI's) writes as null; a form
    // part is text, so the null of a client that sends it as text ("null") is a text too. Not so
    // for a number or a choice, where "null" is refused as Agno refuses it.
    if !f.required && f.kind == "string" && schema["type"] == "string" && schema.get("enum").is_none() {
        schema["type"] = json!(["string", "null"]);
    }
    schema
}

/// An upload names what to read: a file, some text or a URL (400 otherwise); the chunker is one
/// of Agno's, its sizes whole numbers; its metadata any JSON.
fn upload_needs_a_source(body: &mut Value) {
    body["required"] = json!(true);
    for media in ["multipart/form-data", "application/x-www-form-urlencoded"] {
        let Some(schema) = body.pointer_mut(&format!("/content/{}/schema", media.replace('/', "~1"))) else { continue };
        schema["anyOf"] = json!([
            {"required": ["file"]},
            {"required": ["text_content"], "properties": {"text_content": {"pattern": "\\S"}}},
            {"required": ["url"], "properties": {"url": {"pattern": "^\\s*(?:https?://|\\[\\s*\"https?://)"}}},
        ]);
        let properties = &mut schema["properties"];
        properties["url"] = json!({"type": "string", "pattern": "^\\s*(?:https?://.*|\\[\\s*\"https?://[^\"]*\"\\s*\\])?\\s*$",
            "description": properties["url"]["description"]});
        properties["file"]["format"] = json!("binary");
        properties["chunker"]["enum"] = json!(agno_knowledge::Chunking::NAMES);
        // As Agno reads it: an object, or any other value kept under "value" (null is none).
        properties["metadata"] = json!({"description":
            "JSON object of metadata; any other value is kept under \"value\", as Agno does."});
        // Whole numbers a server reads (Python's int has no bound; ours is i64's).
        properties["chunk_size"]["anyOf"][0]["minimum"] = json!(1);
        properties["chunk_size"]["anyOf"][0]["maximum"] = json!(i64::MAX);
        properties["chunk_overlap"]["anyOf"][0]["minimum"] = json!(0);
        properties["chunk_overlap"]["anyOf"][0]["maximum"] = json!(i64::MAX);
    }
}

/// The status of a route's success.
fn success_status(r: &RouteSpec) -> &'static str {
    match (r.method.as_str(), r.operation_id) {
        (_, "delete_all_content") => "200",
        ("DELETE", _) => "204",
        (_, "create_session" | "create_schedule_schedules_post") => "201",
        (_, "upload_content") => "202",
        _ => "200",
    }
}

/// The other answers a route gives when it succeeds.
fn other_successes(r: &RouteSpec) -> &'static [(&'static str, &'static str)] {
    match r.operation_id {
        "refresh_metrics" => &[("202", "The recalculation started in the background")],
        "migrate_all_databases" => &[("207", "Some databases migrated, some failed (each named)")],
        _ => &[],
    }
}

/// True for the routes answering `text/event-stream` when asked to stream.
fn streams(r: &RouteSpec) -> bool {
    r.operation_id.starts_with("create_") && r.operation_id.ends_with("_run")
        || r.operation_id.starts_with("continue_")
        || r.operation_id.starts_with("resume_")
}

/// Every status a route can answer, by what it does: its success; 400, 404, 422 and 500 on any
/// route; 401, 403 and 503 (the database unavailable) behind auth; 408 and 413 where a body is
/// read; 409 where state changes (a conflict, and 403 for a browser origin not allowed); 202 and
/// 429 where a run may go to the queue; 406 on `/mcp`.
fn responses(r: &RouteSpec, ok: Value) -> Value {
    let mut out = Map::new();
    let mut ok = ok;
    if streams(r) {
        // Each event: its name, its JSON data and its index (schemathesis and SSE clients read
        // them as objects).
        ok["content"]["text/event-stream"] = json!({"schema": {"type": "object", "properties": {
            "event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}}}});
        if ok["content"].get("application/json").is_none() {
            ok["content"]["application/json"] = json!({"schema": {"type": "object"}});
        }
    }
    out.insert(success_status(r).to_owned(), ok);
    for (code, description) in other_successes(r) {
        out.insert((*code).to_owned(), json!({"description": description}));
    }
    let error = json!({"$ref": "#/components/responses/Error"});
    let mut add = |code: &str, value: &Value| {
        out.entry(code.to_owned()).or_insert_with(|| value.clone());
    };
    if let Access::Public = r.access {
        add("500", &error);
        return Value::Object(out);
    }
    for code in ["400", "401", "403", "404", "500", "503"] {
        add(code, &error);
    }
    add("422", &json!({"$ref": "#/components/responses/ValidationError"}));
    if !matches!(r.body, RequestBody::None) {
        add("408", &error);
        add("413", &error);
    }
    if r.method != axum::http::Method::GET {
        add("409", &error);
    }
    let queued = ["create_agent_run", "create_team_run", "create_workflow_run"].contains(&r.operation_id)
        || r.operation_id.starts_with("continue_");
    if queued {
        add("202", &json!({"description": "A background run accepted: {run_id, session_id, status}"}));
        add("429", &error);
    }
    if r.operation_id.starts_with("mcp_") {
        add("406", &error);
    }
    Value::Object(out)
}

/// The OpenAPI 3.1 document of every route in the table: Python AgentOS's operation ids, the
/// query parameters, form fields and JSON bodies each handler reads (schemas generated from the
/// Rust types), the run record for the routes that answer one, and FastAPI's error shapes.
pub fn openapi() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut settings = schemars::generate::SchemaSettings::draft2020_12();
        settings.definitions_path = "/components/schemas".into();
        settings.meta_schema = None;
        let mut generator = settings.into_generator();
        let run_output = generator.subschema_for::<agno_core::RunOutput>().to_value();
        let mut paths = Map::new();
        for r in ROUTES.iter().filter(|r| !r.path.starts_with("/docs") && r.path != "/openapi.json") {
            let mut params: Vec<Value> = r
                .path
                .split('/')
                .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                // A catch-all (`{*storage_key}`: the rest of the path) is one parameter in OpenAPI.
                .map(|name| name.trim_start_matches('*'))
                .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
                .collect();
            params.extend(query_parameters(r.query));
            let answers_run = matches!(r.operation_id, "create_agent_run" | "continue_agent_run" | "get_agent_run");
            let ok = if answers_run {
                json!({"description": "The run (or its events as text/event-stream when streamed)",
                       "content": {"application/json": {"schema": run_output}}})
            } else {
                json!({"description": "Successful Response"})
            };
            let ok = if success_status(r) == "204" { json!({"description": "Deleted"}) } else { ok };
            let mut op = json!({
                "tags": [r.tag],
                "summary": r.summary,
                "operationId": r.operation_id,
                "parameters": params,
                "responses": responses(r, ok),
            });
            if let Some(mut body) = request_body(r.body, &mut generator) {
                if r.operation_id == "upload_content" {
                    upload_needs_a_source(&mut body);
                }
                op["requestBody"] = body;
            }
            if !matches!(r.access, Access::Public) {
                op["security"] = json!([{"HTTPBearer": []}]);
            }
            if let Access::Scope(scope) = r.access {
                op["x-required-scope"] = json!(scope);
            }
            let entry = paths.entry(r.path.replace("{*", "{")).or_insert_with(|| json!({}));
            entry[r.method.as_str().to_lowercase()] = op;
        }
        let mut schemas = generator.take_definitions(true);
        // A schedule's time zone is one chrono-tz knows (the names the scheduler reads).
        let zones: Vec<&str> = chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name()).collect();
        for body in ["ScheduleCreate", "ScheduleUpdateBody"] {
            if let Some(zone) = schemas.get_mut(body).and_then(|b| b.pointer_mut("/properties/timezone")) {
                zone["enum"] = json!(zones);
            }
        }
        schemas.insert(
            "ValidationError".to_owned(),
            json!({"type": "object", "required": ["loc", "msg", "type"], "properties": {
                "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "msg": {"type": "string"}, "type": {"type": "string"}, "input": {}}}),
        );
        schemas.insert(
            "HTTPValidationError".to_owned(),
            json!({"type": "object", "properties": {
                "detail": {"type": "array", "items": {"$ref": "#/components/schemas/ValidationError"}}}}),
        );
        schemas.insert(
            "ErrorResponse".to_owned(),
            json!({"type": "object", "required": ["detail"], "properties": {
                "detail": {"type": "string"}, "error_type": {"type": ["string", "null"]}}}),
        );
        json!({
            "openapi": "3.1.0",
            "info": {"title": "agno-rs AgentOS", "version": super::core::OS_VERSION,
                     "description": "The AgentOS API, compatible with Agno 3.1."},
            "paths": paths,
            "components": {
                "securitySchemes": {"HTTPBearer": {"type": "http", "scheme": "bearer"}},
                "schemas": schemas,
                "responses": {
                    "Error": {"description": "Error", "content": {"application/json": {"schema": {
                        "$ref": "#/components/schemas/ErrorResponse"}}}},
                    "ValidationError": {"description": "Validation Error (a list of field errors, or one message)",
                        "content": {"application/json": {"schema": {"anyOf": [
                            {"$ref": "#/components/schemas/HTTPValidationError"},
                            {"$ref": "#/components/schemas/ErrorResponse"}]}}}},
                },
            }
        })
    })
}

/// The document as this OS serves it: without auth, no operation asks for credentials (nor
/// answers 401); a schedule's `endpoint` lists the run routes of this OS's agents, teams and
/// workflows.
pub fn openapi_for(state: &crate::state::AppState) -> Value {
    let mut doc = openapi().clone();
    if !state.auth.required() {
        // Without a token's `sub`, a new memory's owner must be named.
        let mut created = doc.pointer("/components/schemas/MemoryPayload").cloned().unwrap_or_default();
        if let Some(memory) = created.as_object_mut() {
            memory.insert("required".to_owned(), json!(["memory", "user_id"]));
            if let Some(user) = memory.get_mut("properties").and_then(|p| p.get_mut("user_id")) {
                *user = json!({"type": "string", "minLength": 1});
            }
        }
        if let Some(schema) = doc.pointer_mut("/paths/~1memories/post/requestBody/content/application~1json/schema") {
            *schema = created;
        }
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
            for op in paths.values_mut().filter_map(Value::as_object_mut).flat_map(|m| m.values_mut()) {
                if let Some(op) = op.as_object_mut() {
                    op.remove("security");
                    if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
                        responses.remove("401");
                    }
                }
            }
        }
        if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
            components.remove("securitySchemes");
        }
    }
    // A memory optimization's model: one this OS serves (its agents' models).
    let mut models: Vec<Value> = state.agents.iter().map(|a| json!(a.model_spec)).collect();
    models.dedup();
    models.push(Value::Null);
    if let Some(model) = doc.pointer_mut("/components/schemas/OptimizeMemoriesRequest/properties/model") {
        *model = json!({"enum": models, "description": "The summarizing model (default: the first agent's)."});
    }
    // An eval's judge: a model this OS serves, by its id (and provider).
    let split =
        |spec: &str| spec.split_once(':').map_or((None, spec.to_owned()), |(p, m)| (Some(p.to_owned()), m.to_owned()));
    let mut ids: Vec<Value> = state.agents.iter().map(|a| json!(split(&a.model_spec).1)).collect();
    ids.dedup();
    ids.push(Value::Null);
    let mut providers: Vec<Value> =
        state.agents.iter().filter_map(|a| split(&a.model_spec).0).map(|p| json!(p)).collect();
    providers.dedup();
    providers.push(Value::Null);
    if let Some(id) = doc.pointer_mut("/components/schemas/EvalRunInput/properties/model_id") {
        *id = json!({"enum": ids, "description": "The judge's model (default: the agent's own)."});
    }
    if let Some(provider) = doc.pointer_mut("/components/schemas/EvalRunInput/properties/model_provider") {
        *provider = json!({"enum": providers, "description": "The judge model's provider."});
    }
    // The AG-UI routes at `[agui] prefix`.
    if let Some(prefix) = state.agui.as_ref().map(|a| a.prefix.as_str()).filter(|p| !p.is_empty())
        && let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut)
    {
        for route in super::ROUTES.iter().filter(|r| r.tag == super::AGUI_TAG) {
            if let Some(item) = paths.remove(route.path) {
                paths.insert(format!("{prefix}{}", route.path), item);
            }
        }
    }
    let mut endpoints: Vec<String> = state.agents.iter().map(|a| format!("/agents/{}/runs", a.agent.id())).collect();
    endpoints.extend(state.teams.iter().map(|t| format!("/teams/{}/runs", t.id())));
    endpoints.extend(state.workflows.iter().map(|w| format!("/workflows/{}/runs", w.id())));
    for body in ["ScheduleCreate", "ScheduleUpdateBody"] {
        if let Some(endpoint) =
            doc.pointer_mut(&format!("/components/schemas/{body}/properties/endpoint")).and_then(Value::as_object_mut)
        {
            endpoint.remove("pattern");
            endpoint.remove("maxLength");
            endpoint.insert("enum".to_owned(), json!(endpoints));
        }
    }
    doc
}

/// `GET /openapi.json`.
pub async fn openapi_json(axum::extract::State(state): axum::extract::State<crate::state::AppState>) -> Json<Value> {
    Json(openapi_for(&state))
}

/// `GET /redoc`: the ReDoc page FastAPI serves (its script comes from the jsDelivr CDN, as in
/// FastAPI; offline, the page points at `/docs`, which is served from the binary).
pub async fn redoc() -> axum::response::Html<&'static str> {
    axum::response::Html(
        r#"<!DOCTYPE html>
<html>
<head>
<title>agno-rs AgentOS - ReDoc</title>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<noscript>ReDoc needs JavaScript; the interactive documentation at <a href="/docs/">/docs</a> works offline.</noscript>
<redoc spec-url="/openapi.json"></redoc>
<script src="https://cdn.jsdelivr.net/npm/redoc@2/bundles/redoc.standalone.js"></script>
</body>
</html>
"#,
    )
}

/// `GET /docs`: to `/docs/`, so the UI's relative asset links resolve.
pub async fn docs_index() -> Redirect {
    Redirect::permanent("/docs/")
}

fn swagger_config() -> Arc<utoipa_swagger_ui::Config<'static>> {
    static CONFIG: OnceLock<Arc<utoipa_swagger_ui::Config<'static>>> = OnceLock::new();
    CONFIG.get_or_init(|| Arc::new(utoipa_swagger_ui::Config::from("/openapi.json"))).clone()
}

/// `GET /docs/` and `GET /docs/{*file}`: the Swagger UI assets.
pub async fn docs_file(file: Option<Path<String>>) -> Response {
    let tail = file.map(|Path(f)| f).unwrap_or_default();
    match utoipa_swagger_ui::serve(&tail, swagger_config()) {
        Ok(Some(f)) => {
            let mut resp =
                (StatusCode::OK, [(header::CONTENT_TYPE, f.content_type)], f.bytes.into_owned()).into_response();
            if f.gzpipped {
                resp.headers_mut().insert(header::CONTENT_ENCODING, header::HeaderValue::from_static("gzip"));
            }
            resp
        }
        Ok(None) => crate::error::ApiError::not_found("Not Found").into_response(),
        Err(e) => crate::error::ApiError::internal(format!("cannot serve the docs: {e}")).into_response(),
    }
}
