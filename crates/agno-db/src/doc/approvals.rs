//! Approvals of the document stores (`agno_approvals.json`: one document per approval, Agno's 25
//! keys). The rules here (listing, the decision on a pending approval, expiry) serve Redis too.

use agno_core::{
    APPROVAL_EXPIRED, ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, DbError, DbErrorKind, DbResult,
    Resolved, SortOrder,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::{DocBackend, DocDb};

/// An approval from its document; `None` for one that is not an approval.
pub(crate) fn approval_from_doc(doc: &Value) -> Option<ApprovalRecord> {
    serde_json::from_value(doc.clone()).ok()
}

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

/// The approvals of a table (documents that are not approvals are left out).
fn approvals_in(docs: &[Value]) -> Vec<ApprovalRecord> {
    docs.iter().filter_map(approval_from_doc).collect()
}

/// Rewrites the approvals of the table that `change` changes; how many it changed.
fn rewrite(docs: &mut [Value], mut change: impl FnMut(&ApprovalRecord) -> Option<ApprovalRecord>) -> DbResult<u64> {
    let mut n = 0;
    for doc in docs.iter_mut() {
        if let Some(new) = approval_from_doc(doc).and_then(|a| change(&a)) {
            *doc = Value::Object(approval_doc(&new)?);
            n += 1;
        }
    }
    Ok(n)
}

#[async_trait]
impl<B: DocBackend> ApprovalStore for DocDb<B> {
    async fn create_approval(&self, approval: &ApprovalRecord) -> DbResult<()> {
        let approval = approval.clone();
        self.write(move |files| {
            let t = files.tables().approvals.clone();
            let mut docs = files.read(&t)?.into_owned();
            if docs.iter().any(|d| super::key_of(d, "id") == Some(&approval.id)) {
                return Err(DbError::new(DbErrorKind::Conflict, format!("approval {} already exists", approval.id)));
            }
            docs.push(Value::Object(approval_doc(&approval)?));
            files.write(&t, docs)
        })
        .await
    }

    async fn get_approval(&self, id: &str) -> DbResult<Option<ApprovalRecord>> {
        let id = id.to_owned();
        self.read(move |files| {
            let t = files.tables().approvals.clone();
            Ok(approvals_in(&files.read(&t)?).into_iter().find(|a| a.id == id))
        })
        .await
    }

    async fn get_approvals(&self, query: &ApprovalQuery) -> DbResult<(Vec<ApprovalRecord>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            let t = files.tables().approvals.clone();
            Ok(page_approvals(approvals_in(&files.read(&t)?), &query))
        })
        .await
    }

    async fn resolve_approval(&self, id: &str, decision: &ApprovalDecision) -> DbResult<Resolved> {
        let (id, decision) = (id.to_owned(), decision.clone());
        self.write(move |files| {
            let t = files.tables().approvals.clone();
            let mut docs = files.read(&t)?.into_owned();
            let Some(at) = docs.iter().position(|d| super::key_of(d, "id") == Some(&id)) else {
                return Ok(Resolved::NotFound);
            };
            let Some(current) = approval_from_doc(&docs[at]) else { return Ok(Resolved::NotFound) };
            let (write, answer) = decide(&current, &decision);
            if let Some(new) = write {
                docs[at] = Value::Object(approval_doc(&new)?);
                files.write(&t, docs)?;
            }
            Ok(answer)
        })
        .await
    }

    async fn delete_approval(&self, id: &str) -> DbResult<bool> {
        let id = id.to_owned();
        self.write(move |files| {
            let t = files.tables().approvals.clone();
            let mut docs = files.read(&t)?.into_owned();
            let before = docs.len();
            docs.retain(|d| super::key_of(d, "id") != Some(&id));
            if docs.len() == before {
                return Ok(false);
            }
            files.write(&t, docs)?;
            Ok(true)
        })
        .await
    }

    async fn count_pending_approvals(&self, user_id: Option<&str>) -> DbResult<u64> {
        let user_id = user_id.map(str::to_owned);
        self.read(move |files| {
            let t = files.tables().approvals.clone();
            let q =
                ApprovalQuery { status: Some(agno_core::APPROVAL_PENDING.to_owned()), user_id, ..Default::default() };
            Ok(approvals_in(&files.read(&t)?).iter().filter(|a| q.matches(a)).count() as u64)
        })
        .await
    }

    async fn set_approval_run_status(&self, run_id: &str, run_status: &str, now: i64) -> DbResult<u64> {
        let (run_id, run_status) = (run_id.to_owned(), run_status.to_owned());
        self.write(move |files| {
            let t = files.tables().approvals.clone();
            if !files.exists(&t) {
                return Ok(0);
            }
            let mut docs = files.read(&t)?.into_owned();
            let n = rewrite(&mut docs, |a| {
                (a.run_id == run_id).then(|| ApprovalRecord {
                    run_status: Some(run_status.clone()),
                    updated_at: Some(now),
                    ..a.clone()
                })
            })?;
            if n > 0 {
                files.write(&t, docs)?;
            }
            Ok(n)
        })
        .await
    }

    async fn expire_approvals(&self, now: i64) -> DbResult<u64> {
        self.write(move |files| {
            let t = files.tables().approvals.clone();
            if !files.exists(&t) {
                return Ok(0);
            }
            let mut docs = files.read(&t)?.into_owned();
            let n = rewrite(&mut docs, |a| expired(a, now))?;
            if n > 0 {
                files.write(&t, docs)?;
            }
            Ok(n)
        })
        .await
    }
}
