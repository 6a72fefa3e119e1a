//! A run's events answered in another protocol's stream (A2A, AG-UI), written once: the run's
//! Agno events, live ([`named`]) or read back from a background run's event log ([`logged`]), go
//! through the protocol's [`Translate`] and out as SSE ([`respond`]); the run goes on when the
//! client leaves.

use std::future::Future;

use agno_core::StreamEvent;
use agno_runtime::EventStream;
use axum::response::Response;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::sse::{DisconnectPolicy, Frame};
use crate::state::AppState;

/// A protocol's view of one run's events.
pub(crate) trait Translate: Send + 'static {
    /// The frames one Agno event (its name, as Agno streams it, and its JSON) becomes; none for
    /// an event the protocol does not show.
    fn event(&mut self, name: &str, event: &Value) -> Vec<Frame>;

    /// The frames that end the stream once the run's events ended.
    fn finish(self) -> impl Future<Output = Vec<Frame>> + Send;
}

/// A run's live events as `(Agno name, JSON)`.
pub(crate) fn named<E: StreamEvent>(events: EventStream<E>) -> impl Stream<Item = (String, Value)> + Send + 'static {
    events.map(|event| (event.stream_name().into_owned(), serde_json::to_value(&event).unwrap_or_default()))
}

/// A background run's logged frames (Agno's `event:` name and JSON data) as `(Agno name, JSON)`.
pub(crate) fn logged(
    frames: impl Stream<Item = Frame> + Send + 'static,
) -> impl Stream<Item = (String, Value)> + Send + 'static {
    frames.filter_map(|frame| async move {
        let (name, data) = frame.name_and_data();
        Some((name?, serde_json::from_str::<Value>(&data).ok()?))
    })
}

/// The SSE answer: `first`, then each event through `translator`, then its end.
pub(crate) fn respond<T: Translate>(
    state: &AppState,
    first: Vec<Frame>,
    events: impl Stream<Item = (String, Value)> + Send + 'static,
    translator: T,
) -> Response {
    let rest = futures::stream::unfold(Some((Box::pin(events), translator)), |step| async move {
        let (mut events, mut translator) = step?;
        while let Some((name, value)) = events.next().await {
            let out = translator.event(&name, &value);
            if !out.is_empty() {
                return Some((out, Some((events, translator))));
            }
        }
        Some((translator.finish().await, None))
    })
    .flat_map(futures::stream::iter);
    crate::sse::live(futures::stream::iter(first).chain(rest), DisconnectPolicy::KeepRunning, state.streaming())
}
