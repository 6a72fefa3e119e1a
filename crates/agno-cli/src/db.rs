//! `agno db`: schema status, migrations and the legacy-runs cleanup.

use std::sync::Mutex;

use agno::db::{MigrationManager, MigrationOptions, open};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{DbArgs, DbCommand};

pub(crate) async fn db(args: DbArgs) -> Result<()> {
    match args.command {
        DbCommand::Status { db } => status(&db).await,
        DbCommand::Migrate { db, target, dry_run } => migrate(&db, target.as_deref(), dry_run).await,
        DbCommand::CleanupLegacyRuns { db, force } => cleanup(&db, force).await,
        DbCommand::MigrateVectors { db, table } => migrate_vectors(&db, &table).await,
    }
}

async fn migrate_vectors(url: &str, table: &str) -> Result<()> {
    use agno_knowledge::VectorDb;
    let shown = agno::db::redact_url(url);
    let (changed, chunks) = if url.starts_with("sqlite:") {
        let store = agno_knowledge::SqliteVectorDb::connect(url, table)
            .await
            .with_context(|| format!("cannot open {shown}"))?;
        (store.migrate_user_id().await?, store.count().await?)
    } else if url.starts_with("postgres") {
        // PgVector (schema from `?schema=`, default `ai`); the dimension is not needed to migrate.
        let (base, schema) = agno_os::build::knowledge::split_schema(url);
        let store = agno_knowledge::PgVectorDb::connect(&base, &schema, table, 1)
            .await
            .with_context(|| format!("cannot open {shown}"))?;
        (store.migrate_user_id().await?, store.count().await?)
    } else {
        bail!(
            "migrate-vectors handles the embedded store (sqlite://FILE) and PgVector (postgresql://...); {shown} is neither"
        );
    };
    if changed {
        println!("{table}: added user_id (its {chunks} chunks stay shared)");
    } else {
        println!("{table}: already has user_id, nothing to do");
    }
    Ok(())
}

async fn status(url: &str) -> Result<()> {
    let db = open(url).await.with_context(|| format!("cannot open {}", agno::db::redact_url(url)))?;
    let status = MigrationManager::new(db.as_ref()).status(None).await?;
    println!("{:<28} {:<12} pending", "table", "version");
    for t in &status.tables {
        let pending = if t.pending.is_empty() { "-".to_owned() } else { t.pending.join(" -> ") };
        println!("{:<28} {:<12} {pending}", t.table, t.version.as_deref().unwrap_or("unstamped"));
    }
    println!("legacy blob runs not yet in the runs table: {}", status.legacy_runs_pending);
    if status.is_current() {
        println!("schema is current");
    } else {
        println!("migrations pending: run `agno db migrate --db {url}`");
    }
    Ok(())
}

async fn migrate(url: &str, target: Option<&str>, dry_run: bool) -> Result<()> {
    let db = open(url).await.with_context(|| format!("cannot open {}", agno::db::redact_url(url)))?;
    let manager = MigrationManager::new(db.as_ref()).with_options(MigrationOptions::default());
    let plan = manager.status(target).await?;
    if plan.is_current() {
        println!("nothing to migrate: every table is at the target version");
        if !dry_run {
            manager.up(target, &|_, _| {}).await?;
        }
        return Ok(());
    }
    for t in plan.tables.iter().filter(|t| !t.pending.is_empty()) {
        println!("{}: {} -> {}", t.table, t.version.as_deref().unwrap_or("unstamped"), t.pending.join(" -> "));
    }
    if dry_run {
        println!("dry run: nothing changed ({} legacy runs would be copied)", plan.legacy_runs_pending);
        return Ok(());
    }
    let bar = Mutex::new(None::<ProgressBar>);
    let progress = |done: u64, total: u64| {
        if let Ok(mut slot) = bar.lock() {
            let pb = slot.get_or_insert_with(|| {
                let pb = ProgressBar::new(total);
                pb.set_style(
                    ProgressStyle::with_template("copying legacy runs {bar:40} {pos}/{len} sessions")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                pb
            });
            pb.set_position(done);
        }
    };
    manager
        .up(target, &progress)
        .await
        .context("migration failed; nothing of the failed step was kept, rerun to resume")?;
    if let Ok(mut slot) = bar.lock()
        && let Some(pb) = slot.take()
    {
        pb.finish();
    }
    let after = manager.status(target).await?;
    if !after.is_current() {
        bail!("migration finished but steps are still pending: {}", after.pending_description(url));
    }
    println!(
        "migrated. The legacy runs column is kept as a backup; once verified, reclaim it with `agno db cleanup-legacy-runs --db {url}`"
    );
    Ok(())
}

async fn cleanup(url: &str, force: bool) -> Result<()> {
    let db = open(url).await.with_context(|| format!("cannot open {}", agno::db::redact_url(url)))?;
    let report = db.cleanup_legacy_runs(force).await.context("cleanup refused")?;
    if report.removed {
        println!("legacy runs column removed ({} runs were not in the runs table)", report.missing_runs);
    } else {
        println!("no legacy runs column: nothing to clean up");
    }
    Ok(())
}
