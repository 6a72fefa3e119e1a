//! Approvals in Redis: `{prefix}:approvals:{id}` holds the document (Agno's 25 keys; Agno 3.1's
//! `RedisDb` has no approvals, so the layout follows its other document kinds), with index sets
//! per `run_id`, `status` and `user_id`, which reads go through (a listing naming none of them,
//! the admin's full list, reads every approval). A decision is the shared compare-and-set (`docs`), so
//! of two concurrent resolves one wins; the listing and decision rules are the document
//! family's (`doc::approvals`).

use agno_core::{
    APPROVAL_PENDING, ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, DbError, DbErrorKind, DbResult,
    Resolved,
};
use async_trait::async_trait;
use serde_json::Value;

use super::RedisDb;
use super::docs::DocKind;
use crate::doc::approvals::{approval_doc, approval_from_doc, decide, expired, page_approvals};

/// Approval documents, with their index sets.
const APPROVALS: DocKind = DocKind { name: "approvals", index: &["run_id", "status", "user_id"] };

impl RedisDb {
    async fn all_approvals(&self) -> DbResult<Vec<ApprovalRecord>> {
        let docs = self.docs_of(APPROVALS.name).await?;
        Ok(docs.into_iter().filter_map(|d| approval_from_doc(&Value::Object(d))).collect())
    }

    /// The approvals whose indexed `field` is `value` (callers still filter).
    async fn approvals_where(&self, field: &str, value: &str) -> DbResult<Vec<ApprovalRecord>> {
        let docs = self.indexed_docs(APPROVALS, field, value).await?;
        Ok(docs.iter().filter_map(approval_from_doc).collect())
    }

    /// The approvals a query can match: through the narrowest index it names (run, user,
    /// status), else every approval.
    async fn candidates(&self, q: &ApprovalQuery) -> DbResult<Vec<ApprovalRecord>> {
        match (&q.run_id, &q.user_id, &q.status) {
            (Some(run), _, _) => self.approvals_where("run_id", run).await,
            (None, Some(user), _) => self.approvals_where("user_id", user).await,
            (None, None, Some(status)) => self.approvals_where("status", status).await,
            (None, None, None) => self.all_approvals().await,
        }
    }

    /// Rewrites approval `id` by compare-and-set with what `change` makes of it (none: nothing);
    /// whether it wrote.
    async fn change_approval(
        &self,
        id: &str,
        mut change: impl FnMut(&ApprovalRecord) -> Option<ApprovalRecord>,
    ) -> DbResult<bool> {
        let written = self
            .change_doc(APPROVALS, id, "approval", |current| {
                let Some(a) = current.and_then(|d| approval_from_doc(&Value::Object(d.clone()))) else {
                    return Ok(None);
                };
                change(&a).map(|new| Ok((approval_doc(&new)?, ()))).transpose()
            })
            .await?;
        Ok(written.is_some())
    }
}

#[async_trait]
impl ApprovalStore for RedisDb {
    async fn create_approval(&self, approval: &ApprovalRecord) -> DbResult<()> {
        if self.put_doc(APPROVALS, &approval.id, None, &approval_doc(approval)?).await? {
            Ok(())
        } else {
            Err(DbError::new(DbErrorKind::Conflict, format!("approval {} already exists", approval.id)))
        }
    }

    async fn get_approval(&self, id: &str) -> DbResult<Option<ApprovalRecord>> {
        Ok(self
            .doc_at(APPROVALS.name, id, "approval")
            .await?
            .and_then(|(_, doc)| approval_from_doc(&Value::Object(doc))))
    }

    async fn get_approvals(&self, query: &ApprovalQuery) -> DbResult<(Vec<ApprovalRecord>, u64)> {
        Ok(page_approvals(self.candidates(query).await?, query))
    }

    async fn resolve_approval(&self, id: &str, decision: &ApprovalDecision) -> DbResult<Resolved> {
        let answer = self
            .change_doc(APPROVALS, id, "approval", |current| {
                let Some(a) = current.and_then(|d| approval_from_doc(&Value::Object(d.clone()))) else {
                    return Ok(None);
                };
                match decide(&a, decision) {
                    (Some(new), answer) => Ok(Some((approval_doc(&new)?, answer))),
                    (None, _) => Ok(None),
                }
            })
            .await?;
        match answer {
            Some(answer) => Ok(answer),
            // Nothing written: missing, or no longer pending (as stored now).
            None => Ok(match self.get_approval(id).await? {
                None => Resolved::NotFound,
                Some(a) => Resolved::NotPending(Box::new(a)),
            }),
        }
    }

    async fn delete_approval(&self, id: &str) -> DbResult<bool> {
        Ok(self.delete_docs(APPROVALS, &[id.to_owned()], None).await? > 0)
    }

    async fn count_pending_approvals(&self, user_id: Option<&str>) -> DbResult<u64> {
        let q = ApprovalQuery {
            status: Some(APPROVAL_PENDING.to_owned()),
            user_id: user_id.map(str::to_owned),
            ..Default::default()
        };
        Ok(self.candidates(&q).await?.iter().filter(|a| q.matches(a)).count() as u64)
    }

    async fn set_approval_run_status(&self, run_id: &str, run_status: &str, now: i64) -> DbResult<u64> {
        let mut n = 0;
        for a in self.approvals_where("run_id", run_id).await?.into_iter().filter(|a| a.run_id == run_id) {
            let changed = self
                .change_approval(&a.id, |a| {
                    Some(ApprovalRecord { run_status: Some(run_status.to_owned()), updated_at: Some(now), ..a.clone() })
                })
                .await?;
            n += u64::from(changed);
        }
        Ok(n)
    }

    async fn expire_approvals(&self, now: i64) -> DbResult<u64> {
        let mut n = 0;
        for a in self.approvals_where("status", APPROVAL_PENDING).await?.into_iter().filter(|a| a.expired_at(now)) {
            n += u64::from(self.change_approval(&a.id, |a| expired(a, now)).await?);
        }
        Ok(n)
    }
}
