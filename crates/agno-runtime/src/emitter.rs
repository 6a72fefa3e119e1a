//! Emits run events: assigns the strictly increasing `event_index`, fills the common fields,
//! forwards to the stream (if someone listens) and keeps them when `store_events` is on.
//!
//! A listener that goes away (a client disconnect) does not stop the run.

use agno_core::{EventData, RunEvent, now_epoch_secs};
use tokio::sync::mpsc;

#[derive(Debug)]
pub(crate) struct Emitter {
    tx: Option<mpsc::UnboundedSender<RunEvent>>,
    next_index: u64,
    agent_id: String,
    agent_name: String,
    run_id: String,
    session_id: String,
    stored: Option<Vec<RunEvent>>,
    ended: bool,
}

impl Emitter {
    pub(crate) fn new(tx: Option<mpsc::UnboundedSender<RunEvent>>, store: bool) -> Self {
        Self {
            tx,
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
        let event = RunEvent {
            created_at: now_epoch_secs(),
            data,
            agent_id: self.agent_id.clone(),
            agent_name: self.agent_name.clone(),
            run_id: Some(self.run_id.clone()),
            parent_run_id: None,
            session_id: Some(self.session_id.clone()),
            nested_depth: 0,
            workflow_id: None,
            workflow_run_id: None,
            step_id: None,
            step_name: None,
            step_index: None,
            event_index: Some(self.next_index),
        };
        self.next_index += 1;
        if let Some(stored) = self.stored.as_mut() {
            // Content deltas are not stored, as in Agno; the final content is on the run.
            if !matches!(event.data, EventData::RunContent { .. }) {
                stored.push(event.clone());
            }
        }
        if let Some(tx) = &self.tx {
            // A closed receiver means the listener left; the run goes on.
            let _ = tx.send(event);
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
