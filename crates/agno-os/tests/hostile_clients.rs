//! The HTTP server under hostile or careless clients: one body limit for every encoding and
//! route, a per-field limit on forms, precise answers to bodies that cannot be read (413 for
//! size, 408 for a stall, 400 for broken framing), connections that idle, stall in their
//! headers or their body closed after short configured timeouts, a cap on connections, the
//! configured listen backlog, and listings that refuse bad paging the same way everywhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{TestOs, config, detail};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const AGENT: &str = "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n";

fn with_os(os_section: &str) -> String {
    format!("[os]\n{os_section}\n{AGENT}")
}

fn addr(os: &TestOs) -> String {
    os.base.trim_start_matches("http://").to_owned()
}

/// Reads from `conn` until it closes or `deadline`; returns what arrived, or `None` if the
/// connection was still open at the deadline.
async fn read_until_closed(conn: &mut TcpStream, within: Duration) -> Option<String> {
    let deadline = Instant::now() + within;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, conn.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&out).into_owned()),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
}

async fn form_run(os: &TestOs, message: &str, multipart: bool) -> reqwest::Response {
    let url = format!("{}/agents/calc/runs", os.base);
    let req = if multipart {
        os.client
            .post(url)
            .multipart(reqwest::multipart::Form::new().text("message", message.to_owned()).text("stream", "false"))
    } else {
        os.client.post(url).form(&[("message", message), ("stream", "false")])
    };
    req.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_body_limit_for_every_encoding_and_a_field_limit() {
    // A 3 MB message fits the default 10 MiB body limit, multipart or urlencoded (axum's 2 MB
    // default no longer applies), once the field limit allows it.
    let os = TestOs::start(config(&with_os("max_form_field_bytes = 4000000"))).await;
    let big = "x".repeat(3 * 1024 * 1024);
    for multipart in [true, false] {
        let r = form_run(&os, &big, multipart).await;
        assert_eq!(r.status(), 200, "multipart={multipart}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["status"], "COMPLETED");
    }
    // JSON routes share it: a 3 MB memory is refused for its length (422), not its size.
    let r = os.post_json("/memories", &json!({"memory": big, "user_id": "u"}), None).await;
    assert_eq!(r.status, 422, "{:?}", r.body);

    // Over the configured body limit: 413, whatever the encoding or route. Sent by hand so the
    // answer is read before the body is written (the server answers on the declared length).
    let os = TestOs::start(config(&with_os("max_body_bytes = 1000000"))).await;
    for (path, content_type) in [
        ("/agents/calc/runs", "multipart/form-data; boundary=b"),
        ("/agents/calc/runs", "application/x-www-form-urlencoded"),
        ("/memories", "application/json"),
    ] {
        let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: 1100000\r\n\r\n"
        );
        conn.write_all(head.as_bytes()).await.unwrap();
        let answer = read_until_closed(&mut conn, Duration::from_secs(10)).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 413"), "{path} {content_type}: {answer}");
    }
    // A chunked body that turns out too long: 413 too.
    let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
    conn.write_all(
        b"POST /agents/calc/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .await
    .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 200_000, "m".repeat(200_000));
    for _ in 0..6 {
        if conn.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let answer = read_until_closed(&mut conn, Duration::from_secs(10)).await.unwrap_or_default();
    assert!(answer.starts_with("HTTP/1.1 413"), "chunked: {answer}");

    // The field limit (1 MiB by default, as Python): 413 naming the field.
    let os = TestOs::start(config(&with_os("max_form_field_bytes = 1000"))).await;
    for multipart in [true, false] {
        let r = form_run(&os, &"z".repeat(1001), multipart).await;
        assert_eq!(r.status(), 413, "multipart={multipart}");
        let body: Value = r.json().await.unwrap();
        assert!(detail(&body).contains("message"), "{body}");
        assert_eq!(form_run(&os, &"z".repeat(1000), multipart).await.status(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_bodies_answer_precisely() {
    let os = TestOs::start(config(&with_os("body_read_timeout_seconds = 1"))).await;
    // Broken chunked framing: 400, not 413.
    let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
    conn.write_all(
        b"POST /agents/calc/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Transfer-Encoding: chunked\r\n\r\nZZZ\r\nmessage=hi\r\n0\r\n\r\n",
    )
    .await
    .unwrap();
    let answer = read_until_closed(&mut conn, Duration::from_secs(10)).await.expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");

    // A body that stalls: 408 once the body read timeout passes.
    let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
    conn.write_all(
        b"POST /agents/calc/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Content-Length: 100\r\n\r\nmessa",
    )
    .await
    .unwrap();
    let answer = read_until_closed(&mut conn, Duration::from_secs(10)).await.expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // Nothing was run for it.
    let sessions = os.get("/sessions", None).await;
    assert_eq!(sessions.body["meta"]["total_count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_stalled_connections_are_closed() {
    let os = TestOs::start(config(&with_os("keep_alive_timeout_seconds = 1\nheader_read_timeout_seconds = 1"))).await;
    // Idle after a request: closed after the keep-alive time.
    let mut idle = TcpStream::connect(addr(&os)).await.unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let answer = read_until_closed(&mut idle, Duration::from_secs(10)).await.expect("closed by the server");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Half its headers, or nothing at all: closed after the header timeout.
    for sent in [&b"GET /health HTTP/1.1\r\nHo"[..], b""] {
        let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
        conn.write_all(sent).await.unwrap();
        assert!(read_until_closed(&mut conn, Duration::from_secs(10)).await.is_some(), "still open after 10 s");
    }
    // A client that keeps working is not cut off.
    let mut busy = TcpStream::connect(addr(&os)).await.unwrap();
    for _ in 0..3 {
        busy.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 1024];
        let n = busy.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// An OS whose agent `slow` answers after `latency` (so its requests keep their connections
/// working), with `[os]` settings.
async fn with_slow_agent(os_section: &str, latency: Duration) -> (TestOs, agno_testkit::FakeProvider) {
    let provider = agno_testkit::FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(agno_testkit::Reply::text("done slowly")));
    provider.set_latency(latency);
    let cfg = format!(
        "[os]\n{os_section}\n[db]\nurl = \"memory://\"\n[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    (TestOs::start(config(&cfg)).await, provider)
}

/// A non-streamed run of `slow` on a client of its own (from `from`), running in the background.
fn slow_run(os: &TestOs, from: &str) -> tokio::task::JoinHandle<Result<u16, String>> {
    let client = reqwest::Client::builder().local_address(from.parse::<std::net::IpAddr>().ok()).build().unwrap();
    let url = format!("{}/agents/slow/runs", os.base);
    tokio::spawn(async move {
        let r = client.post(url).form(&[("message", "hi"), ("stream", "false")]).send().await;
        r.map(|r| r.status().as_u16()).map_err(|e| e.to_string())
    })
}

/// `/health` from `from` on a fresh connection, within `within`.
async fn health_from(os: &TestOs, from: &str, within: Duration) -> Result<reqwest::Response, reqwest::Error> {
    let client = reqwest::Client::builder()
        .local_address(from.parse::<std::net::IpAddr>().ok())
        .timeout(within)
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    client.get(format!("{}/health", os.base)).send().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_idle_connections_give_way_and_working_ones_do_not() {
    if !agno_testkit::services::program("the listen backlog check", "ss") {
        return;
    }
    let (os, _provider) = with_slow_agent("max_connections = 2\nlisten_backlog = 1500", Duration::from_secs(2)).await;
    let port = addr(&os).rsplit(':').next().unwrap().to_owned();
    // The listening socket's backlog (`ss` shows it as Send-Q), which the kernel caps at
    // `net.core.somaxconn`.
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(u32::MAX);
    let ss = std::process::Command::new("ss").args(["-ltnH", &format!("sport = :{port}")]).output().unwrap();
    let line = String::from_utf8_lossy(&ss.stdout).into_owned();
    let send_q: u32 =
        line.split_whitespace().nth(2).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("ss: {line}"));
    assert_eq!(send_q, 1500.min(somaxconn), "{line} (somaxconn {somaxconn})");

    // Two connections that never send a request hold both slots; a third client is served at
    // once, and the connection waiting longest is the one closed for it.
    let mut first = TcpStream::connect(addr(&os)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut second = TcpStream::connect(addr(&os)).await.unwrap();
    let served = health_from(&os, "127.0.0.1", Duration::from_secs(5)).await.expect("served beside two idle ones");
    assert_eq!(served.status(), 200);
    assert!(read_until_closed(&mut first, Duration::from_secs(5)).await.is_some(), "the oldest idle one gave way");
    second.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(5), second.read(&mut buf)).await.unwrap().unwrap_or(0);
    // The second one either still serves or was the one closed for the fresh client's slot.
    assert!(n == 0 || String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    drop(second);

    // Two connections doing work are never closed for a newcomer, who waits until one is done.
    let runs = [slow_run(&os, "127.0.0.1"), slow_run(&os, "127.0.0.1")];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = health_from(&os, "127.0.0.1", Duration::from_millis(400)).await;
    assert!(held.is_err(), "a third connection was served while two were working: {held:?}");
    for run in runs {
        assert_eq!(run.await.unwrap(), Ok(200), "a working connection was cut");
    }
    assert_eq!(health_from(&os, "127.0.0.1", Duration::from_secs(5)).await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_address_cannot_take_every_connection() {
    let (os, _provider) = with_slow_agent("max_connections_per_client = 2", Duration::from_secs(2)).await;
    // 127.0.0.2 fills its share with idle connections: its newcomers replace them.
    let mut idle = Vec::new();
    for _ in 0..2 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        idle.push(socket.connect(addr(&os).parse().unwrap()).await.unwrap());
    }
    assert_eq!(health_from(&os, "127.0.0.2", Duration::from_secs(5)).await.unwrap().status(), 200);
    // With its share working, the address's next connection is refused with 503 naming the
    // setting; another address is served.
    let runs = [slow_run(&os, "127.0.0.2"), slow_run(&os, "127.0.0.2")];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let refused = health_from(&os, "127.0.0.2", Duration::from_secs(5)).await.unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert!(detail(&body).contains("max_connections_per_client"), "{body}");
    assert_eq!(health_from(&os, "127.0.0.1", Duration::from_secs(5)).await.unwrap().status(), 200);
    for run in runs {
        assert_eq!(run.await.unwrap(), Ok(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_must_arrive_whole_before_its_deadline_and_not_trickle() {
    let os = TestOs::start(config(&with_os("body_read_deadline_seconds = 2\nbody_read_timeout_seconds = 60"))).await;
    // A byte every 300 ms never stalls, but the whole body takes too long: 408 naming the setting.
    let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
    conn.write_all(
        b"POST /agents/calc/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Content-Length: 100\r\n\r\n",
    )
    .await
    .unwrap();
    let started = Instant::now();
    let trickle = async {
        loop {
            if conn.write_all(b"m").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut buf = [0u8; 1024];
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), conn.read(&mut buf)).await {
                return String::from_utf8_lossy(&buf[..n]).into_owned();
            }
            assert!(started.elapsed() < Duration::from_secs(20), "never refused");
        }
        String::new()
    };
    let answer = trickle.await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_read_deadline_seconds"), "{answer}");
    let sessions = os.get("/sessions", None).await;
    assert_eq!(sessions.body["meta"]["total_count"], 0, "nothing was run for it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_slower_than_the_minimum_rate_is_refused_after_the_grace() {
    let os = TestOs::start(config(&with_os("min_body_bytes_per_second = 1000"))).await;
    let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
    conn.write_all(
        b"POST /agents/calc/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Content-Length: 100000\r\n\r\nmessage=",
    )
    .await
    .unwrap();
    let started = Instant::now();
    let answer = loop {
        if conn.write_all(b"m").await.is_err() {
            break read_until_closed(&mut conn, Duration::from_secs(5)).await.unwrap_or_default();
        }
        let mut buf = [0u8; 1024];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), conn.read(&mut buf)).await {
            break String::from_utf8_lossy(&buf[..n]).into_owned();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never refused");
    };
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("min_body_bytes_per_second"), "{answer}");
    assert!(started.elapsed() >= agno_os::serve::RATE_GRACE, "refused before the grace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_with_many_headers_are_served_as_uvicorn_serves_them() {
    let os = TestOs::start(config(AGENT)).await;
    for count in [101, 1000] {
        let mut conn = TcpStream::connect(addr(&os)).await.unwrap();
        let headers: String = (0..count).map(|i| format!("X-Header-{i}: v\r\n")).collect();
        let request = format!("GET /health HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n");
        conn.write_all(request.as_bytes()).await.unwrap();
        let answer = read_until_closed(&mut conn, Duration::from_secs(10)).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 200"), "{count} headers: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_refuse_bad_paging_alike() {
    let os = TestOs::start(config(AGENT)).await;
    for route in ["/sessions", "/memories", "/eval-runs", "/user_memory_stats", "/traces"] {
        for bad in ["page=0", "page=-1", "limit=0", "limit=-5", "limit=abc", "page="] {
            let r = os.get(&format!("{route}?{bad}"), None).await;
            if route == "/traces" && bad == "page=0" {
                // Python's `GET /traces` takes `page >= 0` (0 reads as the first page).
                assert_eq!((r.status, &r.body["meta"]["page"]), (200, &serde_json::json!(1)), "{:?}", r.body);
                continue;
            }
            assert_eq!(r.status, 422, "{route}?{bad}: {:?}", r.body);
        }
        assert_eq!(os.get(&format!("{route}?page=1&limit=5"), None).await.status, 200, "{route}");
    }
    for bad in
        ["/sessions?type=", "/metrics?starting_date=", "/metrics?ending_date=", "/metrics?starting_date=yesterday"]
    {
        assert_eq!(os.get(bad, None).await.status, 422, "{bad}");
    }
    let info = os.get("/info", None).await;
    assert!(info.body["mcp"]["tool_run_endpoint"].is_boolean(), "{}", info.body);
    let doc = agno_os::routes::docs::openapi();
    assert!(doc["paths"]["/sessions"]["post"]["responses"]["201"].is_object());
    assert!(doc["paths"]["/sessions/{session_id}"]["delete"]["responses"]["204"].is_object());
}
