//! `agno run`: one run, printed.

use std::io::Write;
use std::sync::Arc;

use agno::prelude::*;
use agno::tools::builtin;
use anyhow::{Context, Result};
use futures::StreamExt;
use serde_json::{Map, Value};

use crate::cli::{AgentArgs, RunArgs};

/// Builds the agent the flags describe (connecting its `--mcp` servers), traced with `tracing`.
pub(crate) async fn build_agent(
    args: &AgentArgs,
    db: Option<Arc<dyn Db>>,
    tracing: Option<&agno::runtime::Tracing>,
) -> Result<Agent> {
    let mut builder =
        Agent::builder(args.model.as_str()).name(args.name.clone()).instructions(args.instructions.clone());
    if let Some(tracing) = tracing {
        builder = builder.tracing(tracing.clone());
    }
    for name in &args.tools {
        let mut options = Map::new();
        if name == "file" {
            options.insert("base_dir".to_owned(), Value::String(args.base_dir.clone()));
        }
        if name == "shell" {
            options.insert("run_shell_command".to_owned(), Value::Bool(true));
        }
        let toolkit = builtin::by_name(name, &options).with_context(|| format!("cannot use tool {name:?}"))?;
        builder = builder.toolkit(&toolkit);
    }
    for server in &args.mcp {
        let transport = if server.starts_with("http://") || server.starts_with("https://") {
            // MCP's older HTTP+SSE transport serves its event stream at `/sse`.
            if server.trim_end_matches('/').ends_with("/sse") {
                agno_mcp::Transport::Sse { url: server.clone(), headers: Vec::new() }
            } else {
                agno_mcp::Transport::StreamableHttp { url: server.clone(), headers: Vec::new() }
            }
        } else {
            let mut words = server.split_whitespace().map(str::to_owned);
            let command = words.next().context("--mcp needs a command or a URL")?;
            agno_mcp::Transport::Stdio { command, args: words.collect(), env: Vec::new() }
        };
        let kit = agno_mcp::McpToolkit::connect(agno_mcp::McpConfig::new(transport)).await?;
        for tool in kit.tools() {
            builder = builder.tool_arc(tool);
        }
    }
    if let Some(db) = db {
        builder = builder.db(db).add_history_to_context(true);
    }
    builder.build().with_context(|| {
        format!("cannot build the agent for model {:?} (use --model test to try agno offline)", args.model)
    })
}

/// Opens the `--db` database (refusing one that needs migrating, with the command to run).
pub(crate) async fn open_db(args: &AgentArgs) -> Result<Option<Arc<dyn Db>>> {
    match &args.db {
        None => Ok(None),
        Some(url) => Ok(Some(agno::db::open_ready(url).await.with_context(|| format!("cannot use database {url}"))?)),
    }
}

/// The request for `message` with the `--session-id`, if any.
pub(crate) fn request(args: &AgentArgs, message: &str) -> RunRequest {
    let request = RunRequest::new(message);
    match &args.session_id {
        Some(id) => request.session_id(id),
        None => request,
    }
}

pub(crate) async fn run(args: RunArgs) -> Result<()> {
    if let Some(config) = &args.config {
        return crate::run_config::run(config, &args).await;
    }
    let db = open_db(&args.agent).await?;
    // `--trace`: the spans kept in memory for this process, printed after the answer.
    let spans: Arc<dyn agno::core::TraceStore> = Arc::new(agno::db::InMemoryDb::new());
    let tracing = if args.trace {
        Some(agno::runtime::Tracing::builder().store(Arc::clone(&spans)).build().map_err(anyhow::Error::msg)?)
    } else {
        None
    };
    let agent = build_agent(&args.agent, db, tracing.as_ref()).await?;
    let message = with_media(request(&args.agent, &args.message.join(" ")), &args)?;
    let result = answer(&agent, message, &args).await;
    if let (Some(tracing), Ok(output)) = (&tracing, &result) {
        tracing.flush().await;
        print_trace(spans.as_ref(), output.id(), &mut std::io::stderr()).await?;
    }
    result.and_then(|output| check(&output))
}

/// Runs the agent on `message` and prints its answer as the flags ask (streamed, JSON or text).
async fn answer(agent: &Agent, message: RunRequest, args: &RunArgs) -> Result<RunOutput> {
    if args.stream {
        let mut stream = agent.run_stream(message);
        let mut out = std::io::stdout();
        let mut printer = EventPrinter::default();
        while let Some(event) = stream.next().await {
            printer.print(&mut out, &event)?;
        }
        printer.finish(&mut out)?;
        Ok(stream.output().await?)
    } else {
        let output = agent.arun(message).await?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&output)?);
        } else {
            println!("{}", output.content_text());
        }
        Ok(output)
    }
}

/// Prints the span tree of run `run_id`'s trace: one line a span, indented by depth, with its
/// kind, duration, status and (for a model call) its tokens.
async fn print_trace(store: &dyn agno::core::TraceStore, run_id: &str, out: &mut impl Write) -> Result<()> {
    let Some(trace) = store.get_trace(None, Some(run_id)).await? else {
        writeln!(out, "(no trace of run {run_id}: it was not sampled)")?;
        return Ok(());
    };
    let spans = store.get_spans(&trace.trace_id).await?;
    writeln!(out, "trace {} ({} spans, {} failed)", trace.trace_id, trace.total_spans, trace.error_count)?;
    fn line(node: &agno::core::SpanNode<'_>, depth: usize, out: &mut impl Write) -> std::io::Result<()> {
        let s = node.span;
        let kind = s.attribute("openinference.span.kind").unwrap_or("SPAN");
        let tokens = match (s.attributes.get("llm.token_count.prompt"), s.attributes.get("llm.token_count.completion"))
        {
            (Some(i), Some(o)) => format!("  tokens {i} in, {o} out"),
            _ => String::new(),
        };
        let failed =
            s.status_message.as_deref().filter(|_| s.failed()).map(|m| format!("  ERROR: {m}")).unwrap_or_default();
        writeln!(out, "{}{}  {kind}  {} ms{tokens}{failed}", "  ".repeat(depth), s.name, s.duration_ms)?;
        node.children.iter().try_for_each(|c| line(c, depth + 1, out))
    }
    for root in agno::core::span_tree(&spans) {
        line(&root, 0, out)?;
    }
    Ok(())
}

/// The `--image` and `--file` attachments, read and encoded.
fn with_media(mut request: RunRequest, args: &RunArgs) -> Result<RunRequest> {
    use base64::Engine as _;
    for (paths, image) in [(&args.images, true), (&args.files, false)] {
        for path in paths {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase();
            let mime = match (image, ext.as_str()) {
                (true, "png") => "image/png",
                (true, "jpg" | "jpeg") => "image/jpeg",
                (true, "gif") => "image/gif",
                (true, "webp") => "image/webp",
                (false, "pdf") => "application/pdf",
                (false, "txt" | "md") => "text/plain",
                (false, "csv") => "text/csv",
                (false, "json") => "application/json",
                (true, _) => anyhow::bail!("--image {}: use a png, jpg, gif or webp image", path.display()),
                (false, _) => anyhow::bail!("--file {}: use a pdf, txt, md, csv or json document", path.display()),
            };
            let mut media = agno::core::Media::bytes(base64::engine::general_purpose::STANDARD.encode(bytes), mime);
            media.filename = path.file_name().map(|n| n.to_string_lossy().into_owned());
            request = if image { request.image(media) } else { request.file(media) };
        }
    }
    Ok(request)
}

fn check(output: &RunOutput) -> Result<()> {
    match output.status {
        RunStatus::Completed => Ok(()),
        RunStatus::Paused => {
            anyhow::bail!(
                "the run paused for confirmation or input; `agno run` cannot answer that, use the library API"
            )
        }
        other => anyhow::bail!("the run ended {other}"),
    }
}

/// Prints a streamed run: content as it arrives, tool calls and errors on their own lines.
#[derive(Debug, Default)]
pub(crate) struct EventPrinter {
    /// The cursor is after content that did not end a line.
    mid_line: bool,
}

impl EventPrinter {
    fn line(&mut self, out: &mut impl Write, text: &str) -> Result<()> {
        if self.mid_line {
            writeln!(out)?;
        }
        writeln!(out, "{text}")?;
        self.mid_line = false;
        Ok(())
    }

    /// Prints one event.
    pub(crate) fn print(&mut self, out: &mut impl Write, event: &RunEvent) -> Result<()> {
        match &event.data {
            EventData::RunContent { content: Some(Value::String(text)), .. } => {
                write!(out, "{text}")?;
                out.flush()?;
                if !text.is_empty() {
                    self.mid_line = !text.ends_with('\n');
                }
            }
            EventData::ToolCallStarted { tool } => {
                let args = tool.tool_args.as_ref().map(|a| Value::Object(a.clone()).to_string()).unwrap_or_default();
                self.line(out, &format!("  → {}({args})", tool.name()))?;
            }
            EventData::ToolCallCompleted { tool, .. } => {
                let result: String = tool.result.as_deref().unwrap_or_default().chars().take(200).collect();
                let mark = if tool.tool_call_error == Some(true) { "✗" } else { "✓" };
                self.line(out, &format!("  {mark} {}: {result}", tool.name()))?;
            }
            EventData::RunError { content, .. } => {
                let text = content.as_ref().and_then(Value::as_str).unwrap_or("unknown error");
                self.line(out, &format!("[error] {text}"))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends the output of a run on a fresh line.
    pub(crate) fn finish(&mut self, out: &mut impl Write) -> Result<()> {
        if self.mid_line {
            writeln!(out)?;
        }
        self.mid_line = false;
        Ok(())
    }
}
