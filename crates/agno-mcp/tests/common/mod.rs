//! Helpers the agno-mcp test files share.
#![allow(clippy::panic, dead_code)]

use std::sync::Arc;

use agno_core::{DynTool, ModelRequest, Role};
use serde_json::{Map, Value};

/// A JSON object as tool arguments.
pub(crate) fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object: {other}"),
    }
}

/// The tool called `name`; panics naming the tools there are.
pub(crate) fn tool<'a>(tools: &'a [Arc<dyn DynTool>], name: &str) -> &'a Arc<dyn DynTool> {
    tools.iter().find(|t| t.name() == name).unwrap_or_else(|| {
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        panic!("no tool {name}: {names:?}")
    })
}

/// The texts of the tool results a model has been sent so far.
pub(crate) fn tool_results(req: &ModelRequest) -> Vec<String> {
    req.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content_text().unwrap_or_default().to_owned())
        .collect()
}
