//! What a replica that died leaves behind, repaired: runs of swept jobs ended `ERROR` (or
//! `CANCELLED`), contents of swept ingestions `failed`, orphaned `PENDING` runs removed.

use agno_core::{ComponentKind, Job, JobStatus, JobStore, JobType, RunOutput, RunStatus, now_epoch_secs};
use serde_json::Value;

use super::Served;
use super::{CANCELLED_LOST_WORKER, LOST_WORKER, Queue};

/// Marks the runs of swept jobs `ERROR` with the reason.
pub(super) async fn end_swept_runs(state: &dyn Served, store: &dyn JobStore, jobs: Vec<Job>) {
    let Some(db) = state.database() else { return };
    for job in jobs {
        if job.job_type() == Some(JobType::Ingest) {
            let reason = job.error.as_deref().filter(|e| *e != LOST_WORKER).unwrap_or(super::ingest::LOST_INGESTION);
            super::ingest::end_content(db.as_ref(), &job.session_id, reason).await;
            continue;
        }
        let run = match db.get_run(&job.id, None).await {
            Ok(Some(run)) => run,
            Ok(None) => {
                let mut r = RunOutput::new(job.id.clone(), job.session_id.clone());
                match job.kind() {
                    Some(ComponentKind::Team) => {
                        r.extra.insert("team_id".to_owned(), Value::String(job.component_id.clone()));
                    }
                    Some(ComponentKind::Workflow) => r.workflow_id = Some(job.component_id.clone()),
                    Some(ComponentKind::Agent) | None => r.agent_id = Some(job.component_id.clone()),
                }
                r
            }
            Err(e) => {
                tracing::error!(job = %job.id, error = %e, "cannot read the run of a swept job");
                continue;
            }
        };
        if run.status == RunStatus::Completed && job.status == JobStatus::Failed {
            // The worker stored its run and died before recording the job's outcome.
            if let Err(e) = store.complete_swept_job(&job.id, now_epoch_secs()).await {
                tracing::error!(job = %job.id, error = %e, "cannot mark a swept job completed");
            }
            continue;
        }
        if matches!(run.status, RunStatus::Completed | RunStatus::Cancelled | RunStatus::Error) {
            continue;
        }
        let mut run = run;
        if job.status == JobStatus::Cancelled {
            run.status = RunStatus::Cancelled;
            run.content = Some(Value::String(CANCELLED_LOST_WORKER.to_owned()));
        } else {
            run.status = RunStatus::Error;
            run.content = Some(Value::String(LOST_WORKER.to_owned()));
        }
        if let Err(e) = db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await {
            tracing::error!(job = %job.id, error = %e, "cannot mark the run of a swept job");
        }
    }
}

/// Why an orphaned `PENDING` run (its submission was interrupted before the job was committed)
/// is removed: it was never acknowledged, and no worker will ever run it.
pub(super) const NEVER_QUEUED: &str = "submission interrupted before its job was committed";

/// Runs scanned per status and sweep.
pub(super) const RECONCILE_PAGE: usize = 200;

/// Repairs what a replica that died between two writes can leave behind, for runs older than the
/// lease grace: a `PENDING` run with no job (the submission died before the job was committed; it
/// was never acknowledged) is deleted; a `PENDING` or `RUNNING` run whose job already ended (the
/// sweeper died before ending the run) is ended like a swept one. Runs without a job that are
/// `RUNNING` are inline runs and are left alone.
pub(super) async fn reconcile_runs(state: &dyn Served, queue: &Queue) {
    let Some(db) = state.database() else { return };
    let old = now_epoch_secs() - queue.settings.lock_grace_seconds.max(1);
    let mut ended = Vec::new();
    for status in [RunStatus::Pending, RunStatus::Running] {
        let query = agno_core::RunQuery {
            status: Some(status),
            limit: Some(RECONCILE_PAGE),
            sort: agno_core::SortOrder::Asc,
            ..agno_core::RunQuery::default()
        };
        let page = match db.get_runs(&query).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "cannot scan runs for repairs");
                return;
            }
        };
        for run in page.runs.into_iter().filter(|r| r.created_at <= old) {
            let id = run.id().to_owned();
            match queue.store.get_job(&id, None).await {
                Ok(None) if status == RunStatus::Pending => {
                    tracing::warn!(run = %id, reason = NEVER_QUEUED, "removing an orphaned PENDING run");
                    if let Err(e) = db.delete_run(&id, None).await {
                        tracing::warn!(run = %id, error = %e, "cannot remove an orphaned run");
                    }
                }
                Ok(Some(job))
                    if matches!(job.status, JobStatus::Failed | JobStatus::Cancelled) && job.locked_by.is_none() =>
                {
                    ended.push(job);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(run = %id, error = %e, "cannot read the job of a run"),
            }
        }
    }
    if !ended.is_empty() {
        tracing::warn!(runs = ended.len(), "ending runs whose job ended without them");
        end_swept_runs(state, queue.store.as_ref(), ended).await;
    }
}

/// Why an uploaded content whose ingestion job was never committed is failed.
pub(super) const NEVER_INGESTED: &str = "its ingestion was never queued (the server stopped while accepting the \
     upload); upload it again";

/// Fails the contents left `processing` without an ingestion job: the replica that accepted the
/// upload died between committing the content's row and its job (the upload was never
/// acknowledged). Scans each knowledge base's most recently updated contents, older than the
/// lease grace (an upload in flight commits its job within that time).
pub(super) async fn reconcile_contents(state: &dyn Served, queue: &Queue) {
    let Some(db) = state.database() else { return };
    let old = now_epoch_secs() - queue.settings.lock_grace_seconds.max(1);
    for knowledge in state.knowledge_names() {
        let query = agno_core::KnowledgeQuery {
            linked_to: Some(knowledge),
            limit: Some(RECONCILE_PAGE),
            sort_by: agno_core::KnowledgeSort::UpdatedAt,
            sort_order: agno_core::SortOrder::Desc,
            ..agno_core::KnowledgeQuery::default()
        };
        let rows = match db.get_knowledge_contents(&query).await {
            Ok((rows, _)) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "cannot scan contents for repairs");
                return;
            }
        };
        let stale = rows.into_iter().filter(|row| {
            row.status.as_deref() == Some(agno_knowledge::status::PROCESSING)
                && row.updated_at.or(row.created_at).is_some_and(|t| t <= old)
        });
        for row in stale {
            let Some(id) = row.id else { continue };
            match queue.store.get_job(&id, None).await {
                Ok(None) => {
                    tracing::warn!(content = %id, reason = NEVER_INGESTED, "failing an orphaned upload");
                    super::ingest::end_content(db.as_ref(), &id, NEVER_INGESTED).await;
                }
                Ok(Some(_)) => {}
                Err(e) => tracing::warn!(content = %id, error = %e, "cannot read the job of a content"),
            }
        }
    }
}
