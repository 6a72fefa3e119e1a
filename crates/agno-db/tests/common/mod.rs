//! What several agno-db test binaries share.

/// The keys of a run row, in order, as Python Agno writes one to JSON files and to Redis.
pub(crate) const RUN_ROW_KEYS: [&str; 13] = [
    "run_id",
    "session_id",
    "run_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "parent_run_id",
    "status",
    "run_index",
    "run_data",
    "created_at",
    "updated_at",
];
