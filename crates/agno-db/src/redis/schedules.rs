//! Schedules and schedule runs in Redis. Python Agno's `RedisDb` has no schedules, so they are
//! stored the way it stores its other tables:
//! - `{prefix}:schedules:{id}`: the schedule document (JSON string, `Schedule.to_dict()`'s keys
//!   and order);
//! - `{prefix}:schedule_runs:{id}`: the schedule run document (`ScheduleRun.to_dict()`);
//! - `{prefix}:schedules:index:owner_name`: hash of `{owner}` + name -> schedule id, the unique
//!   name per owner (`-:{name}` without an owner, `{len(owner)}:{owner}:{name}` otherwise);
//! - `{prefix}:schedules:index:next_run_at`: sorted set of the enabled, armed schedules scored by
//!   `next_run_at`, where the poller looks for due ones;
//! - `{prefix}:schedule_runs:index:schedule_id:{schedule_id}`: set of the schedule's run ids.
//!
//! Documents are built in Rust (so numbers and payloads survive untouched) and written by Lua
//! scripts that check what they replace: creation checks the id and the owner's name together,
//! updates and releases are compare-and-set retried on contention, a claim takes the first
//! candidate still as the claimer read it (others are skipped, as `SKIP LOCKED` would), a run is
//! created only under an existing schedule whose owner it copied, and a delete cascades to the
//! owner's runs in the same script.

use std::collections::HashMap;

use agno_core::{
    DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;

use super::docs::{CAS_ATTEMPTS, DocKind, too_busy};
use super::schedule_scripts::{
    CLAIM_SCHEDULE, CREATE_RUN, CREATE_SCHEDULE, DELETE_SCHEDULE, EXPIRE_RUNS, WRITE_SCHEDULE,
};
use super::sessions::user_args;
use super::{RedisDb, glob_escape, redis_error};
use crate::codec::{to_doc, to_json_text};
use crate::doc::visible;
use crate::schedules::{
    claimable, later_run, newest_run_first, newest_schedule_first, release, schedule_matches, schedule_page,
    schedule_run_page,
};

/// Schedule run documents, with the set of each schedule's run ids.
const SCHEDULE_RUNS: DocKind =
    DocKind { name: "schedule_runs", key: "id", table: |t| &t.schedule_runs, index: &["schedule_id"] };

/// Claimable schedules offered to one claim script, soonest first.
const CLAIM_CANDIDATES: usize = 32;

/// The name-index field of `name` for an owner (as the scripts' `name_field`).
fn name_field(name: &str, owner: Option<&str>) -> String {
    match owner {
        Some(o) => format!("{}:{o}:{name}", o.len()),
        None => format!("-:{name}"),
    }
}

/// The `next_run_at` index score: only enabled, armed schedules can come due.
fn due_score(s: &Schedule) -> String {
    s.next_run_at.filter(|_| s.enabled).map(|t| t.to_string()).unwrap_or_default()
}

fn not_a_schedule(id: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("stored schedule {id} is not a valid schedule document"))
}

fn not_a_run(id: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("stored schedule run {id} is not a valid schedule run document"))
}

fn name_conflict(name: &str) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("a schedule named {name:?} already exists for this owner"))
}

fn unexpected(what: &str, reply: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("unexpected reply {reply:?} while writing {what}"))
}

impl RedisDb {
    fn schedule_key(&self, id: &str) -> String {
        format!("{}:schedules:{id}", self.backend.prefix)
    }

    fn schedule_run_key(&self, id: &str) -> String {
        format!("{}:schedule_runs:{id}", self.backend.prefix)
    }

    fn schedule_runs_set(&self, schedule_id: &str) -> String {
        format!("{}:schedule_runs:index:schedule_id:{schedule_id}", self.backend.prefix)
    }

    /// One stored schedule with its document text.
    async fn schedule_doc(&self, id: &str) -> DbResult<Option<(String, Schedule)>> {
        let Some(text) = self.get(&self.schedule_key(id)).await? else { return Ok(None) };
        let s = serde_json::from_str(&text).map_err(|_| not_a_schedule(id))?;
        Ok(Some((text, s)))
    }

    /// One stored schedule run with its document text.
    async fn schedule_run_doc(&self, id: &str) -> DbResult<Option<(String, ScheduleRun)>> {
        let Some(text) = self.get(&self.schedule_run_key(id)).await? else { return Ok(None) };
        let r = serde_json::from_str(&text).map_err(|_| not_a_run(id))?;
        Ok(Some((text, r)))
    }

    /// The runs of a schedule (unparseable documents skipped).
    async fn runs_of(&self, schedule_id: &str) -> DbResult<Vec<ScheduleRun>> {
        let ids: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.schedule_runs_set(schedule_id))
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot read the runs of schedule {schedule_id}"), e))?;
        let keys: Vec<String> = ids.iter().map(|id| self.schedule_run_key(id)).collect();
        Ok(self
            .mget(&keys)
            .await?
            .into_iter()
            .flatten()
            .filter_map(|t| serde_json::from_str::<ScheduleRun>(&t).ok())
            .filter(|r| r.schedule_id == schedule_id)
            .collect())
    }

    /// Changes schedule `id` by compare-and-set, retried on contention: `change` edits the stored
    /// schedule and answers, or declines (`None`, writing nothing).
    async fn change_schedule<T>(
        &self,
        id: &str,
        mut change: impl FnMut(&mut Schedule) -> Option<T>,
    ) -> DbResult<Option<T>> {
        for _ in 0..CAS_ATTEMPTS {
            let Some((text, mut s)) = self.schedule_doc(id).await? else { return Ok(None) };
            let Some(out) = change(&mut s) else { return Ok(None) };
            if self.write_schedule(&text, &s).await? {
                return Ok(Some(out));
            }
        }
        Err(too_busy(&format!("schedule {id}")))
    }

    /// Writes `next` over the stored text `expected`; `Ok(false)` when it changed meanwhile.
    async fn write_schedule(&self, expected: &str, next: &Schedule) -> DbResult<bool> {
        let reply: String = WRITE_SCHEDULE
            .key(self.schedule_key(&next.id))
            .arg(&self.backend.prefix)
            .arg(&next.id)
            .arg(expected)
            .arg(to_json_text(next)?)
            .arg(due_score(next))
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot write schedule {}", next.id), e))?;
        match reply.as_str() {
            "ok" => Ok(true),
            "changed" => Ok(false),
            "name_taken" => Err(name_conflict(&next.name)),
            other => Err(unexpected(&format!("schedule {}", next.id), other)),
        }
    }
}

#[async_trait]
impl ScheduleStore for RedisDb {
    async fn create_schedule(&self, schedule: &Schedule) -> DbResult<Schedule> {
        let id = &schedule.id;
        let reply: String = CREATE_SCHEDULE
            .key(self.schedule_key(id))
            .arg(&self.backend.prefix)
            .arg(id)
            .arg(to_json_text(schedule)?)
            .arg(due_score(schedule))
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot write schedule {id}"), e))?;
        match reply.as_str() {
            "ok" => Ok(schedule.clone()),
            "exists" => Err(DbError::new(DbErrorKind::Conflict, format!("schedule {id} already exists"))),
            "name_taken" => Err(name_conflict(&schedule.name)),
            other => Err(unexpected(&format!("schedule {id}"), other)),
        }
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let found = self.schedule_doc(id).await?.map(|(_, s)| s);
        Ok(found.filter(|s| visible(s.user_id.as_deref(), user_id)))
    }

    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let held: Option<String> = redis::cmd("HGET")
            .arg(format!("{}:schedules:index:owner_name", self.backend.prefix))
            .arg(name_field(name, user_id))
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot look up schedule {name:?}"), e))?;
        let Some(id) = held else { return Ok(None) };
        let found = self.schedule_doc(&id).await?.map(|(_, s)| s);
        Ok(found.filter(|s| s.name == name && s.user_id.as_deref() == user_id))
    }

    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let index = format!("{}:schedules:index:", self.backend.prefix);
        let keys: Vec<String> = self
            .scan(&format!("{}:schedules:*", glob_escape(&self.backend.prefix)))
            .await?
            .into_iter()
            .filter(|k| !k.starts_with(&index))
            .collect();
        let mut list: Vec<Schedule> = self
            .mget(&keys)
            .await?
            .into_iter()
            .flatten()
            .filter_map(|t| serde_json::from_str::<Schedule>(&t).ok())
            .filter(|s| schedule_matches(s, query))
            .collect();
        list.sort_by(newest_schedule_first);
        let total = list.len() as u64;
        let (offset, limit) = schedule_page(query);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
    }

    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        self.change_schedule(id, |s| {
            visible(s.user_id.as_deref(), user_id).then(|| {
                update.apply(s, now_epoch_secs());
                s.clone()
            })
        })
        .await
    }

    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let keys = [self.schedule_key(id), self.schedule_runs_set(id)];
        let deleted: i64 = self.owned_script(&DELETE_SCHEDULE, &keys, id, user_id, "cannot delete schedule").await?;
        Ok(deleted == 1)
    }

    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        for _ in 0..CAS_ATTEMPTS {
            let ids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(format!("{}:schedules:index:next_run_at", self.backend.prefix))
                .arg("-inf")
                .arg(now)
                .query_async(&mut self.conn())
                .await
                .map_err(|e| redis_error("cannot read the due schedules", e))?;
            let keys: Vec<String> = ids.iter().map(|id| self.schedule_key(id)).collect();
            let texts = self.mget(&keys).await?;
            let mut due: Vec<(String, String, Schedule)> = keys
                .into_iter()
                .zip(texts)
                .filter_map(|(key, text)| {
                    let text = text?;
                    let s: Schedule = serde_json::from_str(&text).ok()?;
                    claimable(&s, now, lock_grace_seconds).then_some((key, text, s))
                })
                .collect();
            if due.is_empty() {
                return Ok(None);
            }
            due.sort_by(|a, b| a.2.next_run_at.cmp(&b.2.next_run_at).then_with(|| a.2.id.cmp(&b.2.id)));
            due.truncate(CLAIM_CANDIDATES);
            let mut call = CLAIM_SCHEDULE.prepare_invoke();
            call.arg(&self.backend.prefix);
            let mut claimed = Vec::with_capacity(due.len());
            for (key, text, mut s) in due {
                s.locked_by = Some(worker_id.to_owned());
                s.locked_at = Some(now);
                call.key(key).arg(text).arg(to_json_text(&s)?);
                claimed.push(s);
            }
            let at: usize =
                call.invoke_async(&mut self.conn()).await.map_err(|e| redis_error("cannot claim a schedule", e))?;
            if let Some(s) = at.checked_sub(1).and_then(|i| claimed.into_iter().nth(i)) {
                return Ok(Some(s));
            }
        }
        Err(too_busy("the due schedules"))
    }

    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        let released =
            self.change_schedule(id, |s| release(s, next_run_at, worker_id, locked_at, now_epoch_secs()).then_some(()));
        Ok(released.await?.is_some())
    }

    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let renewed = self.change_schedule(id, |s| crate::schedules::renew(s, worker_id, now).then_some(()));
        Ok(renewed.await?.is_some())
    }

    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        for _ in 0..CAS_ATTEMPTS {
            let Some((_, parent)) = self.schedule_doc(&run.schedule_id).await? else {
                return Err(DbError::new(
                    DbErrorKind::NotFound,
                    format!("schedule {} does not exist", run.schedule_id),
                ));
            };
            let mut row = run.clone();
            row.user_id.clone_from(&parent.user_id);
            let (has_owner, owner) = user_args(row.user_id.as_deref());
            let reply: String = CREATE_RUN
                .key(self.schedule_key(&run.schedule_id))
                .key(self.schedule_run_key(&row.id))
                .key(self.schedule_runs_set(&run.schedule_id))
                .arg(&self.backend.prefix)
                .arg(&row.id)
                .arg(to_json_text(&row)?)
                .arg(has_owner)
                .arg(owner)
                .invoke_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot write schedule run {}", row.id), e))?;
            match reply.as_str() {
                "ok" => return Ok(row),
                "exists" => {
                    return Err(DbError::new(DbErrorKind::Conflict, format!("schedule run {} already exists", row.id)));
                }
                // Deleted meanwhile: the next round reports it.
                "no_schedule" | "changed" => {}
                other => return Err(unexpected(&format!("schedule run {}", row.id), other)),
            }
        }
        Err(too_busy(&format!("schedule {}", run.schedule_id)))
    }

    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        self.change_doc(SCHEDULE_RUNS, id, "schedule run", |current| {
            let Some(doc) = current else { return Ok(None) };
            let mut r: ScheduleRun = serde_json::from_value(Value::Object(doc.clone())).map_err(|_| not_a_run(id))?;
            update.apply(&mut r);
            Ok(Some((to_doc(&r)?, r)))
        })
        .await
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        let found = self.schedule_run_doc(id).await?.map(|(_, r)| r);
        Ok(found.filter(|r| visible(r.user_id.as_deref(), user_id)))
    }

    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let mut list: Vec<ScheduleRun> =
            self.runs_of(schedule_id).await?.into_iter().filter(|r| visible(r.user_id.as_deref(), user_id)).collect();
        list.sort_by(newest_run_first);
        let total = list.len() as u64;
        let (offset, limit) = schedule_run_page(limit, page);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
    }

    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        let mut latest = HashMap::new();
        for id in schedule_ids {
            if latest.contains_key(id) {
                continue;
            }
            let runs = self.runs_of(id).await?;
            if let Some(run) = runs.iter().reduce(|a, b| later_run(a, b)) {
                latest.insert(id.clone(), run.clone());
            }
        }
        Ok(latest)
    }

    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let n: u64 = EXPIRE_RUNS
            .key(self.schedule_runs_set(schedule_id))
            .arg(&self.backend.prefix)
            .arg(schedule_id)
            .arg(before)
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot delete the runs of schedule {schedule_id}"), e))?;
        Ok(n)
    }
}
