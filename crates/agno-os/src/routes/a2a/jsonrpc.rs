//! The JSON-RPC 2.0 envelope of A2A requests: reading a request ([`Call::read`]), its methods
//! ([`Method`]) and the protocol's errors ([`RpcError`]: JSON-RPC's own codes and A2A's), answered
//! as JSON-RPC error objects with HTTP 200, as the A2A SDKs' servers answer them.

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

    /// A2A's `UnsupportedOperationError` (`-32004`).
    pub(super) fn unsupported(detail: impl Into<String>) -> Self {
        Self::new(-32004, detail)
    }

    /// The same error carrying `data`.
    pub(super) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Its JSON-RPC error object.
    pub(super) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// A method of A2A v0.3's JSON-RPC binding served here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    /// `message/send`: a run, answered once it ends (or once queued, `blocking: false`).
    Send,
    /// `message/stream`: a run, answered as SSE while it goes.
    Stream,
    /// `tasks/get`: a stored run.
    GetTask,
    /// `tasks/cancel`: cancel a run.
    CancelTask,
}

impl Method {
    /// The method a JSON-RPC `method` names (`None` for one A2A does not have).
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "message/send" => Self::Send,
            "message/stream" => Self::Stream,
            "tasks/get" => Self::GetTask,
            "tasks/cancel" => Self::CancelTask,
            _ => return None,
        })
    }
}

/// A2A methods that exist but are not served here: answered `UnsupportedOperationError` rather
/// than "method not found".
const UNSUPPORTED: &[&str] = &[
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

/// One JSON-RPC request, read.
#[derive(Debug)]
pub(super) struct Call {
    /// Its `id` (`null` when it had none), echoed in the answer.
    pub(super) id: Value,
    /// What it asks.
    pub(super) method: Method,
    /// Its `params` object (empty when absent).
    pub(super) params: Map<String, Value>,
}

impl Call {
    /// Reads a request from `body`. An endpoint's own method (`message:send` is `message/send`)
    /// is taken when the request names none, as Python AgentOS does; a request naming another
    /// A2A method is served as that method, so an A2A client posting every method to the URL of
    /// the agent card is answered. On failure, the error and the request's id (when it had one).
    pub(super) fn read(body: &Bytes, default: Method) -> Result<Self, Box<(Value, RpcError)>> {
        let fail = |id: Value, e: RpcError| Box::new((id, e));
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
        let method = match request.get("method") {
            None | Some(Value::Null) => default,
            Some(Value::String(name)) => match Method::named(name) {
                Some(method) => method,
                None if UNSUPPORTED.contains(&name.as_str()) => {
                    return Err(fail(id, RpcError::unsupported(format!("{name} is not supported by this server"))));
                }
                None => return Err(fail(id, RpcError::method_not_found(name))),
            },
            Some(_) => return Err(fail(id, RpcError::invalid_request("method must be a string"))),
        };
        let params = match request.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params,
            Some(_) => return Err(fail(id, RpcError::invalid_params("params must be an object"))),
        };
        Ok(Self { id, method, params })
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
    /// The answer to the request `id`.
    pub(super) fn into_response(self, id: &Value) -> Response {
        match self {
            Self::Rpc(e) => error_response(id, &e),
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
pub(super) fn error_response(id: &Value, error: &RpcError) -> Response {
    Json(json!({"id": id, "jsonrpc": "2.0", "error": error.to_json()})).into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Call, Box<(Value, RpcError)>> {
        Call::read(&Bytes::from(text.to_owned()), Method::Send)
    }

    #[test]
    fn envelopes_are_checked_with_json_rpc_codes() {
        assert_eq!(read("{bad").unwrap_err().1.code, -32700);
        assert_eq!(read("[1]").unwrap_err().1.code, -32600);
        let (id, e) = *read(r#"{"jsonrpc":"1.0","id":"a"}"#).unwrap_err();
        assert_eq!((id, e.code), (json!("a"), -32600));
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"method":"bogus"}"#).unwrap_err().1.code, -32601);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"method":"tasks/resubscribe"}"#).unwrap_err().1.code, -32004);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"method":3}"#).unwrap_err().1.code, -32600);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":7,"params":[1]}"#).unwrap_err().1.code, -32602);
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":{},"method":"message/send"}"#).unwrap_err().1.code, -32600);
    }

    #[test]
    fn a_request_without_method_is_the_endpoints_own_and_a_named_one_wins() {
        let call = read(r#"{"jsonrpc":"2.0","id":"x","params":{"a":1}}"#).unwrap();
        assert_eq!((call.method, call.id, call.params.len()), (Method::Send, json!("x"), 1));
        let call = read(r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get"}"#).unwrap();
        assert_eq!(call.method, Method::GetTask);
    }
}
