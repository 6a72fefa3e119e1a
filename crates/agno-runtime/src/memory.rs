//! User memories (Agno's `MemoryManager`): a model reads what the user said, with the user's
//! existing memories, and adds, updates or deletes memories through tools (`add_memory`,
//! `update_memory`, `delete_memory`, `clear_memory`). Every tool is bound to one user: a memory
//! of another user can be neither read nor changed through them.
//!
//! An agent uses it for `update_memory_on_run` (after each run, off the response path),
//! `enable_agentic_memory` (its `update_user_memory` tool) and `add_memories_to_context`.
//! [`MemoryManager::search_user_memories`] reads them back (newest, oldest, or those a model
//! finds related to a query) and [`MemoryManager::optimize_memories`] summarizes a user's
//! memories into one (Agno's `SUMMARIZE` strategy, behind `POST /optimize-memories`).

use std::collections::BTreeSet;
use std::sync::Arc;

use agno_core::{
    Db, DbError, MemoryQuery, MemorySort, Message, Model, ModelError, ModelRequest, SortOrder, UserMemory,
};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::json;

use crate::config::OutputSchema;

use crate::agent::Agent;
use crate::error::RunError;
use crate::request::RunRequest;

/// What Agno captures by default (its `memory_capture_instructions`).
const CAPTURE: &str = "Memories should capture personal information about the user that is relevant to the current \
conversation, such as:
- Personal facts: name, age, occupation, location, interests, and preferences
- Opinions and preferences: what the user likes, dislikes, enjoys, or finds frustrating
- Significant life events or experiences shared by the user
- Important context about the user's current situation, challenges, or goals
- Any other details that offer meaningful insight into the user's personality, perspective, or needs";

/// Why a memory search or optimization failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The model call failed.
    #[error("the memory model failed: {0}")]
    Model(#[from] ModelError),
    /// Reading or writing memories failed.
    #[error("memory storage failed: {0}")]
    Storage(#[from] DbError),
    /// An agentic search needs a query.
    #[error("a query is required for agentic memory search")]
    QueryRequired,
    /// There is nothing to optimize.
    #[error("no memories found for user {0}")]
    NoMemories(String),
}

/// How [`MemoryManager::search_user_memories`] picks memories (Agno's `retrieval_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryRetrieval {
    /// The most recently updated memories, oldest of them first (Agno's default).
    #[default]
    LastN,
    /// The least recently updated memories.
    FirstN,
    /// The memories a model finds related to the query.
    Agentic,
}

/// The outcome of [`MemoryManager::optimize_memories`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryOptimization {
    /// The memories after optimization (stored when applied).
    pub memories: Vec<UserMemory>,
    /// How many memories there were before.
    pub memories_before: usize,
    /// Estimated tokens of the memories before (see [`count_tokens`]).
    pub tokens_before: usize,
    /// Estimated tokens of the memories after.
    pub tokens_after: usize,
    /// Whether the optimized memories replaced the old ones in the database.
    pub applied: bool,
}

/// Estimated tokens of the memories' texts: Agno's fallback count, a quarter of the characters
/// of each memory (Agno counts with tiktoken when it is installed, so its figures can differ).
pub fn count_tokens(memories: &[UserMemory]) -> usize {
    memories.iter().map(|m| m.memory.chars().count() / 4).sum()
}

/// Agno's `SummarizeStrategy` prompt.
const SUMMARIZE_PROMPT: &str =
    "You are a memory compression assistant. Your task is to summarize multiple memories about a user
into a single comprehensive summary while preserving all key facts.

Requirements:
- Combine related information from all memories
- Preserve all factual information
- Remove redundancy and consolidate repeated facts
- Create a coherent narrative about the user
- Maintain third-person perspective
- Do not add information not present in the original memories

Return only the summarized memory text, nothing else.";

/// Manages one database's user memories with a model. Cheap to clone.
#[derive(Clone)]
pub struct MemoryManager {
    model: Arc<dyn Model>,
    db: Arc<dyn Db>,
    capture_instructions: Option<String>,
    additional_instructions: Option<String>,
}

impl std::fmt::Debug for MemoryManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryManager").field("model", &self.model.id()).finish_non_exhaustive()
    }
}

/// Who a memory change is made for.
#[derive(Debug, Clone)]
struct Owner {
    user_id: String,
    agent_id: Option<String>,
    team_id: Option<String>,
    input: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The memory, a brief third-person statement about the user.
    memory: String,
    /// Topics of the memory.
    #[serde(default)]
    topics: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct UpdateArgs {
    /// The id of the memory to update (from <existing_memories>).
    memory_id: String,
    /// The updated memory.
    memory: String,
    /// Topics of the memory.
    #[serde(default)]
    topics: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct DeleteArgs {
    /// The id of the memory to delete (from <existing_memories>).
    memory_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct NoArgs {}

impl MemoryManager {
    /// A manager using `model` on the memories stored in `db`.
    pub fn new(model: Arc<dyn Model>, db: Arc<dyn Db>) -> Self {
        Self { model, db, capture_instructions: None, additional_instructions: None }
    }

    /// The manager's model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    setters! {
        /// What to capture (Agno's `memory_capture_instructions`; default: personal facts,
        /// preferences, life events, context, ...).
        capture_instructions(text: impl Into<String>) => capture_instructions = Some(text.into());

        /// Extra instructions appended to the manager's system message.
        additional_instructions(text: impl Into<String>) => additional_instructions = Some(text.into());
    }

    /// The user's memories, oldest first.
    ///
    /// # Errors
    /// The storage error.
    pub async fn get_user_memories(&self, user_id: &str) -> Result<Vec<UserMemory>, DbError> {
        let query = MemoryQuery {
            user_id: Some(user_id.to_owned()),
            sort_by: MemorySort::UpdatedAt,
            sort_order: SortOrder::Asc,
            ..MemoryQuery::default()
        };
        Ok(self.db.get_user_memories(&query).await?.memories)
    }

    /// The user's memories chosen by `method` (Agno's `search_user_memories`): at most `limit`
    /// (all when `None` or 0). An agentic search asks the model which memories relate to `query`
    /// and answers them in the model's order; an answer that is not the expected JSON finds
    /// nothing, as in Agno. Only `user_id`'s memories are ever read.
    ///
    /// # Errors
    /// [`MemoryError::QueryRequired`] for an agentic search without a query; the model's or the
    /// storage's error.
    pub async fn search_user_memories(
        &self,
        query: Option<&str>,
        limit: Option<usize>,
        method: MemoryRetrieval,
        user_id: &str,
    ) -> Result<Vec<UserMemory>, MemoryError> {
        let limit = limit.filter(|n| *n > 0);
        let query = query.map(str::trim).filter(|q| !q.is_empty());
        if method == MemoryRetrieval::Agentic && query.is_none() {
            return Err(MemoryError::QueryRequired);
        }
        // Oldest first: memories without `updated_at` first for last_n, last for first_n.
        let mut memories = self.get_user_memories(user_id).await?;
        match method {
            MemoryRetrieval::LastN => {
                memories.sort_by_key(|m| m.updated_at.unwrap_or(0));
                if let Some(n) = limit {
                    memories.drain(..memories.len().saturating_sub(n));
                }
                Ok(memories)
            }
            MemoryRetrieval::FirstN => {
                memories.sort_by_key(|m| m.updated_at.unwrap_or(i64::MAX));
                if let Some(n) = limit {
                    memories.truncate(n);
                }
                Ok(memories)
            }
            MemoryRetrieval::Agentic => {
                let query = query.unwrap_or_default();
                let mut found = self.search_agentic(memories, query).await?;
                if let Some(n) = limit {
                    found.truncate(n);
                }
                Ok(found)
            }
        }
    }

    async fn search_agentic(&self, memories: Vec<UserMemory>, query: &str) -> Result<Vec<UserMemory>, MemoryError> {
        if memories.is_empty() {
            return Ok(memories);
        }
        let mut system = String::from(
            "Your task is to search through user memories and return the IDs of the memories that are related to \
             the query.\n\n<user_memories>\n",
        );
        for m in &memories {
            system.push_str(&format!("ID: {}\nMemory: {}\n", m.memory_id.as_deref().unwrap_or_default(), m.memory));
            if let Some(topics) = m.topics.as_ref().filter(|t| !t.is_empty()) {
                system.push_str(&format!("Topics: {}\n", topics.join(",")));
            }
            system.push('\n');
        }
        let mut system = system.trim_end().to_owned();
        system.push_str(
            "\n</user_memories>\n\nREMEMBER: Only return the IDs of the memories that are related to the query.",
        );
        let schema = OutputSchema::new(
            "MemorySearchResponse",
            json!({
                "type": "object",
                "properties": {"memory_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The IDs of the memories that are most semantically similar to the query."
                }},
                "required": ["memory_ids"]
            }),
        );
        let user = format!("Return the IDs of the memories related to the following query: {query}");
        let Some(answer) = crate::structured::ask_structured(self.model.as_ref(), system, user, &schema).await? else {
            return Ok(Vec::new());
        };
        let ids = answer.get("memory_ids").and_then(|v| v.as_array()).cloned().unwrap_or_default();
        // Ids the model made up, or of another user, match nothing here.
        Ok(ids
            .iter()
            .filter_map(|id| id.as_str())
            .filter_map(|id| memories.iter().find(|m| m.memory_id.as_deref() == Some(id)).cloned())
            .collect())
    }

    /// Summarizes all of `user_id`'s memories into one (Agno's `optimize_memories` with the
    /// `SUMMARIZE` strategy): topics are merged, the agent and team ids kept when all memories
    /// share them. With `apply`, the summary is stored first and the old memories deleted after,
    /// so a failure in between leaves both, never neither.
    ///
    /// # Errors
    /// [`MemoryError::NoMemories`] when the user has none; the model's or the storage's error
    /// (nothing changed).
    pub async fn optimize_memories(&self, user_id: &str, apply: bool) -> Result<MemoryOptimization, MemoryError> {
        let before = self.get_user_memories(user_id).await?;
        if before.is_empty() {
            return Err(MemoryError::NoMemories(user_id.to_owned()));
        }
        let contents: Vec<&str> = before.iter().map(|m| m.memory.as_str()).filter(|m| !m.is_empty()).collect();
        let combined: Vec<String> =
            contents.iter().enumerate().map(|(i, c)| format!("Memory {}: {c}", i + 1)).collect();
        let request = ModelRequest {
            messages: vec![
                Message::system(SUMMARIZE_PROMPT),
                Message::user(format!("Summarize these memories into a single summary:\n\n{}", combined.join("\n\n"))),
            ],
            ..ModelRequest::default()
        };
        let response = self.model.invoke(request).await?;
        let text = if response.content.trim().is_empty() { contents.join(" ") } else { response.content };
        let topics: BTreeSet<String> = before.iter().flat_map(|m| m.topics.iter().flatten().cloned()).collect();
        let only = |ids: BTreeSet<&String>| if ids.len() == 1 { ids.into_iter().next().cloned() } else { None };
        let now = agno_core::now_epoch_secs();
        let summary = UserMemory {
            memory_id: Some(agno_core::new_id()),
            memory: text.trim().to_owned(),
            topics: (!topics.is_empty()).then(|| topics.into_iter().collect()),
            user_id: Some(user_id.to_owned()),
            agent_id: only(before.iter().filter_map(|m| m.agent_id.as_ref()).collect()),
            team_id: only(before.iter().filter_map(|m| m.team_id.as_ref()).collect()),
            created_at: Some(now),
            updated_at: Some(now),
            ..UserMemory::default()
        };
        if apply {
            self.db.upsert_user_memory(&summary).await?;
            let old: Vec<String> = before.iter().filter_map(|m| m.memory_id.clone()).collect();
            self.db.delete_user_memories(&old, Some(user_id)).await?;
        }
        let memories = vec![summary];
        Ok(MemoryOptimization {
            tokens_before: count_tokens(&before),
            tokens_after: count_tokens(&memories),
            memories_before: before.len(),
            memories,
            applied: apply,
        })
    }

    /// Reads `message` (what the user said) and adds, updates or deletes the user's memories as
    /// the model decides (Agno's `create_user_memories`). Returns the model's answer.
    ///
    /// # Errors
    /// The model's or the storage's error.
    pub async fn create_user_memories(
        &self,
        message: &str,
        user_id: &str,
        agent_id: Option<&str>,
        team_id: Option<&str>,
    ) -> Result<String, RunError> {
        let owner = Owner {
            user_id: user_id.to_owned(),
            agent_id: agent_id.map(str::to_owned),
            team_id: team_id.map(str::to_owned),
            input: message.to_owned(),
        };
        self.manage(owner).await
    }

    /// Carries out `task` on the user's memories (Agno's `update_memory_task`, behind the
    /// agent's `update_user_memory` tool). Returns the model's answer.
    ///
    /// # Errors
    /// The model's or the storage's error.
    pub async fn update_memory_task(
        &self,
        task: &str,
        user_id: &str,
        agent_id: Option<&str>,
    ) -> Result<String, RunError> {
        let owner = Owner {
            user_id: user_id.to_owned(),
            agent_id: agent_id.map(str::to_owned),
            team_id: None,
            input: task.to_owned(),
        };
        self.manage(owner).await
    }

    /// Runs the manager's model with its memory tools on `owner.input`: an agent run of its own
    /// (not stored), traced as `MemoryManager.run` under the span current when it starts (the
    /// run whose memories it updates), for the user whose memories they are.
    async fn manage(&self, owner: Owner) -> Result<String, RunError> {
        let input = owner.input.clone();
        let existing = self.get_user_memories(&owner.user_id).await?;
        let agent = Agent::builder(Arc::clone(&self.model))
            .id("memory-manager")
            .name("MemoryManager")
            .system_message(self.system_message(&existing))
            .function(self.add_tool(&owner))
            .function(self.update_tool(&owner))
            .function(self.delete_tool(&owner))
            .function(self.clear_tool(&owner))
            .build()
            .map_err(|e| RunError::Internal(format!("cannot build the memory manager: {e}")))?;
        let user_id = Some(owner.user_id.clone());
        let run = agent.arun(RunRequest { store: Some(false), user_id, ..RunRequest::new(input) }).await?;
        Ok(run.content_text())
    }

    /// Agno's memory manager system message, with the user's existing memories.
    fn system_message(&self, existing: &[UserMemory]) -> String {
        let mut lines = vec![
            "You are a Memory Manager that is responsible for managing information and preferences about the user. \
             You will be provided with a criteria for memories to capture in the <memories_to_capture> section and \
             a list of existing memories in the <existing_memories> section."
                .to_owned(),
            String::new(),
            "## When to add or update memories".to_owned(),
            "- Your first task is to decide if a memory needs to be added, updated, or deleted based on the user's \
             message OR if no changes are needed."
                .to_owned(),
            "- If the user's message meets the criteria in the <memories_to_capture> section and that information is \
             not already captured in the <existing_memories> section, you should capture it as a memory."
                .to_owned(),
            "- If the users messages does not meet the criteria in the <memories_to_capture> section, no memory \
             updates are needed."
                .to_owned(),
            "- If the existing memories in the <existing_memories> section capture all relevant information, no \
             memory updates are needed."
                .to_owned(),
            String::new(),
            "## How to add or update memories".to_owned(),
            "- Memories should be a brief, third-person statements that encapsulate the most important aspect of the \
             user's input, without adding any extraneous information."
                .to_owned(),
            "- Don't repeat the same information in multiple memories. Rather update existing memories if needed."
                .to_owned(),
            "- If a user asks for a memory to be updated or forgotten, remove all reference to the information that \
             should be forgotten."
                .to_owned(),
            String::new(),
            "## Criteria for creating memories".to_owned(),
            "<memories_to_capture>".to_owned(),
            self.capture_instructions.clone().unwrap_or_else(|| CAPTURE.to_owned()),
            "</memories_to_capture>".to_owned(),
            String::new(),
            "## Updating memories".to_owned(),
            "You will also be provided with a list of existing memories in the <existing_memories> section. You can:"
                .to_owned(),
            "  - Decide to make no changes.".to_owned(),
            "  - Decide to add a new memory, using the `add_memory` tool.".to_owned(),
            "  - Decide to update an existing memory, using the `update_memory` tool.".to_owned(),
            "  - Decide to delete an existing memory, using the `delete_memory` tool.".to_owned(),
            "  - Decide to clear all memories, using the `clear_memory` tool.".to_owned(),
            "You can call multiple tools in a single response if needed. ".to_owned(),
            "Only add or update memories if it is necessary to capture key information provided by the user."
                .to_owned(),
        ];
        if !existing.is_empty() {
            lines.push("\n<existing_memories>".to_owned());
            for m in existing {
                lines.push(format!("ID: {}", m.memory_id.as_deref().unwrap_or_default()));
                lines.push(format!("Memory: {}", m.memory));
                lines.push(String::new());
            }
            lines.push("</existing_memories>".to_owned());
        }
        if let Some(extra) = &self.additional_instructions {
            lines.push(extra.clone());
        }
        lines.join("\n")
    }

    fn add_tool(&self, owner: &Owner) -> Function {
        let (db, owner) = (Arc::clone(&self.db), owner.clone());
        Function::new("add_memory", "Use this function to add a memory to the database.", move |args: AddArgs| {
            let (db, owner) = (Arc::clone(&db), owner.clone());
            async move {
                let now = agno_core::now_epoch_secs();
                let memory = UserMemory {
                    memory_id: Some(agno_core::new_id()),
                    memory: args.memory,
                    topics: args.topics,
                    user_id: Some(owner.user_id),
                    input: Some(owner.input),
                    agent_id: owner.agent_id,
                    team_id: owner.team_id,
                    feedback: None,
                    created_at: Some(now),
                    updated_at: Some(now),
                };
                db.upsert_user_memory(&memory).await.map_err(|e| agno_core::ToolError::execution(e.to_string()))?;
                Ok("Memory added successfully".to_owned())
            }
        })
    }

    fn update_tool(&self, owner: &Owner) -> Function {
        let (db, owner) = (Arc::clone(&self.db), owner.clone());
        Function::new(
            "update_memory",
            "Use this function to update an existing memory in the database.",
            move |args: UpdateArgs| {
                let (db, owner) = (Arc::clone(&db), owner.clone());
                async move {
                    let fail = |e: DbError| agno_core::ToolError::execution(e.to_string());
                    // Only this user's memories can be changed.
                    let Some(mut memory) =
                        db.get_user_memory(&args.memory_id, Some(&owner.user_id)).await.map_err(fail)?
                    else {
                        return Ok(format!("Memory {} not found", args.memory_id));
                    };
                    memory.memory = args.memory;
                    if args.topics.is_some() {
                        memory.topics = args.topics;
                    }
                    memory.input = Some(owner.input);
                    memory.updated_at = Some(agno_core::now_epoch_secs());
                    db.upsert_user_memory(&memory).await.map_err(fail)?;
                    Ok("Memory updated successfully".to_owned())
                }
            },
        )
    }

    fn delete_tool(&self, owner: &Owner) -> Function {
        let (db, user) = (Arc::clone(&self.db), owner.user_id.clone());
        Function::new(
            "delete_memory",
            "Use this function to delete a single memory from the database.",
            move |args: DeleteArgs| {
                let (db, user) = (Arc::clone(&db), user.clone());
                async move {
                    let deleted = db
                        .delete_user_memory(&args.memory_id, Some(&user))
                        .await
                        .map_err(|e| agno_core::ToolError::execution(e.to_string()))?;
                    Ok(if deleted {
                        "Memory deleted successfully".to_owned()
                    } else {
                        format!("Memory {} not found", args.memory_id)
                    })
                }
            },
        )
    }

    fn clear_tool(&self, owner: &Owner) -> Function {
        let (manager, user) = (self.clone(), owner.user_id.clone());
        Function::new(
            "clear_memory",
            "Use this function to remove all (or clear all) memories from the database.",
            move |_: NoArgs| {
                let (manager, user) = (manager.clone(), user.clone());
                async move {
                    let fail = |e: DbError| agno_core::ToolError::execution(e.to_string());
                    let ids: Vec<String> = manager
                        .get_user_memories(&user)
                        .await
                        .map_err(fail)?
                        .into_iter()
                        .filter_map(|m| m.memory_id)
                        .collect();
                    manager.db.delete_user_memories(&ids, Some(&user)).await.map_err(fail)?;
                    Ok("Memory cleared successfully".to_owned())
                }
            },
        )
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct TaskArgs {
    /// The task to update the memory. Be specific and describe the task in detail.
    task: String,
}

/// The agent's `update_user_memory` tool (`enable_agentic_memory`), bound to the run's user.
pub(crate) fn update_user_memory_tool(manager: MemoryManager, user_id: String, agent_id: String) -> Function {
    Function::new(
        "update_user_memory",
        "Use this function to submit a task to modify the Agent's memory. Describe the task in detail and be \
         specific. The task can include adding a memory, updating a memory, deleting a memory, or clearing all \
         memories.",
        move |args: TaskArgs| {
            let (manager, user_id, agent_id) = (manager.clone(), user_id.clone(), agent_id.clone());
            async move {
                manager
                    .update_memory_task(&args.task, &user_id, Some(&agent_id))
                    .await
                    .map_err(|e| agno_core::ToolError::execution(e.to_string()))
            }
        },
    )
}
