//! `/openapi.json`, generated from the route table, and `/docs`, Swagger UI served from assets
//! built into the binary (works offline).

use std::sync::{Arc, OnceLock};

use axum::Json;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::{Map, Value, json};

use super::{Access, ROUTES, RequestBody};

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
        RequestBody::Form(fields) => {
            let properties: Map<String, Value> = fields
                .iter()
                .map(|f| (f.name.to_owned(), json!({"type": f.kind, "description": f.description})))
                .collect();
            let required: Vec<&str> = fields.iter().filter(|f| f.required).map(|f| f.name).collect();
            let schema = json!({"type": "object", "properties": properties, "required": required});
            Some(json!({
                "required": true,
                "content": {
                    "multipart/form-data": {"schema": schema},
                    "application/x-www-form-urlencoded": {"schema": schema},
                },
            }))
        }
    }
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
            // Deletes answer 204, a created session 201, the rest 200 (a background run 202).
            let success = match (r.method.as_str(), r.operation_id) {
                ("DELETE", _) => "204",
                (_, "create_session") => "201",
                _ => "200",
            };
            let ok = if success == "204" { json!({"description": "Deleted"}) } else { ok };
            let mut op = json!({
                "tags": [r.tag],
                "summary": r.summary,
                "operationId": r.operation_id,
                "parameters": params,
                "responses": {
                    success: ok,
                    "400": {"$ref": "#/components/responses/Error"},
                    "401": {"$ref": "#/components/responses/Error"},
                    "403": {"$ref": "#/components/responses/Error"},
                    "404": {"$ref": "#/components/responses/Error"},
                    "422": {"$ref": "#/components/responses/ValidationError"},
                },
            });
            if r.operation_id == "create_agent_run" {
                op["responses"]["202"] =
                    json!({"description": "A background run accepted: {run_id, session_id, status}"});
            }
            if let Some(body) = request_body(r.body, &mut generator) {
                op["requestBody"] = body;
            }
            if let Access::Scope(scope) = r.access {
                op["security"] = json!([{"HTTPBearer": []}]);
                op["x-required-scope"] = json!(scope);
            }
            let entry = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
            entry[r.method.as_str().to_lowercase()] = op;
        }
        let mut schemas = generator.take_definitions(true);
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
                    "ValidationError": {"description": "Validation Error", "content": {"application/json": {"schema": {
                        "$ref": "#/components/schemas/HTTPValidationError"}}}},
                },
            }
        })
    })
}

/// `GET /openapi.json`.
pub async fn openapi_json() -> Json<Value> {
    Json(openapi().clone())
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
