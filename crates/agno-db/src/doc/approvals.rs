//! Approvals of the document stores, written once for the in-memory store, the JSON files
//! (`agno_approvals.json`) and Redis (`{prefix}:approvals:{id}`, with index sets per `run_id`,
//! `status` and `user_id`; Agno 3.1's `RedisDb` has no approvals, so the layout follows its other
//! document kinds): one document per approval, Agno's 25 keys. A decision changes the stored
//! document only while it is pending, so of two concurrent resolves one wins.

use agno_core::{
    APPROVAL_EXPIRED, APPROVAL_PENDING, ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, DbError,
    DbErrorKind, DbResult, Resolved, SortOrder,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::DocDb;
use super::documents::{DocKind, Documents, record, records};

/// The document of an approval.
pub(crate) fn approval_doc(approval: &ApprovalRecord) -> DbResult<Map<String, Value>> {
    crate::codec::to_doc(approval)
}

/// The page of `approvals` the listing `q` asks for (newest first, then by id), with the number
/// of matching approvals.
pub(crate) fn page_approvals(
    approvals: impl IntoIterator<Item = ApprovalRecord>,
    q: &ApprovalQuery,
) -> (Vec<ApprovalRecord>, u64) {
    let list = approvals.into_iter().filter(|a| q.matches(a)).collect();
    let by_creation =
        |a: &ApprovalRecord, b: &ApprovalRecord| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id));
    super::sort_and_page(list, by_creation, SortOrder::Desc, q.limit, q.page)
}

/// `a` marked expired at `now`, when it is pending past its `expires_at`.
pub(crate) fn expired(a: &ApprovalRecord, now: i64) -> Option<ApprovalRecord> {
    a.expired_at(now).then(|| ApprovalRecord {
        status: APPROVAL_EXPIRED.to_owned(),
        updated_at: Some(now),
        ..a.clone()
    })
}

/// What a decision does to `a`: the record to write (none: nothing changes) and the answer.
pub(crate) fn decide(a: &ApprovalRecord, d: &ApprovalDecision) -> (Option<ApprovalRecord>, Resolved) {
    if let Some(lapsed) = expired(a, d.resolved_at) {
        return (Some(lapsed.clone()), Resolved::NotPending(Box::new(lapsed)));
    }
    if !a.is_pending() {
        return (None, Resolved::NotPending(Box::new(a.clone())));
    }
    let mut done = a.clone();
    done.status.clone_from(&d.status);
    done.resolved_by.clone_from(&d.resolved_by);
    done.resolved_at = Some(d.resolved_at);
    done.updated_at = Some(d.resolved_at);
    if d.resolution_data.is_some() {
        done.resolution_data.clone_from(&d.resolution_data);
    }
    (Some(done.clone()), Resolved::Done(Box::new(done)))
}

/// Approval documents, with index sets per `run_id`, `status` and `user_id`, which reads go
/// through (a listing naming none of them, the admin's full list, reads every approval).
const APPROVALS: DocKind =
    DocKind { name: "approvals", key: "id", table: |t| &t.approvals, index: &["run_id", "status", "user_id"] };

/// The approvals a query can match: through the narrowest index it names (run, user, status),
/// else every approval; callers still filter.
async fn candidates(store: &impl Documents, q: &ApprovalQuery) -> DbResult<Vec<ApprovalRecord>> {
    let (field, value) = match (&q.run_id, &q.user_id, &q.status) {
        (Some(run), _, _) => ("run_id", run),
        (None, Some(user), _) => ("user_id", user),
        (None, None, Some(status)) => ("status", status),
        (None, None, None) => return Ok(records(store.docs(&APPROVALS, None).await?)),
    };
    Ok(records(store.docs(&APPROVALS, Some((field, &[value.as_str()]))).await?))
}

/// Rewrites approval `id` with what `change` makes of it (none: nothing); whether it wrote.
async fn change_approval(
    store: &impl Documents,
    id: &str,
    change: impl Fn(&ApprovalRecord) -> Option<ApprovalRecord> + Send + 'static,
) -> DbResult<bool> {
    let written = store
        .change(&APPROVALS, id, "approval", move |current| {
            let Some(a) = current.cloned().and_then(record::<ApprovalRecord>) else {
                return Ok(None);
            };
            change(&a).map(|new| Ok((approval_doc(&new)?, ()))).transpose()
        })
        .await?;
    Ok(written.is_some())
}

#[async_trait]
impl<B> ApprovalStore for DocDb<B>
where
    DocDb<B>: Documents,
{
    async fn create_approval(&self, approval: &ApprovalRecord) -> DbResult<()> {
        match self.insert_absent(&APPROVALS, vec![(approval.id.clone(), approval_doc(approval)?)]).await? {
            0 => Err(DbError::new(DbErrorKind::Conflict, format!("approval {} already exists", approval.id))),
            _ => Ok(()),
        }
    }

    async fn get_approval(&self, id: &str) -> DbResult<Option<ApprovalRecord>> {
        Ok(self.doc(&APPROVALS, id, "approval").await?.and_then(record))
    }

    async fn get_approvals(&self, query: &ApprovalQuery) -> DbResult<(Vec<ApprovalRecord>, u64)> {
        Ok(page_approvals(candidates(self, query).await?, query))
    }

    async fn resolve_approval(&self, id: &str, decision: &ApprovalDecision) -> DbResult<Resolved> {
        let decision = decision.clone();
        let answer = self
            .change(&APPROVALS, id, "approval", move |current| {
                let Some(a) = current.cloned().and_then(record::<ApprovalRecord>) else {
                    return Ok(None);
                };
                match decide(&a, &decision) {
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
        Ok(self.delete(&APPROVALS, &[id.to_owned()], None).await? > 0)
    }

    async fn count_pending_approvals(&self, user_id: Option<&str>) -> DbResult<u64> {
        let q = ApprovalQuery {
            status: Some(APPROVAL_PENDING.to_owned()),
            user_id: user_id.map(str::to_owned),
            ..Default::default()
        };
        Ok(candidates(self, &q).await?.iter().filter(|a| q.matches(a)).count() as u64)
    }

    async fn set_approval_run_status(&self, run_id: &str, run_status: &str, now: i64) -> DbResult<u64> {
        let q = ApprovalQuery { run_id: Some(run_id.to_owned()), ..Default::default() };
        let mut n = 0;
        for a in candidates(self, &q).await?.into_iter().filter(|a| a.run_id == run_id) {
            let run_status = run_status.to_owned();
            let changed = change_approval(self, &a.id, move |a| {
                Some(ApprovalRecord { run_status: Some(run_status.clone()), updated_at: Some(now), ..a.clone() })
            })
            .await?;
            n += u64::from(changed);
        }
        Ok(n)
    }

    async fn expire_approvals(&self, now: i64) -> DbResult<u64> {
        let q = ApprovalQuery { status: Some(APPROVAL_PENDING.to_owned()), ..Default::default() };
        let mut n = 0;
        for a in candidates(self, &q).await?.into_iter().filter(|a| a.expired_at(now)) {
            n += u64::from(change_approval(self, &a.id, move |a| expired(a, now)).await?);
        }
        Ok(n)
    }
}
