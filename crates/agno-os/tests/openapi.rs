//! The OpenAPI document describes what the handlers read: every `$ref` resolves, every route
//! that takes a body documents it, every documented JSON field is accepted by its route, the run
//! routes answer the run record's schema, and operation ids are unique (they are Python
//! AgentOS's; the shape-parity test compares them with a running Python AgentOS).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_os::routes::{ROUTES, RequestBody};
use common::{TestOs, config};
use serde_json::{Value, json};

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.clone());
            }
            m.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn every_ref_resolves_and_every_body_is_documented() {
    let doc = agno_os::routes::docs::openapi();
    let mut found = Vec::new();
    refs(doc, &mut found);
    assert!(found.len() > 50);
    for r in &found {
        let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("external ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "unresolved {r}");
    }
    let mut ids = std::collections::HashSet::new();
    for route in ROUTES.iter().filter(|r| !r.path.starts_with("/docs") && r.path != "/openapi.json") {
        assert!(ids.insert(route.operation_id), "operation id {} twice", route.operation_id);
        // A catch-all segment (`{*storage_key}`) is an ordinary parameter in OpenAPI.
        let op = &doc["paths"][route.path.replace("{*", "{").as_str()][route.method.as_str().to_lowercase()];
        assert_eq!(op["operationId"], route.operation_id);
        match route.body {
            RequestBody::None => assert!(op.get("requestBody").is_none()),
            RequestBody::Json(_) | RequestBody::OptionalJson(_) => {
                assert!(op["requestBody"]["content"]["application/json"]["schema"]["$ref"].is_string());
                assert_eq!(op["requestBody"]["required"], matches!(route.body, RequestBody::Json(_)));
            }
            RequestBody::Form(fields) => {
                let schema = &op["requestBody"]["content"]["multipart/form-data"]["schema"];
                assert_eq!(schema["properties"].as_object().unwrap().len(), fields.len());
            }
        }
    }
    for (id, python_id) in
        [("/agents/{agent_id}/runs", "create_agent_run"), ("/sessions/{session_id}", "get_session_by_id")]
    {
        let methods = doc["paths"][id].as_object().unwrap();
        assert!(methods.values().any(|op| op["operationId"] == python_id), "{id}");
    }
    let run = &doc["paths"]["/agents/{agent_id}/runs"]["post"];
    let schema = run["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap();
    let run_output = doc.pointer(schema.strip_prefix('#').unwrap()).unwrap();
    for field in ["run_id", "status", "messages", "metrics", "content"] {
        assert!(run_output["properties"].get(field).is_some(), "RunOutput.{field}");
    }
    let list = &doc["paths"]["/memories"]["get"]["parameters"];
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    for name in ["user_id", "limit", "page", "sort_by", "sort_order", "db_id"] {
        assert!(names.contains(&name), "GET /memories documents {name}: {names:?}");
    }
    let form = &run["requestBody"]["content"]["multipart/form-data"]["schema"];
    assert_eq!(form["required"], json!(["message"]));
}

/// A value of a schema, with every documented property filled in.
fn example_of(doc: &Value, schema: &Value, name: &str) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        return example_of(doc, doc.pointer(reference.strip_prefix('#').unwrap()).unwrap(), name);
    }
    if let Some(first) = schema["anyOf"].as_array().and_then(|a| a.iter().find(|s| s["type"] != "null")) {
        return example_of(doc, first, name);
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    match kind.as_str() {
        Some("array") => json!([example_of(doc, &schema["items"], name)]),
        Some("object") if schema["properties"].is_object() => Value::Object(
            schema["properties"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, prop)| (k.clone(), example_of(doc, prop, k)))
                .collect(),
        ),
        Some("object") => json!({"k": "v"}),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        _ => json!(format!("{name}-value")),
    }
}

/// A body with every documented field is accepted by its route (the documentation lists what the
/// handler reads, nothing it would refuse).
#[tokio::test]
async fn documented_json_fields_are_accepted() {
    let os = TestOs::start(config("[db]\nurl = \"memory://\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n")).await;
    let doc = agno_os::routes::docs::openapi();
    let example = |route: &str, method: &str| -> Value {
        example_of(doc, &doc["paths"][route][method]["requestBody"]["content"]["application/json"]["schema"], "body")
    };
    let mut create = example("/sessions", "post");
    create["session_id"] = json!("documented");
    create["team_id"] = Value::Null;
    create["workflow_id"] = Value::Null;
    create["agent_id"] = json!("calc");
    let r = os.post_json("/sessions", &create, None).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = os.patch_json("/sessions/documented", &example("/sessions/{session_id}", "patch"), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = os.post_json("/sessions/documented/rename", &example("/sessions/{session_id}/rename", "post"), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let memory = example("/memories", "post");
    let r = os.post_json("/memories", &memory, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut delete = example("/sessions", "delete");
    delete["session_ids"] = json!(["documented"]);
    delete["session_types"] = json!(["agent"]);
    assert_eq!(os.delete_json("/sessions", &delete, None).await.status, 204);
}

/// Every schema of the document (components, request bodies, parameters) is a valid JSON Schema
/// (2020-12, OpenAPI 3.1's dialect): a malformed keyword (an `enum` that is not a list) makes
/// clients and fuzzers refuse the whole operation.
#[test]
fn every_schema_is_a_valid_json_schema() {
    fn schemas<'a>(v: &'a Value, out: &mut Vec<(String, &'a Value)>, at: &str) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let here = format!("{at}/{k}");
                    if k == "schema" {
                        out.push((here.clone(), x));
                    }
                    schemas(x, out, &here);
                }
            }
            Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| schemas(x, out, &format!("{at}/{i}"))),
            _ => {}
        }
    }
    let doc = agno_os::routes::docs::openapi();
    let mut found: Vec<(String, &Value)> = Vec::new();
    schemas(&doc["paths"], &mut found, "#/paths");
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        found.push((format!("#/components/schemas/{name}"), schema));
    }
    assert!(found.len() > 100, "{} schemas", found.len());
    for (at, schema) in found {
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            panic!("{at} is not a valid JSON Schema: {e}\n{schema:#}");
        }
    }
}
