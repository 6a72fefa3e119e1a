//! A2A v1.0's spelling of the objects the interface makes in v0.3's (tasks, messages, parts,
//! stream events): the interface builds every answer once, in v0.3's shape, and a v1.0 request
//! gets it through these functions. What changes (as a2a-sdk 1.x reads and writes it): no
//! `kind` anywhere, `TASK_STATE_*` and `ROLE_*` enums, parts as exactly one of `text`, `data`,
//! `url` or `raw` beside `mediaType` and `filename`, `SendMessage` answering `{"task": ...}`,
//! stream results as `{"task"|"statusUpdate"|"artifactUpdate": ...}`, status updates without
//! `final`.

use serde_json::{Map, Value, json};

/// The v1.0 task state of a v0.3 one (`"input-required"` is `TASK_STATE_INPUT_REQUIRED`).
pub(super) fn state(v03: &str) -> String {
    format!("TASK_STATE_{}", v03.replace('-', "_").to_ascii_uppercase())
}

/// The v1.0 role of a v0.3 one.
fn role(v03: &str) -> String {
    format!("ROLE_{}", v03.to_ascii_uppercase())
}

/// A v0.3 part (`{"kind": "text", "text"}`, `{"kind": "data", "data"}`, `{"kind": "file",
/// "file": {"uri" | "bytes", "mimeType", "name"}}`) in v1.0's spelling.
pub(super) fn part(v03: &Value) -> Value {
    let Value::Object(p) = v03 else { return v03.clone() };
    let mut out = Map::new();
    match p.get("kind").and_then(Value::as_str) {
        Some("file") => {
            let file = p.get("file").and_then(Value::as_object);
            let field = |k: &str| file.and_then(|f| f.get(k)).filter(|v| !v.is_null()).cloned();
            if let Some(uri) = field("uri") {
                out.insert("url".into(), uri);
            } else if let Some(bytes) = field("bytes") {
                out.insert("raw".into(), bytes);
            }
            if let Some(mime) = field("mimeType") {
                out.insert("mediaType".into(), mime);
            }
            if let Some(name) = field("name") {
                out.insert("filename".into(), name);
            }
        }
        _ => {
            for key in ["text", "data"] {
                if let Some(v) = p.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
        }
    }
    if let Some(metadata) = p.get("metadata").filter(|m| !m.is_null()) {
        out.insert("metadata".into(), metadata.clone());
    }
    Value::Object(out)
}

fn parts(list: Option<&Value>) -> Value {
    Value::Array(list.and_then(Value::as_array).map(|l| l.iter().map(part).collect()).unwrap_or_default())
}

/// Copies `from`'s keys into a new object, leaving out `kind` and null values, with `map`
/// applied to the keys it names.
fn respelled(from: &Map<String, Value>, map: impl Fn(&str, &Value) -> Option<Value>) -> Map<String, Value> {
    from.iter()
        .filter(|(k, v)| *k != "kind" && *k != "final" && !v.is_null())
        .map(|(k, v)| (k.clone(), map(k, v).unwrap_or_else(|| v.clone())))
        .collect()
}

/// A v0.3 message in v1.0's spelling.
pub(super) fn message(v03: &Value) -> Value {
    let Value::Object(m) = v03 else { return v03.clone() };
    Value::Object(respelled(m, |k, v| match k {
        "role" => v.as_str().map(|r| Value::String(role(r))),
        "parts" => Some(parts(Some(v))),
        _ => None,
    }))
}

fn status(v03: &Value) -> Value {
    let Value::Object(s) = v03 else { return v03.clone() };
    Value::Object(respelled(s, |k, v| match k {
        "state" => v.as_str().map(|s| Value::String(state(s))),
        "message" => Some(message(v)),
        _ => None,
    }))
}

fn artifact(v03: &Value) -> Value {
    let Value::Object(a) = v03 else { return v03.clone() };
    Value::Object(respelled(a, |k, v| (k == "parts").then(|| parts(Some(v)))))
}

/// A v0.3 task in v1.0's spelling.
pub(super) fn task(v03: &Value) -> Value {
    let Value::Object(t) = v03 else { return v03.clone() };
    Value::Object(respelled(t, |k, v| match k {
        "status" => Some(status(v)),
        "history" => v.as_array().map(|h| Value::Array(h.iter().map(message).collect())),
        "artifacts" => v.as_array().map(|a| Value::Array(a.iter().map(artifact).collect())),
        _ => None,
    }))
}

/// A stream result or `SendMessage` result (a v0.3 task, message, status update or artifact
/// update, told apart by `kind`) as v1.0's one-of: `{"task": ...}`, `{"message": ...}`,
/// `{"statusUpdate": ...}` or `{"artifactUpdate": ...}`.
pub(super) fn one_of(v03: &Value) -> Value {
    let Value::Object(o) = v03 else { return v03.clone() };
    match o.get("kind").and_then(Value::as_str) {
        Some("message") => json!({"message": message(v03)}),
        Some("status-update") => {
            json!({"statusUpdate": respelled(o, |k, v| (k == "status").then(|| status(v)))})
        }
        Some("artifact-update") => {
            json!({"artifactUpdate": respelled(o, |k, v| (k == "artifact").then(|| artifact(v)))})
        }
        _ => json!({"task": task(v03)}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v03_task_reads_as_v1() {
        let v03 = json!({
            "id": "t", "contextId": "c", "kind": "task",
            "status": {"state": "input-required", "message": {
                "kind": "message", "messageId": "m", "role": "agent", "taskId": "t", "contextId": "c",
                "parts": [{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"a": 1}}],
                "metadata": null,
            }},
            "history": [{"kind": "message", "messageId": "u", "role": "user", "parts": [{"kind": "text", "text": "q"}]}],
            "artifacts": [{"artifactId": "a", "name": "image-0", "parts": [
                {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png"}},
                {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain"}},
            ]}],
        });
        let v1 = task(&v03);
        assert_eq!(
            v1,
            json!({
                "id": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {
                    "messageId": "m", "role": "ROLE_AGENT", "taskId": "t", "contextId": "c",
                    "parts": [{"text": "hi"}, {"data": {"a": 1}}],
                }},
                "history": [{"messageId": "u", "role": "ROLE_USER", "parts": [{"text": "q"}]}],
                "artifacts": [{"artifactId": "a", "name": "image-0", "parts": [
                    {"url": "https://x/y.png", "mediaType": "image/png", "filename": "y.png"},
                    {"raw": "aGk=", "mediaType": "text/plain"},
                ]}],
            })
        );
        assert_eq!(one_of(&v03)["task"], v1);
    }

    #[test]
    fn stream_events_are_one_ofs_without_kind_or_final() {
        let update = json!({"kind": "status-update", "final": true, "taskId": "t", "contextId": "c",
            "status": {"state": "completed"}, "metadata": {"x": 1}});
        assert_eq!(
            one_of(&update),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}, "metadata": {"x": 1}}})
        );
        let artifact = json!({"kind": "artifact-update", "append": true, "lastChunk": false, "taskId": "t", "contextId": "c",
            "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "de"}]}});
        assert_eq!(one_of(&artifact)["artifactUpdate"]["artifact"]["parts"], json!([{"text": "de"}]));
        assert_eq!(one_of(&artifact)["artifactUpdate"]["append"], true);
        assert_eq!(state("canceled"), "TASK_STATE_CANCELED");
    }
}
