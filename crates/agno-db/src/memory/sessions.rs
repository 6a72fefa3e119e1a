//! Sessions of the in-memory store.

use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, SessionQuery, SessionStore, now_epoch_secs};
use async_trait::async_trait;

use super::{InMemoryDb, visible};

#[async_trait]
impl SessionStore for InMemoryDb {
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>> {
        let tables = self.lock()?;
        let Some(session) = tables.sessions.get(session_id) else {
            return Ok(None);
        };
        if !visible(session.user_id.as_deref(), user_id) {
            return Ok(None);
        }
        let mut runs: Vec<_> = tables.runs.values().filter(|r| r.session_id == session_id).collect();
        runs.sort_by_key(|r| r.run_index);
        let skip = runs_limit.map_or(0, |n| runs.len().saturating_sub(n));
        let mut session = session.clone();
        session.runs = Some(runs.into_iter().skip(skip).map(|r| r.run.clone()).collect());
        Ok(Some(session))
    }

    async fn upsert_session(&self, session: &AgentSession) -> DbResult<()> {
        let mut tables = self.lock()?;
        let mut row = session.clone();
        row.runs = None;
        row.updated_at = Some(now_epoch_secs());
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

    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<Vec<AgentSession>> {
        let tables = self.lock()?;
        let mut out: Vec<AgentSession> = tables
            .sessions
            .values()
            .filter(|s| visible(s.user_id.as_deref(), query.user_id.as_deref()))
            .filter(|s| query.agent_id.is_none() || s.agent_id == query.agent_id)
            .cloned()
            .collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        if let Some(limit) = query.limit {
            out.truncate(limit);
        }
        Ok(out)
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let owned = tables.sessions.get(session_id).is_some_and(|s| visible(s.user_id.as_deref(), user_id));
        if !owned {
            return Ok(false);
        }
        tables.sessions.remove(session_id);
        tables.runs.retain(|_, r| r.session_id != session_id);
        Ok(true)
    }
}
