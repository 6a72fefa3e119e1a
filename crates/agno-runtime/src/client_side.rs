//! What the client that asks for a run brings to it beyond the input: tools it executes itself
//! (an AG-UI front-end's actions) and whether it follows the session state as tools change it.
//!
//! A client tool is offered to the model like any other; a call of it pauses the run for an
//! external result (as a tool with `external_execution` does), which the client sends back with
//! the continue. The client names its tools again when it continues (AG-UI clients send them
//! with every request), so a continued run can call them again.

use std::sync::Arc;

use agno_core::{DynTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags, ToolOutput};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the client brings to a run (kept with a background run's job, so the worker that runs
/// it offers the same tools).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSide {
    /// Tools the client executes: offered to the model; a call pauses the run for the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Whether each completed tool call's event carries the session state when the call
    /// changed it (AG-UI front-ends show state as it changes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follows_state: bool,
}

impl ClientSide {
    /// True when the client brings nothing.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && !self.follows_state
    }

    /// A client tool from a name, description and JSON schema of its arguments (an object
    /// schema; an empty one when the client sends none or something else).
    pub fn tool(name: &str, description: Option<&str>, parameters: Option<&Value>) -> ToolDefinition {
        let parameters = match parameters {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => serde_json::json!({"type": "object", "properties": {}}),
        };
        ToolDefinition {
            name: name.to_owned(),
            description: description.map(str::to_owned),
            parameters: Arc::new(parameters),
            strict: false,
        }
    }

    /// The client's tools to offer beside `own` (a client tool named as one of the
    /// component's own is left out: the component's tool is the one that runs).
    pub(crate) fn tools_beside(&self, own: &[Arc<dyn DynTool>]) -> Vec<Arc<dyn DynTool>> {
        self.tools
            .iter()
            .filter(|t| {
                let taken = own.iter().any(|o| o.name() == t.name);
                if taken {
                    tracing::warn!(tool = %t.name, "a client tool has the name of one of the component's tools; the component's runs");
                }
                !taken
            })
            .map(|definition| Arc::new(ClientTool::new(definition.clone())) as Arc<dyn DynTool>)
            .collect()
    }
}

/// A tool the client executes: its calls pause the run for their result.
#[derive(Debug)]
struct ClientTool {
    definition: ToolDefinition,
    flags: ToolFlags,
}

impl ClientTool {
    fn new(definition: ToolDefinition) -> Self {
        Self { definition, flags: ToolFlags { external_execution: true, ..ToolFlags::default() } }
    }
}

#[async_trait]
impl DynTool for ClientTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, _args: Map<String, Value>, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        // Never reached: a call of a tool with `external_execution` pauses the run first.
        Err(ToolError::new(
            ToolErrorKind::Paused,
            format!("{} is executed by the client: its result comes with the continue", self.definition.name),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn client_tools_pause_and_never_shadow_the_components_own() {
        let client = ClientSide {
            tools: vec![
                ClientSide::tool(
                    "change_theme",
                    Some("Changes the theme"),
                    Some(&serde_json::json!({"type": "object"})),
                ),
                ClientSide::tool("own", None, None),
            ],
            follows_state: false,
        };
        let own: Vec<Arc<dyn DynTool>> = client.tools_beside(&[]).into_iter().skip(1).collect();
        let offered = client.tools_beside(&own);
        assert_eq!(offered.len(), 1);
        assert_eq!(offered[0].name(), "change_theme");
        assert!(offered[0].flags().external_execution);
        assert_eq!(own[0].definition().parameters.as_ref(), &serde_json::json!({"type": "object", "properties": {}}));
        let back: ClientSide = serde_json::from_value(serde_json::to_value(&client).unwrap()).unwrap();
        assert_eq!(back, client);
        assert!(ClientSide::default().is_empty());
        assert_eq!(serde_json::to_value(ClientSide::default()).unwrap(), serde_json::json!({}));
    }
}
