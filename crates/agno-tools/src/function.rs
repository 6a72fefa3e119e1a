//! Typed function tools: a closure over `Args: Deserialize + JsonSchema` becomes a [`DynTool`].
//!
//! Async closures run on the caller's executor; blocking closures ([`Function::blocking`]) run on
//! tokio's blocking thread pool, never on the async executor. Panics are contained and become a
//! [`ToolErrorKind::Panicked`] result; a per-tool timeout becomes [`ToolErrorKind::Timeout`].

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use agno_core::{
    ApprovalType, DynTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags, ToolOutput, UserInputField,
};
use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::schema::parameters_schema;

type AsyncHandler =
    Arc<dyn Fn(Map<String, Value>, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync>;
type BlockingHandler = Arc<dyn Fn(Map<String, Value>, ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync>;

#[derive(Clone)]
enum Handler {
    Async(AsyncHandler),
    Blocking(BlockingHandler),
}

/// A tool made from a Rust function or closure.
///
/// ```
/// use agno_tools::{Function, ToolError};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddArgs { a: f64, b: f64 }
/// let add = Function::new("add", "Add two numbers.", |args: AddArgs| async move {
///     Ok::<_, ToolError>(args.a + args.b)
/// });
/// assert_eq!(agno_core::DynTool::name(&add), "add");
/// ```
#[derive(Clone)]
pub struct Function {
    definition: ToolDefinition,
    flags: ToolFlags,
    timeout: Option<Duration>,
    handler: Handler,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.definition.name)
            .field("flags", &self.flags)
            .field("blocking", &matches!(self.handler, Handler::Blocking(_)))
            .finish_non_exhaustive()
    }
}

fn parse_args<A: DeserializeOwned>(args: Map<String, Value>) -> Result<A, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::invalid_arguments(e.to_string()))
}

fn render<O: Serialize>(output: &O) -> Result<ToolOutput, ToolError> {
    match serde_json::to_value(output) {
        Ok(Value::String(s)) => Ok(s),
        Ok(other) => Ok(other.to_string()),
        Err(e) => Err(ToolError::execution(format!("tool output could not be serialized: {e}"))),
    }
}

impl Function {
    fn from_handler(name: &str, description: &str, parameters: Arc<Value>, handler: Handler) -> Self {
        Self {
            definition: ToolDefinition {
                name: name.to_owned(),
                description: Some(description.to_owned()).filter(|d| !d.is_empty()),
                parameters,
                strict: false,
            },
            flags: ToolFlags::default(),
            timeout: None,
            handler,
        }
    }

    /// An async tool. `Args` is deserialized from the model's arguments; invalid arguments become
    /// a tool error the model sees.
    pub fn new<A, O, F, Fut>(name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        Self::with_context(name, description, move |a: A, _ctx| f(a))
    }

    /// An async tool over state its toolkit's tools share (a client, a connection pool): each call
    /// gets its own handle on `state`.
    pub fn with_state<S, A, O, F, Fut>(name: &str, description: &str, state: &Arc<S>, f: F) -> Self
    where
        S: Send + Sync + 'static,
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Arc<S>, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let state = Arc::clone(state);
        Self::new(name, description, move |a: A| f(Arc::clone(&state), a))
    }

    /// An async tool that also receives the run's [`ToolContext`] (ids, session state,
    /// dependencies).
    pub fn with_context<A, O, F, Fut>(name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: AsyncHandler = Arc::new(move |args, ctx| {
            let f = Arc::clone(&f);
            Box::pin(async move {
                let args: A = parse_args(args)?;
                let out = f(args, ctx).await?;
                render(&out)
            })
        });
        Self::from_handler(name, description, parameters_schema::<A>(), Handler::Async(handler))
    }

    /// A blocking tool. It runs on tokio's blocking thread pool, so it may do blocking IO or
    /// heavy computation without stalling other runs.
    pub fn blocking<A, O, F>(name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(A) -> Result<O, ToolError> + Send + Sync + 'static,
    {
        Self::blocking_with_context(name, description, move |a: A, _ctx| f(a))
    }

    /// A blocking tool that also receives the run's [`ToolContext`].
    pub fn blocking_with_context<A, O, F>(name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(A, ToolContext) -> Result<O, ToolError> + Send + Sync + 'static,
    {
        let handler: BlockingHandler = Arc::new(move |args, ctx| {
            let args: A = parse_args(args)?;
            render(&f(args, ctx)?)
        });
        Self::from_handler(name, description, parameters_schema::<A>(), Handler::Blocking(handler))
    }

    /// Replaces the generated parameter schema (for tools whose arguments are free-form JSON).
    pub fn with_parameters(mut self, parameters: Value) -> Self {
        self.definition.parameters = Arc::new(parameters);
        self
    }

    /// Pause the run for the user's confirmation before each call.
    pub fn requires_confirmation(mut self) -> Self {
        self.flags.requires_confirmation = true;
        self
    }

    /// Pause the run for user-supplied values of `fields` (all arguments when empty).
    pub fn requires_user_input(mut self, fields: &[&str]) -> Self {
        self.flags.requires_user_input = true;
        self.flags.user_input_fields = fields.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// The caller executes this tool and supplies its result when continuing the run.
    pub fn external_execution(mut self) -> Self {
        self.flags.external_execution = true;
        self
    }

    /// Needs an admin's approval (Agno's `@approval`): `Required` pauses each call until the
    /// approval is resolved through `/approvals` (asking for confirmation when the tool asks for
    /// nothing else); `Audit` records the decision a person made on a call that pauses for a
    /// confirmation, input or an external result.
    pub fn approval(mut self, approval: ApprovalType) -> Self {
        self.flags.set_approval(approval);
        self
    }

    /// End the run after this tool's result.
    pub fn stop_after_tool_call(mut self) -> Self {
        self.flags.stop_after_tool_call = true;
        self
    }

    /// Show the result to the user as the answer.
    pub fn show_result(mut self) -> Self {
        self.flags.show_result = true;
        self
    }

    /// Ask the provider for strict schema adherence.
    pub fn strict(mut self) -> Self {
        self.definition.strict = true;
        self
    }

    /// Fail calls that take longer than `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Mutable access to the flags (used by toolkits to apply per-tool lists).
    pub fn flags_mut(&mut self) -> &mut ToolFlags {
        &mut self.flags
    }

    async fn execute(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match &self.handler {
            Handler::Async(h) => match AssertUnwindSafe(h(args, ctx)).catch_unwind().await {
                Ok(result) => result,
                Err(panic) => Err(panicked(&self.definition.name, &*panic)),
            },
            Handler::Blocking(h) => {
                let h = Arc::clone(h);
                match tokio::task::spawn_blocking(move || h(args, ctx)).await {
                    Ok(result) => result,
                    Err(join) if join.is_panic() => Err(panicked(&self.definition.name, &*join.into_panic())),
                    Err(join) => Err(ToolError::new(ToolErrorKind::Cancelled, join.to_string())),
                }
            }
        }
    }
}

fn panicked(name: &str, payload: &(dyn std::any::Any + Send)) -> ToolError {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    tracing::error!(tool = name, panic = %what, "tool panicked");
    ToolError::new(ToolErrorKind::Panicked, format!("tool {name} panicked: {what}"))
}

/// The user-input schema for a tool with `requires_user_input`: one field per argument named in
/// the flags (all schema properties when none are named), typed from the JSON schema.
pub fn user_input_fields(definition: &ToolDefinition, flags: &ToolFlags) -> Vec<UserInputField> {
    let props = definition.parameters.get("properties").and_then(Value::as_object);
    let names: Vec<String> = if flags.user_input_fields.is_empty() {
        props.map(|p| p.keys().cloned().collect()).unwrap_or_default()
    } else {
        flags.user_input_fields.clone()
    };
    names
        .into_iter()
        .map(|name| {
            let prop = props.and_then(|p| p.get(&name));
            let json_type = prop.and_then(|p| p.get("type")).and_then(Value::as_str).unwrap_or("string");
            let field_type = match json_type {
                "integer" => "int",
                "number" => "float",
                "boolean" => "bool",
                "array" => "list",
                "object" => "dict",
                _ => "str",
            };
            let description = prop.and_then(|p| p.get("description")).and_then(Value::as_str).map(str::to_owned);
            UserInputField { name, field_type: field_type.to_owned(), description, value: None }
        })
        .collect()
}

#[async_trait]
impl DynTool for Function {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match self.timeout {
            None => self.execute(args, ctx).await,
            Some(limit) => tokio::time::timeout(limit, self.execute(args, ctx)).await.unwrap_or_else(|_| {
                Err(ToolError::new(
                    ToolErrorKind::Timeout,
                    format!("tool {} did not finish within {:.1}s", self.definition.name, limit.as_secs_f64()),
                ))
            }),
        }
    }
}
