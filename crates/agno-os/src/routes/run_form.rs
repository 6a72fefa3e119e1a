//! The run forms of agents, teams and workflows, read once: each kind's `POST .../runs` form
//! becomes an [`agno_runtime::RunSpec`] (what runs, inline or on the queue alike) and how it is to be
//! answered (stream, background, disconnect policy).

use agno_core::{ComponentKind, RunInput};
use agno_runtime::{OutputSchema, RunSpec};
use axum::extract::Request;
use serde_json::Value;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::state::AppState;

/// A run form, read.
#[derive(Debug)]
pub(crate) struct RunForm {
    /// The run asked for.
    pub spec: RunSpec,
    /// Answer with its events (SSE) rather than its record (default true).
    pub stream: bool,
    /// Run it on the durable queue.
    pub background: bool,
    /// Cancel the run when the client goes away (agents).
    pub cancel_on_disconnect: bool,
    /// The `Idempotency-Key` header (background runs).
    pub idempotency_key: Option<String>,
    /// The catalog version asked for (Agno's `version` field), also stamped in the run's
    /// metadata ([`COMPONENT_VERSION_KEY`]).
    pub version: Option<i64>,
}

/// The run-metadata key that records the catalog version a run was asked of (Agno's
/// `COMPONENT_VERSION_METADATA_KEY`).
pub(crate) const COMPONENT_VERSION_KEY: &str = "agno_component_version";

/// Metadata keys the runtime owns: Agno strips them from what callers send.
const RESERVED_METADATA_KEYS: [&str; 3] = [COMPONENT_VERSION_KEY, "agno_dispatch_chain", "agno_dispatch_depth"];

/// Removes from caller metadata `m` the keys the runtime owns; whether there were any.
pub(crate) fn strip_reserved(m: &mut serde_json::Map<String, Value>) -> bool {
    let before = m.len();
    for key in RESERVED_METADATA_KEYS {
        m.remove(key);
    }
    m.len() != before
}

/// `metadata` as a caller sent it, without the keys the runtime owns, and stamped with the
/// version asked for: a forged stamp never decides what a continuation runs.
fn stamped(
    metadata: Option<serde_json::Map<String, Value>>,
    version: Option<i64>,
) -> Option<serde_json::Map<String, Value>> {
    let sent = metadata.is_some();
    let mut m = metadata.unwrap_or_default();
    strip_reserved(&mut m);
    if let Some(v) = version {
        m.insert(COMPONENT_VERSION_KEY.to_owned(), Value::from(v));
    }
    (sent || !m.is_empty()).then_some(m)
}

/// What a kind's run form reads beyond `message`, the ids, `session_state` and `metadata`: the
/// fields its runner uses (a field a runner would ignore is not read).
struct Takes {
    /// `files` (images and documents) beside the message.
    files: bool,
    /// `dependencies`, `output_schema`, `add_history_to_context`, `cancel_on_disconnect`.
    agent_options: bool,
    /// `additional_data`, and a `message` of JSON read as structured input.
    workflow_options: bool,
}

fn takes(kind: ComponentKind) -> Takes {
    match kind {
        ComponentKind::Agent => Takes { files: true, agent_options: true, workflow_options: false },
        ComponentKind::Team => Takes { files: false, agent_options: false, workflow_options: false },
        ComponentKind::Workflow => Takes { files: false, agent_options: false, workflow_options: true },
    }
}

/// Reads the run form of `component_id` (a `kind`): `message` (required), `files`, `session_id`
/// (another user's session answers 404), `user_id` (a token's `sub` wins, forced under
/// isolation), `session_state`, `metadata`, and what the kind takes (see [`Takes`]).
pub(crate) async fn read(
    state: &AppState,
    principal: &Principal,
    kind: ComponentKind,
    component_id: &str,
    request: Request,
) -> ApiResult<RunForm> {
    let takes = takes(kind);
    let idempotency_key = idempotency_key(request.headers())?;
    let mut form = Form::read(request, &state.limits).await?;
    let message = form.take_required("message")?;
    let mut input = if takes.workflow_options {
        // Structured input (an input schema's dict) arrives as JSON text, as Agno's form sends it.
        match serde_json::from_str::<Value>(&message) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => RunInput { input_content: Some(v), ..RunInput::default() },
            _ => RunInput::text(message),
        }
    } else {
        RunInput::text(message)
    };
    if takes.files {
        for (is_image, media) in uploaded_media(&mut form)? {
            if is_image { input.add_image(media) } else { input.add_file(media) }
        }
    } else if form.has_files() {
        return Err(ApiError::bad_request("file uploads are not supported by agno-rs yet; send text in `message`"));
    }
    let mut spec = RunSpec::new(kind, component_id, input);
    spec.user_id = form_user(principal, &form);
    if let Some(session_id) = form.text("session_id").filter(|s| !s.is_empty()) {
        check_session_owner(state, session_id, spec.user_id.as_deref()).await?;
        session_id.clone_into(&mut spec.session_id);
    }
    spec.session_state = json_object(&form, "session_state")?;
    if takes.agent_options {
        spec.dependencies = json_object(&form, "dependencies")?;
    }
    let version = form.int("version")?;
    spec.metadata = stamped(json_object(&form, "metadata")?, version);
    if takes.agent_options {
        if let Some(schema) = json_object(&form, "output_schema")? {
            let schema = Value::Object(schema);
            crate::input::check_output_schema(&schema, state.limits.schema)?;
            let name = schema.get("title").and_then(Value::as_str).unwrap_or("output").to_owned();
            spec.output_schema = Some(OutputSchema::new(&name, schema));
        }
        spec.add_history_to_context = form.bool("add_history_to_context")?;
    }
    if takes.workflow_options {
        spec.additional_data = json_object(&form, "additional_data")?;
    }
    let background = form.bool("background")?.unwrap_or(false);
    let cancel_on_disconnect = takes.agent_options && form.bool("cancel_on_disconnect")?.unwrap_or(false);
    let stream = form.bool("stream")?.unwrap_or(true);
    spec.stream = stream;
    Ok(RunForm { spec, stream, background, cancel_on_disconnect, idempotency_key, version })
}

/// The `files` of a run form, as Agno sorts them: images, and documents (PDF, text, JSON, CSV,
/// Word). Empty files and other kinds are refused with the file's name.
fn uploaded_media(form: &mut Form) -> ApiResult<Vec<(bool, agno_core::Media)>> {
    use base64::Engine as _;
    let mut out = Vec::new();
    for file in form.take_files("files") {
        if file.bytes.is_empty() {
            return Err(ApiError::bad_request(format!("Empty file: {}", file.file_name)));
        }
        let ext = file.file_name.rsplit('.').next().unwrap_or_default().to_lowercase();
        let by_extension = match ext.as_str() {
            "png" => Some("image/png"),
            "jpg" | "jpeg" => Some("image/jpeg"),
            "gif" => Some("image/gif"),
            "webp" => Some("image/webp"),
            "pdf" => Some("application/pdf"),
            "txt" | "md" => Some("text/plain"),
            "csv" => Some("text/csv"),
            "json" => Some("application/json"),
            "docx" => Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            _ => None,
        };
        let sent = file.content_type.clone().filter(|t| !t.is_empty() && t != "application/octet-stream");
        let Some(mime) = sent.or_else(|| by_extension.map(str::to_owned)) else {
            return Err(ApiError::bad_request(format!("Unsupported file type: {}", file.file_name)));
        };
        let is_image = mime.starts_with("image/");
        let is_document = mime == "application/pdf"
            || mime.starts_with("text/")
            || mime == "application/json"
            || mime.contains("wordprocessingml");
        if mime.starts_with("audio/") || mime.starts_with("video/") {
            return Err(ApiError::bad_request(format!(
                "{} is {mime}: audio and video inputs are not supported by agno-rs yet (send images or documents)",
                file.file_name
            )));
        }
        if !is_image && !is_document {
            return Err(ApiError::bad_request(format!("Unsupported file type: {} ({mime})", file.file_name)));
        }
        let mut media = agno_core::Media::bytes(base64::engine::general_purpose::STANDARD.encode(&file.bytes), &mime);
        media.filename = Some(file.file_name.clone());
        out.push((is_image, media));
    }
    if form.has_files() {
        return Err(ApiError::bad_request("upload files in the `files` field"));
    }
    Ok(out)
}

/// A form field holding a JSON object: absent, or JSON `null`, is none. An empty value is refused
/// (422): the API document describes the field as a JSON part, which an empty part is not.
pub(crate) fn json_object(form: &Form, field: &str) -> ApiResult<Option<serde_json::Map<String, Value>>> {
    let Some(text) = form.text(field) else { return Ok(None) };
    if text.trim().is_empty() {
        return Err(ApiError::unprocessable(format!("{field} is empty: send a JSON object, or leave the field out"))
            .at("body", field));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(Value::Null) => Ok(None),
        Ok(_) => Err(ApiError::unprocessable(format!("{field} must be a JSON object")).at("body", field)),
        Err(e) => Err(ApiError::unprocessable(format!("{field} is not valid JSON: {e}")).at("body", field)),
    }
}

/// The session a run goes to must not belong to someone else: another user's session answers
/// 404, as a missing one would under isolation.
pub(crate) async fn check_session_owner(state: &AppState, session_id: &str, user_id: Option<&str>) -> ApiResult<()> {
    let Some(db) = &state.db else { return Ok(()) };
    // A run naming no user continues any session (Agno does): nothing to read.
    if user_id.is_none() {
        return Ok(());
    }
    if let Some(existing) = db.get_session(session_id, None, Some(0)).await? {
        let owner = existing.user_id.as_deref();
        // A run naming a user never writes into another user's session.
        if owner.is_some() && owner != user_id {
            return Err(ApiError::not_found(format!("Session {session_id} not found")));
        }
    }
    Ok(())
}

/// The `Idempotency-Key` header: at most 512 characters (422 beyond).
pub(crate) fn idempotency_key(headers: &axum::http::HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let key = value.to_str().map_err(|_| ApiError::unprocessable("Idempotency-Key must be visible ASCII"))?.trim();
    if key.len() > 512 {
        return Err(ApiError::unprocessable("Idempotency-Key must be at most 512 characters"));
    }
    Ok(Some(key.to_owned()).filter(|k| !k.is_empty()))
}

/// The user a run or continue form runs as. As Agno: a token's `sub` (over the form's
/// `user_id`), forced under isolation.
pub(crate) fn form_user(principal: &Principal, form: &Form) -> Option<String> {
    principal.run_user(form.text("user_id").map(str::to_owned))
}

/// The fields that the run and continue forms of several kinds share.
pub(crate) mod fields {
    use crate::routes::FormField;

    /// The input of an agent's or a team's run.
    pub(crate) const MESSAGE: FormField = FormField::required("message", "string", "The input message.");
    /// SSE or JSON.
    pub(crate) const STREAM: FormField = FormField::optional("stream", "boolean", "Answer as SSE (default true).");
    /// The session a new run goes into.
    pub(crate) const SESSION: FormField =
        FormField::optional("session_id", "string", "Session to run in (new when absent).");
    /// The session of the run continued or resumed.
    pub(crate) const RUN_SESSION: FormField = FormField::optional("session_id", "string", "The run's session.");
    /// The user.
    pub(crate) const USER: FormField = FormField::optional("user_id", "string", "The user (a token's sub wins).");
    /// State merged into the session's.
    pub(crate) const SESSION_STATE: FormField =
        FormField::optional("session_state", "object", "JSON object merged into the session state.");
    /// Metadata stored on the run.
    pub(crate) const METADATA: FormField = FormField::optional("metadata", "object", "JSON object stored on the run.");
    /// The catalog version to run.
    pub(crate) const VERSION: FormField = FormField::optional(
        "version",
        "integer",
        "The component version to run (a catalog component's; a draft only for its owner or an admin).",
    );
    /// A new run on the durable queue.
    pub(crate) const BACKGROUND: FormField =
        FormField::optional("background", "boolean", "Run on the durable queue (202, or SSE tail with stream=true).");
    /// A continuation on the durable queue.
    pub(crate) const CONTINUE_BACKGROUND: FormField = FormField::optional(
        "background",
        "boolean",
        "Continue on the durable queue (a run started in the background).",
    );
}
