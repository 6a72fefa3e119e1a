//! The fake OpenAI-compatible server as a standalone process, for trying `agno serve` (or Python
//! AgentOS) against a model by hand, e.g. from a browser UI:
//!
//! ```sh
//! cargo run -p agno-testkit --example fake_provider -- --port 8765 --latency-ms 200
//! # base URL: http://127.0.0.1:8765/v1 (any API key)
//! ```
//!
//! Every request is answered with `echo: <last user message>` (streaming or not, with usage).
//! It runs until interrupted.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use agno_testkit::{FakeProvider, Reply};

fn flag(args: &[String], name: &str) -> Option<u64> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port = flag(&args, "--port").unwrap_or(0);
    let latency = Duration::from_millis(flag(&args, "--latency-ms").unwrap_or(0));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let provider = FakeProvider::start_on(u16::try_from(port).expect("--port fits in u16")).await.unwrap();
        provider.set_fallback(Some(Reply::Echo));
        provider.set_latency(latency);
        println!("fake OpenAI server at {} (latency {latency:?}); Ctrl-C to stop", provider.base_url());
        let _ = tokio::signal::ctrl_c().await;
    });
}
