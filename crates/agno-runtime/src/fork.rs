//! Forking a session, written once for agents and teams (Agno's `fork_session`): a new session
//! with a fresh id holding a copy of every run of the source, each with a fresh run id, so the
//! copy can diverge while the source stays as it was.
//!
//! Lineage as Agno records it: the new session's `session_data.forked_from_session_id` names its
//! immediate source; each copied run's `forked_from_session_id` names the session the run was
//! first made in (set only when empty, so a fork of a fork still points at the root). A member
//! run's `parent_run_id` follows its leader's new id (Agno keeps the source's).

use std::collections::HashMap;

use agno_core::{AgentSession, ComponentKind, Db, DbError, RunOutput, RunWrite, StateUpdate, new_id, now_epoch_secs};
use serde_json::Value;

/// Why a session was not forked (nothing was written).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// The source session is missing (or the caller's user may not read it), or has no runs.
    #[error("Source session has no runs to fork.")]
    NothingToFork,
    /// The source session is another component's.
    #[error("Session {0} not found")]
    OtherComponent(String),
    /// The database failed.
    #[error(transparent)]
    Storage(#[from] DbError),
}

/// The field naming the session a copied run was first made in.
const FORKED_FROM: &str = "forked_from_session_id";

/// The copy of `source` (with its runs) under a new session id, owned by `user_id` (else the
/// source's owner): the session and its runs, in order.
pub fn forked_session(source: &AgentSession, user_id: Option<&str>) -> (AgentSession, Vec<RunOutput>) {
    let new_session_id = new_id();
    let now = now_epoch_secs();
    let runs = source.runs.clone().unwrap_or_default();
    let renamed: HashMap<String, String> = runs.iter().map(|r| (r.id().to_owned(), new_id())).collect();
    let copies = runs
        .into_iter()
        .map(|mut run| {
            run.run_id = renamed.get(run.id()).cloned();
            run.session_id = Some(new_session_id.clone());
            let first = run.extra.get(FORKED_FROM).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
            if !first {
                run.extra.insert(FORKED_FROM.to_owned(), Value::String(source.session_id.clone()));
            }
            if let Some(new_parent) = run.parent_run_id.as_deref().and_then(|p| renamed.get(p)) {
                run.parent_run_id = Some(new_parent.clone());
            }
            run
        })
        .collect();
    let mut session_data = source.session_data.clone().unwrap_or_default();
    session_data.insert(FORKED_FROM.to_owned(), Value::String(source.session_id.clone()));
    let session = AgentSession {
        session_id: new_session_id,
        user_id: user_id.map(str::to_owned).or_else(|| source.user_id.clone()),
        session_data: Some(session_data),
        runs: None,
        created_at: Some(now),
        updated_at: Some(now),
        ..source.clone()
    };
    (session, copies)
}

/// Forks session `source_session_id` of the component `(kind, id)` as `read_as` reads it
/// (`None`: whoever owns it), the copy owned by `owner` (else the source's owner): writes the new
/// session and its copied runs, and returns the new session's id. A failure part way removes what
/// was written.
///
/// # Errors
/// [`ForkError::OtherComponent`] for another component's session; [`ForkError::NothingToFork`]
/// for a session the caller cannot read or one without runs; a storage error.
pub async fn fork_session(
    db: &dyn Db,
    (kind, id): (ComponentKind, &str),
    source_session_id: &str,
    read_as: Option<&str>,
    owner: Option<&str>,
) -> Result<String, ForkError> {
    let Some(source) = db.get_session(source_session_id, read_as, None).await? else {
        return Err(ForkError::NothingToFork);
    };
    let component = match kind {
        ComponentKind::Agent => source.agent_id.as_deref(),
        ComponentKind::Team => source.team_id.as_deref(),
        ComponentKind::Workflow => source.workflow_id.as_deref(),
    };
    if component != Some(id) {
        return Err(ForkError::OtherComponent(source_session_id.to_owned()));
    }
    if source.runs.as_ref().is_none_or(Vec::is_empty) {
        return Err(ForkError::NothingToFork);
    }
    let (session, runs) = forked_session(&source, owner);
    let owner = session.user_id.as_deref();
    let written = async {
        let mut runs = runs.iter();
        if let Some(first) = runs.next() {
            db.save_run_write(RunWrite { session: &session, state: &StateUpdate::Replace, run: first, user_id: owner })
                .await?;
        }
        for run in runs {
            db.upsert_run(run, &session.session_id, owner).await?;
        }
        Ok::<_, DbError>(())
    };
    if let Err(e) = written.await {
        if let Err(undo) = db.delete_session(&session.session_id, owner).await {
            tracing::error!(session_id = session.session_id, error = %undo, "cannot remove a fork left half written");
        }
        return Err(e.into());
    }
    Ok(session.session_id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_renames_every_run_and_keeps_the_lineage() {
        let mut source = AgentSession::new("root");
        source.user_id = Some("u".into());
        let leader = RunOutput::new("r1", "root");
        let mut member = RunOutput::new("m1", "root");
        member.parent_run_id = Some("r1".into());
        source.runs = Some(vec![leader, member]);
        let (mid, runs) = forked_session(&source, None);
        assert_ne!(mid.session_id, "root");
        assert_eq!(mid.user_id.as_deref(), Some("u"));
        assert_eq!(mid.session_data.as_ref().unwrap()[FORKED_FROM], "root");
        assert!(runs.iter().all(|r| r.session_id.as_deref() == Some(mid.session_id.as_str())));
        assert!(runs.iter().all(|r| r.id() != "r1" && r.id() != "m1"));
        assert_eq!(runs[1].parent_run_id.as_deref(), Some(runs[0].id()), "the member follows its leader");
        let mut again = mid.clone();
        again.runs = Some(runs);
        let (leaf, runs) = forked_session(&again, Some("v"));
        assert_eq!(leaf.session_data.as_ref().unwrap()[FORKED_FROM], mid.session_id.as_str(), "the immediate source");
        assert_eq!(runs[0].extra[FORKED_FROM], "root", "a run keeps the session it was first made in");
        assert_eq!(leaf.user_id.as_deref(), Some("v"));
    }
}
