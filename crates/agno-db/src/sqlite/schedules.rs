//! Schedules and schedule runs in SQLite (`agno_schedules`, `agno_schedule_runs`, as Python Agno
//! 3.x shapes them): their DDL, names unique per owner through Agno's two partial unique indexes.
//! The store is [`crate::sql::schedules`].

/// The schedules table as Python Agno 3.1 creates it (columns, indexes, the per-owner unique
/// names as two partial indexes).
pub(crate) fn schedules_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription VARCHAR, \n\tmethod VARCHAR NOT NULL, \n\tendpoint VARCHAR NOT NULL, \n\tpayload JSON, \n\tcron_expr VARCHAR NOT NULL, \n\ttimezone VARCHAR NOT NULL, \n\ttimeout_seconds BIGINT NOT NULL, \n\tmax_retries BIGINT NOT NULL, \n\tretry_delay_seconds BIGINT NOT NULL, \n\tenabled BOOLEAN NOT NULL, \n\tnext_run_at BIGINT, \n\tlocked_by VARCHAR, \n\tlocked_at BIGINT, \n\tuser_id VARCHAR, \n\tmanaged_by VARCHAR, \n\ttarget_type VARCHAR, \n\ttarget_id VARCHAR, \n\tcreated_by_run_id VARCHAR, \n\tcreated_by_session_id VARCHAR, \n\tupdated_by_run_id VARCHAR, \n\tupdated_by_session_id VARCHAR, \n\tdisabled_reason VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (id)\n)"
    )];
    for col in ["user_id", "target_id", "next_run_at", "created_at", "name", "managed_by"] {
        ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_{col} ON {t} ({col})"));
    }
    ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_enabled_next_run_at ON {t} (enabled, next_run_at)"));
    ddl.push(format!(
        "CREATE INDEX IF NOT EXISTS idx_{t}_user_id_enabled_next_run_at ON {t} (user_id, enabled, next_run_at)"
    ));
    ddl.push(format!("CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_unowned_name ON {t} (name) WHERE user_id IS NULL"));
    ddl.push(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_user_name ON {t} (user_id, name) WHERE user_id IS NOT NULL"
    ));
    ddl
}

/// The schedule runs table as Python Agno 3.1 creates it (cascading foreign key to schedules).
pub(crate) fn schedule_runs_ddl(t: &str, schedules: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tschedule_id VARCHAR NOT NULL, \n\tattempt BIGINT NOT NULL, \n\ttriggered_at BIGINT, \n\tcompleted_at BIGINT, \n\tstatus VARCHAR NOT NULL, \n\tstatus_code BIGINT, \n\trun_id VARCHAR, \n\tsession_id VARCHAR, \n\terror VARCHAR, \n\tinput JSON, \n\toutput JSON, \n\trequirements JSON, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(schedule_id) REFERENCES {schedules} (id) ON DELETE CASCADE\n)"
    )];
    for col in ["schedule_id", "status", "user_id", "created_at"] {
        ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_{col} ON {t} ({col})"));
    }
    ddl
}
