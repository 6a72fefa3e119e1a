//! Request and response bodies as the server wraps them: a request body must arrive in time
//! ([`GuardedBody`]: no stall longer than the stall timeout, no slower than the minimum rate, all
//! of it before the deadline), and a response body keeps its request counted as in progress until
//! it is sent ([`TrackedBody`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::connections::{Activity, Busy};

/// How fast a request body must arrive (`[os] body_read_timeout_seconds`,
/// `body_read_deadline_seconds`, `min_body_bytes_per_second`).
#[derive(Debug, Clone, Copy)]
pub struct BodyPace {
    /// Longest silence between two reads (or before the first).
    pub stall: Duration,
    /// Longest time for the whole body.
    pub deadline: Duration,
    /// Slowest average rate once [`RATE_GRACE`] has passed (0: no check).
    pub min_bytes_per_second: u64,
}

/// How long a body may arrive at any rate before [`BodyPace::min_bytes_per_second`] applies.
pub const RATE_GRACE: Duration = Duration::from_secs(10);

/// Why a request body was given up on (each answers 408).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BodyTooSlow {
    /// Nothing arrived for too long.
    #[error("the request body stalled for more than {0:?} ([os] body_read_timeout_seconds)")]
    Stalled(Duration),
    /// The whole body took too long.
    #[error("the request body took longer than {0:?} ([os] body_read_deadline_seconds)")]
    Deadline(Duration),
    /// It arrived too slowly.
    #[error("the request body arrived at {rate} bytes/s, slower than {min} bytes/s ([os] min_body_bytes_per_second)")]
    Rate {
        /// The rate seen.
        rate: u64,
        /// The minimum.
        min: u64,
    },
}

/// A request body that fails when the client is too slow (see [`BodyPace`]), so a slow client
/// cannot hold a handler or a connection; tells the connection when the body is complete.
#[derive(Debug)]
pub(crate) struct GuardedBody {
    body: hyper::body::Incoming,
    pace: BodyPace,
    started: Instant,
    received: u64,
    stall: Pin<Box<Sleep>>,
    deadline: Pin<Box<Sleep>>,
    activity: Arc<Activity>,
}

impl GuardedBody {
    pub(crate) fn new(body: hyper::body::Incoming, pace: BodyPace, activity: Arc<Activity>) -> Self {
        let now = Instant::now();
        Self {
            body,
            pace,
            started: now,
            received: 0,
            stall: Box::pin(tokio::time::sleep_until(now + pace.stall)),
            deadline: Box::pin(tokio::time::sleep_until(now + pace.deadline)),
            activity,
        }
    }

    /// The rate check, made as data arrives (silence is the stall timer's).
    fn too_slow(&self) -> Option<BodyTooSlow> {
        let elapsed = self.started.elapsed();
        let min = self.pace.min_bytes_per_second;
        if min == 0 || elapsed < RATE_GRACE {
            return None;
        }
        let rate = (u128::from(self.received) * 1000 / elapsed.as_millis().max(1)) as u64;
        (rate < min).then_some(BodyTooSlow::Rate { rate, min })
    }
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        use std::future::Future;
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                    this.activity.body_received(this.received);
                }
                if let Some(slow) = this.too_slow() {
                    return Poll::Ready(Some(Err(Box::new(slow))));
                }
                let next = Instant::now() + this.pace.stall;
                this.stall.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.activity.body_done();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Box::new(BodyTooSlow::Deadline(this.pace.deadline)))));
                }
                if this.stall.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Box::new(BodyTooSlow::Stalled(this.pace.stall)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that keeps its request counted as in progress until it is sent or dropped.
#[derive(Debug)]
pub(crate) struct TrackedBody {
    pub(crate) body: axum::body::Body,
    pub(crate) _busy: Busy,
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
