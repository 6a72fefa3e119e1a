//! The attacks of issue 23 and the `/health` probe that watches a server through them, shared by
//! the tests (`tests/attacks.rs`, which assert each answer) and the benchmark
//! (`benches/attacks.rs`, which prints how fast `/health` answered during each).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Defect 1: output schemas whose example value would be huge: a billion strings, and (in 307
/// bytes) a thousand of a thousand of a thousand.
pub const SCHEMA_BOMBS: [&str; 2] = [
    r#"{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"minItems":1000000000}},"required":["a"]}"#,
    r#"{"type":"array","minItems":1000,"items":{"type":"array","minItems":1000,"items":{"type":"array","minItems":1000,"items":{"type":"string"}}}}"#,
];

/// Defect 2: a JSON object nested `levels` deep.
pub fn deep_json(levels: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
}

/// `/health` asked on a fresh connection (as an uptime checker or a load balancer asks) every
/// `every` until stopped, each with `deadline` to answer; its answers in order: the latency of a
/// 200, or why there was none.
pub struct HealthProbe {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<Result<Duration, String>>>,
}

impl HealthProbe {
    pub fn start(port: u16, every: Duration, deadline: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let mut seen = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let client = reqwest::Client::builder().timeout(deadline).pool_max_idle_per_host(0).build().unwrap();
                let started = Instant::now();
                let answer = client.get(format!("http://127.0.0.1:{port}/health")).send().await;
                seen.push(match answer {
                    Ok(r) if r.status() == 200 => Ok(started.elapsed()),
                    Ok(r) => Err(format!("status {}", r.status())),
                    Err(e) => Err(e.to_string()),
                });
                tokio::time::sleep(every).await;
            }
            seen
        });
        Self { stop, task }
    }

    /// Stops probing; every answer seen.
    pub async fn finish(self) -> Vec<Result<Duration, String>> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

/// Defect 3: a streamed run of `message` that its client never reads (a 4 KiB receive buffer,
/// the connection held open by the caller).
pub async fn unread_stream(port: u16, message: &str) -> TcpStream {
    let boundary = "b0undary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\n{message}\r\n--{boundary}\r\n\
         Content-Disposition: form-data; name=\"stream\"\r\n\r\ntrue\r\n--{boundary}--\r\n"
    );
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut conn = socket.connect(format!("127.0.0.1:{port}").parse().unwrap()).await.unwrap();
    let head = format!(
        "POST /agents/demo/runs HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(body.as_bytes()).await.unwrap();
    conn
}

/// Open files this process may hold.
pub fn open_files_limit() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1024)
}

/// Defect 4: `count` connections from `source` that send a request head, then a body of 100,000
/// bytes a byte a second, reopening any the server closes, until `stop`; returns how many were
/// reopened.
pub async fn trickle(source: &str, port: u16, count: usize, stop: &AtomicBool) -> usize {
    let open = || async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(format!("{source}:0").parse().ok()?).ok()?;
        let mut conn = socket.connect(format!("127.0.0.1:{port}").parse().ok()?).await.ok()?;
        let head = "POST /agents/demo/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
                    Content-Length: 100000\r\n\r\nmessage=";
        conn.write_all(head.as_bytes()).await.ok()?;
        Some(conn)
    };
    let mut conns = Vec::new();
    for _ in 0..count {
        conns.extend(open().await);
    }
    let mut reopened = 0;
    while !stop.load(Ordering::Relaxed) {
        for conn in &mut conns {
            if conn.write_all(b"m").await.is_err() {
                if let Some(fresh) = open().await {
                    *conn = fresh;
                }
                reopened += 1;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    reopened
}

/// Defect 5: a text file upload to knowledge base `docs` with the given form fields.
pub async fn upload(
    client: &reqwest::Client,
    port: u16,
    bytes: Vec<u8>,
    name: &str,
    fields: &[(&str, &str)],
) -> reqwest::Result<reqwest::Response> {
    let mut form =
        reqwest::multipart::Form::new().part("file", reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()));
    for (k, v) in fields {
        form = form.text((*k).to_owned(), (*v).to_owned());
    }
    client.post(format!("http://127.0.0.1:{port}/knowledge/content")).multipart(form).send().await
}

/// Defect 5: text of about `bytes` bytes.
pub fn lorem(bytes: usize) -> Vec<u8> {
    "lorem ipsum dolor sit amet ".repeat(bytes / 27).into_bytes()
}

/// A multipart form of text fields.
pub fn form(fields: &[(&str, String)]) -> reqwest::multipart::Form {
    fields.iter().fold(reqwest::multipart::Form::new(), |f, (k, v)| f.text((*k).to_owned(), v.clone()))
}
