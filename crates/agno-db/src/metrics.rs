//! Daily metrics, computed from sessions and runs the way Python Agno 3.x does, for any adapter.
//!
//! [`calculate_metrics`] finds the first day without a completed bucket, reads the sessions
//! created from that day to today, and writes one bucket per user per day (sessions without a
//! user go to the shared `""` bucket). A day's buckets are `completed` once the day has ended.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use agno_core::{
    DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate, SessionFacts, SessionQuery, SessionSort,
    SessionStore, SessionType, SortOrder, new_id, now_epoch_secs,
};
use serde_json::{Map, Value, json};

/// Token counters summed from each session's `session_metrics`, in Agno's order.
pub const TOKEN_FIELDS: [&str; 9] = [
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "audio_total_tokens",
    "audio_input_tokens",
    "audio_output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
];

/// Sessions read per page while calculating.
const PAGE: usize = 500;

/// Today in UTC.
pub fn today_utc() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// The day a recalculation resumes at: the earliest incomplete day after the latest completed
/// one, else the day after that completed one; capped at `today`. `None` when there are no
/// buckets at all.
pub fn resume_day(
    latest_completed: Option<NaiveDate>,
    earliest_incomplete: Option<NaiveDate>,
    today: NaiveDate,
) -> Option<NaiveDate> {
    let at = match (earliest_incomplete, latest_completed) {
        (Some(day), _) => day,
        (None, Some(day)) => day.succ_opt()?,
        (None, None) => return None,
    };
    Some(at.min(today))
}

fn day_start(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp()).unwrap_or(0)
}

fn day_of(epoch: i64) -> Option<NaiveDate> {
    chrono::DateTime::from_timestamp(epoch, 0).map(|t| t.date_naive())
}

#[derive(Default)]
struct Tally {
    sessions: [i64; 3],
    runs: [i64; 3],
    tokens: [i64; TOKEN_FIELDS.len()],
    /// `(model_id, model_provider)` -> runs, ordered for stable output.
    models: BTreeMap<(String, String), i64>,
}

fn slot(kind: SessionType) -> usize {
    match kind {
        SessionType::Agent => 0,
        SessionType::Team => 1,
        SessionType::Workflow => 2,
    }
}

/// How [`calculate_metrics_with`] reads sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsReads {
    /// The adapter's set-based read ([`MetricsStore::metrics_facts`]) where it has one, else one
    /// read per session.
    SetBased,
    /// One read per session (with its runs), whatever the adapter: the reference the set-based
    /// read is checked and measured against.
    PerSession,
}

/// Recalculates the metrics of every day from the first incomplete one to `today` and stores
/// them; returns the buckets written (empty when there was nothing to do).
///
/// # Errors
/// A [`agno_core::DbError`] from reading sessions or writing buckets; nothing is written then.
pub async fn calculate_metrics_until<D>(db: &D, today: NaiveDate) -> DbResult<Vec<MetricsBucket>>
where
    D: SessionStore + MetricsStore + ?Sized,
{
    calculate_metrics_with(db, today, MetricsReads::SetBased).await
}

/// [`calculate_metrics_until`] with a choice of how sessions are read.
///
/// # Errors
/// As [`calculate_metrics_until`].
pub async fn calculate_metrics_with<D>(db: &D, today: NaiveDate, reads: MetricsReads) -> DbResult<Vec<MetricsBucket>>
where
    D: SessionStore + MetricsStore + ?Sized,
{
    let (latest_completed, earliest_incomplete) = db.metrics_progress().await?;
    let start = match resume_day(latest_completed, earliest_incomplete, today) {
        Some(day) => day,
        None => {
            let first = db
                .get_sessions(&SessionQuery {
                    limit: Some(1),
                    sort_by: SessionSort::CreatedAt,
                    sort_order: SortOrder::Asc,
                    ..SessionQuery::default()
                })
                .await?;
            match first.sessions.first().and_then(|s| s.created_at).and_then(day_of) {
                Some(day) => day,
                None => return Ok(Vec::new()),
            }
        }
    };
    if start > today {
        return Ok(Vec::new());
    }
    let (from, to) = (day_start(start), day_start(today) + 86_400);

    // (day, owner) -> tally
    let mut tallies: BTreeMap<(NaiveDate, String), Tally> = BTreeMap::new();
    let facts = match reads {
        MetricsReads::SetBased => db.metrics_facts(from, to).await?,
        MetricsReads::PerSession => None,
    };
    if let Some(facts) = facts {
        for f in facts {
            let Some(day) = day_of(f.created_at) else { continue };
            let tally = tallies.entry((day, f.user_id.unwrap_or_default())).or_default();
            tally.sessions[slot(f.session_type)] += 1;
            tally.runs[slot(f.session_type)] += f.runs;
            for (model, provider, n) in f.models {
                *tally.models.entry((model, provider)).or_default() += n;
            }
            if let Some(metrics) = &f.session_metrics {
                for (i, field) in TOKEN_FIELDS.iter().enumerate() {
                    tally.tokens[i] += metrics.get(*field).and_then(Value::as_i64).unwrap_or(0);
                }
            }
        }
        return store_buckets(db, tallies, today).await;
    }
    for kind in [SessionType::Agent, SessionType::Team, SessionType::Workflow] {
        let mut page = 1;
        loop {
            let listed = db
                .get_sessions(&SessionQuery {
                    session_type: Some(kind),
                    start_timestamp: Some(from),
                    end_timestamp: Some(to - 1),
                    limit: Some(PAGE),
                    page: Some(page),
                    sort_by: SessionSort::CreatedAt,
                    sort_order: SortOrder::Asc,
                    ..SessionQuery::default()
                })
                .await?;
            let count = listed.sessions.len();
            for listed in listed.sessions {
                let Some(day) = listed.created_at.and_then(day_of) else { continue };
                // Read with runs (table merged with any legacy blob) for the model counts.
                let Some(session) = db.get_session(&listed.session_id, None, None).await? else { continue };
                let owner = session.user_id.clone().unwrap_or_default();
                let tally = tallies.entry((day, owner)).or_default();
                tally.sessions[slot(kind)] += 1;
                let runs = session.runs.as_deref().unwrap_or_default();
                tally.runs[slot(kind)] += i64::try_from(runs.len()).unwrap_or(i64::MAX);
                for run in runs {
                    if let Some(model) = run.model.as_deref().filter(|m| !m.is_empty()) {
                        let key = (model.to_owned(), run.model_provider.clone().unwrap_or_default());
                        *tally.models.entry(key).or_default() += 1;
                    }
                }
                let metrics =
                    session.session_data.as_ref().and_then(|d| d.get("session_metrics")).and_then(Value::as_object);
                if let Some(metrics) = metrics {
                    for (i, field) in TOKEN_FIELDS.iter().enumerate() {
                        tally.tokens[i] += metrics.get(*field).and_then(Value::as_i64).unwrap_or(0);
                    }
                }
            }
            if count < PAGE {
                break;
            }
            page += 1;
        }
    }
    store_buckets(db, tallies, today).await
}

/// Turns the tallies into buckets and stores them.
async fn store_buckets<D>(
    db: &D,
    tallies: BTreeMap<(NaiveDate, String), Tally>,
    today: NaiveDate,
) -> DbResult<Vec<MetricsBucket>>
where
    D: MetricsStore + ?Sized,
{
    let now = now_epoch_secs();
    let buckets: Vec<MetricsBucket> = tallies
        .into_iter()
        .map(|((date, owner), t)| {
            let token_metrics: Map<String, Value> =
                TOKEN_FIELDS.iter().zip(t.tokens).map(|(f, n)| ((*f).to_owned(), json!(n))).collect();
            let model_metrics = t
                .models
                .into_iter()
                .map(|((model_id, model_provider), count)| {
                    json!({"model_id": model_id, "model_provider": model_provider, "count": count})
                })
                .collect();
            MetricsBucket {
                id: new_id(),
                users_count: i64::from(!owner.is_empty()),
                user_id: Some(owner).filter(|o| !o.is_empty()),
                date,
                aggregation_period: "daily".to_owned(),
                agent_sessions_count: t.sessions[0],
                team_sessions_count: t.sessions[1],
                workflow_sessions_count: t.sessions[2],
                agent_runs_count: t.runs[0],
                team_runs_count: t.runs[1],
                workflow_runs_count: t.runs[2],
                token_metrics,
                model_metrics: Value::Array(model_metrics),
                created_at: now,
                updated_at: Some(now),
                completed: date < today,
            }
        })
        .collect();
    db.upsert_metrics(&buckets).await?;
    Ok(buckets)
}

/// [`calculate_metrics_until`] today (UTC).
///
/// # Errors
/// As [`calculate_metrics_until`].
pub async fn calculate_metrics<D>(db: &D) -> DbResult<Vec<MetricsBucket>>
where
    D: SessionStore + MetricsStore + ?Sized,
{
    calculate_metrics_until(db, today_utc()).await
}

/// One session row of a set-based metrics read: id, type, owner, creation time and its
/// `session_metrics` (JSON).
pub(crate) type SessionRowFacts = (String, String, Option<String>, i64, Option<Value>);

/// One group of a set-based runs read: session id, model, provider and how many runs.
pub(crate) type RunGroupFacts = (String, Option<String>, Option<String>, i64);

/// [`SessionFacts`] from the rows of the two set-based queries (sessions of a window, and their
/// runs grouped by model).
pub(crate) fn facts_from(sessions: Vec<SessionRowFacts>, runs: Vec<RunGroupFacts>) -> Vec<SessionFacts> {
    let mut by_id: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut facts = Vec::with_capacity(sessions.len());
    for (id, kind, user_id, created_at, metrics) in sessions {
        let Ok(session_type) = serde_json::from_value::<SessionType>(Value::String(kind)) else { continue };
        by_id.insert(id, facts.len());
        facts.push(SessionFacts {
            session_type,
            user_id,
            created_at,
            session_metrics: metrics.and_then(|m| m.as_object().cloned()),
            runs: 0,
            models: Vec::new(),
        });
    }
    for (id, model, provider, n) in runs {
        let Some(f) = by_id.get(&id).and_then(|&i| facts.get_mut(i)) else { continue };
        f.runs += n;
        if let Some(model) = model.filter(|m| !m.is_empty()) {
            f.models.push((model, provider.unwrap_or_default(), n));
        }
    }
    facts
}

/// True when a metrics bucket passes the query (`Some("")` selects the shared bucket).
pub(crate) fn metrics_match(b: &MetricsBucket, q: &MetricsQuery) -> bool {
    q.starting_date.is_none_or(|d| b.date >= d)
        && q.ending_date.is_none_or(|d| b.date <= d)
        && q.user_id.as_deref().is_none_or(|u| b.bucket_key() == u)
}

/// Metrics read order: by date, then owner.
pub(crate) fn metrics_order(a: &MetricsBucket, b: &MetricsBucket) -> Ordering {
    a.date
        .cmp(&b.date)
        .then_with(|| a.bucket_key().cmp(b.bucket_key()))
        .then_with(|| a.aggregation_period.cmp(&b.aggregation_period))
}

/// [`MetricsStore::metrics_progress`] over buckets held in process.
pub(crate) fn progress_of<'a>(
    buckets: impl Iterator<Item = &'a MetricsBucket> + Clone,
) -> (Option<NaiveDate>, Option<NaiveDate>) {
    let latest_completed = buckets.clone().filter(|b| b.completed).map(|b| b.date).max();
    let earliest_incomplete =
        buckets.filter(|b| !b.completed && latest_completed.is_none_or(|l| b.date > l)).map(|b| b.date).min();
    (latest_completed, earliest_incomplete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn resume_day_follows_agno_rule() {
        let today = d("2026-11-30");
        assert_eq!(resume_day(None, None, today), None);
        assert_eq!(resume_day(Some(d("2026-11-20")), None, today), Some(d("2026-11-21")));
        assert_eq!(resume_day(Some(d("2026-11-20")), Some(d("2026-11-25")), today), Some(d("2026-11-25")));
        assert_eq!(resume_day(Some(d("2026-12-20")), None, today), Some(today));
    }
}
