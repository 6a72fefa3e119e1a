//! Schedules and schedule runs of the in-memory store; the reference semantics the other
//! adapters follow.

use std::collections::HashMap;

use agno_core::{
    DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, now_epoch_secs,
};
use async_trait::async_trait;

use super::{InMemoryDb, visible};
use crate::schedules::{
    claimable, later_run, newest_run_first, newest_schedule_first, release, schedule_matches, schedule_page,
    schedule_run_page,
};

fn name_taken(schedules: &HashMap<String, Schedule>, name: &str, owner: Option<&str>, except: &str) -> bool {
    schedules.values().any(|s| s.id != except && s.name == name && s.user_id.as_deref() == owner)
}

fn name_conflict(name: &str) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("a schedule named {name:?} already exists for this owner"))
}

#[async_trait]
impl ScheduleStore for InMemoryDb {
    async fn create_schedule(&self, schedule: &Schedule) -> DbResult<Schedule> {
        let mut tables = self.lock()?;
        if tables.schedules.contains_key(&schedule.id) {
            return Err(DbError::new(DbErrorKind::Conflict, format!("schedule {} already exists", schedule.id)));
        }
        if name_taken(&tables.schedules, &schedule.name, schedule.user_id.as_deref(), &schedule.id) {
            return Err(name_conflict(&schedule.name));
        }
        tables.schedules.insert(schedule.id.clone(), schedule.clone());
        Ok(schedule.clone())
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        Ok(self.lock()?.schedules.get(id).filter(|s| visible(s.user_id.as_deref(), user_id)).cloned())
    }

    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        Ok(self.lock()?.schedules.values().find(|s| s.name == name && s.user_id.as_deref() == user_id).cloned())
    }

    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let tables = self.lock()?;
        let mut list: Vec<Schedule> =
            tables.schedules.values().filter(|s| schedule_matches(s, query)).cloned().collect();
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
        let mut tables = self.lock()?;
        let Some(current) = tables.schedules.get(id).filter(|s| visible(s.user_id.as_deref(), user_id)) else {
            return Ok(None);
        };
        let mut next = current.clone();
        update.apply(&mut next, now_epoch_secs());
        if next.name != current.name && name_taken(&tables.schedules, &next.name, next.user_id.as_deref(), id) {
            return Err(name_conflict(&next.name));
        }
        tables.schedules.insert(id.to_owned(), next.clone());
        Ok(Some(next))
    }

    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let mut tables = self.lock()?;
        // The cascade carries the same owner guard, so another user's runs are kept.
        tables.schedule_runs.retain(|_, r| !(r.schedule_id == id && visible(r.user_id.as_deref(), user_id)));
        let owned = tables.schedules.get(id).is_some_and(|s| visible(s.user_id.as_deref(), user_id));
        Ok(owned && tables.schedules.remove(id).is_some())
    }

    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        let mut tables = self.lock()?;
        let due = tables
            .schedules
            .values()
            .filter(|s| claimable(s, now, lock_grace_seconds))
            .min_by(|a, b| a.next_run_at.cmp(&b.next_run_at).then_with(|| a.id.cmp(&b.id)))
            .map(|s| s.id.clone());
        let Some(id) = due else { return Ok(None) };
        let Some(s) = tables.schedules.get_mut(&id) else { return Ok(None) };
        s.locked_by = Some(worker_id.to_owned());
        s.locked_at = Some(now);
        Ok(Some(s.clone()))
    }

    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        let mut tables = self.lock()?;
        Ok(tables
            .schedules
            .get_mut(id)
            .is_some_and(|s| release(s, next_run_at, worker_id, locked_at, now_epoch_secs())))
    }

    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let mut tables = self.lock()?;
        Ok(tables.schedules.get_mut(id).is_some_and(|s| crate::schedules::renew(s, worker_id, now)))
    }

    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        let mut tables = self.lock()?;
        let Some(parent) = tables.schedules.get(&run.schedule_id) else {
            return Err(DbError::new(DbErrorKind::NotFound, format!("schedule {} does not exist", run.schedule_id)));
        };
        if tables.schedule_runs.contains_key(&run.id) {
            return Err(DbError::new(DbErrorKind::Conflict, format!("schedule run {} already exists", run.id)));
        }
        let mut row = run.clone();
        row.user_id.clone_from(&parent.user_id);
        tables.schedule_runs.insert(row.id.clone(), row.clone());
        Ok(row)
    }

    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        let mut tables = self.lock()?;
        Ok(tables.schedule_runs.get_mut(id).map(|r| {
            update.apply(r);
            r.clone()
        }))
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        Ok(self.lock()?.schedule_runs.get(id).filter(|r| visible(r.user_id.as_deref(), user_id)).cloned())
    }

    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let tables = self.lock()?;
        let mut list: Vec<ScheduleRun> = tables
            .schedule_runs
            .values()
            .filter(|r| r.schedule_id == schedule_id && visible(r.user_id.as_deref(), user_id))
            .cloned()
            .collect();
        list.sort_by(newest_run_first);
        let total = list.len() as u64;
        let (offset, limit) = schedule_run_page(limit, page);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
    }

    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        let tables = self.lock()?;
        let mut latest: HashMap<String, &ScheduleRun> = HashMap::new();
        for r in tables.schedule_runs.values().filter(|r| schedule_ids.contains(&r.schedule_id)) {
            latest.entry(r.schedule_id.clone()).and_modify(|cur| *cur = later_run(cur, r)).or_insert(r);
        }
        Ok(latest.into_iter().map(|(k, v)| (k, v.clone())).collect())
    }

    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let n = tables.schedule_runs.len();
        tables
            .schedule_runs
            .retain(|_, r| !(r.schedule_id == schedule_id && r.completed_at.is_some_and(|t| t < before)));
        Ok((n - tables.schedule_runs.len()) as u64)
    }
}
