//! `agno schedule`: manage the schedules of an AgentOS config from the terminal. Every command
//! goes through the OS's own `/schedules` routes, in process (the same checks and answers as
//! over HTTP), as the `--user` given; `trigger` runs the OS's queue workers for as long as the
//! fired run takes.

use agno_os::app::AgentOs;
use agno_os::scheduler::Executor;
use anyhow::{Context, Result, bail};
use axum::http::Method;
use chrono::{TimeZone, Utc};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cli::{ScheduleArgs, ScheduleCommand};
use crate::loopback::text;

pub(crate) async fn schedule(args: ScheduleArgs) -> Result<()> {
    let (os, executor) = crate::loopback::open(&args.config, "schedules are stored").await?;
    let user = args.user.as_deref();
    match args.command {
        ScheduleCommand::List { enabled } => {
            let mut uri = "/schedules?limit=1000".to_owned();
            if let Some(e) = enabled {
                uri.push_str(&format!("&enabled={e}"));
            }
            let body = call(&executor, Method::GET, &uri, None, user).await?;
            let rows = body["data"].as_array().cloned().unwrap_or_default();
            if rows.is_empty() {
                println!("no schedules{}", user.map(|u| format!(" of {u}")).unwrap_or_default());
                return Ok(());
            }
            println!(
                "{:<36}  {:<20}  {:<14}  {:<16}  {:<8}  {:<20}  ENDPOINT",
                "ID", "NAME", "CRON", "TIMEZONE", "ENABLED", "NEXT RUN (UTC)"
            );
            for s in rows {
                println!(
                    "{:<36}  {:<20}  {:<14}  {:<16}  {:<8}  {:<20}  {} {}",
                    text(&s["id"]),
                    text(&s["name"]),
                    text(&s["cron_expr"]),
                    text(&s["timezone"]),
                    s["enabled"],
                    when(&s["next_run_at"]),
                    text(&s["method"]),
                    text(&s["endpoint"]),
                );
            }
            Ok(())
        }
        ScheduleCommand::Create {
            name,
            cron,
            endpoint,
            method,
            payload,
            timezone,
            description,
            timeout,
            retries,
            retry_delay,
        } => {
            let payload = payload
                .map(|p| serde_json::from_str::<Value>(&p).with_context(|| format!("--payload is not JSON: {p}")))
                .transpose()?;
            let body = json!({
                "name": name, "cron_expr": cron, "endpoint": endpoint, "method": method, "payload": payload,
                "timezone": timezone, "description": description, "timeout_seconds": timeout,
                "max_retries": retries, "retry_delay_seconds": retry_delay, "user_id": user,
            });
            let s = call(&executor, Method::POST, "/schedules", Some(body), user).await?;
            println!(
                "created schedule {} ({}): next run {}",
                text(&s["name"]),
                text(&s["id"]),
                when(&s["next_run_at"])
            );
            Ok(())
        }
        ScheduleCommand::Trigger { schedule } => {
            let id = resolve(&os, &schedule, user).await?;
            // The fired run is a background run: this process works the queue until it ends.
            let stop = CancellationToken::new();
            let workers = os
                .state
                .queue
                .clone()
                .map(|q| agno_os::queue::start(std::sync::Arc::new(os.state.clone()), q, stop.clone()));
            let run = call(&executor, Method::POST, &format!("/schedules/{id}/trigger"), None, user).await;
            stop.cancel();
            if let Some(w) = workers {
                let _ = w.await;
            }
            let run = run?;
            print_run(&run);
            if run["status"] != "success" && run["status"] != "paused" {
                bail!("the schedule's run {}", text(&run["status"]));
            }
            Ok(())
        }
        ScheduleCommand::Runs { schedule, limit } => {
            let id = resolve(&os, &schedule, user).await?;
            let body = call(&executor, Method::GET, &format!("/schedules/{id}/runs?limit={limit}"), None, user).await?;
            let runs = body["data"].as_array().cloned().unwrap_or_default();
            if runs.is_empty() {
                println!("no runs yet");
            }
            for run in &runs {
                print_run(run);
            }
            Ok(())
        }
    }
}

/// The id of the schedule named or identified by `key` (of `user`, when given).
async fn resolve(os: &AgentOs, key: &str, user: Option<&str>) -> Result<String> {
    let db = os.state.db.as_ref().context("no database")?;
    if let Some(s) = db.get_schedule(key, user).await? {
        return Ok(s.id);
    }
    match db.get_schedule_by_name(key, user).await? {
        Some(s) => Ok(s.id),
        None => bail!(
            "no schedule {key:?}{}: see `agno schedule list`",
            user.map(|u| format!(" of user {u}")).unwrap_or_default()
        ),
    }
}

/// Sends one request to the OS in process; a refusal becomes an error with the OS's reason.
async fn call(
    executor: &Executor,
    method: Method,
    uri: &str,
    body: Option<Value>,
    user: Option<&str>,
) -> Result<Value> {
    crate::loopback::call(executor, method, uri, body, user, "agno schedule list").await
}

fn print_run(run: &Value) {
    println!(
        "{}  attempt {}  {:<9}  fired {}  {}{}",
        text(&run["id"]),
        run["attempt"],
        text(&run["status"]),
        when(&run["triggered_at"]),
        run["run_id"].as_str().map(|r| format!("run {r}")).unwrap_or_default(),
        run["error"]
            .as_str()
            .map(|e| format!("  error: {}", e.chars().take(200).collect::<String>()))
            .unwrap_or_default(),
    );
}

fn when(v: &Value) -> String {
    v.as_i64()
        .and_then(|t| Utc.timestamp_opt(t, 0).single())
        .map_or_else(|| "-".to_owned(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}
