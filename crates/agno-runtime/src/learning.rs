//! Learning (Agno 3.1's `LearningMachine`): what an agent learns about its users, kept in
//! `agno_learnings` in the records Python Agno reads — a user's profile (`user_profile`), their
//! memories (`user_memory`) and the entities they talk about (`entity_memory`). Each store works
//! in one mode:
//!
//! - `always`: after each run, on its own task (off the response path, as memories are), a model
//!   reads the run's conversation and updates the store with the store's tools;
//! - `agentic`: the agent gets the store's tools and decides when to use them;
//! - `propose`: as `agentic`, and the agent is told to propose what it would save and save it only
//!   once the user agrees;
//! - `hitl`: as `agentic`, and every save pauses the run for the user's confirmation (the tools
//!   require confirmation; the run is continued as any paused run).
//!
//! What a store holds for the run's user is put in the agent's system message (`<user_profile>`,
//! `<user_memory>`, `<entity_memory>`), so the next run knows it. Everything is keyed by the run's
//! user: a run without one learns nothing about users.

use std::sync::Arc;

use agno_core::{Db, DbError, LearningIdentity, LearningQuery, LearningRecord, ToolError, learning_id, new_id};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::agent::Agent;
use crate::error::RunError;
use crate::request::RunRequest;

/// How a store learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearningMode {
    /// A model updates it after every run.
    Always,
    /// The agent has its tools.
    Agentic,
    /// The agent has its tools and proposes before saving.
    Propose,
    /// The agent has its tools; each save waits for the user's confirmation.
    Hitl,
}

impl LearningMode {
    /// `always`, `agentic`, `propose` or `hitl`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "always" => Some(Self::Always),
            "agentic" => Some(Self::Agentic),
            "propose" => Some(Self::Propose),
            "hitl" => Some(Self::Hitl),
            _ => None,
        }
    }
}

/// Which stores learn, and how (Agno's `LearningMachine(...)` arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearningConfig {
    /// The user's profile (name, preferred name).
    pub user_profile: Option<LearningMode>,
    /// The user's memories.
    pub user_memory: Option<LearningMode>,
    /// The entities the user talks about (companies, people, projects) and facts about them.
    pub entity_memory: Option<LearningMode>,
    /// The namespace of entity records: `user` (each user's own; the default here) or a shared
    /// name (`global`: every user's runs read and write the same entities).
    pub entity_namespace: String,
    /// Most tool calls one extraction makes.
    pub max_updates_per_run: usize,
}

impl Default for LearningConfig {
    /// Agno's `learning=True`: profile and memories, always.
    fn default() -> Self {
        Self {
            user_profile: Some(LearningMode::Always),
            user_memory: Some(LearningMode::Always),
            entity_memory: None,
            entity_namespace: "user".to_owned(),
            max_updates_per_run: 10,
        }
    }
}

/// Who a learning is about: the run's user, agent and session.
#[derive(Debug, Clone)]
struct Scope {
    user_id: String,
    agent_id: String,
}

/// An agent's learning: its config, the database the records live in and the model that
/// extracts them.
#[derive(Clone)]
pub struct LearningMachine {
    config: LearningConfig,
    db: Arc<dyn Db>,
    model: Arc<dyn agno_core::Model>,
}

impl std::fmt::Debug for LearningMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LearningMachine").field("config", &self.config).finish_non_exhaustive()
    }
}

// By value: it is `map_err`'s function.
#[allow(clippy::needless_pass_by_value)]
fn tool_error(e: DbError) -> ToolError {
    ToolError::execution(e.to_string())
}

fn iso_now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

fn short_id() -> String {
    new_id().replace('-', "")[..8].to_owned()
}

/// Agno's `_slugify` of an entity name: lowercased, accents folded, `+`/`#` spelled out, every
/// run of other characters one `_`.
pub fn entity_slug(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded: String = name.nfkd().filter(|c| c.is_ascii() || c.is_alphanumeric()).collect::<String>().to_lowercase();
    let spelled = folded.replace("++", "_plus_plus_").replace('+', "_plus_").replace('#', "_sharp_");
    let mut out = String::new();
    for c in spelled.chars() {
        if c.is_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_owned()
}

impl LearningMachine {
    /// Learning as `config` says, in `db`, extracted by `model`.
    pub fn new(config: LearningConfig, db: Arc<dyn Db>, model: Arc<dyn agno_core::Model>) -> Self {
        Self { config, db, model }
    }

    /// Its config.
    pub fn config(&self) -> &LearningConfig {
        &self.config
    }

    fn modes(&self) -> [(&'static str, Option<LearningMode>); 3] {
        [
            ("user_profile", self.config.user_profile),
            ("user_memory", self.config.user_memory),
            ("entity_memory", self.config.entity_memory),
        ]
    }

    async fn load(&self, id: &str) -> Result<Option<LearningRecord>, DbError> {
        self.db.get_learning_by_id(id).await
    }

    fn record(&self, kind: &str, id: String, scope: &Scope, content: Map<String, Value>) -> LearningRecord {
        let now = agno_core::now_epoch_secs();
        LearningRecord {
            learning_id: id,
            learning_type: kind.to_owned(),
            namespace: None,
            user_id: Some(scope.user_id.clone()),
            agent_id: Some(scope.agent_id.clone()),
            team_id: None,
            workflow_id: None,
            session_id: None,
            entity_id: None,
            entity_type: None,
            content,
            metadata: None,
            created_at: now,
            updated_at: Some(now),
        }
    }

    fn ids(&self, kind: &str, user: &str) -> String {
        learning_id(kind, LearningIdentity { user_id: Some(user), ..Default::default() }).unwrap_or_default()
    }

    fn entity_id(&self, user: &str, entity_type: &str, slug: &str) -> String {
        let identity = LearningIdentity {
            user_id: Some(user),
            namespace: Some(&self.config.entity_namespace),
            entity_id: Some(slug),
            entity_type: Some(entity_type),
            ..Default::default()
        };
        learning_id("entity_memory", identity).unwrap_or_default()
    }

    /// The entity records visible to `user` (their own, or the shared namespace's).
    async fn entities(&self, user: &str) -> Result<Vec<LearningRecord>, DbError> {
        let q = LearningQuery {
            learning_type: Some("entity_memory".to_owned()),
            namespace: Some(self.config.entity_namespace.clone()),
            user_id: (self.config.entity_namespace == "user").then(|| user.to_owned()),
            limit: 200,
            page: 1,
            sort_by: Some("updated_at"),
            sort_order: agno_core::SortOrder::Desc,
            ..Default::default()
        };
        Ok(self.db.list_learnings(&q).await?.0)
    }

    /// What the system message carries for `user` (and the input `message`, which selects the
    /// entities whose facts are shown): each store's block, and how to use the stores' tools.
    ///
    /// # Errors
    /// A storage error.
    pub async fn context(&self, user: Option<&str>, message: &str) -> Result<String, DbError> {
        let Some(user) = user else { return Ok(String::new()) };
        let mut parts = Vec::new();
        if let Some(mode) = self.config.user_profile {
            let profile = self.load(&self.ids("user_profile", user)).await?;
            let fields: Vec<String> = profile
                .iter()
                .flat_map(|p| p.content.iter())
                .filter(|(k, v)| k.as_str() != "user_id" && !v.is_null())
                .map(|(k, v)| format!("{}: {}", title(k), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                .collect();
            if !fields.is_empty() {
                parts.push(format!(
                    "<user_profile>\n{}\n<profile_application_guidelines>\nAddress the user as their profile says and \
                     use what it says where it helps; do not recite it.\n</profile_application_guidelines>\n</user_profile>",
                    fields.join("\n")
                ));
            } else if mode != LearningMode::Always {
                parts.push(
                    "<user_profile>\nNo profile information saved about this user yet.\n</user_profile>".to_owned(),
                );
            }
        }
        if let Some(mode) = self.config.user_memory {
            let memories = self.load(&self.ids("user_memory", user)).await?;
            let lines: Vec<String> = memories
                .iter()
                .filter_map(|m| m.content.get("memories").and_then(Value::as_array))
                .flatten()
                .filter_map(|m| m.get("content").and_then(Value::as_str))
                .map(|c| format!("- {c}"))
                .collect();
            if !lines.is_empty() {
                parts.push(format!(
                    "<user_memory>\n{}\n<memory_application_guidelines>\nUse these memories to personalise the answer \
                     where they are relevant.\n</memory_application_guidelines>\n</user_memory>",
                    lines.join("\n")
                ));
            } else if mode != LearningMode::Always {
                parts.push("<user_memory>\nNo memories saved about this user yet.\n</user_memory>".to_owned());
            }
        }
        if let Some(mode) = self.config.entity_memory {
            let entities = self.entities(user).await?;
            if entities.is_empty() {
                if mode != LearningMode::Always {
                    parts.push("<entity_memory>\nNo entities recorded yet.\n</entity_memory>".to_owned());
                }
            } else {
                parts.push(entity_block(&entities, message));
            }
        }
        for (store, mode) in self.modes() {
            match mode {
                Some(LearningMode::Agentic | LearningMode::Hitl) => parts.push(guidance(store, false)),
                Some(LearningMode::Propose) => parts.push(guidance(store, true)),
                _ => {}
            }
        }
        Ok(parts.join("\n\n"))
    }

    /// The agent's tools for the stores in `agentic`, `propose` or `hitl` mode, bound to `user`.
    pub fn agent_tools(&self, user: &str, agent_id: &str) -> Vec<Function> {
        let scope = Scope { user_id: user.to_owned(), agent_id: agent_id.to_owned() };
        let mut tools = Vec::new();
        for (store, mode) in self.modes() {
            let Some(mode) = mode.filter(|m| *m != LearningMode::Always) else { continue };
            let made = self.tools_of(store, &scope);
            tools.extend(
                made.into_iter().map(|t| if mode == LearningMode::Hitl { t.requires_confirmation() } else { t }),
            );
        }
        tools
    }

    fn tools_of(&self, store: &str, scope: &Scope) -> Vec<Function> {
        match store {
            "user_profile" => vec![self.update_profile_tool(scope)],
            "user_memory" => {
                vec![self.add_memory_tool(scope), self.update_memory_tool(scope), self.delete_memory_tool(scope)]
            }
            _ => vec![self.remember_tool(scope), self.search_entities_tool(scope), self.forget_tool(scope)],
        }
    }

    /// After a run of `agent_id` by `user`: each `always` store's model reads `conversation`
    /// (`User: ...` / `Assistant: ...` lines) and updates the store.
    ///
    /// # Errors
    /// The model's or the storage's error (the first; later stores still run).
    pub async fn extract(&self, conversation: &str, user: &str, agent_id: &str) -> Result<(), RunError> {
        let scope = Scope { user_id: user.to_owned(), agent_id: agent_id.to_owned() };
        let mut first_error = None;
        for (store, mode) in self.modes() {
            if mode != Some(LearningMode::Always) {
                continue;
            }
            let system = self.extraction_prompt(store, &scope).await.map_err(RunError::Storage)?;
            let mut builder = Agent::builder(Arc::clone(&self.model))
                .id(format!("learning-{store}"))
                .name("LearningMachine")
                .system_message(system)
                .tool_call_limit(self.config.max_updates_per_run);
            for tool in self.tools_of(store, &scope) {
                builder = builder.function(tool);
            }
            let extractor =
                builder.build().map_err(|e| RunError::Internal(format!("cannot build the {store} extractor: {e}")))?;
            let input = format!("Extract what to remember from this conversation:\n\n{conversation}");
            let request = RunRequest { store: Some(false), user_id: Some(user.to_owned()), ..RunRequest::new(input) };
            if let Err(e) = extractor.arun(request).await {
                tracing::warn!(store, error = %e, "learning extraction failed");
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn extraction_prompt(&self, store: &str, scope: &Scope) -> Result<String, DbError> {
        Ok(match store {
            "user_profile" => {
                let current = self.load(&self.ids("user_profile", &scope.user_id)).await?;
                let current = current.map(|r| Value::Object(r.content).to_string()).unwrap_or_else(|| "{}".to_owned());
                format!(
                    "You are extracting structured profile information about the user from a conversation.\n\n\
                     ## Profile fields\n- name: the user's full name\n- preferred_name: what they like to be called\n\n\
                     Current values: {current}\n\n## Guidelines\nCall update_profile only with what the user said about \
                     themselves and that differs from the current values. If nothing new was said, call no tool and \
                     answer \"No changes\"."
                )
            }
            "user_memory" => {
                let current = self.load(&self.ids("user_memory", &scope.user_id)).await?;
                let lines: Vec<String> = current
                    .iter()
                    .filter_map(|m| m.content.get("memories").and_then(Value::as_array))
                    .flatten()
                    .map(|m| {
                        format!(
                            "- [{}] {}",
                            m["id"].as_str().unwrap_or_default(),
                            m["content"].as_str().unwrap_or_default()
                        )
                    })
                    .collect();
                format!(
                    "You are building a memory of this user to enable personalized, contextual interactions.\n\n\
                     Capture lasting facts about the user (work, preferences, goals, circumstances) as short \
                     third-person statements. Prefer updating an existing memory to adding a near duplicate.\n\n\
                     ## Current memories\n{}\n\nUse add_memory, update_memory or delete_memory; if nothing is worth \
                     keeping, call no tool and answer \"No changes\".",
                    if lines.is_empty() { "(none)".to_owned() } else { lines.join("\n") }
                )
            }
            _ => {
                let names: Vec<String> = self
                    .entities(&scope.user_id)
                    .await?
                    .iter()
                    .map(|e| {
                        format!("- {} ({})", str_of(&e.content, "name"), e.entity_type.as_deref().unwrap_or_default())
                    })
                    .collect();
                format!(
                    "You are keeping a memory of the entities (companies, people, projects, places) this user talks \
                     about, and facts and events about them.\n\n## Known entities\n{}\n\nFor every entity the \
                     conversation says something lasting about, call remember_about with its name, its type and the \
                     new facts or events. If nothing is worth keeping, call no tool and answer \"No changes\".",
                    if names.is_empty() { "(none)".to_owned() } else { names.join("\n") }
                )
            }
        })
    }

    fn update_profile_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new(
            "update_profile",
            "Update the user's profile: set the fields the user told you (name, preferred_name).",
            move |args: ProfileArgs| {
                let (this, scope) = (this.clone(), scope.clone());
                async move {
                    let id = this.ids("user_profile", &scope.user_id);
                    let mut content = match this.load(&id).await.map_err(tool_error)? {
                        Some(r) => r.content,
                        None => Map::from_iter([("user_id".to_owned(), json!(scope.user_id))]),
                    };
                    let mut set = Vec::new();
                    for (field, value) in [("name", args.name), ("preferred_name", args.preferred_name)] {
                        if let Some(v) = value.filter(|v| !v.trim().is_empty()) {
                            set.push(format!("{field}={v}"));
                            content.insert(field.to_owned(), json!(v));
                        }
                    }
                    if set.is_empty() {
                        return Ok("No fields provided to update".to_owned());
                    }
                    this.db
                        .upsert_learning(&this.record("user_profile", id, &scope, content))
                        .await
                        .map_err(tool_error)?;
                    Ok(format!("Profile updated: {}", set.join(", ")))
                }
            },
        )
    }

    /// Changes the user's memories record with `change` (which answers the tool's text).
    async fn change_memories(
        &self,
        scope: &Scope,
        change: impl FnOnce(&mut Vec<Value>) -> Result<String, String>,
    ) -> Result<String, ToolError> {
        let id = self.ids("user_memory", &scope.user_id);
        let mut content = match self.load(&id).await.map_err(tool_error)? {
            Some(r) => r.content,
            None => serde_json::from_value(json!({"user_id": scope.user_id, "memories": [], "agent_id": null,
                "team_id": null, "created_at": null, "updated_at": null}))
            .unwrap_or_default(),
        };
        let mut memories = content.get("memories").and_then(Value::as_array).cloned().unwrap_or_default();
        let said = match change(&mut memories) {
            Ok(said) => said,
            Err(refused) => return Ok(refused),
        };
        content.insert("memories".to_owned(), Value::Array(memories));
        self.db.upsert_learning(&self.record("user_memory", id, scope, content)).await.map_err(tool_error)?;
        Ok(said)
    }

    fn add_memory_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new("add_memory", "Save a new memory about the user.", move |args: MemoryArgs| {
            let (this, scope) = (this.clone(), scope.clone());
            async move {
                this.change_memories(&scope, |memories| {
                    let now = iso_now();
                    let id = short_id();
                    memories.push(json!({"id": id, "content": args.memory, "created_at": now, "updated_at": now,
                                         "added_by_agent": scope.agent_id}));
                    Ok(format!("Memory saved: {id}"))
                })
                .await
            }
        })
    }

    fn update_memory_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new(
            "update_memory",
            "Rewrite an existing memory of the user, by its id.",
            move |args: UpdateMemoryArgs| {
                let (this, scope) = (this.clone(), scope.clone());
                async move {
                    this.change_memories(&scope, |memories| {
                        let Some(m) = memories.iter_mut().find(|m| m["id"] == json!(args.memory_id)) else {
                            return Err(format!("Memory not found: {}", args.memory_id));
                        };
                        m["content"] = json!(args.memory);
                        m["updated_at"] = json!(iso_now());
                        Ok(format!("Memory updated: {}", args.memory_id))
                    })
                    .await
                }
            },
        )
    }

    fn delete_memory_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new("delete_memory", "Delete a memory of the user, by its id.", move |args: DeleteMemoryArgs| {
            let (this, scope) = (this.clone(), scope.clone());
            async move {
                this.change_memories(&scope, |memories| {
                    let before = memories.len();
                    memories.retain(|m| m["id"] != json!(args.memory_id));
                    if memories.len() == before {
                        return Err(format!("Memory not found: {}", args.memory_id));
                    }
                    Ok(format!("Memory deleted: {}", args.memory_id))
                })
                .await
            }
        })
    }

    fn remember_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new(
            "remember_about",
            "Remember an entity (a company, person, project, place...) and new facts or events about it.",
            move |args: RememberArgs| {
                let (this, scope) = (this.clone(), scope.clone());
                async move { this.remember(&scope, args).await }
            },
        )
    }

    async fn remember(&self, scope: &Scope, args: RememberArgs) -> Result<String, ToolError> {
        let slug = entity_slug(&args.entity);
        let kind = entity_slug(&args.entity_type);
        if slug.is_empty() || kind.is_empty() {
            return Ok("Error: entity and entity_type must name something (letters or digits)".to_owned());
        }
        let id = self.entity_id(&scope.user_id, &kind, &slug);
        let existing = self.load(&id).await.map_err(tool_error)?;
        let created = existing.is_none();
        let now = iso_now();
        let ns = self.config.entity_namespace.clone();
        let mut content = match existing {
            Some(r) => r.content,
            None => serde_json::from_value(json!({
                "entity_id": slug, "entity_type": kind, "name": args.entity, "description": null, "properties": {},
                "aliases": [], "facts": [], "events": [], "relationships": [], "namespace": ns,
                "user_id": (ns == "user").then(|| scope.user_id.clone()), "agent_id": scope.agent_id,
                "team_id": null, "created_at": now, "updated_at": now, "archived_at": null,
            }))
            .unwrap_or_default(),
        };
        if let Some(d) = args.description.filter(|d| !d.trim().is_empty()) {
            content.insert("description".to_owned(), json!(d));
        }
        let mut added = [0, 0];
        for (i, (key, items)) in [("facts", args.facts), ("events", args.events)].into_iter().enumerate() {
            let list = content.entry(key).or_insert_with(|| json!([]));
            let Some(list) = list.as_array_mut() else { continue };
            for item in items.into_iter().filter(|f| !f.trim().is_empty()) {
                if list.iter().any(|f| f["content"] == json!(item) && f.get("superseded_at").is_none_or(Value::is_null))
                {
                    continue;
                }
                list.push(json!({"id": short_id(), "content": item, "created_at": now, "updated_at": now}));
                added[i] += 1;
            }
        }
        content.insert("updated_at".to_owned(), json!(now));
        let mut record = self.record("entity_memory", id, scope, content);
        record.namespace = Some(ns.clone());
        record.user_id = (ns == "user").then(|| scope.user_id.clone());
        record.entity_id = Some(slug.clone());
        record.entity_type = Some(kind.clone());
        self.db.upsert_learning(&record).await.map_err(tool_error)?;
        Ok(format!(
            "{} {kind}/{slug}. Recorded {} fact(s), {} event(s).",
            if created { "Created" } else { "Updated" },
            added[0],
            added[1]
        ))
    }

    fn search_entities_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new(
            "search_entities",
            "Search the entities you remember (by words of their name or facts).",
            move |args: SearchArgs| {
                let (this, scope) = (this.clone(), scope.clone());
                async move {
                    let entities = this.entities(&scope.user_id).await.map_err(tool_error)?;
                    let q = args.query.unwrap_or_default().to_lowercase();
                    let found: Vec<String> = entities
                        .iter()
                        .filter(|e| args.entity_type.as_deref().is_none_or(|t| e.entity_type.as_deref() == Some(t)))
                        .filter(|e| {
                            q.is_empty() || Value::Object(e.content.clone()).to_string().to_lowercase().contains(&q)
                        })
                        .map(|e| describe(e, 10))
                        .collect();
                    Ok(if found.is_empty() { "No matching entities.".to_owned() } else { found.join("\n\n") })
                }
            },
        )
    }

    fn forget_tool(&self, scope: &Scope) -> Function {
        let (this, scope) = (self.clone(), scope.clone());
        Function::new(
            "forget",
            "Forget a fact about an entity, or the whole entity when no fact is given.",
            move |args: ForgetArgs| {
                let (this, scope) = (this.clone(), scope.clone());
                async move {
                    let slug = entity_slug(&args.entity);
                    let entities = this.entities(&scope.user_id).await.map_err(tool_error)?;
                    let Some(entity) = entities.into_iter().find(|e| e.entity_id.as_deref() == Some(slug.as_str()))
                    else {
                        return Ok(format!("No entity named {}.", args.entity));
                    };
                    let mut record = entity;
                    let now = iso_now();
                    match &args.fact {
                        Some(fact) => {
                            let facts = record.content.get_mut("facts").and_then(Value::as_array_mut);
                            let Some(f) = facts.and_then(|fs| fs.iter_mut().find(|f| f["content"] == json!(fact)))
                            else {
                                return Ok(format!("No such fact about {}.", args.entity));
                            };
                            f["superseded_at"] = json!(now);
                            f["superseded_by"] = json!("forgotten");
                        }
                        None => {
                            record.content.insert("archived_at".to_owned(), json!(now));
                        }
                    }
                    record.updated_at = Some(agno_core::now_epoch_secs());
                    this.db.upsert_learning(&record).await.map_err(tool_error)?;
                    Ok(format!("Forgot {}{}.", args.entity, args.fact.map(|f| format!(": {f}")).unwrap_or_default()))
                }
            },
        )
    }
}

fn str_of<'a>(content: &'a Map<String, Value>, key: &str) -> &'a str {
    content.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `preferred_name` as `Preferred Name`.
fn title(field: &str) -> String {
    field
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An entity with its live facts (at most `max`) and events.
fn describe(e: &LearningRecord, max: usize) -> String {
    let live = |key: &str| -> Vec<String> {
        e.content
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|f| f.get("superseded_at").is_none_or(Value::is_null))
            .filter_map(|f| f.get("content").and_then(Value::as_str).map(|c| format!("  - {c}")))
            .take(max)
            .collect()
    };
    let mut lines = vec![format!("{} ({})", str_of(&e.content, "name"), e.entity_type.as_deref().unwrap_or_default())];
    if let Some(d) = e.content.get("description").and_then(Value::as_str) {
        lines.push(format!("  {d}"));
    }
    lines.extend(live("facts"));
    lines.extend(live("events"));
    lines.join("\n")
}

/// `<entity_memory>`: the directory of entities (newest first) and what is known about those the
/// message names.
fn entity_block(entities: &[LearningRecord], message: &str) -> String {
    let live: Vec<&LearningRecord> =
        entities.iter().filter(|e| e.content.get("archived_at").is_none_or(Value::is_null)).collect();
    let directory: Vec<String> = live
        .iter()
        .take(50)
        .map(|e| format!("- {} ({})", str_of(&e.content, "name"), e.entity_type.as_deref().unwrap_or_default()))
        .collect();
    let message = message.to_lowercase();
    let relevant: Vec<String> = live
        .iter()
        .filter(|e| {
            let name = str_of(&e.content, "name").to_lowercase();
            (!name.is_empty() && message.contains(&name))
                || e.entity_id.as_deref().is_some_and(|id| message.contains(&id.replace('_', " ")))
        })
        .take(5)
        .map(|e| describe(e, 10))
        .collect();
    let mut block =
        format!("<entity_memory>\n**Entity directory** (all known entities, newest first):\n{}", directory.join("\n"));
    if !relevant.is_empty() {
        block.push_str(&format!("\n\n**Known information about relevant entities:**\n{}", relevant.join("\n\n")));
    }
    block.push_str("\n</entity_memory>");
    block
}

fn guidance(store: &str, propose: bool) -> String {
    let tag = match store {
        "user_profile" => "user_profile_instructions",
        "user_memory" => "user_memory_instructions",
        _ => "entity_memory_instructions",
    };
    let what = match store {
        "user_profile" => "When the user tells you their name or how to address them, save it with update_profile.",
        "user_memory" => {
            "When the user shares something lasting about themselves, save it with add_memory (or correct an old one \
             with update_memory, remove one with delete_memory)."
        }
        _ => {
            "When the user tells you something lasting about a company, person, project or place, record it with \
             remember_about; look things up with search_entities; remove what is wrong with forget."
        }
    };
    let propose = if propose {
        "\nBefore saving, tell the user what you would save and ask whether to; save only once they agree."
    } else {
        ""
    };
    format!("<{tag}>\n{what}{propose}\n</{tag}>")
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ProfileArgs {
    /// The user's full name.
    name: Option<String>,
    /// What the user likes to be called.
    preferred_name: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct MemoryArgs {
    /// The memory: a short third-person statement about the user.
    memory: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct UpdateMemoryArgs {
    /// The id of the memory to rewrite.
    memory_id: String,
    /// Its new text.
    memory: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct DeleteMemoryArgs {
    /// The id of the memory to delete.
    memory_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct RememberArgs {
    /// The entity's name, e.g. "Acme Corp".
    entity: String,
    /// Its type, e.g. "company", "person", "project".
    entity_type: String,
    /// A short description.
    description: Option<String>,
    /// New lasting facts about it.
    #[serde(default)]
    facts: Vec<String>,
    /// New dated events about it.
    #[serde(default)]
    events: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// Words to look for (none: every entity).
    query: Option<String>,
    /// Only entities of this type.
    entity_type: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ForgetArgs {
    /// The entity's name.
    entity: String,
    /// The fact to forget (none: the whole entity).
    fact: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_agnos() {
        assert_eq!(entity_slug("Acme Corp"), "acme_corp");
        assert_eq!(entity_slug("C++ / C#"), "c_plus_plus_c_sharp");
        assert_eq!(entity_slug("Café Noël!"), "cafe_noel");
        assert_eq!(title("preferred_name"), "Preferred Name");
    }
}
