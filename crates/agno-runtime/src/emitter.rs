//! Emits run events: assigns the strictly increasing `event_index`, fills the common fields,
//! forwards to the stream (if someone listens) and keeps them when `store_events` is on.
//!
//! A listener that goes away (a client disconnect) does not stop the run. A listener that reads
//! slower than the run produces holds at most [`BACKLOG`] events (plus the few emitted between
//! two [`Emitter::paced`] calls): the model's stream, where bursts come from, waits for it.

use std::collections::VecDeque;

use agno_core::{EventData, RunEvent};
use tokio::sync::mpsc;

/// Events waiting for a listener beyond which a streaming run waits for it.
pub(crate) const BACKLOG: usize = 256;

/// The channel a streamed run's events go through.
pub(crate) fn channel() -> (mpsc::Sender<RunEvent>, mpsc::Receiver<RunEvent>) {
    mpsc::channel(BACKLOG)
}

#[derive(Debug)]
pub(crate) struct Emitter {
    tx: Option<mpsc::Sender<RunEvent>>,
    /// Events emitted while the channel was full, sent (in order) by [`Emitter::paced`].
    overflow: VecDeque<RunEvent>,
    next_index: u64,
    agent_id: String,
    agent_name: String,
    run_id: String,
    session_id: String,
    stored: Option<Vec<RunEvent>>,
    ended: bool,
}

impl Emitter {
    pub(crate) fn new(tx: Option<mpsc::Sender<RunEvent>>, store: bool) -> Self {
        Self {
            tx,
            overflow: VecDeque::new(),
            next_index: 0,
            agent_id: String::new(),
            agent_name: String::new(),
            run_id: String::new(),
            session_id: String::new(),
            stored: store.then(Vec::new),
            ended: false,
        }
    }

    /// Sets the ids every event carries.
    pub(crate) fn bind(&mut self, agent_id: &str, agent_name: &str, run_id: &str, session_id: &str) {
        agent_id.clone_into(&mut self.agent_id);
        agent_name.clone_into(&mut self.agent_name);
        run_id.clone_into(&mut self.run_id);
        session_id.clone_into(&mut self.session_id);
    }

    /// Continues numbering after `last` (for continued runs).
    pub(crate) fn resume_after(&mut self, last: Option<u64>) {
        if let Some(last) = last {
            self.next_index = self.next_index.max(last + 1);
        }
    }

    /// True when events are wanted at all (a listener or storage).
    pub(crate) fn active(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed()) || self.stored.is_some()
    }

    pub(crate) fn emit(&mut self, data: EventData) {
        self.ended |= data.is_terminal();
        if !self.active() {
            return;
        }
        let mut event = RunEvent::new(
            data,
            self.agent_id.clone(),
            self.agent_name.clone(),
            self.run_id.clone(),
            self.session_id.clone(),
        );
        event.event_index = Some(self.next_index);
        self.next_index += 1;
        if let Some(stored) = self.stored.as_mut() {
            // Content deltas are not stored, as in Agno; the final content is on the run.
            if !matches!(event.data, EventData::RunContent { .. }) {
                stored.push(event.clone());
            }
        }
        if let Some(tx) = &self.tx {
            if !self.overflow.is_empty() {
                self.overflow.push_back(event);
                return;
            }
            // A closed receiver means the listener left; the run goes on.
            if let Err(mpsc::error::TrySendError::Full(event)) = tx.try_send(event) {
                self.overflow.push_back(event);
            }
        }
    }

    /// Waits until the listener has room for the events emitted meanwhile (at once without a
    /// listener, or when it left).
    pub(crate) async fn paced(&mut self) {
        let Some(tx) = &self.tx else { return };
        while let Some(event) = self.overflow.pop_front() {
            if tx.send(event).await.is_err() {
                self.overflow.clear();
                return;
            }
        }
    }

    /// True once a terminal event (`RunCompleted`, `RunError`, ...) went out.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Events kept for `store_events`.
    pub(crate) fn take_stored(&mut self) -> Option<Vec<RunEvent>> {
        self.stored.as_mut().map(std::mem::take)
    }
}

impl Drop for Emitter {
    /// The run ended with events not yet taken by a slow listener: they follow on a task of
    /// their own, in order, so the listener still gets every event (the terminal one last).
    fn drop(&mut self) {
        let overflow = std::mem::take(&mut self.overflow);
        if let (Some(tx), false) = (self.tx.take(), overflow.is_empty())
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                for event in overflow {
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
            });
        }
    }
}
