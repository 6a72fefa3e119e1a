//! Schedules and schedule runs of the document stores. Python Agno's `JsonDb` has no schedules, so they
//! are stored the way it stores its other tables: one file per table (`agno_schedules.json`,
//! `agno_schedule_runs.json`), each a JSON list of `Schedule.to_dict()` / `ScheduleRun.to_dict()`
//! documents.
//!
//! Every change is one read-modify-write under the directory's exclusive lock, so the unique
//! name per owner, the exclusive claim, the run's owner copied from its schedule and the delete
//! cascade (runs first, then the schedule) hold across processes. A changed document is
//! replaced in place; the others are written back untouched.

use std::collections::HashMap;

use agno_core::{
    DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{DocBackend, DocDb, Docs};
use crate::doc::visible;
use crate::schedules::{
    claimable, later_run, newest_run_first, newest_schedule_first, release, schedule_matches, schedule_page,
    schedule_run_page,
};

fn doc_id(doc: &Value) -> Option<&str> {
    doc.get("id").and_then(Value::as_str)
}

fn to_doc<T: Serialize>(value: &T, what: &str) -> DbResult<Value> {
    serde_json::to_value(value)
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode {what} as JSON: {e}")).with_source(e))
}

/// Every document of a table that parses as `T` (others are skipped, and kept on write).
fn parsed<T: DeserializeOwned>(docs: &[Value]) -> Vec<T> {
    docs.iter().filter_map(|d| serde_json::from_value(d.clone()).ok()).collect()
}

/// The position and value of the document with this id.
fn find<T: DeserializeOwned>(docs: &[Value], id: &str, what: &str) -> DbResult<Option<(usize, T)>> {
    let Some(i) = docs.iter().position(|d| doc_id(d) == Some(id)) else { return Ok(None) };
    let value = docs.get(i).cloned().unwrap_or(Value::Null);
    let parsed = serde_json::from_value(value).map_err(|e| {
        DbError::new(DbErrorKind::Other, format!("stored {what} {id} is not a valid {what} document: {e}"))
            .with_source(e)
    })?;
    Ok(Some((i, parsed)))
}

fn name_taken(docs: &[Value], name: &str, owner: Option<&str>, except: &str) -> bool {
    docs.iter().any(|d| {
        doc_id(d) != Some(except)
            && d.get("name").and_then(Value::as_str) == Some(name)
            && d.get("user_id").and_then(Value::as_str) == owner
    })
}

fn name_conflict(name: &str) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("a schedule named {name:?} already exists for this owner"))
}

/// Replaces document `i` of `table` with `value` and writes the table.
fn put<T: Serialize>(
    files: &mut dyn Docs,
    table: &str,
    mut docs: Vec<Value>,
    i: usize,
    value: &T,
    what: &str,
) -> DbResult<()> {
    if let Some(slot) = docs.get_mut(i) {
        *slot = to_doc(value, what)?;
    }
    files.write(table, docs)
}

#[async_trait]
impl<B: DocBackend> ScheduleStore for DocDb<B> {
    async fn create_schedule(&self, schedule: &Schedule) -> DbResult<Schedule> {
        let schedule = schedule.clone();
        self.write(move |files| {
            let table = &files.tables().schedules.clone();
            let mut docs = files.read(table)?.into_owned();
            if docs.iter().any(|d| doc_id(d) == Some(schedule.id.as_str())) {
                return Err(DbError::new(DbErrorKind::Conflict, format!("schedule {} already exists", schedule.id)));
            }
            if name_taken(&docs, &schedule.name, schedule.user_id.as_deref(), &schedule.id) {
                return Err(name_conflict(&schedule.name));
            }
            docs.push(to_doc(&schedule, "schedule")?);
            files.write(table, docs)?;
            Ok(schedule)
        })
        .await
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let (id, user_id) = (id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let docs = files.read(&files.tables().schedules)?;
            let found = find::<Schedule>(&docs, &id, "schedule")?.map(|(_, s)| s);
            Ok(found.filter(|s| visible(s.user_id.as_deref(), user_id.as_deref())))
        })
        .await
    }

    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let (name, user_id) = (name.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let docs = files.read(&files.tables().schedules)?;
            Ok(parsed::<Schedule>(&docs).into_iter().find(|s| s.name == name && s.user_id == user_id))
        })
        .await
    }

    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            let docs = files.read(&files.tables().schedules)?;
            let mut list: Vec<Schedule> =
                parsed::<Schedule>(&docs).into_iter().filter(|s| schedule_matches(s, &query)).collect();
            list.sort_by(newest_schedule_first);
            let total = list.len() as u64;
            let (offset, limit) = schedule_page(&query);
            Ok((list.into_iter().skip(offset).take(limit).collect(), total))
        })
        .await
    }

    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        let (id, user_id, update) = (id.to_owned(), user_id.map(str::to_owned), update.clone());
        self.write(move |files| {
            let table = &files.tables().schedules.clone();
            let docs = files.read(table)?.into_owned();
            let Some((i, current)) = find::<Schedule>(&docs, &id, "schedule")? else { return Ok(None) };
            if !visible(current.user_id.as_deref(), user_id.as_deref()) {
                return Ok(None);
            }
            let mut next = current.clone();
            update.apply(&mut next, now_epoch_secs());
            if next.name != current.name && name_taken(&docs, &next.name, next.user_id.as_deref(), &id) {
                return Err(name_conflict(&next.name));
            }
            put(files, table, docs, i, &next, "schedule")?;
            Ok(Some(next))
        })
        .await
    }

    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let (id, user_id) = (id.to_owned(), user_id.map(str::to_owned));
        self.write(move |files| {
            let t = files.tables().clone();
            // The cascade carries the same owner guard, so another user's runs are kept.
            let mut runs = files.read(&t.schedule_runs)?.into_owned();
            let before = runs.len();
            runs.retain(|r| {
                !(r.get("schedule_id").and_then(Value::as_str) == Some(id.as_str())
                    && visible(r.get("user_id").and_then(Value::as_str), user_id.as_deref()))
            });
            if runs.len() != before {
                files.write(&t.schedule_runs, runs)?;
            }
            let mut docs = files.read(&t.schedules)?.into_owned();
            let Some((i, s)) = find::<Schedule>(&docs, &id, "schedule")? else { return Ok(false) };
            if !visible(s.user_id.as_deref(), user_id.as_deref()) {
                return Ok(false);
            }
            docs.remove(i);
            files.write(&t.schedules, docs)?;
            Ok(true)
        })
        .await
    }

    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        let worker_id = worker_id.to_owned();
        self.write(move |files| {
            let table = &files.tables().schedules.clone();
            let docs = files.read(table)?.into_owned();
            let due = docs
                .iter()
                .enumerate()
                .filter_map(|(i, d)| serde_json::from_value::<Schedule>(d.clone()).ok().map(|s| (i, s)))
                .filter(|(_, s)| claimable(s, now, lock_grace_seconds))
                .min_by(|(_, a), (_, b)| a.next_run_at.cmp(&b.next_run_at).then_with(|| a.id.cmp(&b.id)));
            let Some((i, mut s)) = due else { return Ok(None) };
            s.locked_by = Some(worker_id);
            s.locked_at = Some(now);
            put(files, table, docs, i, &s, "schedule")?;
            Ok(Some(s))
        })
        .await
    }

    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        let (id, worker_id) = (id.to_owned(), worker_id.map(str::to_owned));
        self.write(move |files| {
            let table = &files.tables().schedules.clone();
            let docs = files.read(table)?.into_owned();
            let Some((i, mut s)) = find::<Schedule>(&docs, &id, "schedule")? else { return Ok(false) };
            if !release(&mut s, next_run_at, worker_id.as_deref(), locked_at, now_epoch_secs()) {
                return Ok(false);
            }
            put(files, table, docs, i, &s, "schedule")?;
            Ok(true)
        })
        .await
    }

    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let (id, worker_id) = (id.to_owned(), worker_id.to_owned());
        self.write(move |files| {
            let table = &files.tables().schedules.clone();
            let docs = files.read(table)?.into_owned();
            let Some((i, mut s)) = find::<Schedule>(&docs, &id, "schedule")? else { return Ok(false) };
            if !crate::schedules::renew(&mut s, &worker_id, now) {
                return Ok(false);
            }
            put(files, table, docs, i, &s, "schedule")?;
            Ok(true)
        })
        .await
    }

    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        let mut row = run.clone();
        self.write(move |files| {
            let t = files.tables().clone();
            let schedules = files.read(&t.schedules)?;
            let Some((_, parent)) = find::<Schedule>(&schedules, &row.schedule_id, "schedule")? else {
                return Err(DbError::new(
                    DbErrorKind::NotFound,
                    format!("schedule {} does not exist", row.schedule_id),
                ));
            };
            let mut runs = files.read(&t.schedule_runs)?.into_owned();
            if runs.iter().any(|r| doc_id(r) == Some(row.id.as_str())) {
                return Err(DbError::new(DbErrorKind::Conflict, format!("schedule run {} already exists", row.id)));
            }
            row.user_id = parent.user_id;
            runs.push(to_doc(&row, "schedule run")?);
            files.write(&t.schedule_runs, runs)?;
            Ok(row)
        })
        .await
    }

    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        let (id, update) = (id.to_owned(), update.clone());
        self.write(move |files| {
            let table = &files.tables().schedule_runs.clone();
            let docs = files.read(table)?.into_owned();
            let Some((i, mut r)) = find::<ScheduleRun>(&docs, &id, "schedule run")? else { return Ok(None) };
            update.apply(&mut r);
            put(files, table, docs, i, &r, "schedule run")?;
            Ok(Some(r))
        })
        .await
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        let (id, user_id) = (id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let docs = files.read(&files.tables().schedule_runs)?;
            let found = find::<ScheduleRun>(&docs, &id, "schedule run")?.map(|(_, r)| r);
            Ok(found.filter(|r| visible(r.user_id.as_deref(), user_id.as_deref())))
        })
        .await
    }

    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let (schedule_id, user_id) = (schedule_id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let docs = files.read(&files.tables().schedule_runs)?;
            let mut list: Vec<ScheduleRun> = parsed::<ScheduleRun>(&docs)
                .into_iter()
                .filter(|r| r.schedule_id == schedule_id && visible(r.user_id.as_deref(), user_id.as_deref()))
                .collect();
            list.sort_by(newest_run_first);
            let total = list.len() as u64;
            let (offset, limit) = schedule_run_page(limit, page);
            Ok((list.into_iter().skip(offset).take(limit).collect(), total))
        })
        .await
    }

    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        if schedule_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let schedule_ids = schedule_ids.to_vec();
        self.read(move |files| {
            let runs = parsed::<ScheduleRun>(&files.read(&files.tables().schedule_runs)?);
            let mut latest: HashMap<String, &ScheduleRun> = HashMap::new();
            for r in runs.iter().filter(|r| schedule_ids.contains(&r.schedule_id)) {
                latest.entry(r.schedule_id.clone()).and_modify(|cur| *cur = later_run(cur, r)).or_insert(r);
            }
            Ok(latest.into_iter().map(|(k, v)| (k, v.clone())).collect())
        })
        .await
    }

    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let schedule_id = schedule_id.to_owned();
        self.write(move |files| {
            let table = &files.tables().schedule_runs.clone();
            let mut docs = files.read(table)?.into_owned();
            let n = docs.len();
            docs.retain(|d| {
                !(d.get("schedule_id").and_then(Value::as_str) == Some(schedule_id.as_str())
                    && d.get("completed_at").and_then(Value::as_i64).is_some_and(|t| t < before))
            });
            let deleted = (n - docs.len()) as u64;
            if deleted > 0 {
                files.write(table, docs)?;
            }
            Ok(deleted)
        })
        .await
    }
}
