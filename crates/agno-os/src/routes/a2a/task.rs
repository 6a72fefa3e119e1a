//! A2A v0.3's objects as agno-rs makes them from runs, and a run's input from an A2A message:
//! a stored run is a `Task` (its id the run's, its `contextId` the session), its answer an agent
//! `Message` in the task's history, its media `Artifact`s; as Python AgentOS 3.1.10's
//! `map_run_output_to_a2a_task`, except that a paused run is `input-required` and says what it
//! waits for.

use agno_core::{Media, RunInput, RunOutput, RunStatus};
use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::jsonrpc::RpcError;

/// The A2A task state of a run's status (v0.3 spelling).
pub(super) fn state_of(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Pending => "submitted",
        RunStatus::Running => "working",
        RunStatus::Completed | RunStatus::Regenerated => "completed",
        RunStatus::Paused => "input-required",
        RunStatus::Cancelled => "canceled",
        RunStatus::Error => "failed",
    }
}

/// The run status a task state names, in either version's spelling (`completed`,
/// `TASK_STATE_COMPLETED`); `None` for a state no run has.
pub(super) fn status_of_state(state: &str) -> Option<RunStatus> {
    let bare = state.strip_prefix("TASK_STATE_").unwrap_or(state).to_ascii_lowercase().replace('_', "-");
    Some(match bare.as_str() {
        "submitted" => RunStatus::Pending,
        "working" => RunStatus::Running,
        "completed" => RunStatus::Completed,
        "input-required" => RunStatus::Paused,
        "canceled" => RunStatus::Cancelled,
        "failed" => RunStatus::Error,
        _ => return None,
    })
}

/// The opaque token of the listing position after `run` (`ListTasks`' `nextPageToken`).
pub(super) fn page_token(run: &RunOutput) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{}:{}", run.created_at, run.id()))
}

/// The listing position a `pageToken` names (`-32602` for one this server did not give).
pub(super) fn read_page_token(token: &str) -> Result<agno_core::RunCursor, RpcError> {
    let bad = || RpcError::invalid_params("pageToken is not a token this server gave: start again without it");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (created_at, run_id) = text.split_once(':').ok_or_else(bad)?;
    Ok(agno_core::RunCursor { created_at: created_at.parse().map_err(|_| bad())?, run_id: run_id.to_owned() })
}

/// A text part.
pub(super) fn text_part(text: &str) -> Value {
    json!({"kind": "text", "text": text})
}

/// An agent message of the task `task_id` in `context_id`.
pub(super) fn agent_message(
    message_id: &str,
    parts: Vec<Value>,
    context_id: &str,
    task_id: &str,
    metadata: Option<Map<String, Value>>,
) -> Value {
    let mut message = json!({
        "contextId": context_id,
        "kind": "message",
        "messageId": message_id,
        "role": "agent",
        "taskId": task_id,
    });
    message["parts"] = Value::Array(parts);
    if let Some(metadata) = metadata.filter(|m| !m.is_empty()) {
        message["metadata"] = Value::Object(metadata);
    }
    message
}

/// A task: its status (with an optional status message), history and artifacts.
pub(super) fn task(
    task_id: &str,
    context_id: &str,
    state: &str,
    status_message: Option<Value>,
    history: Vec<Value>,
    artifacts: Vec<Value>,
) -> Value {
    let mut status = json!({"state": state});
    if let Some(message) = status_message {
        status["message"] = message;
    }
    let mut task = json!({"contextId": context_id, "id": task_id, "kind": "task", "status": status});
    if !history.is_empty() {
        task["history"] = Value::Array(history);
    }
    if !artifacts.is_empty() {
        task["artifacts"] = Value::Array(artifacts);
    }
    task
}

/// `task` with every optional field of A2A's `Task`, `Message`, `Part` and `TaskStatus` that it
/// leaves out set to `null`, as pydantic serialises them without `exclude_none`.
pub(super) fn with_nulls(mut task: Value) -> Value {
    fn fill(object: &mut Value, keys: &[&str]) {
        if let Value::Object(map) = object {
            for key in keys {
                map.entry(*key).or_insert(Value::Null);
            }
        }
    }
    fn fill_message(message: &mut Value) {
        fill(message, &["extensions", "metadata", "referenceTaskIds", "contextId", "taskId"]);
        if let Some(parts) = message.get_mut("parts").and_then(Value::as_array_mut) {
            parts.iter_mut().for_each(|p| fill(p, &["metadata"]));
        }
    }
    fill(&mut task, &["artifacts", "history", "metadata"]);
    if let Some(history) = task.get_mut("history").and_then(Value::as_array_mut) {
        history.iter_mut().for_each(fill_message);
    }
    if let Some(status) = task.get_mut("status") {
        fill(status, &["message", "timestamp"]);
        if let Some(message) = status.get_mut("message").filter(|m| m.is_object()) {
            fill_message(message);
        }
    }
    task
}

/// The stored (or just finished) `run` as an A2A task: its answer as the agent message of the
/// history (with the run's user as `metadata.userId`), its media as artifacts, and for a paused
/// run the requirements it waits for (see [`waiting_for`]).
pub(super) fn task_of(run: &RunOutput) -> Value {
    let task_id = run.id();
    let context_id = run.session_id.as_deref().unwrap_or_default();
    let text = run.content_text();
    let parts = if text.is_empty() { Vec::new() } else { vec![text_part(&text)] };
    let mut metadata = Map::new();
    if let Some(user) = &run.user_id {
        metadata.insert("userId".into(), json!(user));
    }
    let message = agent_message(&agno_core::new_id(), parts, context_id, task_id, Some(metadata));
    let status_message = (run.status == RunStatus::Paused).then(|| waiting_for(run));
    task(task_id, context_id, state_of(run.status), status_message, vec![message], artifacts_of(run))
}

/// What a paused run waits for, as the status message of its `input-required` task: a text
/// saying how to answer and a data part `{"requirements": [...]}` with each open requirement
/// (its id, the tool call, and whether it needs a confirmation, input fields or a result).
pub(super) fn waiting_for(run: &RunOutput) -> Value {
    let open: Vec<Value> = run
        .active_requirements()
        .into_iter()
        .map(|r| {
            let tool = r.tool_execution.as_ref();
            let mut entry = json!({
                "id": r.id,
                "tool_call_id": r.tool_call_id(),
                "tool_name": tool.and_then(|t| t.tool_name.clone()),
                "tool_args": tool.and_then(|t| t.tool_args.clone()),
                "needs_confirmation": r.needs_confirmation(),
                "needs_user_input": r.needs_user_input(),
                "needs_external_execution": r.needs_external_execution(),
            });
            if let Some(fields) = &r.user_input_schema {
                entry["user_input_schema"] = json!(fields);
            }
            entry
        })
        .collect();
    let text = "The run waits for your answer: send a message with this taskId whose data part is \
                {\"confirmed\": true|false}, {\"values\": {...}}, {\"choices\": [...]} or {\"result\": ...} (or per \
                requirement: {\"requirements\": [{\"id\", \"confirmed\" | \"values\" | \"result\"}]}), or the text yes or no";
    let mut waiting = json!({"requirements": open});
    // A paused workflow: the step review it waits on (Agno's step requirement: what it asks,
    // whether it needs a confirmation, input values or a route choice).
    if let Some(step) = run.extra.get("step_requirements").and_then(Value::as_array).and_then(|s| s.last()) {
        waiting["step_requirements"] = json!([step]);
    }
    agent_message(
        &agno_core::new_id(),
        vec![text_part(text), json!({"kind": "data", "data": waiting})],
        run.session_id.as_deref().unwrap_or_default(),
        run.id(),
        None,
    )
}

/// The run's media with a URL as artifacts (Python's names: `image_0`, `video_0`, ...).
fn artifacts_of(run: &RunOutput) -> Vec<Value> {
    let mut out = Vec::new();
    for (field, name, default_mime) in
        [("images", "image", "image/jpeg"), ("videos", "video", "video/mp4"), ("audio", "audio", "audio/mpeg")]
            .into_iter()
            .chain([("files", "file", "application/octet-stream")])
    {
        let Some(items) = run.extra.get(field).and_then(Value::as_array) else { continue };
        for (i, item) in items.iter().enumerate() {
            let parts: Vec<Value> = item
                .get("url")
                .and_then(Value::as_str)
                .map(|url| {
                    let mime = item.get("mime_type").and_then(Value::as_str).unwrap_or(default_mime);
                    json!({"kind": "file", "file": {"uri": url, "mimeType": mime}})
                })
                .into_iter()
                .collect();
            out.push(json!({
                "artifactId": agno_core::new_id(),
                "name": item.get("name").and_then(Value::as_str).map_or_else(|| format!("{name}_{i}"), str::to_owned),
                "description": format!("Generated {name} {i}"),
                "parts": parts,
            }));
        }
    }
    out
}

/// What an A2A `message` of a `message/send` or `message/stream` asks: the run's input, and the
/// ids and user it names.
#[derive(Debug)]
pub(super) struct Incoming {
    /// The input: the text parts (and data parts as JSON text), one per line; files and images.
    pub(super) input: RunInput,
    /// `contextId`: the session.
    pub(super) context_id: Option<String>,
    /// `taskId`: the task the message answers (a paused run).
    pub(super) task_id: Option<String>,
    /// `metadata.userId`: who the caller says the user is (taken only from anonymous callers).
    pub(super) user_id: Option<String>,
    /// The data parts, as sent (a paused run's answers are read from them).
    pub(super) data: Vec<Value>,
    /// The text parts, as sent.
    pub(super) texts: Vec<String>,
}

fn text_field(message: &Map<String, Value>, key: &str) -> Result<Option<String>, RpcError> {
    match message.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(RpcError::invalid_params(format!("message.{key} must be a string"))),
    }
}

/// Reads `params.message`: a user message with at least one part. Text parts are the input,
/// data parts are added as JSON text, file parts (by URI or as base64 bytes, with a media type)
/// are images or files; audio and video are refused, as the run form refuses them.
pub(super) fn incoming(params: &Map<String, Value>) -> Result<Incoming, RpcError> {
    let Some(Value::Object(message)) = params.get("message") else {
        return Err(RpcError::invalid_params("params.message is required: an object with role, parts and messageId"));
    };
    if !matches!(message.get("role").and_then(Value::as_str), Some("user" | "ROLE_USER")) {
        return Err(RpcError::invalid_params(
            "Only user messages are accepted (message.role must be \"user\", or \"ROLE_USER\" in A2A 1.0)",
        ));
    }
    if text_field(message, "messageId")?.is_none() {
        return Err(RpcError::invalid_params("message.messageId is required"));
    }
    let parts = match message.get("parts") {
        Some(Value::Array(parts)) if !parts.is_empty() => parts,
        _ => return Err(RpcError::invalid_params("message.parts must hold at least one part")),
    };
    let mut input = RunInput::default();
    let mut texts = Vec::new();
    let mut data = Vec::new();
    let mut lines = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(part) = part else {
            return Err(RpcError::invalid_params(format!("message.parts[{i}] must be an object")));
        };
        // v0.3 names the kind; a v1.0 part is one of `text`, `data`, `url` or `raw`.
        let kind = part.get("kind").and_then(Value::as_str).or_else(|| {
            ["text", "file", "data", "url", "raw"].into_iter().find(|k| part.contains_key(*k)).map(|k| match k {
                "url" | "raw" => "file",
                other => other,
            })
        });
        match kind {
            Some("text") => {
                let text = part
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| RpcError::invalid_params(format!("message.parts[{i}].text must be a string")))?;
                lines.push(text.to_owned());
                texts.push(text.to_owned());
            }
            Some("data") => {
                let value = part
                    .get("data")
                    .filter(|d| !d.is_null())
                    .ok_or_else(|| RpcError::invalid_params(format!("message.parts[{i}].data must be JSON")))?;
                lines.push(value.to_string());
                data.push(value.clone());
            }
            Some("file") => {
                let (is_image, media) = match part.get("file") {
                    Some(file) => file_part(Some(file), i)?,
                    None => file_part(Some(&v1_file(part)), i)?,
                };
                if is_image { input.add_image(media) } else { input.add_file(media) }
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "message.parts[{i}] is of kind {}: send text, file or data parts",
                    other.unwrap_or("none")
                )));
            }
        }
    }
    input.input_content = Some(Value::String(lines.join("\n")));
    let user_id = match message.get("metadata") {
        Some(Value::Object(m)) => m.get("userId").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned),
        _ => None,
    };
    Ok(Incoming {
        input,
        context_id: text_field(message, "contextId")?,
        task_id: text_field(message, "taskId")?,
        user_id,
        data,
        texts,
    })
}

/// A v1.0 file part (`url` or `raw`, `mediaType`, `filename`) as v0.3's `file` object.
fn v1_file(part: &Map<String, Value>) -> Value {
    let mut file = Map::new();
    for (from, to) in [("url", "uri"), ("raw", "bytes"), ("mediaType", "mimeType"), ("filename", "name")] {
        if let Some(v) = part.get(from).filter(|v| !v.is_null()) {
            file.insert(to.into(), v.clone());
        }
    }
    Value::Object(file)
}

/// A file part: an image or a file, by URI or base64 bytes, with its media type.
fn file_part(file: Option<&Value>, i: usize) -> Result<(bool, Media), RpcError> {
    let Some(Value::Object(file)) = file else {
        return Err(RpcError::invalid_params(format!("message.parts[{i}].file must be an object")));
    };
    let mime = file
        .get("mimeType")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| RpcError::invalid_params(format!("message.parts[{i}].file needs its mimeType")))?;
    if mime.starts_with("audio/") || mime.starts_with("video/") {
        return Err(RpcError::invalid_params(format!(
            "message.parts[{i}] is {mime}: audio and video inputs are not supported by agno-rs yet (send images or documents)"
        )));
    }
    let mut media = match (file.get("uri").and_then(Value::as_str), file.get("bytes").and_then(Value::as_str)) {
        (Some(uri), _) => Media::url(uri),
        (None, Some(bytes)) => {
            base64::engine::general_purpose::STANDARD
                .decode(bytes)
                .map_err(|e| RpcError::invalid_params(format!("message.parts[{i}].file.bytes is not base64: {e}")))?;
            Media::bytes(bytes.to_owned(), mime)
        }
        (None, None) => {
            return Err(RpcError::invalid_params(format!("message.parts[{i}].file needs a uri or bytes")));
        }
    };
    media.mime_type = Some(mime.to_owned());
    media.filename = file.get("name").and_then(Value::as_str).map(str::to_owned);
    Ok((mime.starts_with("image/"), media))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn params(message: Value) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("message".into(), message);
        params
    }

    #[test]
    fn a_message_becomes_the_runs_input() {
        let got = incoming(&params(json!({
            "role": "user", "messageId": "m", "contextId": "c", "metadata": {"userId": "u"},
            "parts": [
                {"kind": "text", "text": "hi"},
                {"kind": "data", "data": {"a": 1}},
                {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png"}},
                {"text": "v1 part"},
            ],
        })))
        .unwrap();
        assert_eq!(got.input.input_content, Some(json!("hi\n{\"a\":1}\nv1 part")));
        assert_eq!((got.context_id.as_deref(), got.user_id.as_deref()), (Some("c"), Some("u")));
        assert_eq!(got.input.extra.get("images").and_then(Value::as_array).map(Vec::len), Some(1));
    }

    #[test]
    fn bad_messages_are_invalid_params() {
        for bad in [
            json!({"role": "user", "messageId": "m", "parts": []}),
            json!({"role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]}),
            json!({"role": "user", "parts": [{"kind": "text", "text": "x"}]}),
            json!({"role": "user", "messageId": "m", "parts": [{"kind": "video"}]}),
            json!({"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {"uri": "u"}}]}),
            json!({"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {"bytes": "!!", "mimeType": "image/png"}}]}),
            json!({"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {"uri": "u", "mimeType": "audio/mp3"}}]}),
        ] {
            assert_eq!(incoming(&params(bad.clone())).unwrap_err().code, -32602, "{bad}");
        }
        assert_eq!(incoming(&Map::new()).unwrap_err().code, -32602);
    }

    #[test]
    fn run_states_follow_a2a() {
        let mut run = RunOutput::new("r", "s");
        run.content = Some(json!("done"));
        run.status = RunStatus::Completed;
        let t = task_of(&run);
        assert_eq!((t["id"].as_str(), t["contextId"].as_str()), (Some("r"), Some("s")));
        assert_eq!(t["status"]["state"], "completed");
        assert_eq!(t["history"][0]["parts"][0]["text"], "done");
        run.status = RunStatus::Paused;
        let t = task_of(&run);
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(t["status"]["message"]["parts"][1]["data"]["requirements"], json!([]));
    }
}
