//! Table names, configurable as in Agno (`session_table=...`), with Agno's defaults.

use crate::migration::TableKind;

/// Names of the tables (or collections, or key prefixes) an adapter uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    /// Sessions (`agno_sessions`).
    pub sessions: String,
    /// Runs (`agno_runs`; `{sessions}_runs` when only the session table is renamed).
    pub runs: String,
    /// User memories (`agno_memories`).
    pub memories: String,
    /// Daily metrics (`agno_metrics`).
    pub metrics: String,
    /// Eval runs (`agno_eval_runs`).
    pub evals: String,
    /// Knowledge contents (`agno_knowledge`).
    pub knowledge: String,
    /// Schedules (`agno_schedules`).
    pub schedules: String,
    /// Schedule runs (`agno_schedule_runs`).
    pub schedule_runs: String,
    /// Durable background jobs (`agno_jobs`).
    pub jobs: String,
    /// The durable event log of background runs (`agno_run_events`; agno-rs's own table, which
    /// Python Agno ignores).
    pub events: String,
    /// Schema versions (`agno_schema_versions`).
    pub versions: String,
    /// Traces (`agno_traces`).
    pub traces: String,
    /// The spans of the traces (`agno_spans`).
    pub spans: String,
    /// Approvals (`agno_approvals`).
    pub approvals: String,
    /// Compaction records (`agno_compactions`).
    pub compactions: String,
    /// Components kept in the database (`agno_components`).
    pub components: String,
    /// Their config versions (`agno_component_configs`).
    pub component_configs: String,
    /// The links of team and workflow versions to their members and steps
    /// (`agno_component_links`).
    pub component_links: String,
    /// Service accounts (`agno_service_accounts`).
    pub service_accounts: String,
    /// Agent files (`agno_fs`; on PostgreSQL in the schema `fs`, as Agno's `DbFileSystem`).
    pub files: String,
    /// Learnings (`agno_learnings`).
    pub learnings: String,
}

impl TableNames {
    /// The facts the metrics read of each run (`{runs}_facts`: its model and provider), written
    /// with the run so daily metrics never parse runs' JSON (agno-rs's own table, which Python
    /// Agno ignores; runs without a row there, written by Python, are read from their JSON).
    pub fn run_facts(&self) -> String {
        format!("{}_facts", self.runs)
    }
}

impl Default for TableNames {
    fn default() -> Self {
        Self {
            sessions: "agno_sessions".to_owned(),
            runs: "agno_runs".to_owned(),
            memories: "agno_memories".to_owned(),
            metrics: "agno_metrics".to_owned(),
            evals: "agno_eval_runs".to_owned(),
            knowledge: "agno_knowledge".to_owned(),
            schedules: "agno_schedules".to_owned(),
            schedule_runs: "agno_schedule_runs".to_owned(),
            jobs: "agno_jobs".to_owned(),
            events: "agno_run_events".to_owned(),
            versions: "agno_schema_versions".to_owned(),
            traces: "agno_traces".to_owned(),
            spans: "agno_spans".to_owned(),
            approvals: "agno_approvals".to_owned(),
            compactions: "agno_compactions".to_owned(),
            components: "agno_components".to_owned(),
            component_configs: "agno_component_configs".to_owned(),
            component_links: "agno_component_links".to_owned(),
            service_accounts: "agno_service_accounts".to_owned(),
            files: "agno_fs".to_owned(),
            learnings: "agno_learnings".to_owned(),
        }
    }
}

impl TableNames {
    /// Renames the session table; the runs table follows (`{name}_runs`), as in Agno.
    pub fn with_session_table(mut self, name: &str) -> Self {
        name.clone_into(&mut self.sessions);
        self.runs = format!("{name}_runs");
        self
    }

    /// The tables the migrations walk, with their kinds.
    pub fn migratable(&self) -> [(TableKind, &str); 8] {
        [
            (TableKind::Sessions, &self.sessions),
            (TableKind::Memories, &self.memories),
            (TableKind::Metrics, &self.metrics),
            (TableKind::Evals, &self.evals),
            (TableKind::Knowledge, &self.knowledge),
            (TableKind::Schedules, &self.schedules),
            (TableKind::ScheduleRuns, &self.schedule_runs),
            (TableKind::Approvals, &self.approvals),
        ]
    }

    /// Checks every name is a plain SQL identifier (letters, digits, `_`), since table names are
    /// interpolated into SQL text.
    ///
    /// # Errors
    /// The first invalid name.
    pub fn validate(&self) -> Result<(), String> {
        for name in [
            &self.sessions,
            &self.runs,
            &self.memories,
            &self.metrics,
            &self.evals,
            &self.knowledge,
            &self.schedules,
            &self.schedule_runs,
            &self.jobs,
            &self.events,
            &self.versions,
            &self.traces,
            &self.spans,
            &self.approvals,
            &self.compactions,
            &self.components,
            &self.component_configs,
            &self.component_links,
            &self.service_accounts,
            &self.files,
            &self.learnings,
        ] {
            let ok = !name.is_empty()
                && name.len() <= 63
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(format!("invalid table name {name:?}: use letters, digits and underscores"));
            }
        }
        Ok(())
    }
}
