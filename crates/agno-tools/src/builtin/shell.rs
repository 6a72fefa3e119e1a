//! The `shell` toolkit: `run_shell_command`, off by default, runs a program on the host without a
//! shell and returns the tail of its output.
//!
//! It does not sandbox anything: the command runs with this process's user, environment and
//! working directory.

use std::process::Stdio;
use std::time::Duration;

use agno_core::ToolErrorKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::{Function, ToolError, Toolkit};

/// Lines of each stream returned when the model does not say.
const DEFAULT_TAIL: usize = 100;

/// A command still running after this is killed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes kept from the end of each stream; earlier output is dropped while reading.
const KEPT_BYTES: usize = 1024 * 1024;

const INSTRUCTIONS: &str = "The run_shell_command tool runs programs directly on the host machine, \
with the permissions, environment and working directory of the agent process and no sandbox. \
Arguments are passed as given, with no shell: pipes, redirections, globs and variables are not \
interpreted. Commands are killed after 60 seconds. Never run a command that deletes or overwrites \
data, changes the system, or sends data elsewhere unless the user asked for exactly that.";

/// Arguments of `run_shell_command`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ShellArgs {
    /// The program followed by its arguments, e.g. ["ls", "-l"]. No shell interprets them.
    args: Vec<String>,
    /// How many lines to return from the end of stdout and of stderr (default 100).
    tail: Option<usize>,
}

/// What `run_shell_command` returns.
#[derive(Debug, Serialize)]
struct ShellOutput {
    /// `None` when the process was ended by a signal.
    exit_code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Reads `stream` to its end, keeping only its last [`KEPT_BYTES`] bytes.
async fn read_tail<R: AsyncRead + Unpin>(stream: Option<R>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut stream) = stream else { return kept };
    let mut buf = vec![0_u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(buf.get(..n).unwrap_or_default());
                if kept.len() > 2 * KEPT_BYTES {
                    kept.drain(..kept.len() - KEPT_BYTES);
                }
            }
        }
    }
    if kept.len() > KEPT_BYTES {
        kept.drain(..kept.len() - KEPT_BYTES);
    }
    kept
}

/// The last `lines` lines of `bytes` as text (a trailing newline does not count as a line).
fn last_lines(bytes: &[u8], lines: usize) -> String {
    if lines == 0 {
        return String::new();
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = body.iter().enumerate().rev().filter(|(_, b)| **b == b'\n').nth(lines - 1).map_or(0, |(i, _)| i + 1);
    let tail = bytes.get(start..).unwrap_or_default();
    // A stream cut while reading may start inside a character: skip continuation bytes.
    let skip = tail.iter().take(3).take_while(|b| **b & 0b1100_0000 == 0b1000_0000).count();
    String::from_utf8_lossy(tail.get(skip..).unwrap_or_default()).into_owned()
}

async fn run_shell_command(args: ShellArgs) -> Result<ShellOutput, ToolError> {
    let Some((program, rest)) = args.args.split_first() else {
        return Err(ToolError::invalid_arguments("args is empty; give the program and its arguments"));
    };
    let tail = args.tail.unwrap_or(DEFAULT_TAIL);
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::execution(format!("command {program:?} could not be started: {e}")))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let run = async { tokio::join!(read_tail(stdout), read_tail(stderr), child.wait()) };
    match tokio::time::timeout(COMMAND_TIMEOUT, run).await {
        Ok((out, err, status)) => {
            let status =
                status.map_err(|e| ToolError::execution(format!("waiting for command {program:?} failed: {e}")))?;
            Ok(ShellOutput { exit_code: status.code(), stdout: last_lines(&out, tail), stderr: last_lines(&err, tail) })
        }
        Err(_) => {
            // Kill and reap now rather than leaving it to `kill_on_drop`.
            let _ = child.start_kill();
            let _ = child.wait().await;
            Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!("command {program:?} did not finish within {}s and was killed", COMMAND_TIMEOUT.as_secs()),
            ))
        }
    }
}

/// The shell toolkit (name and id `shell`) with one tool, `run_shell_command(args, tail)`, which is
/// off by default: the toolkit exposes nothing until it is turned on with
/// `.set("run_shell_command", true)`, `.all()`, or the config options `run_shell_command = true`,
/// `all = true` or the deprecated `enable_run_shell_command = true`.
///
/// `run_shell_command` runs `args[0]` with `args[1..]` directly (no shell), kills it after 60 s,
/// and returns JSON text `{"exit_code": 0, "stdout": "...", "stderr": "..."}` holding the last
/// `tail` lines (default 100) of each stream; `exit_code` is null when a signal ended the process.
/// The toolkit's instructions warn the model that commands run on the host.
pub fn shell_tools() -> Toolkit {
    Toolkit::new("shell").with_instructions(INSTRUCTIONS).tool_off_by_default(Function::new(
        "run_shell_command",
        "Run a program on the host machine, without a shell, and return its exit code and the last \
         lines of its stdout and stderr as JSON. args holds the program and its arguments.",
        run_shell_command,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_tail() {
        assert_eq!(last_lines(b"a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(last_lines(b"a\nb\nc", 2), "b\nc");
        assert_eq!(last_lines(b"a\nb\nc\n", 10), "a\nb\nc\n");
        assert_eq!(last_lines(b"a\nb\n", 0), "");
        assert_eq!(last_lines(b"", 5), "");
        assert_eq!(last_lines(&[0x80, 0x80, b'x'], 1), "x");
    }
}
