//! `/openapi.json`, generated from the route table, and `/docs`, Swagger UI served from assets
//! built into the binary (works offline).

use std::sync::{Arc, OnceLock};

use axum::Json;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::{Map, Value, json};

use super::{Access, ROUTES};

/// The OpenAPI 3.1 document of every route in the table.
pub fn openapi() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut paths = Map::new();
        for r in ROUTES.iter().filter(|r| !r.path.starts_with("/docs") && r.path != "/openapi.json") {
            let params: Vec<Value> = r
                .path
                .split('/')
                .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
                .collect();
            let mut op = json!({
                "tags": [r.tag],
                "summary": r.summary,
                "operationId": format!("{}_{}", r.method.as_str().to_lowercase(), r.path.replace(['/', '{', '}', '-'], "_").trim_matches('_')),
                "parameters": params,
                "responses": {
                    "200": {"description": "Successful Response"},
                    "400": {"$ref": "#/components/responses/Error"},
                    "401": {"$ref": "#/components/responses/Error"},
                    "403": {"$ref": "#/components/responses/Error"},
                    "404": {"$ref": "#/components/responses/Error"},
                    "422": {"$ref": "#/components/responses/Error"},
                },
            });
            if let Access::Scope(scope) = r.access {
                op["security"] = json!([{"HTTPBearer": []}]);
                op["x-required-scope"] = json!(scope);
            }
            let entry = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
            entry[r.method.as_str().to_lowercase()] = op;
        }
        json!({
            "openapi": "3.1.0",
            "info": {"title": "agno-rs AgentOS", "version": super::core::OS_VERSION,
                     "description": "The AgentOS API, compatible with Agno 3.1."},
            "paths": paths,
            "components": {
                "securitySchemes": {"HTTPBearer": {"type": "http", "scheme": "bearer"}},
                "responses": {"Error": {"description": "Error", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["detail"],
                    "properties": {"detail": {"type": "string"}, "error_type": {"type": ["string", "null"]}}
                }}}}}
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
