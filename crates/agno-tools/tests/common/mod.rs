//! Helpers the agno-tools test files share.
#![allow(clippy::panic, dead_code)]

use agno_tools::{DynTool, ToolContext, ToolError, Toolkit};
use serde_json::{Map, Value};

/// Calls `tool` of `toolkit` with `args`; panics when the toolkit does not expose the tool.
pub(crate) async fn call(toolkit: &Toolkit, tool: &str, args: Value) -> Result<String, ToolError> {
    let found = toolkit
        .tools()
        .into_iter()
        .find(|t| t.name() == tool)
        .unwrap_or_else(|| panic!("toolkit {} does not expose {tool}", toolkit.name()));
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    DynTool::call(&*found, args, ToolContext::default()).await
}

/// A JSON object as toolkit options.
pub(crate) fn options(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("options must be an object"),
    }
}
