//! `agno knowledge`: add files to a `[[knowledge]]` base of an AgentOS config (with a progress
//! bar), search it, list its contents.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agno::core::{Filter, KnowledgeQuery};
use agno_knowledge::{Content, Knowledge};
use agno_os::config::OsConfig;
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value};

use crate::cli::{KnowledgeArgs, KnowledgeCommand};

pub(crate) async fn knowledge(args: KnowledgeArgs) -> Result<()> {
    let config = OsConfig::load(&args.config).with_context(|| format!("cannot load {}", args.config.display()))?;
    if config.knowledge.is_empty() {
        bail!(
            "{} declares no [[knowledge]] base: add one, e.g.\n\n[[knowledge]]\nid = \"docs\"\n",
            args.config.display()
        );
    }
    let url = config.db.as_ref().map(|d| d.url.clone());
    let db = match &url {
        Some(url) => {
            let migrate =
                agno::db::open(url).await.with_context(|| format!("cannot open {}", agno::db::redact_url(url)))?;
            migrate.create_tables().await?;
            let db: Arc<dyn agno::core::Db> = migrate;
            Some(db)
        }
        None => None,
    };
    if url.as_deref().is_none_or(|u| !u.starts_with("sqlite:")) {
        eprintln!("note: the [db] is not a SQLite file, so the embedded store lives in memory for this command only");
    }
    let bases = agno_os::build::knowledge::build_knowledge(&config.knowledge, db.as_ref(), url.as_deref()).await?;
    let base = match (&args.knowledge, bases.as_slice()) {
        (Some(id), _) => bases.iter().find(|k| k.name() == id).cloned().with_context(|| {
            let known: Vec<&str> = bases.iter().map(|k| k.name()).collect();
            format!("no [[knowledge]] base {id:?} (known: {})", known.join(", "))
        })?,
        (None, [only]) => Arc::clone(only),
        (None, _) => bail!("the config has several knowledge bases: name one with --knowledge"),
    };
    match args.command {
        KnowledgeCommand::Add { paths, metadata } => {
            add(&base, &paths, metadata.as_deref(), args.user.as_deref()).await
        }
        KnowledgeCommand::Search { search_type, limit, filter, query } => {
            let search_type = search_type
                .as_deref()
                .map(agno_os::build::knowledge::parse_search_type)
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let filter = match filter {
                Some(text) => {
                    let value: Value = serde_json::from_str(&text).context("--filter is not JSON")?;
                    Some(Filter::from_json(&value).map_err(anyhow::Error::msg)?)
                }
                None => None,
            };
            let query = query.join(" ");
            let found =
                base.search_with(&query, Some(limit), filter.as_ref(), args.user.as_deref(), search_type).await?;
            if found.is_empty() {
                println!("nothing found for {query:?}");
            }
            for (i, d) in found.iter().enumerate() {
                let score = d.reranking_score.map_or_else(String::new, |s| format!(" ({s:.3})"));
                println!("{}. {}{score}", i + 1, d.name.as_deref().unwrap_or("-"));
                let text: String = d.content.chars().take(300).collect();
                println!("   {}", text.replace('\n', "\n   "));
            }
            Ok(())
        }
        KnowledgeCommand::Optimize => {
            let started = std::time::Instant::now();
            base.vector_db().optimize().await?;
            println!("optimized knowledge base {} in {:.1} s", base.name(), started.elapsed().as_secs_f64());
            Ok(())
        }
        KnowledgeCommand::List { limit } => {
            let Some(db) = base.contents() else { bail!("the config has no [db]: contents rows are kept there") };
            let query = KnowledgeQuery {
                user_id: args.user.clone(),
                linked_to: Some(base.name().to_owned()),
                limit: Some(limit),
                ..KnowledgeQuery::default()
            };
            let (rows, total) = db.get_knowledge_contents(&query).await?;
            println!("{:<38} {:<11} {:>10}  name", "id", "status", "bytes");
            for r in &rows {
                println!(
                    "{:<38} {:<11} {:>10}  {}{}",
                    r.id.as_deref().unwrap_or("-"),
                    r.status.as_deref().unwrap_or("-"),
                    r.size.unwrap_or(0),
                    r.name,
                    r.status_message.as_deref().map_or_else(String::new, |m| format!("  ({m})"))
                );
            }
            println!("{} of {total} contents", rows.len());
            Ok(())
        }
    }
}

/// Every file under `paths` (directories walked, sorted).
fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            out.extend(files(&entries)?);
        } else if path.is_file() {
            out.push(path.clone());
        } else {
            bail!("{} does not exist", path.display());
        }
    }
    Ok(out)
}

async fn add(base: &Knowledge, paths: &[PathBuf], metadata: Option<&str>, user: Option<&str>) -> Result<()> {
    let metadata: Map<String, Value> = match metadata {
        Some(text) => match serde_json::from_str(text).context("--metadata is not JSON")? {
            Value::Object(m) => m,
            _ => bail!("--metadata must be a JSON object"),
        },
        None => Map::new(),
    };
    let (urls, paths): (Vec<&PathBuf>, Vec<&PathBuf>) =
        paths.iter().partition(|p| p.to_str().is_some_and(|s| s.starts_with("http://") || s.starts_with("https://")));
    let paths: Vec<PathBuf> = paths.into_iter().cloned().collect();
    let mut files = files(&paths)?;
    files.extend(urls.into_iter().cloned());
    let bar = ProgressBar::new(files.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} files  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let (mut ok, mut failed) = (0usize, 0usize);
    for path in &files {
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        bar.set_message(name.clone());
        let url = path.to_str().filter(|s| s.starts_with("http://") || s.starts_with("https://"));
        let mut content = match url {
            Some(url) => Content::url(url).metadata(metadata.clone()),
            None => {
                let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
                let mut c = Content::file(name, bytes).metadata(metadata.clone());
                c.source = Some(source_of(path));
                c
            }
        };
        content.user_id = user.map(str::to_owned);
        let row = base.insert(content).await?;
        if row.status.as_deref() == Some(agno_knowledge::status::COMPLETED) {
            ok += 1;
        } else {
            failed += 1;
            bar.println(format!("failed: {}: {}", path.display(), row.status_message.unwrap_or_default()));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("{ok} added, {failed} failed, into knowledge base {}", base.name());
    if failed > 0 {
        bail!("{failed} of {} files failed (reasons above); the others were added", files.len());
    }
    Ok(())
}

/// The file's path as given, for its identity (two files of the same name in different
/// folders stay two contents).
fn source_of(path: &Path) -> String {
    path.display().to_string()
}
