//! The JSON-RPC 2.0 envelope of A2A requests: reading a request ([`Call::read`]), its methods
//! ([`Method`]) in either protocol version ([`Version`]: v0.3's `message/send`, v1.0's
//! `SendMessage`), and the protocol's errors ([`RpcError`]: JSON-RPC's own codes and A2A's),
//! answered as JSON-RPC error objects with HTTP 200, as the A2A SDKs' servers answer them.

use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// A JSON-RPC or A2A error: its code, message and optional data.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RpcError {
    /// The code (`-32700` .. `-32600` JSON-RPC's, `-32001` .. `-32007` A2A's).
    pub(super) code: i64,
    /// What went wrong, for a person.
    pub(super) message: String,
    /// More about it (a task's state, the field at fault).
    pub(super) data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// `-32700`: the body is not JSON.
    pub(super) fn parse(detail: impl std::fmt::Display) -> Self {
        Self::new(-32700, format!("Invalid JSON payload: {detail}"))
    }

    /// `-32600`: JSON, but not a JSON-RPC 2.0 request.
    pub(super) fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(-32600, detail)
    }

    /// `-32601`: a method A2A does not have (or this endpoint does not serve).
    pub(super) fn method_not_found(method: &str) -> Self {
        Self::new(-32601, format!("Method not found: {method}"))
    }

    /// `-32602`: the method's params do not fit it.
    pub(super) fn invalid_params(detail: impl Into<String>) -> Self {
        Self::new(-32602, detail)
    }

    /// A2A's `TaskNotFoundError` (`-32001`).
    pub(super) fn task_not_found(task_id: &str) -> Self {
        Self::new(-32001, "Task not found").with_data(json!({"taskId": task_id}))
    }

    /// A2A's `TaskNotCancelableError` (`-32002`): the task ended before the cancel.
    pub(super) fn task_not_cancelable(task_id: &str, state: &str) -> Self {
        Self::new(-32002, format!("Task cannot be canceled: it is {state}"))
            .with_data(json!({"taskId": task_id, "state": state}))
    }

    /// A2A's `PushNotificationNotSupportedError` (`-32003`).
    pub(super) fn push_not_supported(method: &str) -> Self {
        Self::new(-32003, format!("Push notifications are not supported by this server ({method})"))
    }

    /// A2A v1.0's `VersionNotSupportedError` (`-32009`): a v1.0 method asked under another
    /// protocol version (no `A2A-Version` header means 0.3, as the A2A specification says).
    pub(super) fn version_not_supported(method: &str, asked: &str) -> Self {
        Self::new(
            -32009,
            format!("A2A version '{asked}' is not supported for {method}: send the header A2A-Version: 1.0"),
        )
    }

    /// A2A's `UnsupportedOperationError` (`-32004`).
    pub(super) fn unsupported(detail: impl Into<String>) -> Self {
        Self::new(-32004, detail)
    }

    /// The same error carrying `data`.
    pub(super) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// A2A's reason for its own codes (v1.0 names it in the error's `ErrorInfo`).
    fn reason(&self) -> Option<&'static str> {
        Some(match self.code {
            -32001 => "TASK_NOT_FOUND",
            -32002 => "TASK_NOT_CANCELABLE",
            -32003 => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            -32004 => "UNSUPPORTED_OPERATION",
            -32005 => "CONTENT_TYPE_NOT_SUPPORTED",
            -32009 => "VERSION_NOT_SUPPORTED",
            _ => return None,
        })
    }

    /// Its JSON-RPC error object: v0.3's `data` as it is; under v1.0 an A2A error's `data` is
    /// a list with one `google.rpc.ErrorInfo` naming its reason (its own data, as text, the
    /// metadata), as a2a-sdk 1.x answers.
    pub(super) fn to_json(&self, version: Version) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        match (version, self.reason()) {
            (Version::V1_0, Some(reason)) => {
                let metadata: Map<String, Value> = match &self.data {
                    Some(Value::Object(data)) => data
                        .iter()
                        .map(|(k, v)| {
                            (k.clone(), Value::String(v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                        })
                        .collect(),
                    _ => Map::new(),
                };
                error["data"] = json!([{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": "a2a-protocol.org",
                    "metadata": metadata,
                }]);
            }
            _ => {
                if let Some(data) = &self.data {
                    error["data"] = data.clone();
                }
            }
        }
        error
    }
}

/// The A2A protocol version a request speaks: its method's name says it (`message/send` is
/// v0.3, `SendMessage` v1.0); a request naming no method speaks the version of its
/// `A2A-Version` header (0.3 without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    /// v0.3: slash methods, `kind`-tagged objects, lower-case states.
    V0_3,
    /// v1.0: PascalCase methods, `TASK_STATE_*` / `ROLE_*`, one-of results.
    V1_0,
}

impl Version {
    /// The version an `A2A-Version` header value names (any 1.x is v1.0; absent is 0.3).
    pub(super) fn of_header(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some(v) if v == "1" || v.starts_with("1.") => Self::V1_0,
            _ => Self::V0_3,
        }
    }
}

/// An A2A method served here (in both protocol versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    /// `message/send`, `SendMessage`: a run, answered once it ends (or once queued).
    Send,
    /// `message/stream`, `SendStreamingMessage`: a run, answered as SSE while it goes.
    Stream,
    /// `tasks/get`, `GetTask`: a stored run.
    GetTask,
    /// `tasks/cancel`, `CancelTask`: cancel a run.
    CancelTask,
    /// `ListTasks` (v1.0): the caller's runs of the component.
    ListTasks,
    /// `tasks/resubscribe`, `SubscribeToTask`: follow a task that is still going.
    Subscribe,
}

impl Method {
    /// The method a JSON-RPC `method` names and the version it belongs to (`None` for one A2A
    /// does not have).
    fn named(name: &str) -> Option<(Self, Version)> {
        Some(match name {
            "message/send" => (Self::Send, Version::V0_3),
            "message/stream" => (Self::Stream, Version::V0_3),
            "tasks/get" => (Self::GetTask, Version::V0_3),
            "tasks/cancel" => (Self::CancelTask, Version::V0_3),
            "tasks/resubscribe" => (Self::Subscribe, Version::V0_3),
            "SendMessage" => (Self::Send, Version::V1_0),
            "SendStreamingMessage" => (Self::Stream, Version::V1_0),
            "GetTask" => (Self::GetTask, Version::V1_0),
            "CancelTask" => (Self::CancelTask, Version::V1_0),
            "ListTasks" => (Self::ListTasks, Version::V1_0),
            "SubscribeToTask" => (Self::Subscribe, Version::V1_0),
            _ => return None,
        })
    }
}

/// A2A methods about push notifications, which this server does not send:
/// `PushNotificationNotSupportedError` rather than "method not found".
const PUSH_METHODS: &[&str] = &[
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
];

/// Other A2A methods not served here (no extended card is offered): `UnsupportedOperationError`.
const UNSUPPORTED: &[&str] = &["agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"];

/// One JSON-RPC request, read.
#[derive(Debug)]
pub(super) struct Call {
    /// Its `id` (`null` when it had none), echoed in the answer.
    pub(super) id: Value,
    /// What it asks.
    pub(super) method: Method,
    /// The protocol version it speaks (and is answered in).
    pub(super) version: Version,
    /// Its `params` object (empty when absent).
    pub(super) params: Map<String, Value>,
}

impl Call {
    /// Reads a request from `body`. An endpoint's own method (`message:send` is `message/send`)
    /// is taken when the request names none, as Python AgentOS does; a request naming another
    /// A2A method is served as that method, so an A2A client posting every method to the URL of
    /// the agent card is answered. `header` is the request's `A2A-Version`: a v1.0 method
    /// needs it to name 1.x (`VersionNotSupportedError` otherwise, as a2a-sdk's servers answer).
    /// On failure, the error, the version to answer it in and the request's id (when it had one).
    pub(super) fn read(body: &Bytes, default: Method, header: Option<&str>) -> Result<Self, Box<Refused>> {
        let asked = Version::of_header(header);
        let fail = |id: Value, e: RpcError| Box::new(Refused { id, error: e, version: asked });
        let value: Value = serde_json::from_slice(body).map_err(|e| fail(Value::Null, RpcError::parse(e)))?;
        let Value::Object(mut request) = value else {
            return Err(fail(Value::Null, RpcError::invalid_request("the request must be a JSON object")));
        };
        let id = match request.remove("id") {
            None | Some(Value::Null) => Value::Null,
            Some(id @ (Value::String(_) | Value::Number(_))) => id,
            Some(_) => {
                return Err(fail(Value::Null, RpcError::invalid_request("id must be a string, a number or null")));
            }
        };
        if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(fail(id, RpcError::invalid_request("jsonrpc must be \"2.0\"")));
        }
        let (method, version) = match request.get("method") {
            None | Some(Value::Null) => (default, asked),
            Some(Value::String(name)) => match Method::named(name) {
                Some((_, Version::V1_0)) if asked != Version::V1_0 => {
                    // Refused in the spelling of the version the method belongs to.
                    let shown = header.map_or("0.3", str::trim);
                    let error = RpcError::version_not_supported(name, shown);
                    return Err(Box::new(Refused { id, error, version: Version::V1_0 }));
                }
                Some(named) => named,
                None if PUSH_METHODS.contains(&name.as_str()) => {
                    return Err(fail(id, RpcError::push_not_supported(name)));
                }
                None if UNSUPPORTED.contains(&name.as_str()) => {
                    return Err(fail(id, RpcError::unsupported(format!("{name} is not supported by this server"))));
                }
                None => return Err(fail(id, RpcError::method_not_found(name))),
            },
            Some(_) => return Err(fail(id, RpcError::invalid_request("method must be a string"))),
        };
        let fail = |id: Value, e: RpcError| Box::new(Refused { id, error: e, version });
        let params = match request.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params,
            Some(_) => return Err(fail(id, RpcError::invalid_params("params must be an object"))),
        };
        Ok(Self { id, method, version, params })
    }
}

/// A request refused before its method ran: the error, the request's id and the version to
/// answer in.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) id: Value,
    pub(super) error: RpcError,
    pub(super) version: Version,
}

impl Refused {
    /// The JSON-RPC error answer.
    pub(super) fn into_response(self) -> Response {
        error_response(&self.id, &self.error, self.version)
    }
}

/// Why an A2A request was not answered with a result: a protocol error (a JSON-RPC error
/// object) or an HTTP one (the component or session is not the caller's: the REST routes'
/// statuses, as Python AgentOS answers them).
#[derive(Debug)]
pub(super) enum Failure {
    /// A JSON-RPC error.
    Rpc(RpcError),
    /// An HTTP error.
    Http(ApiError),
}

impl From<RpcError> for Failure {
    fn from(e: RpcError) -> Self {
        Self::Rpc(e)
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Self::Http(e)
    }
}

impl From<agno_core::DbError> for Failure {
    fn from(e: agno_core::DbError) -> Self {
        Self::Http(e.into())
    }
}

impl Failure {
    /// The answer to the request `id` (in `version`).
    pub(super) fn into_response(self, id: &Value, version: Version) -> Response {
        match self {
            Self::Rpc(e) => error_response(id, &e, version),
            Self::Http(e) => e.into_response(),
        }
    }
}

/// The JSON-RPC success object answering the request `id` with `result`.
pub(super) fn envelope(id: &Value, result: Value) -> Value {
    let mut answer = Map::new();
    answer.insert("id".into(), id.clone());
    answer.insert("jsonrpc".into(), Value::from("2.0"));
    answer.insert("result".into(), result);
    Value::Object(answer)
}

/// A JSON-RPC success answer with `status`.
pub(super) fn result_response(id: &Value, result: Value, status: StatusCode) -> Response {
    (status, Json(envelope(id, result))).into_response()
}

/// A JSON-RPC error answer (HTTP 200).
pub(super) fn error_response(id: &Value, error: &RpcError, version: Version) -> Response {
    Json(json!({"id": id, "jsonrpc": "2.0", "error": error.to_json(version)})).into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Call, Box<Refused>> {
        Call::read(&Bytes::from(text.to_owned()), Method::Send, None)
    }

    #[test]
    fn envelopes_are_checked_with_json_rpc_codes() {
        assert_eq!(read("{bad").unwrap_err().error.code, -32700);
        assert_eq!(read("[1]").unwrap_err().error.code, -32600);
        let refused = *read(r#"{"jsonrpc":"1.0","id":"a"}"#).unwrap_err();
        assert_eq!((refused.id, refused.error.code), (json!("a"), -32600));
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"method":"bogus"}"#).unwrap_err().error.code, -32601);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard"}"#).unwrap_err().error.code, -32004);
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":7,"method":"tasks/pushNotificationConfig/set"}"#).unwrap_err().error.code,
            -32003
        );
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"method":3}"#).unwrap_err().error.code, -32600);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"params":[1]}"#).unwrap_err().error.code, -32602);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":{},"method":"message/send"}"#).unwrap_err().error.code, -32600);
    }

    #[test]
    fn a_request_without_method_is_the_endpoints_own_and_a_named_one_wins() {
        let call = read(r#"{"jsonrpc":"2.0","id":"x","params":{"a":1}}"#).unwrap();
        assert_eq!((call.method, call.id, call.params.len()), (Method::Send, json!("x"), 1));
        let call = read(r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get"}"#).unwrap();
        assert_eq!(call.method, Method::GetTask);
    }

    #[test]
    fn the_method_names_the_version_and_v1_methods_need_the_header() {
        let body = Bytes::from(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#);
        let refused = *Call::read(&body, Method::Stream, None).unwrap_err();
        assert_eq!((refused.error.code, refused.version), (-32009, Version::V1_0));
        assert!(refused.error.message.contains("A2A-Version: 1.0"), "{}", refused.error.message);
        let call = Call::read(&body, Method::Stream, Some("1.0")).unwrap();
        assert_eq!((call.method, call.version), (Method::Send, Version::V1_0));
        // A v0.3 method is v0.3 whatever the header says; no method takes the header's version.
        let body = Bytes::from(r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get"}"#);
        assert_eq!(Call::read(&body, Method::Send, Some("1.0")).unwrap().version, Version::V0_3);
        let body = Bytes::from(r#"{"jsonrpc":"2.0","id":1}"#);
        assert_eq!(Call::read(&body, Method::Send, Some("1.0")).unwrap().version, Version::V1_0);
        assert_eq!(Call::read(&body, Method::Send, Some("0.3")).unwrap().version, Version::V0_3);
        // v1.0 errors carry A2A's reason as an ErrorInfo.
        let e = RpcError::task_not_found("t9").to_json(Version::V1_0);
        assert_eq!(e["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(e["data"][0]["metadata"]["taskId"], "t9");
        assert_eq!(RpcError::task_not_found("t9").to_json(Version::V0_3)["data"]["taskId"], "t9");
    }
}
