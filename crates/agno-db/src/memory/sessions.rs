//! Sessions of the in-memory store.

use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, SessionPage, SessionQuery, SessionSort, SessionStore, SortOrder,
    StateUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::{InMemoryDb, Tables, visible};

fn matches(s: &AgentSession, q: &SessionQuery) -> bool {
    visible(s.user_id.as_deref(), q.user_id.as_deref())
        && q.component_id.as_deref().is_none_or(|c| {
            s.agent_id.as_deref() == Some(c) || s.team_id.as_deref() == Some(c) || s.workflow_id.as_deref() == Some(c)
        })
        && q.session_type.is_none_or(|t| s.session_type() == t)
        && q.session_name.as_deref().is_none_or(|n| s.session_name().is_some_and(|name| name.contains(n)))
        && q.start_timestamp.is_none_or(|t| s.created_at.unwrap_or(0) >= t)
        && q.end_timestamp.is_none_or(|t| s.created_at.unwrap_or(0) <= t)
}

#[async_trait]
impl SessionStore for InMemoryDb {
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>> {
        let tables = self.lock()?;
        let Some(session) = tables.sessions.get(session_id).filter(|s| visible(s.user_id.as_deref(), user_id)) else {
            return Ok(None);
        };
        let mut session = session.clone();
        if runs_limit == Some(0) {
            session.runs = Some(Vec::new());
            return Ok(Some(session));
        }
        let mut runs: Vec<_> = tables.runs.values().filter(|r| r.session_id == session_id).collect();
        runs.sort_by_key(|r| r.run_index);
        let skip = runs_limit.map_or(0, |n| runs.len().saturating_sub(n));
        session.runs = Some(runs.into_iter().skip(skip).map(|r| r.run.clone()).collect());
        Ok(Some(session))
    }

    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        write_session(&mut *self.lock()?, session, state)
    }

    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<SessionPage> {
        let tables = self.lock()?;
        let mut out: Vec<AgentSession> = tables.sessions.values().filter(|s| matches(s, query)).cloned().collect();
        let key = |s: &AgentSession| match query.sort_by {
            SessionSort::CreatedAt => s.created_at,
            SessionSort::UpdatedAt => s.updated_at,
        };
        out.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.session_id.cmp(&b.session_id)));
        if query.sort_order == SortOrder::Desc {
            out.reverse();
        }
        let total = out.len() as u64;
        if let Some(limit) = query.limit {
            let page = query.page.unwrap_or(1).max(1);
            out = out.into_iter().skip((page - 1) * limit).take(limit).collect();
        }
        Ok(SessionPage { sessions: out, total })
    }

    async fn rename_session(
        &self,
        session_id: &str,
        session_name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<AgentSession>> {
        let mut tables = self.lock()?;
        let Some(session) = tables.sessions.get_mut(session_id).filter(|s| visible(s.user_id.as_deref(), user_id))
        else {
            return Ok(None);
        };
        session
            .session_data
            .get_or_insert_with(Map::new)
            .insert("session_name".to_owned(), Value::String(session_name.to_owned()));
        session.updated_at = Some(now_epoch_secs());
        Ok(Some(session.clone()))
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_sessions(&[session_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let mut deleted = 0;
        for id in session_ids {
            if tables.sessions.get(id).is_some_and(|s| visible(s.user_id.as_deref(), user_id)) {
                tables.sessions.remove(id);
                tables.runs.retain(|_, r| &r.session_id != id);
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// Writes a session (the rest of `upsert_session`): refused, changing nothing, when it belongs
/// to another user.
pub(super) fn write_session(tables: &mut Tables, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
    let mut row = session.clone();
    row.runs = None;
    row.updated_at = Some(now_epoch_secs());
    let stored_data = tables.sessions.get(&session.session_id).map(|s| s.session_data.clone().unwrap_or_default());
    row.session_data = Some(state.session_data(session.session_data.clone().unwrap_or_default(), stored_data.as_ref()));
    if let Some(existing) = tables.sessions.get(&session.session_id) {
        if existing.user_id.is_some() && existing.user_id != session.user_id {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("session {} belongs to another user", session.session_id),
            ));
        }
        row.created_at = existing.created_at;
    }
    tables.sessions.insert(session.session_id.clone(), row);
    Ok(())
}
