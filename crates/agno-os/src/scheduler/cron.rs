//! Cron expressions (5 fields: minute, hour, day of month, month, day of week; or a nickname
//! such as `@daily`) read in an IANA time zone, as Agno's `scheduler/cron.py` reads them.
//!
//! Daylight saving time, for a schedule at a fixed time of day (no `*` or step in its seconds,
//! minutes or hours):
//! - a time the clocks skip (02:30 when 02:00 jumps to 03:00) fires once, at the first instant
//!   after the jump (03:00 local);
//! - a time the clocks repeat (01:30 when 02:00 falls back to 01:00) fires once, at its first
//!   occurrence.
//!
//! A schedule with a wildcard or step in those fields (`*/15 * * * *`) fires at every real
//! occurrence: in the repeated hour twice, in the skipped hour not at all. These are the
//! [Open Cron Pattern Specification](https://github.com/open-source-cron/ocps) rules, which the
//! `croner` crate implements.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;

/// Why a cron expression or time zone cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// The expression does not parse.
    #[error("Invalid cron expression: {expr} ({why})")]
    Expression {
        /// The expression.
        expr: String,
        /// What is wrong.
        why: String,
    },
    /// The time zone is not an IANA name.
    #[error("Invalid timezone: {0} (use an IANA name such as UTC or Europe/Berlin)")]
    Timezone(String),
    /// The expression has no time after the given one.
    #[error("cron expression {0} has no next time")]
    NoNext(String),
}

/// A parsed cron expression with its time zone.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    cron: Cron,
    tz: Tz,
    expr: String,
}

impl CronSchedule {
    /// Parses `expr` (exactly 5 fields, or `@yearly`, `@monthly`, `@weekly`, `@daily`,
    /// `@hourly`) in time zone `timezone`.
    ///
    /// # Errors
    /// [`CronError::Expression`] or [`CronError::Timezone`].
    pub fn parse(expr: &str, timezone: &str) -> Result<Self, CronError> {
        let bad = |why: &str| CronError::Expression { expr: expr.to_owned(), why: why.to_owned() };
        let trimmed = expr.trim();
        let fields = trimmed.split_whitespace().count();
        if trimmed.starts_with('@') {
            if fields != 1 {
                return Err(bad("a nickname such as @daily stands alone"));
            }
        } else if fields != 5 {
            return Err(bad("use 5 fields: minute hour day-of-month month day-of-week"));
        }
        // `@midnight` is `@daily` (Vixie cron's name for it).
        let pattern = if trimmed.eq_ignore_ascii_case("@midnight") { "@daily" } else { trimmed };
        let cron = Cron::from_str(&wrap_ranges(pattern)).map_err(|e| bad(&e.to_string()))?;
        let tz = Tz::from_str(timezone.trim()).map_err(|_| CronError::Timezone(timezone.to_owned()))?;
        Ok(Self { cron, tz, expr: trimmed.to_owned() })
    }

    /// The first firing time strictly after `after` (epoch seconds).
    ///
    /// # Errors
    /// [`CronError::NoNext`] when there is none (a date that never comes, such as 30 February).
    pub fn next_after(&self, after: i64) -> Result<i64, CronError> {
        let no_next = || CronError::NoNext(self.expr.clone());
        let start: DateTime<Utc> = Utc.timestamp_opt(after, 0).single().ok_or_else(no_next)?;
        let local = start.with_timezone(&self.tz);
        let next = self.cron.find_next_occurrence(&local, false).map_err(|_| no_next())?;
        Ok(next.timestamp())
    }

    /// Agno's `compute_next_run`: the first firing time after `after`, never earlier than
    /// `now + 1` (a schedule is never set in the past).
    ///
    /// # Errors
    /// As [`CronSchedule::next_after`].
    pub fn next_run(&self, after: i64, now: i64) -> Result<i64, CronError> {
        Ok(self.next_after(after)?.max(now + 1))
    }
}

/// The bounds and names of the five fields.
const FIELDS: [(u32, u32, &[&str]); 5] = [
    (0, 59, &[]),
    (0, 23, &[]),
    (1, 31, &[]),
    (1, 12, &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]),
    (0, 6, &["sun", "mon", "tue", "wed", "thu", "fri", "sat"]),
];

/// A range that wraps around its field's end (`22-2` hours, `fri-mon`) as the two ranges it
/// covers (`22-23,0-2`), each with the step given; a range whose step passes its end as its first
/// value (`2-7/29` fires only at 2); names (in any case) and numbers with leading zeros as plain
/// numbers; a list holding `*` as `*`; other items as written.
fn wrap_ranges(expr: &str) -> String {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    if fields.len() != FIELDS.len() {
        return expr.to_owned();
    }
    let value = |text: &str, names: &[&str], first: u32| -> Option<u32> {
        text.parse().ok().or_else(|| {
            names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(text))
                .and_then(|i| u32::try_from(i).ok())
                .map(|i| i + first)
        })
    };
    fields
        .iter()
        .zip(FIELDS)
        .map(|(field, (min, max, names))| {
            let first = if names.len() == 12 { 1 } else { 0 };
            // A list holding `*` is every value (croniter reads it so; croner refuses it).
            if field.split(',').any(|item| item == "*") {
                return "*".to_owned();
            }
            let items: Vec<String> = field
                .split(',')
                .map(|item| {
                    let (range, step) = item.split_once('/').map_or((item, None), |(r, s)| (r, Some(s)));
                    let Some((from, to)) = range.split_once('-') else {
                        // A single value as its number (a name in any case, `03`); `*`, `L`, ... as written.
                        return match (value(range, names, first), step) {
                            (Some(v), Some(s)) => format!("{v}/{s}"),
                            (Some(v), None) => v.to_string(),
                            (None, _) => item.to_owned(),
                        };
                    };
                    let every = step.and_then(|s| s.parse::<u32>().ok()).filter(|s| *s > 0);
                    // One range with its step, or its first value when the step passes its end.
                    let range_of = |a: u32, b: u32| match (every, step) {
                        _ if a == b => a.to_string(),
                        (Some(s), _) if s > b - a => a.to_string(),
                        (_, Some(s)) => format!("{a}-{b}/{s}"),
                        (_, None) => format!("{a}-{b}"),
                    };
                    // Day 7 of the week is Sunday, 0.
                    let bound =
                        |text: &str| value(text, names, first).map(|v| if names.len() == 7 && v == 7 { 0 } else { v });
                    match (bound(from), bound(to)) {
                        // croniter reads a range from a value to itself as the whole field.
                        (Some(a), Some(b)) if a == b && a >= min && a <= max => match step {
                            Some(s) => format!("*/{s}"),
                            None => "*".to_owned(),
                        },
                        (Some(a), Some(b)) if a > b && b >= min && a <= max => match every {
                            Some(s) => wrapped_steps(a, b, s, min, max),
                            None => format!("{},{}", range_of(a, max), range_of(min, b)),
                        },
                        (Some(a), Some(b)) if a <= b => range_of(a, b),
                        _ => item.to_owned(),
                    }
                })
                .collect();
            // An item read as the whole field makes the list the whole field.
            if items.iter().any(|item| item == "*") { "*".to_owned() } else { items.join(",") }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The values of a range that wraps around its field's end with a step (`54-41/11` minutes), as
/// croniter lists them: from `a` to the field's end by `step`, then from the field's start to `b`,
/// the start pushed on by what the step had left to cover when it passed the end (`54,6,17,28,39`).
fn wrapped_steps(a: u32, b: u32, step: u32, min: u32, max: u32) -> String {
    let first: Vec<u32> = (a..=max).step_by(step as usize).collect();
    let mut skip = 0;
    if let Some(&last) = first.last() {
        let already = max - last;
        if (last - min) + step > max - min + 1 && already < step {
            skip = step - already;
        }
    }
    let values: Vec<String> =
        first.into_iter().chain((min + skip..=b).step_by(step as usize)).map(|v| v.to_string()).collect();
    values.join(",")
}

/// Checks a time zone name.
///
/// # Errors
/// [`CronError::Timezone`].
pub fn check_timezone(timezone: &str) -> Result<(), CronError> {
    Tz::from_str(timezone.trim()).map(|_| ()).map_err(|_| CronError::Timezone(timezone.to_owned()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ranges_wrap_around_the_end_of_their_field() {
        assert_eq!(wrap_ranges("5-3 22-2 * * fri-mon"), "5-59,0-3 22-23,0-2 * * 5-6,0-1");
        assert_eq!(wrap_ranges("0 9 * * MON-FRI"), "0 9 * * 1-5", "names read as their numbers");
        assert_eq!(wrap_ranges("*/5 1-3/2 * nov-feb *"), "*/5 1-3/2 * 11-12,1-2 *");
        assert_eq!(wrap_ranges("21-6/49 2-7/29 * * *"), "21 2 * * *", "steps past the range's end");
        // As croniter: a stepped range that wraps goes on where the step left the field's end,
        // day 7 of the week is Sunday, and a range from a value to itself is the whole field.
        assert_eq!(wrap_ranges("54-41/11 20-11/6 30-2/5 11-6/11 5-2/2"), "54,6,17,28,39 20,3,9 30 11 5,0,2");
        assert_eq!(wrap_ranges("58-3/1 * * * 6-7"), "58,59,0,1,2,3 * * * 6,0");
        assert_eq!(wrap_ranges("5-5 3-3/2 * * 7-2"), "* */2 * * 0-2");
        let fuzzed = "2 */4,6-0,15,22,14,06,02-21/23 9,7,L,1,12,31,L,31,27,31-31 Oct,Feb-FEB,feB-jun,NOv-Mar/10 sAt";
        assert_eq!(wrap_ranges(fuzzed), "2 */4,6-23,0,15,22,14,6,2 * * 6");
        assert!(CronSchedule::parse(fuzzed, "UTC").is_ok(), "{}", wrap_ranges(fuzzed));
        assert!(CronSchedule::parse("21-6/49 2-7/3 20-8,*/31 12,3-4,APR 4,WEd", "UTC").is_ok());
        // Found by the fuzz campaign: a range ending where its field starts, leading zeros.
        let fuzzed = "3,*/1,*,*,02,*,1,*,13,*/34,*/10,3-8 21,10-23/10 30-2/16,5,31,3 10 3-0,*/3,2-0/3";
        assert!(CronSchedule::parse(fuzzed, "UTC").is_ok(), "{}", wrap_ranges(fuzzed));
        let fuzzed = "4-9/28 1,*,6,17,8,03,1,*,5-22,*/5,*,21 */30,31 2,Nov,*/10 WeD,sUN";
        assert!(CronSchedule::parse(fuzzed, "UTC").is_ok(), "{}", wrap_ranges(fuzzed));
        assert_eq!(wrap_ranges("0 03 * Nov WeD,sUN"), "0 3 * 11 3,0");
        let fuzzed = "25-0/10,08,10,54-41/11,24,5-02,51,*/8 20-11/6,*,21 L,L,3,L APr,11-6/11 7-5,5";
        assert!(CronSchedule::parse(fuzzed, "UTC").is_ok(), "{}", wrap_ranges(fuzzed));
        for nickname in ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"] {
            assert!(CronSchedule::parse(nickname, "UTC").is_ok(), "{nickname}");
        }
        assert!(CronSchedule::parse("0 22-2 * * sat-mon", "UTC").is_ok());
    }

    fn epoch(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp()
    }

    fn iso(t: i64) -> String {
        Utc.timestamp_opt(t, 0).unwrap().to_rfc3339()
    }

    #[test]
    fn five_fields_or_a_nickname() {
        for bad in ["* * * *", "0 * * * * *", "61 * * * *", "* 25 * * *", "nonsense", "@daily 1", ""] {
            let err = CronSchedule::parse(bad, "UTC").unwrap_err();
            assert!(matches!(err, CronError::Expression { .. }), "{bad}: {err}");
            assert!(err.to_string().starts_with("Invalid cron expression"), "{err}");
        }
        assert!(CronSchedule::parse("@daily", "UTC").is_ok());
        assert!(CronSchedule::parse("*/5 9-17 * * MON-FRI", "Europe/Berlin").is_ok());
        let err = CronSchedule::parse("* * * * *", "Mars/Olympus").unwrap_err();
        assert_eq!(err.to_string(), "Invalid timezone: Mars/Olympus (use an IANA name such as UTC or Europe/Berlin)");
    }

    #[test]
    fn the_next_time_is_read_in_the_time_zone() {
        let c = CronSchedule::parse("0 9 * * *", "America/New_York").unwrap();
        // 09:00 EST = 14:00 UTC in January.
        assert_eq!(iso(c.next_after(epoch("2026-01-10T15:00:00Z")).unwrap()), "2026-01-11T14:00:00+00:00");
        // Strictly after.
        assert_eq!(iso(c.next_after(epoch("2026-01-11T14:00:00Z")).unwrap()), "2026-01-12T14:00:00+00:00");
        // Never in the past.
        assert_eq!(c.next_run(0, 2_000_000_000).unwrap(), 2_000_000_001);
        let never = CronSchedule::parse("0 0 30 2 *", "UTC").unwrap();
        assert!(matches!(never.next_after(0), Err(CronError::NoNext(_))));
    }

    /// 02:30 in Europe/Berlin around both changes of 2026 (29 March: 02:00 CET -> 03:00 CEST;
    /// 25 October: 03:00 CEST -> 02:00 CET), on a controlled clock: every firing from one
    /// week before to one week after.
    #[test]
    fn a_time_the_clocks_skip_fires_after_the_jump_and_a_repeated_one_fires_once() {
        let c = CronSchedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let fires = |from: &str, n: usize| {
            let mut t = epoch(from);
            (0..n)
                .map(|_| {
                    t = c.next_after(t).unwrap();
                    iso(t)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            fires("2026-03-27T12:00:00Z", 4),
            [
                "2026-03-28T01:30:00+00:00", // 02:30 CET
                "2026-03-29T01:00:00+00:00", // 02:30 does not exist: 03:00 CEST, right after the jump
                "2026-03-30T00:30:00+00:00", // 02:30 CEST
                "2026-03-31T00:30:00+00:00",
            ]
        );
        assert_eq!(
            fires("2026-10-23T12:00:00Z", 4),
            [
                "2026-10-24T00:30:00+00:00", // 02:30 CEST
                "2026-10-25T00:30:00+00:00", // 02:30 happens twice: the first one (CEST) only
                "2026-10-26T01:30:00+00:00", // 02:30 CET
                "2026-10-27T01:30:00+00:00",
            ]
        );
        // An interval schedule fires at every real half hour, both times through the repeated hour.
        let q = CronSchedule::parse("*/30 * * * *", "Europe/Berlin").unwrap();
        let mut t = epoch("2026-10-25T00:00:00Z");
        let mut seen = Vec::new();
        for _ in 0..4 {
            t = q.next_after(t).unwrap();
            seen.push(iso(t));
        }
        assert_eq!(
            seen,
            [
                "2026-10-25T00:30:00+00:00", // 02:30 CEST
                "2026-10-25T01:00:00+00:00", // 02:00 CET (the repeated hour)
                "2026-10-25T01:30:00+00:00", // 02:30 CET
                "2026-10-25T02:00:00+00:00", // 03:00 CET
            ]
        );
    }
}
