//! An MCP server as a child process: newline-delimited JSON-RPC on its stdin and stdout.
//!
//! Our own transport rather than rmcp's child-process one, for what a failing server leaves
//! behind: output that is not JSON-RPC (a server logging to stdout) is skipped as the MCP SDKs
//! do, but remembered; the exit status and the last lines of stderr are kept; a message longer
//! than [`MAX_MESSAGE_BYTES`] is dropped unread. A call that then fails or times out says why
//! ([`Notes::describe`]).

use std::process::Stdio;
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{Mutex, mpsc};
use tokio::task::{AbortHandle, JoinHandle};

use crate::notes::Notes;

/// Longest message read from a server; a longer line is dropped (and noted) without keeping it.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Why a message could not be sent to the child.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StdioError {
    /// Writing to its stdin failed (it exited).
    #[error("cannot write to the MCP server's stdin: {0}")]
    Write(#[from] std::io::Error),
    /// The message could not be encoded.
    #[error("cannot encode a message for the MCP server: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The transport of one child process. Dropping it kills the child.
#[derive(Debug)]
pub(crate) struct ChildTransport {
    stdin: Arc<Mutex<ChildStdin>>,
    inbox: mpsc::Receiver<ServerJsonRpcMessage>,
    tasks: Vec<AbortHandle>,
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        // The reader owns the child (`kill_on_drop`): aborting it ends the process.
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl ChildTransport {
    /// Starts `command` with `args` and `env`; its messages are read on a task of their own.
    pub(crate) fn spawn(
        command: &str,
        args: &[String],
        env: &[(String, String)],
        notes: Arc<Notes>,
    ) -> std::io::Result<Self> {
        let mut child = tokio::process::Command::new(command)
            .args(args)
            .envs(env.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let missing = || std::io::Error::other("the child's pipes were not opened");
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let (tx, inbox) = mpsc::channel(64);
        let errors = tokio::spawn({
            let notes = Arc::clone(&notes);
            async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(target: "agno_mcp::server_stderr", "{line}");
                    notes.stderr(&line);
                }
            }
        });
        let stop_errors = errors.abort_handle();
        let reader = tokio::spawn(read_messages(child, BufReader::new(stdout), tx, notes, errors));
        Ok(Self { stdin: Arc::new(Mutex::new(stdin)), inbox, tasks: vec![reader.abort_handle(), stop_errors] })
    }
}

/// Reads lines until the child closes stdout, then records how it exited, once `errors` (the
/// reader of its stderr) has read the server's last words: a call failing because the server
/// exited is told both (bounded: a grandchild may hold stderr open).
async fn read_messages(
    mut child: Child,
    mut stdout: BufReader<tokio::process::ChildStdout>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    notes: Arc<Notes>,
    errors: JoinHandle<()>,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut stdout, &mut line).await {
            Ok(Line::Eof) => break,
            Ok(Line::TooLong(bytes)) => notes.oversized(bytes),
            Ok(Line::Whole) => {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                if text.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<ServerJsonRpcMessage>(text) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => notes.not_json_rpc(text, &e),
                }
            }
            Err(e) => {
                notes.stderr(&format!("reading its stdout failed: {e}"));
                break;
            }
        }
    }
    let how = match tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await {
        Ok(Ok(status)) => status.to_string(),
        Ok(Err(e)) => format!("unknown status ({e})"),
        Err(_) => "closed its stdout".to_owned(),
    };
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), errors).await;
    notes.exited(&how);
}

enum Line {
    Whole,
    TooLong(usize),
    Eof,
}

/// One line into `buf`, at most [`MAX_MESSAGE_BYTES`]; a longer one is read to its end and
/// dropped.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut dropped = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() && dropped == 0 { Line::Eof } else { Line::Whole });
        }
        let (taken, done) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        if dropped > 0 || buf.len() + taken > MAX_MESSAGE_BYTES {
            dropped += buf.len() + taken;
            buf.clear();
        } else {
            buf.extend_from_slice(&available[..taken]);
        }
        reader.consume(taken);
        if done {
            return Ok(if dropped > 0 { Line::TooLong(dropped) } else { Line::Whole });
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = StdioError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = Arc::clone(&self.stdin);
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            stdin.write_all(&line).await?;
            stdin.flush().await?;
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbox.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        for task in &self.tasks {
            task.abort();
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_whole_and_overlong_ones_dropped() {
        let long = vec![b'x'; MAX_MESSAGE_BYTES + 10];
        let mut input = b"one\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\ntwo");
        let mut reader = BufReader::with_capacity(1024, input.as_slice());
        let mut buf = Vec::new();
        assert!(matches!(read_line(&mut reader, &mut buf).await.unwrap(), Line::Whole));
        assert_eq!(buf, b"one\n");
        buf.clear();
        assert!(matches!(read_line(&mut reader, &mut buf).await.unwrap(), Line::TooLong(n) if n == long.len() + 1));
        assert!(buf.is_empty());
        assert!(matches!(read_line(&mut reader, &mut buf).await.unwrap(), Line::Whole));
        assert_eq!(buf, b"two");
        buf.clear();
        assert!(matches!(read_line(&mut reader, &mut buf).await.unwrap(), Line::Eof));
    }
}
