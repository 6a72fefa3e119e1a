//! `update_session_state`: the tool Agno's `enable_agentic_state` gives the model, which merges
//! the keys it names into the run's session state (saved with the session at the end of the
//! run, as any change a tool makes to the state).

use std::sync::{Arc, LazyLock};

use agno_core::{DynTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags, ToolOutput};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

static DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: "update_session_state".to_owned(),
    description: Some(
        "Update the shared session state. Provide any updates as a dictionary of key-value pairs. Example: \
         \"session_state_updates\": {\"shopping_list\": [\"milk\", \"eggs\", \"bread\"]}"
            .to_owned(),
    ),
    parameters: Arc::new(json!({
        "type": "object",
        "properties": {
            "session_state_updates": {
                "type": "object",
                "description": "The updates to apply to the shared session state: a dictionary of key-value pairs.",
            },
        },
        "required": ["session_state_updates"],
    })),
    strict: false,
});

/// The `update_session_state` tool.
#[derive(Debug, Default)]
pub(crate) struct UpdateSessionState {
    flags: ToolFlags,
}

#[async_trait]
impl DynTool for UpdateSessionState {
    fn definition(&self) -> &ToolDefinition {
        &DEFINITION
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(Value::Object(updates)) = args.get("session_state_updates") else {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "session_state_updates must be an object of the keys to set, e.g. {\"theme\": \"dark\"}",
            ));
        };
        let mut state = ctx
            .session_state
            .lock()
            .map_err(|_| ToolError::new(ToolErrorKind::Execution, "the session state is unavailable"))?;
        for (key, value) in updates {
            state.insert(key.clone(), value.clone());
        }
        Ok(format!("Updated session state: {}", Value::Object(state.clone())))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn updates_merge_into_the_state_and_bad_arguments_are_a_tool_error() {
        let tool = UpdateSessionState::default();
        let ctx = ToolContext::default();
        ctx.session_state.lock().unwrap().insert("keep".into(), json!(1));
        let args = json!({"session_state_updates": {"theme": "dark"}}).as_object().cloned().unwrap();
        let out = tool.call(args, ctx.clone()).await.unwrap();
        assert_eq!(out, r#"Updated session state: {"keep":1,"theme":"dark"}"#);
        assert_eq!(ctx.session_state.lock().unwrap().get("theme"), Some(&json!("dark")));
        let err = tool.call(Map::new(), ctx).await.unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    }
}
