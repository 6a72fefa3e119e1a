//! Schedules and schedule runs in PostgreSQL (`agno_schedules`, `agno_schedule_runs`, as Python
//! Agno 3.x's `PostgresDb` shapes them): JSONB payloads, names unique per owner through two
//! partial unique indexes, runs cascading from their schedule: their DDL. The store is [`crate::sql::schedules`];
//! PostgreSQL cannot store NUL in text, which [`clean_text`] and [`clean_json`] remove.

use serde_json::Value;

use super::sanitize;
use super::schema::index_ddl;

/// The schedules table as Python Agno 3.1 creates it: columns, the single-column and composite
/// indexes, and the partial unique indexes `{table}_uq_user_name` / `{table}_uq_unowned_name`
/// that keep names unique per owner (NULL owners included).
pub(crate) fn schedules_ddl(q: &str, t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription TEXT, \n\tmethod VARCHAR NOT NULL, \n\tendpoint VARCHAR NOT NULL, \n\tpayload JSONB, \n\tcron_expr VARCHAR NOT NULL, \n\ttimezone VARCHAR NOT NULL, \n\ttimeout_seconds BIGINT NOT NULL, \n\tmax_retries BIGINT NOT NULL, \n\tretry_delay_seconds BIGINT NOT NULL, \n\tenabled BOOLEAN NOT NULL, \n\tnext_run_at BIGINT, \n\tlocked_by VARCHAR, \n\tlocked_at BIGINT, \n\tuser_id VARCHAR, \n\tmanaged_by VARCHAR, \n\ttarget_type VARCHAR, \n\ttarget_id VARCHAR, \n\tcreated_by_run_id VARCHAR, \n\tcreated_by_session_id VARCHAR, \n\tupdated_by_run_id VARCHAR, \n\tupdated_by_session_id VARCHAR, \n\tdisabled_reason VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (id)\n)"
    )];
    for columns in [
        &["name"][..],
        &["next_run_at"],
        &["user_id"],
        &["managed_by"],
        &["target_id"],
        &["created_at"],
        &["enabled", "next_run_at"],
        &["user_id", "enabled", "next_run_at"],
    ] {
        ddl.push(index_ddl(q, t, columns));
    }
    ddl.extend(name_backstop_ddl(q, t).into_iter().map(|(_, sql)| sql));
    ddl
}

/// `(index name, DDL)` of the two partial unique indexes backing per-owner schedule names.
pub(crate) fn name_backstop_ddl(q: &str, t: &str) -> [(String, String); 2] {
    let user = format!("{t}_uq_user_name");
    let unowned = format!("{t}_uq_unowned_name");
    [
        (
            user.clone(),
            format!("CREATE UNIQUE INDEX IF NOT EXISTS \"{user}\" ON {q} (user_id, name) WHERE user_id IS NOT NULL"),
        ),
        (
            unowned.clone(),
            format!("CREATE UNIQUE INDEX IF NOT EXISTS \"{unowned}\" ON {q} (name) WHERE user_id IS NULL"),
        ),
    ]
}

/// The schedule runs table as Python Agno 3.1 creates it, its `schedule_id` a foreign key to the
/// schedules table with `ON DELETE CASCADE`.
pub(crate) fn schedule_runs_ddl(q: &str, t: &str, schedules_q: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tschedule_id VARCHAR NOT NULL, \n\tattempt BIGINT NOT NULL, \n\ttriggered_at BIGINT, \n\tcompleted_at BIGINT, \n\tstatus VARCHAR NOT NULL, \n\tstatus_code BIGINT, \n\trun_id VARCHAR, \n\tsession_id VARCHAR, \n\terror TEXT, \n\tinput JSONB, \n\toutput JSONB, \n\trequirements JSONB, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(schedule_id) REFERENCES {schedules_q} (id) ON DELETE CASCADE\n)"
    )];
    for col in ["schedule_id", "status", "user_id", "created_at"] {
        ddl.push(index_ddl(q, t, &[col]));
    }
    ddl
}

/// A JSON column value with the characters PostgreSQL cannot store removed.
pub(crate) fn clean_json(value: Option<&Value>) -> Option<Value> {
    value.map(|v| {
        let mut v = v.clone();
        sanitize(&mut v);
        v
    })
}

/// Text with the characters PostgreSQL cannot store removed.
pub(crate) fn clean_text(text: Option<&str>) -> Option<String> {
    text.map(|t| {
        let mut v = Value::String(t.to_owned());
        sanitize(&mut v);
        match v {
            Value::String(s) => s,
            _ => String::new(),
        }
    })
}

/// A count or offset as PostgreSQL's BIGINT.
pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
