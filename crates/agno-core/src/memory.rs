//! User memories, as Agno stores them in `agno_memories` (`UserMemory`).

use serde::{Deserialize, Serialize};

/// Something remembered about a user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserMemory {
    /// Memory id (generated when missing on write).
    #[serde(default)]
    pub memory_id: Option<String>,
    /// The memory text.
    pub memory: String,
    /// Topics.
    #[serde(default)]
    pub topics: Option<Vec<String>>,
    /// Owner.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The input the memory was made from.
    #[serde(default)]
    pub input: Option<String>,
    /// Agent that made it.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Team that made it.
    #[serde(default)]
    pub team_id: Option<String>,
    /// User feedback on the memory.
    #[serde(default)]
    pub feedback: Option<String>,
    /// Epoch seconds.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Epoch seconds.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

impl UserMemory {
    /// A memory of `user_id`.
    pub fn new(memory: impl Into<String>, user_id: Option<&str>) -> Self {
        Self {
            memory_id: None,
            memory: memory.into(),
            topics: None,
            user_id: user_id.map(str::to_owned),
            input: None,
            agent_id: None,
            team_id: None,
            feedback: None,
            created_at: None,
            updated_at: None,
        }
    }
}

/// Per-user memory counts (`get_user_memory_stats`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMemoryStats {
    /// The user (`None` for memories without an owner).
    pub user_id: Option<String>,
    /// How many memories.
    pub total_memories: u64,
    /// Latest `updated_at`, epoch seconds.
    pub last_memory_updated_at: Option<i64>,
}
