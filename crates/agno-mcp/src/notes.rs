//! What a connection saw go wrong that no request reported: output that is not JSON-RPC, an
//! oversized message, the server's exit, its last stderr lines. Errors of calls on that
//! connection end with [`Notes::describe`], so "did not answer within 5 s" can say why.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Lines of stderr kept.
const STDERR_LINES: usize = 5;

/// Characters of a bad message or a stderr line kept.
const SNIPPET_CHARS: usize = 200;

#[derive(Debug, Default)]
struct Seen {
    not_json_rpc: usize,
    last_not_json_rpc: Option<String>,
    oversized: Option<usize>,
    exited: Option<String>,
    stderr: VecDeque<String>,
}

/// Notes of one connection, shared by its transport (which writes) and its session (which reads).
#[derive(Debug, Default)]
pub(crate) struct Notes(Mutex<Seen>);

fn snippet(text: &str) -> String {
    let mut s: String = text.chars().take(SNIPPET_CHARS).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

impl Notes {
    fn with(&self, f: impl FnOnce(&mut Seen)) {
        // A poisoned lock only means a writer panicked mid-note; the notes are still usable.
        let mut seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut seen);
    }

    /// The server sent something that is not a JSON-RPC message.
    pub(crate) fn not_json_rpc(&self, raw: &[u8], why: &serde_json::Error) {
        let text = String::from_utf8_lossy(raw);
        tracing::debug!(message = %snippet(&text), error = %why, "MCP server sent something that is not JSON-RPC");
        self.with(|s| {
            s.not_json_rpc += 1;
            s.last_not_json_rpc = Some(format!("{} ({why})", snippet(&text)));
        });
    }

    /// A message of `bytes` bytes was dropped.
    pub(crate) fn oversized(&self, bytes: usize) {
        tracing::warn!(bytes, "MCP server sent a message over the size limit; dropped");
        self.with(|s| s.oversized = Some(bytes));
    }

    /// The server process ended (or its stream closed), with `how`.
    pub(crate) fn exited(&self, how: &str) {
        self.with(|s| s.exited = Some(how.to_owned()));
    }

    /// Whether the transport ended (the process exited, the event stream closed): rmcp's
    /// `is_closed` only learns of it later, when the session is next used.
    pub(crate) fn ended(&self) -> bool {
        let mut ended = false;
        self.with(|s| ended = s.exited.is_some());
        ended
    }

    /// A line the server wrote to stderr (or a read failure).
    pub(crate) fn stderr(&self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        self.with(|s| {
            if s.stderr.len() == STDERR_LINES {
                s.stderr.pop_front();
            }
            s.stderr.push_back(snippet(line));
        });
    }

    /// `"; <what was seen>"` to end an error with, or empty when nothing was seen.
    pub(crate) fn suffix(&self) -> String {
        match self.describe() {
            d if d.is_empty() => d,
            d => format!("; {d}"),
        }
    }

    /// What was seen, as a sentence to append to an error; empty when nothing was.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        self.with(|s| {
            if let Some(how) = &s.exited {
                parts.push(format!("the server exited ({how})"));
            }
            if let Some(last) = &s.last_not_json_rpc {
                parts.push(format!("it sent {} message(s) that are not JSON-RPC, the last: {last}", s.not_json_rpc));
            }
            if let Some(bytes) = s.oversized {
                parts.push(format!("it sent a message of {bytes} bytes, over the limit, which was dropped"));
            }
            if !s.stderr.is_empty() && (s.exited.is_some() || parts.is_empty()) {
                parts.push(format!(
                    "its stderr ended with: {}",
                    s.stderr.iter().cloned().collect::<Vec<_>>().join(" | ")
                ));
            }
        });
        parts.join("; ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn describes_what_was_seen() {
        let notes = Notes::default();
        assert_eq!(notes.describe(), "");
        let err = serde_json::from_str::<serde_json::Value>("oops").unwrap_err();
        notes.not_json_rpc(b"oops", &err);
        notes.stderr("Traceback: boom");
        notes.exited("exit status: 3");
        let text = notes.describe();
        assert!(text.starts_with("the server exited (exit status: 3)"), "{text}");
        assert!(text.contains("1 message(s) that are not JSON-RPC, the last: oops"), "{text}");
        assert!(text.ends_with("its stderr ended with: Traceback: boom"), "{text}");
    }
}
