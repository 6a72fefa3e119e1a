//! MCP's HTTP+SSE transport (protocol version 2024-11-05, replaced by streamable HTTP in
//! 2025-03-26 but still served by many servers, and Agno's `transport="sse"`).
//!
//! The client opens `GET <url>` as an event stream. The server's first event, `endpoint`, names
//! the URL (relative to the stream's) that the client POSTs its messages to; the server's
//! messages, answers included, arrive on the stream as `message` events. rmcp 3 has no client for
//! it, so this is ours. A stream that ends is a closed session; data that is not JSON-RPC is
//! skipped and noted ([`Notes`]).

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::notes::Notes;
use crate::stdio::MAX_MESSAGE_BYTES;

/// Why a message could not be posted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    /// The request failed.
    #[error("posting to the MCP server failed: {0}")]
    Http(#[from] reqwest::Error),
    /// The event stream ended (the server restarted or went away): the message was not sent.
    #[error("the MCP server's event stream has ended")]
    Ended,
    /// The server refused the message.
    #[error("the MCP server answered {status} to a message: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
}

/// One SSE session: the stream read on a task, messages posted to the endpoint.
#[derive(Debug)]
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    inbox: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the stream at `url` and waits for the server's `endpoint` event.
    ///
    /// # Errors
    /// A message saying what failed: the request, its status, or a stream without an endpoint.
    pub(crate) async fn connect(
        client: reqwest::Client,
        url: &str,
        headers: HeaderMap,
        notes: Arc<Notes>,
    ) -> Result<Self, String> {
        let base = reqwest::Url::parse(url).map_err(|e| format!("bad url {url:?}: {e}"))?;
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("GET {url} failed: {e}"))?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            return Err(format!("GET {url} answered {status}: {}", body.chars().take(200).collect::<String>()));
        }
        let mut events = response.bytes_stream().eventsource();
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event == "endpoint" => {
                    break base
                        .join(event.data.trim())
                        .map_err(|e| format!("the endpoint event names a bad URL {:?}: {e}", event.data))?;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("the event stream of {url} failed: {e}")),
                None => return Err(format!("the event stream of {url} ended before its endpoint event")),
            }
        };
        let (tx, inbox) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        notes.exited(&format!("its event stream failed: {e}"));
                        return;
                    }
                };
                if event.event != "message" {
                    continue;
                }
                if event.data.len() > MAX_MESSAGE_BYTES {
                    notes.oversized(event.data.len());
                    continue;
                }
                match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => notes.not_json_rpc(event.data.as_bytes(), &e),
                }
            }
            notes.exited("its event stream ended");
        });
        Ok(Self { client, endpoint, headers, inbox, reader })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // A message posted after the stream ended would reach a server that no longer knows the
        // session (and may never answer): refuse it, so the caller reconnects.
        let ended = self.reader.is_finished();
        let request = self.client.post(self.endpoint.clone()).headers(self.headers.clone()).json(&item);
        async move {
            if ended {
                return Err(SseError::Ended);
            }
            let response = request.send().await?;
            if response.status().is_success() {
                return Ok(());
            }
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            Err(SseError::Status { status, body: body.chars().take(200).collect() })
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbox.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
