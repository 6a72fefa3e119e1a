//! Memory under large messages: `agno serve` (its own process, SQLite, the offline `test`
//! model) receives 8 concurrent 9 MB messages, three rounds; prints the server's RSS idle,
//! its peak, and what it keeps after each round (after a 2 s settle), so an allocator that
//! keeps freed memory shows.
//!
//! Run: `cargo bench -p agno-cli --bench large_messages` (`AGNO_BIN` to measure another build).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{rss_mib, start_server};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("agno-bench-large-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("large.db");
        let config = dir.join("agentos.toml");
        std::fs::write(
            &config,
            format!(
                "[os]\nmax_body_bytes = 20000000\nmax_form_field_bytes = 20000000\n[db]\nurl = \"sqlite://{}\"\n\
                 [[agents]]\nid = \"big\"\nmodel = \"test\"\n",
                db.display()
            ),
        )
        .unwrap();
        let (server, _) = start_server(&config).await;
        let pid = server.child.id();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (_, idle) = rss_mib(pid);
        println!("agno serve RSS idle: {idle:.1} MiB");
        let message = "x".repeat(9 * 1024 * 1024);
        let client = reqwest::Client::new();
        for round in 1..=3 {
            let started = Instant::now();
            let tasks: Vec<_> = (0..8)
                .map(|i| {
                    let (client, url, message) = (client.clone(), format!("{}/agents/big/runs", server.base), message.clone());
                    tokio::spawn(async move {
                        let resp = client
                            .post(url)
                            .form(&[("message", message.as_str()), ("stream", "false"), ("session_id", &format!("big-{round}-{i}"))])
                            .send()
                            .await
                            .unwrap();
                        assert!(resp.status().is_success(), "run failed: {}", resp.status());
                        let _ = resp.bytes().await.unwrap();
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            let took = started.elapsed();
            tokio::time::sleep(Duration::from_secs(2)).await;
            let (peak, after_2s) = rss_mib(pid);
            tokio::time::sleep(Duration::from_secs(10)).await;
            let (_, after_12s) = rss_mib(pid);
            println!(
                "round {round}: 8 x 9 MB runs in {:.2} s; RSS peak {peak:.1} MiB, 2 s after {after_2s:.1} MiB, 12 s after {after_12s:.1} MiB",
                took.as_secs_f64()
            );
        }
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    });
}
