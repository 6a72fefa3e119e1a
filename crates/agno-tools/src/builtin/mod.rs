//! Built-in toolkits, and lookup by name for configuration files and the CLI.

mod calculator;
mod file;
mod http;
mod shell;
mod slack;
mod sql;
mod websearch;

pub use calculator::calculator;
pub use file::file_tools;
pub use http::http_tools;
pub use shell::shell_tools;
pub use slack::slack_tools;
pub use sql::sql_tools;
pub use websearch::websearch_tools;

use serde_json::{Map, Value};

use crate::toolkit::{Toolkit, ToolkitError};

/// Error resolving a built-in toolkit by name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuiltinError {
    /// No built-in toolkit has this name.
    #[error("unknown toolkit {0:?}; built-in toolkits are: calculator, http, file, shell, sql, websearch, slack")]
    Unknown(String),
    /// An option is wrong.
    #[error(transparent)]
    Toolkit(#[from] ToolkitError),
    /// A required option is missing or invalid.
    #[error("toolkit {toolkit}: {message}")]
    Option {
        /// Toolkit name.
        toolkit: String,
        /// What is wrong.
        message: String,
    },
}

/// Builds a built-in toolkit by its id (or Agno's name for it: `sql_tools`), applying
/// configuration options (see [`Toolkit::configure`]). The `file` toolkit takes `base_dir`
/// (default: the current directory); `sql`, `websearch` and `slack` take the options their
/// constructors document ([`sql_tools`], [`websearch_tools`], [`slack_tools`]).
///
/// # Errors
/// A [`BuiltinError`] naming the unknown toolkit or the bad option.
pub fn by_name(name: &str, options: &Map<String, Value>) -> Result<Toolkit, BuiltinError> {
    let (toolkit, own): (Toolkit, &[&str]) = match name {
        "sql" | "sql_tools" | "sql-tools" => (sql_tools(options)?, sql::OPTIONS),
        "websearch" | "web_search" => (websearch_tools(options)?, websearch::OPTIONS),
        "slack" => (slack_tools(options)?, slack::OPTIONS),
        _ => (simple(name, options)?, &["base_dir"]),
    };
    Ok(toolkit.configure(options, own)?)
}

/// A built-in toolkit's options, read with errors that name the toolkit and the option.
pub(super) struct Options<'a> {
    toolkit: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Options<'a> {
    pub(super) fn new(toolkit: &'static str, map: &'a Map<String, Value>) -> Self {
        Self { toolkit, map }
    }

    pub(super) fn error(&self, message: impl Into<String>) -> BuiltinError {
        BuiltinError::Option { toolkit: self.toolkit.to_owned(), message: message.into() }
    }

    /// A string, when given.
    pub(super) fn string(&self, key: &str) -> Result<Option<String>, BuiltinError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.error(format!("{key} must be a string"))),
        }
    }

    /// A boolean, `default` when not given.
    pub(super) fn flag(&self, key: &str, default: bool) -> Result<bool, BuiltinError> {
        match self.map.get(key) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.error(format!("{key} must be true or false"))),
        }
    }

    /// A positive integer, when given.
    pub(super) fn positive_integer(&self, key: &str) -> Result<Option<u64>, BuiltinError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => Ok(Some(
                v.as_u64().filter(|n| *n > 0).ok_or_else(|| self.error(format!("{key} must be a positive integer")))?,
            )),
        }
    }

    /// A positive number of seconds, when given.
    pub(super) fn seconds(&self, key: &str) -> Result<Option<std::time::Duration>, BuiltinError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => Ok(Some(std::time::Duration::from_secs_f64(
                v.as_f64()
                    .filter(|s| *s > 0.0)
                    .ok_or_else(|| self.error(format!("{key} must be a positive number")))?,
            ))),
        }
    }
}

/// The toolkits without options of their own (but `file`'s `base_dir`).
fn simple(name: &str, options: &Map<String, Value>) -> Result<Toolkit, BuiltinError> {
    Ok(match name {
        "calculator" => calculator(),
        "http" => http_tools(),
        "shell" => shell_tools(),
        "file" => {
            let base = match options.get("base_dir") {
                None => std::env::current_dir().map_err(|e| BuiltinError::Option {
                    toolkit: "file".to_owned(),
                    message: format!("cannot read the current directory: {e}"),
                })?,
                Some(Value::String(dir)) => dir.into(),
                Some(_) => {
                    return Err(BuiltinError::Option {
                        toolkit: "file".to_owned(),
                        message: "base_dir must be a string path".to_owned(),
                    });
                }
            };
            file_tools(base)
        }
        other => return Err(BuiltinError::Unknown(other.to_owned())),
    })
}
