//! `Toolkit`: a named group of tools with a stable `id`, include/exclude lists, per-tool HITL
//! lists and per-tool on/off flags.
//!
//! Flags are named after the tool (`factorial = false`), or given their own name when the tool's
//! is longer (Slack's `send_message = true` turns on `send_slack_message`). The v2 spelling
//! `enable_factorial` is still accepted, in code and in config, and logs a deprecation warning.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use agno_core::{ApprovalType, DynTool, ToolFlags};
use serde_json::{Map, Value};

use crate::function::Function;

/// Agno's `generate_id_from_name`: lowercase, spaces and underscores become dashes.
pub fn id_from_name(name: &str) -> String {
    name.to_lowercase().replace([' ', '_'], "-")
}

/// Error building a toolkit from configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolkitError {
    /// A flag names no tool of the toolkit.
    #[error("toolkit {toolkit} has no tool named {flag}; known tools: {known}")]
    UnknownFlag {
        /// Toolkit name.
        toolkit: String,
        /// The flag as given.
        flag: String,
        /// Comma-separated tool names.
        known: String,
    },
    /// A flag's value is not a boolean, or a list option is not a list of strings.
    #[error("toolkit {toolkit}: option {option} must be {expected}")]
    InvalidValue {
        /// Toolkit name.
        toolkit: String,
        /// The option.
        option: String,
        /// What was expected.
        expected: &'static str,
    },
}

/// A group of tools.
#[derive(Debug, Clone)]
pub struct Toolkit {
    name: String,
    id: String,
    instructions: Option<String>,
    tools: Vec<Function>,
    default_off: BTreeSet<String>,
    enabled: BTreeMap<String, bool>,
    /// Flag -> tool, for tools whose flag is not their name.
    flags: BTreeMap<String, String>,
    /// Old flags Agno renamed beyond dropping `enable_` (`enable_search` -> `search_web`).
    legacy_flags: BTreeMap<String, String>,
    include_tools: Option<Vec<String>>,
    exclude_tools: Vec<String>,
    requires_confirmation_tools: Vec<String>,
    external_execution_required_tools: Vec<String>,
    stop_after_tool_call_tools: Vec<String>,
    approval_required_tools: Vec<String>,
    approval_audit_tools: Vec<String>,
}

impl Toolkit {
    /// An empty toolkit; its id is derived from the name.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            id: id_from_name(name),
            instructions: None,
            tools: Vec::new(),
            default_off: BTreeSet::new(),
            enabled: BTreeMap::new(),
            flags: BTreeMap::new(),
            legacy_flags: BTreeMap::new(),
            include_tools: None,
            exclude_tools: Vec::new(),
            requires_confirmation_tools: Vec::new(),
            external_execution_required_tools: Vec::new(),
            stop_after_tool_call_tools: Vec::new(),
            approval_required_tools: Vec::new(),
            approval_audit_tools: Vec::new(),
        }
    }

    /// The toolkit name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stable id AgentOS uses to reference this toolkit.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Overrides the id.
    pub fn with_id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }

    /// Instructions added to the system message when the toolkit is used.
    pub fn with_instructions(mut self, instructions: &str) -> Self {
        self.instructions = Some(instructions.to_owned());
        self
    }

    /// The instructions, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// Adds a tool, on by default.
    pub fn tool(mut self, tool: Function) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a tool that is off unless its flag turns it on (for risky tools).
    pub fn tool_off_by_default(mut self, tool: Function) -> Self {
        self.default_off.insert(DynTool::name(&tool).to_owned());
        self.tools.push(tool);
        self
    }

    /// Adds a tool switched by `flag` (not its name), on or off by default.
    pub fn flagged_tool(mut self, flag: &str, on_by_default: bool, tool: Function) -> Self {
        let name = DynTool::name(&tool).to_owned();
        if !on_by_default {
            self.default_off.insert(name.clone());
        }
        self.flags.insert(flag.to_owned(), name);
        self.tools.push(tool);
        self
    }

    /// Accepts the v2 flag `old` (with a deprecation warning) for the flag `new`, where Agno
    /// renamed more than the `enable_` prefix.
    pub fn legacy_flag(mut self, old: &str, new: &str) -> Self {
        self.legacy_flags.insert(old.to_owned(), new.to_owned());
        self
    }

    /// Names of all tools in the toolkit, enabled or not.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(DynTool::name).collect()
    }

    /// Turns one tool on or off by its flag or its name (`factorial(false)` in Agno's v3
    /// spelling).
    ///
    /// # Errors
    /// [`ToolkitError::UnknownFlag`] when the toolkit has no such flag or tool.
    pub fn set(mut self, flag: &str, on: bool) -> Result<Self, ToolkitError> {
        let tool = self.resolve(flag)?;
        self.enabled.insert(tool, on);
        Ok(self)
    }

    /// The v2 spelling of [`Toolkit::set`]: `enable_<tool>`. Works, and logs a deprecation warning.
    ///
    /// # Errors
    /// [`ToolkitError::UnknownFlag`] when the toolkit has no such tool.
    pub fn set_legacy(self, flag: &str, on: bool) -> Result<Self, ToolkitError> {
        let new = match self.legacy_flags.get(flag) {
            Some(new) => new.clone(),
            None => flag.strip_prefix("enable_").unwrap_or(flag).to_owned(),
        };
        tracing::warn!(
            toolkit = %self.name,
            "`{flag}` is deprecated since Agno v3; use `{new}` instead"
        );
        self.set(&new, on)
    }

    /// Turns every tool on (`all = true`).
    pub fn all(mut self) -> Self {
        for name in self.tools.iter().map(|t| DynTool::name(t).to_owned()).collect::<Vec<_>>() {
            self.enabled.insert(name, true);
        }
        self
    }

    /// Only these tools are exposed.
    pub fn include_tools(mut self, names: &[&str]) -> Self {
        self.include_tools = Some(names.iter().map(|s| (*s).to_owned()).collect());
        self
    }

    /// These tools are never exposed.
    pub fn exclude_tools(mut self, names: &[&str]) -> Self {
        self.exclude_tools = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Calls of these tools pause the run for confirmation.
    pub fn requires_confirmation_tools(mut self, names: &[&str]) -> Self {
        self.requires_confirmation_tools = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// These tools are executed by the caller, who supplies the result on continue.
    pub fn external_execution_required_tools(mut self, names: &[&str]) -> Self {
        self.external_execution_required_tools = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// The run stops after calls of these tools.
    pub fn stop_after_tool_call_tools(mut self, names: &[&str]) -> Self {
        self.stop_after_tool_call_tools = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Calls of these tools pause the run until an admin resolves their approval (Agno's
    /// `@approval`).
    pub fn approval_required_tools(mut self, names: &[&str]) -> Self {
        self.approval_required_tools = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// The decisions a person makes on calls of these tools are recorded as audit approvals
    /// (`@approval(type="audit")`); each must also pause (confirmation, input or external).
    pub fn approval_audit_tools(mut self, names: &[&str]) -> Self {
        self.approval_audit_tools = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Applies configuration options: per-tool flags (`factorial = false`, or the deprecated
    /// `enable_factorial = false`), `all`, `include_tools`, `exclude_tools`,
    /// `requires_confirmation_tools`, `external_execution_required_tools`,
    /// `stop_after_tool_call_tools`, `approval_required_tools`, `approval_audit_tools` and `id`. Keys in `ignore` are left to the caller.
    ///
    /// # Errors
    /// A [`ToolkitError`] naming the bad option.
    pub fn configure(mut self, options: &Map<String, Value>, ignore: &[&str]) -> Result<Self, ToolkitError> {
        for (key, value) in options {
            if ignore.contains(&key.as_str()) {
                continue;
            }
            match key.as_str() {
                "id" => {
                    let id = value.as_str().ok_or_else(|| self.invalid(key, "a string"))?;
                    self.id = id.to_owned();
                }
                "all" => {
                    if self.bool_of(key, value)? {
                        self = self.all();
                    }
                }
                "include_tools" => self.include_tools = Some(self.list_of(key, value)?),
                "exclude_tools" => self.exclude_tools = self.list_of(key, value)?,
                "requires_confirmation_tools" => self.requires_confirmation_tools = self.list_of(key, value)?,
                "external_execution_required_tools" => {
                    self.external_execution_required_tools = self.list_of(key, value)?;
                }
                "stop_after_tool_call_tools" => self.stop_after_tool_call_tools = self.list_of(key, value)?,
                "approval_required_tools" => self.approval_required_tools = self.list_of(key, value)?,
                "approval_audit_tools" => self.approval_audit_tools = self.list_of(key, value)?,
                flag if flag.starts_with("enable_") => {
                    let on = self.bool_of(key, value)?;
                    self = self.set_legacy(flag, on)?;
                }
                flag => {
                    let on = self.bool_of(key, value)?;
                    self = self.set(flag, on)?;
                }
            }
        }
        self.check_approval_lists()?;
        Ok(self)
    }

    /// Every tool an approval list names exists, and an audited tool pauses for a person (Agno
    /// refuses `@approval(type="audit")` on a tool that does not: nothing would be recorded).
    fn check_approval_lists(&self) -> Result<(), ToolkitError> {
        let listed = |list: &[String], name: &str| list.iter().any(|n| n == name);
        for name in self.approval_required_tools.iter().chain(&self.approval_audit_tools) {
            self.resolve(name)?;
        }
        for name in &self.approval_audit_tools {
            let own =
                self.tools.iter().find(|t| DynTool::name(*t) == name).is_some_and(|t| t.flags().pauses_for_a_person());
            if !own
                && !listed(&self.requires_confirmation_tools, name)
                && !listed(&self.external_execution_required_tools, name)
            {
                return Err(self.invalid(
                    "approval_audit_tools",
                    "tools that pause for a person (list them in requires_confirmation_tools too)",
                ));
            }
        }
        Ok(())
    }

    fn invalid(&self, option: &str, expected: &'static str) -> ToolkitError {
        ToolkitError::InvalidValue { toolkit: self.name.clone(), option: option.to_owned(), expected }
    }

    fn bool_of(&self, key: &str, value: &Value) -> Result<bool, ToolkitError> {
        value.as_bool().ok_or_else(|| self.invalid(key, "true or false"))
    }

    fn list_of(&self, key: &str, value: &Value) -> Result<Vec<String>, ToolkitError> {
        let list = value.as_array().ok_or_else(|| self.invalid(key, "a list of tool names"))?;
        list.iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| self.invalid(key, "a list of tool names")))
            .collect()
    }

    /// The tool a flag (or a tool's own name) switches.
    fn resolve(&self, flag: &str) -> Result<String, ToolkitError> {
        if let Some(tool) = self.flags.get(flag) {
            return Ok(tool.clone());
        }
        if self.tools.iter().any(|t| DynTool::name(t) == flag) {
            return Ok(flag.to_owned());
        }
        let mut known: Vec<&str> = self.flags.keys().map(String::as_str).collect();
        known.extend(self.tool_names().into_iter().filter(|t| !self.flags.values().any(|v| v == t)));
        Err(ToolkitError::UnknownFlag { toolkit: self.name.clone(), flag: flag.to_owned(), known: known.join(", ") })
    }

    /// True when the tool is exposed to the model.
    pub fn is_enabled(&self, tool: &str) -> bool {
        let on = self.enabled.get(tool).copied().unwrap_or(!self.default_off.contains(tool));
        let included = self.include_tools.as_ref().is_none_or(|list| list.iter().any(|n| n == tool));
        on && included && !self.exclude_tools.iter().any(|n| n == tool)
    }

    /// The enabled tools, with the toolkit's HITL lists applied to their flags.
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        let listed = |list: &[String], name: &str| list.iter().any(|n| n == name);
        self.tools
            .iter()
            .filter(|t| self.is_enabled(DynTool::name(*t)))
            .map(|t| {
                let mut t = t.clone();
                let name = DynTool::name(&t).to_owned();
                let flags: &mut ToolFlags = t.flags_mut();
                flags.requires_confirmation |= listed(&self.requires_confirmation_tools, &name);
                flags.external_execution |= listed(&self.external_execution_required_tools, &name);
                flags.stop_after_tool_call |= listed(&self.stop_after_tool_call_tools, &name);
                if listed(&self.approval_required_tools, &name) {
                    flags.set_approval(ApprovalType::Required);
                } else if listed(&self.approval_audit_tools, &name) {
                    flags.set_approval(ApprovalType::Audit);
                }
                Arc::new(t) as Arc<dyn DynTool>
            })
            .collect()
    }
}
