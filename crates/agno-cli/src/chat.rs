//! `agno chat`: an interactive session with streamed answers and visible tool calls.

use std::io::{BufRead, Write};
use std::sync::Arc;

use agno::prelude::*;
use anyhow::Result;
use futures::StreamExt;

use crate::cli::AgentArgs;
use crate::run::{EventPrinter, build_agent, open_db};

pub(crate) async fn chat(args: AgentArgs) -> Result<()> {
    let db: Arc<dyn Db> = match open_db(&args).await? {
        Some(db) => db,
        None => Arc::new(InMemoryDb::new()),
    };
    let agent = build_agent(&args, Some(db), None).await?;
    let session_id = args.session_id.clone().unwrap_or_else(agno::core::new_id);
    eprintln!("Chatting with {} on model {}. Type /exit or press Ctrl-D to leave.", args.name, args.model);
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(1);
    // Read stdin on a blocking thread so the runtime stays free while we wait for the user.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut out = std::io::stdout();
    loop {
        write!(out, "\n> ")?;
        out.flush()?;
        let Some(line) = rx.recv().await else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" || line == "/quit" {
            break;
        }
        let mut stream = agent.run_stream(RunRequest::new(line).session_id(&session_id));
        let mut printer = EventPrinter::default();
        while let Some(event) = stream.next().await {
            printer.print(&mut out, &event)?;
        }
        printer.finish(&mut out)?;
        if let Err(e) = stream.output().await {
            eprintln!("error: {e}");
        }
    }
    writeln!(out)?;
    Ok(())
}
