//! `agno queue`: the durable queue of background runs, from the terminal.

use std::sync::Arc;

use agno::core::{JobStatus, JobStore};
use agno_os::queue::Requeued;
use anyhow::{Context, Result, bail};

use crate::cli::{QueueArgs, QueueCommand};

async fn open(url: &str) -> Result<(Arc<dyn JobStore>, Arc<dyn agno::db::Migrate>)> {
    let shown = agno::db::redact_url(url);
    let db = agno::db::open(url).await.with_context(|| format!("cannot open {shown}"))?;
    let Some(store) = db.clone().job_store() else {
        bail!(
            "{shown} has no job queue: background runs need sqlite://, postgresql://, mysql://, redis:// or memory://"
        );
    };
    Ok((store, db))
}

pub(crate) async fn queue(args: QueueArgs) -> Result<()> {
    let Some(url) = args.db else {
        bail!("give the AgentOS database with --db URL (or AGNO_DB)");
    };
    let (store, db) = open(&url).await?;
    match args.command {
        QueueCommand::Stats => {
            for (status, total) in agno_os::queue::counts(store.as_ref()).await? {
                println!("{:<10} {total}", status.as_str());
            }
        }
        QueueCommand::List { status, limit } => {
            let status = status
                .as_deref()
                .map(|s| JobStatus::parse(s).with_context(|| format!("unknown status {s:?}")))
                .transpose()?;
            let (jobs, total) = store.list_jobs(status, Some(limit), Some(1)).await?;
            println!("{:<38} {:<10} {:<8} {:<16} error", "job (run) id", "status", "attempt", "agent");
            for j in jobs {
                println!(
                    "{:<38} {:<10} {:<8} {:<16} {}",
                    j.id,
                    j.status.as_str(),
                    format!("{}/{}", j.attempt, j.max_attempts),
                    j.component_id,
                    j.error.unwrap_or_default()
                );
            }
            println!("{total} job(s)");
        }
        QueueCommand::Requeue { job_id } => {
            match agno_os::queue::requeue(store.as_ref(), db.as_ref(), &job_id).await? {
                Requeued::Missing => bail!("no job {job_id}"),
                Requeued::Refused(status) => {
                    bail!("job {job_id} is {}: only failed or cancelled jobs can be requeued", status.as_str())
                }
                Requeued::Done(_) => println!("requeued {job_id}; a running AgentOS on this database will pick it up"),
            }
        }
    }
    Ok(())
}
