//! Schedules and schedule runs in MySQL and MariaDB (`agno_schedules`, `agno_schedule_runs`):
//! their DDL. The store is [`crate::sql::schedules`].
//!
//! Python Agno 3.1 has no MySQL schedule tables, so these mirror its Postgres columns, indexes
//! and foreign key (`SCHEDULE_TABLE_SCHEMA`, `_get_schedule_runs_table_schema`) with the types
//! its MySQL schemas use for the other tables.

/// The schedules table: Agno's Postgres columns with MySQL types (`VARCHAR` lengths, `TEXT`,
/// `JSON`, `BIGINT`, `BOOL`), the same index names, in one statement.
///
/// MySQL has no partial unique indexes: Postgres's `uq_user_name (user_id, name) WHERE user_id IS
/// NOT NULL` becomes a plain unique key (rows with a `NULL` owner never collide in it), and
/// `uq_unowned_name (name) WHERE user_id IS NULL` a unique key on the stored generated column
/// `unowned_name`, which holds the name only when there is no owner. `name` and `user_id` use the
/// binary collation so both keys compare case-sensitively, as Postgres does (trailing spaces are
/// still ignored by MySQL's `PAD SPACE` collations).
pub(crate) fn schedules_ddl(t: &str) -> String {
    const BIN: &str = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin";
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tname VARCHAR(255) {BIN} NOT NULL, \n\
         \tdescription TEXT, \n\
         \tmethod VARCHAR(20) NOT NULL, \n\
         \tendpoint TEXT NOT NULL, \n\
         \tpayload JSON, \n\
         \tcron_expr VARCHAR(128) NOT NULL, \n\
         \ttimezone VARCHAR(64) NOT NULL, \n\
         \ttimeout_seconds BIGINT NOT NULL, \n\
         \tmax_retries BIGINT NOT NULL, \n\
         \tretry_delay_seconds BIGINT NOT NULL, \n\
         \tenabled BOOL NOT NULL, \n\
         \tnext_run_at BIGINT, \n\
         \tlocked_by VARCHAR(128), \n\
         \tlocked_at BIGINT, \n\
         \tuser_id VARCHAR(128) {BIN}, \n\
         \tmanaged_by VARCHAR(50), \n\
         \ttarget_type VARCHAR(50), \n\
         \ttarget_id VARCHAR(128), \n\
         \tcreated_by_run_id VARCHAR(128), \n\
         \tcreated_by_session_id VARCHAR(128), \n\
         \tupdated_by_run_id VARCHAR(128), \n\
         \tupdated_by_session_id VARCHAR(128), \n\
         \tdisabled_reason TEXT, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tunowned_name VARCHAR(255) {BIN} AS (CASE WHEN user_id IS NULL THEN name END) STORED, \n\
         \tPRIMARY KEY (id), \n\
         \tCONSTRAINT `{t}_uq_user_name` UNIQUE (user_id, name), \n\
         \tCONSTRAINT `{t}_uq_unowned_name` UNIQUE (unowned_name), \n\
         \tINDEX `idx_{t}_name` (name), \n\
         \tINDEX `idx_{t}_next_run_at` (next_run_at), \n\
         \tINDEX `idx_{t}_user_id` (user_id), \n\
         \tINDEX `idx_{t}_managed_by` (managed_by), \n\
         \tINDEX `idx_{t}_target_id` (target_id), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tINDEX `idx_{t}_enabled_next_run_at` (enabled, next_run_at), \n\
         \tINDEX `idx_{t}_user_id_enabled_next_run_at` (user_id, enabled, next_run_at)\n\
         )"
    )
}

/// The schedule runs table: Agno's Postgres columns with MySQL types, the same index names, and
/// the foreign key to the schedules table with `ON DELETE CASCADE`, in one statement.
pub(crate) fn schedule_runs_ddl(t: &str, schedules: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tschedule_id VARCHAR(128) NOT NULL, \n\
         \tattempt BIGINT NOT NULL, \n\
         \ttriggered_at BIGINT, \n\
         \tcompleted_at BIGINT, \n\
         \tstatus VARCHAR(50) NOT NULL, \n\
         \tstatus_code BIGINT, \n\
         \trun_id VARCHAR(128), \n\
         \tsession_id VARCHAR(128), \n\
         \terror TEXT, \n\
         \tinput JSON, \n\
         \toutput JSON, \n\
         \trequirements JSON, \n\
         \tuser_id VARCHAR(128), \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tPRIMARY KEY (id), \n\
         \tINDEX `idx_{t}_schedule_id` (schedule_id), \n\
         \tINDEX `idx_{t}_status` (status), \n\
         \tINDEX `idx_{t}_user_id` (user_id), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tFOREIGN KEY(schedule_id) REFERENCES `{schedules}` (id) ON DELETE CASCADE\n\
         )"
    )
}
