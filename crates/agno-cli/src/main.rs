//! The `agno` command: run and chat with agents from the terminal.

mod chat;
mod cli;
mod component;
mod db;
mod eval;
mod knowledge;
mod loopback;
mod queue;
mod run;
mod run_config;
mod schedule;
mod serve;

use clap::Parser;

/// jemalloc returns freed memory to the system: after 8 concurrent 9 MB messages the server
/// keeps ~200 MiB where glibc's malloc kept 650-880 MiB and mimalloc 470-790 MiB
/// (`benches/large_messages.rs`, figures in the README). The `system-allocator` feature keeps
/// the system's, for heap profilers.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use crate::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let filter = if cli.verbose { "info,agno=debug" } else { "warn" };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("AGNO_LOG").unwrap_or_else(|_| filter.into()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Chat(args) => chat::chat(args).await,
            Command::Db(args) => db::db(args).await,
            Command::Serve(args) => serve::serve(args).await,
            Command::Queue(args) => queue::queue(args).await,
            Command::Knowledge(args) => knowledge::knowledge(args).await,
            Command::Schedule(args) => schedule::schedule(args).await,
            Command::Component(args) => component::component(args).await,
            Command::Eval(args) => eval::eval(args).await,
        }
    });
    // Tasks still running (a tool blocked in a thread, a connection held open) must not keep the
    // process alive: `agno serve` has already stopped within its grace.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The reader of our output went away (`agno run ... | head`): stop quietly.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", report(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line, each cause once: a cause that a message already quotes
/// (`invalid model: <the model error>`) is not repeated after it.
fn report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
