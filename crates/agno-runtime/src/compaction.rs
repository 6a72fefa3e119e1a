//! Compaction of an agent's session history (Agno 3.1's `Compaction`): older history folded
//! into a summary a model writes, stored in `agno_compactions`, and sent in place of what it
//! replaced.
//!
//! The rules (where to cut, what the summarizer is asked, what a run sends) are
//! [`agno_core::compaction`]'s; this module asks the model, stores the record, and plugs the
//! fold into a run: [`history_for_run`] gives the history a run sends (the fold in force applied,
//! a new fold made first when the context crosses `compact_at_tokens`), [`compact_session`] is a
//! fold asked for (the `/compact` route). Nothing stored in the session changes; the summary is
//! never stored as a message (it is marked as history, which runs do not store).

use std::sync::Arc;

use agno_core::compaction::{self, CompactionSettings};
use agno_core::{
    AgentSession, CompactionRecord, CompactionStatus, Db, DynTool, Message, Metrics, Model, ModelRequest, ToolError,
};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::AgentInner;

/// How many runs the planner reads at most (Agno's `_PLANNER_WINDOW_MAX_RUNS`): a fold needs to
/// see what lies before the kept tail, and a long session costs no more than this.
pub(crate) const PLANNER_WINDOW_RUNS: usize = 500;

/// How many folds one archive search scans (Agno's `_SEARCH_MAX_FOLDS`).
const SEARCH_MAX_FOLDS: usize = 20;

/// Compaction settings of an agent, with the model writing summaries (default: the agent's).
///
/// ```
/// use agno_runtime::Compaction;
///
/// // Fold by hand only (the `/compact` route), keeping the newest 5 runs verbatim.
/// let manual = Compaction::new().compact_at_tokens(None);
/// // Fold automatically once the context reaches 60k tokens, keeping about 8k tokens verbatim.
/// let automatic = Compaction::new().compact_at_tokens(Some(60_000)).uncompacted_tokens(8_000);
/// assert!(automatic.settings().validate().is_ok() && manual.settings().validate().is_ok());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Compaction {
    settings: CompactionSettings,
    model: Option<Arc<dyn Model>>,
}

impl Compaction {
    /// Agno's defaults: fold at 150,000 tokens, keep the newest 5 runs, store and search the
    /// folded messages.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compaction with these settings.
    pub fn with_settings(settings: CompactionSettings) -> Self {
        Self { settings, model: None }
    }

    /// Fold when the context reaches this many tokens; `None` folds only when asked.
    pub fn compact_at_tokens(mut self, tokens: Option<usize>) -> Self {
        self.settings.compact_at_tokens = tokens;
        self
    }

    /// Keep the newest `runs` runs verbatim (instead of a size).
    pub fn uncompacted_runs(mut self, runs: usize) -> Self {
        self.settings.uncompacted_runs = Some(runs);
        self.settings.uncompacted_tokens = None;
        self
    }

    /// Keep about `tokens` tokens of the newest history verbatim (instead of a run count).
    pub fn uncompacted_tokens(mut self, tokens: usize) -> Self {
        self.settings.uncompacted_tokens = Some(tokens);
        self.settings.uncompacted_runs = None;
        self
    }

    /// Store the folded messages with the record (default on); off also turns off their search.
    pub fn store_compacted_messages(mut self, on: bool) -> Self {
        self.settings.store_compacted_messages = on;
        self.settings.search_compacted_messages &= on;
        self
    }

    /// Give the agent the `search_compacted_history` tool (default: as storing).
    pub fn search_compacted_messages(mut self, on: bool) -> Self {
        self.settings.search_compacted_messages = on;
        self
    }

    /// Extra guidance for the summarizer ("keep every ticket id").
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.settings.instructions = Some(instructions.into());
        self
    }

    /// The model writing summaries (default: the agent's).
    pub fn model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// The settings.
    pub fn settings(&self) -> &CompactionSettings {
        &self.settings
    }
}

/// The outcome of a compaction asked for (Agno's `CompactionResult`): a decline is an answer,
/// not an error.
#[derive(Debug, Clone)]
pub struct CompactionOutcome {
    /// What happened.
    pub status: CompactionStatus,
    /// What to tell the user.
    pub message: String,
    /// The fold made.
    pub record: Option<CompactionRecord>,
    /// The summarizer's usage (under `details.compaction_model`), when it was asked.
    pub metrics: Option<Metrics>,
}

impl CompactionOutcome {
    fn declined(status: CompactionStatus, message: impl Into<String>) -> Self {
        Self { status, message: message.into(), record: None, metrics: None }
    }

    /// As Agno's `CompactionResult.to_dict()`: `status`, `message`, `compacted`, `record`,
    /// `metrics`.
    pub fn to_api(&self) -> Value {
        json!({
            "status": self.status,
            "message": self.message,
            "compacted": self.status == CompactionStatus::Compacted,
            "record": self.record.as_ref().map(CompactionRecord::to_api),
            "metrics": self.metrics.as_ref().map(|m| serde_json::to_value(m).unwrap_or(Value::Null)),
        })
    }
}

/// Why a fold asked for could not be made (beyond a decline).
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// Reading the session or writing the record failed.
    #[error(transparent)]
    Storage(#[from] agno_core::DbError),
    /// The agent has no database to keep the record in.
    #[error("compaction records are stored: give the agent a db")]
    NoDb,
}

/// The fold in force for a session: its newest record (none when reading fails, said in a
/// warning: a run goes on with its whole history rather than fail).
async fn latest(db: &dyn Db, session_id: &str) -> Option<CompactionRecord> {
    match db.get_compactions(session_id, Some(1)).await {
        Ok(mut records) => records.drain(..).next(),
        Err(e) => {
            tracing::warn!(session_id, error = %e, "cannot read the compaction in force; the history is sent whole");
            None
        }
    }
}

/// True when `record` cuts somewhere in `history`.
fn anchored_in(record: &CompactionRecord, history: &[Message]) -> bool {
    record.first_kept_message_id.as_deref().is_some_and(|anchor| history.iter().any(|m| m.id == anchor))
}

/// Loads the session a compacting agent's run works from, reading no more runs than it needs:
/// with a fold in force, the runs back to the fold's anchor (read in doubling windows from the
/// usual history window, so a recent fold costs a short read); before any fold, the planner's
/// window when `compact_at_tokens` is set (the context the threshold measures), else the usual
/// history window (nothing is folded before it is asked for). Returns the session with the fold
/// in force, read once for the whole run (its history, and its search tool).
///
/// # Errors
/// A storage error.
pub(crate) async fn load_session(
    agent: &AgentInner,
    c: &Compaction,
    db: &dyn Db,
    session_id: &str,
    user_id: Option<&str>,
) -> Result<(Option<AgentSession>, Option<CompactionRecord>), agno_core::DbError> {
    let usual = agent.history.runs_limit();
    let fold = latest(db, session_id).await;
    let session = match fold.as_ref().filter(|r| r.first_kept_message_id.is_some()) {
        Some(record) => {
            let mut limit = usual.unwrap_or(PLANNER_WINDOW_RUNS) + 8;
            loop {
                let Some(session) = db.get_session(session_id, user_id, Some(limit)).await? else { break None };
                if session.runs().len() < limit || anchored_in(record, &session.history_messages(None, None)) {
                    break Some(session);
                }
                limit = limit.saturating_mul(2);
            }
        }
        None if c.settings.compact_at_tokens.is_some() => {
            db.get_session(session_id, user_id, Some(planner_window(agent))).await?
        }
        None => {
            crate::persist::load_with_history(db, session_id, user_id, usual, agent.history.num_history_messages)
                .await?
        }
    };
    Ok((session, fold))
}

/// The runs the planner window holds.
pub(crate) fn planner_window(agent: &AgentInner) -> usize {
    agent.history.num_history_runs.unwrap_or(0).max(PLANNER_WINDOW_RUNS)
}

/// The estimated tokens the tools' definitions cost on every request.
fn tools_tokens(tools: &[Arc<dyn DynTool>]) -> usize {
    tools
        .iter()
        .map(|t| compaction::estimate_text_tokens(&serde_json::to_string(t.definition()).unwrap_or_default()))
        .sum()
}

/// The settings and model of the agent's compaction.
fn summarizer(agent: &AgentInner, c: &Compaction) -> Arc<dyn Model> {
    c.model.clone().unwrap_or_else(|| Arc::clone(&agent.model))
}

/// A fold to make: where it cuts in what, after which record, for which run.
struct Fold<'a> {
    history: &'a [Message],
    previous: Option<&'a CompactionRecord>,
    cut: usize,
    run_id: Option<&'a str>,
    /// What the model was sent before this fold (the "before" of its size).
    sent: &'a [Message],
    /// The system message(s) sent ahead of the history.
    prefix: &'a [Message],
}

/// Makes `fold`: asks the summarizer, stores the record (a failed write is returned with the
/// record, which still applies to this run). `None` when the summarizer returned nothing.
async fn make_fold(
    agent: &AgentInner,
    c: &Compaction,
    db: &dyn Db,
    session: &AgentSession,
    fold: Fold<'_>,
    metrics: &mut Metrics,
) -> Option<(CompactionRecord, Result<(), agno_core::DbError>)> {
    let s = &c.settings;
    let already = compaction::resolved_boundary(fold.history, fold.previous);
    let folded = &fold.history[already..fold.cut];
    let previous_summary = fold.previous.and_then(|p| p.summary.as_deref());
    let prompt =
        compaction::summary_prompt(folded, previous_summary, s.instructions.as_deref(), s.store_compacted_messages);
    let model = summarizer(agent, c);
    let request = ModelRequest { messages: prompt.to_vec(), ..ModelRequest::default() };
    let response = match model.invoke(request).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(session_id = %session.session_id, error = %e, "error compacting conversation");
            return None;
        }
    };
    if let Some(usage) = &response.usage {
        metrics.add_usage(usage);
        metrics.add_detail("compaction_model", model.id(), &model.metrics_provider(), usage);
    }
    if response.content.trim().is_empty() {
        return None;
    }
    let mut record = CompactionRecord {
        compaction_id: agno_core::new_id().replace('-', ""),
        session_id: session.session_id.clone(),
        run_id: fold.run_id.map(str::to_owned),
        user_id: session.user_id.clone(),
        first_kept_message_id: Some(fold.history[fold.cut].id.clone()),
        summary: Some(response.content),
        archived_messages: s.store_compacted_messages.then(|| compaction::render_messages(folded)),
        messages_compacted: Some(i64::try_from(folded.len()).unwrap_or(i64::MAX)),
        tokens_before: None,
        tokens_after: None,
        created_at: agno_core::now_epoch_secs(),
    };
    let size = |messages: &[Message]| {
        let total = compaction::estimate_tokens(fold.prefix) + compaction::estimate_tokens(messages);
        Some(i64::try_from(total).unwrap_or(i64::MAX))
    };
    record.tokens_before = size(fold.sent);
    record.tokens_after = size(&compaction::build_view(fold.history, Some(&record), s.search_compacted_messages));
    let stored = db.upsert_compaction(&record).await;
    tracing::info!(
        session_id = %session.session_id,
        messages = folded.len(),
        before = ?record.tokens_before,
        after = ?record.tokens_after,
        "compacted conversation history"
    );
    Some((record, stored))
}

/// What a run started now sends as its history, when the agent compacts: the fold in force
/// applied (the summary, then everything from its anchor on); before the first fold, the usual
/// history window, or everything the planner reads when a threshold is set (the threshold then
/// bounds the context). When the context (`prefix`, the history and the tools) reaches
/// `compact_at_tokens`, a new fold is made first, recorded with `run_id`, and its summarizer's
/// usage added to `metrics`.
pub(crate) async fn history_for_run(
    agent: &AgentInner,
    c: &Compaction,
    (session, record): (&AgentSession, Option<CompactionRecord>),
    run_id: &str,
    prefix: &[Message],
    tools: &[Arc<dyn DynTool>],
    metrics: &mut Metrics,
) -> Vec<Message> {
    let replay = || session.history_messages(agent.history.runs_limit(), agent.history.num_history_messages);
    let Some(db) = agent.db.as_deref() else { return replay() };
    let s = &c.settings;
    // What `load_session` read: the runs back to the fold's anchor, or the planner's window.
    let history = session.history_messages(None, None);
    let applies = record.as_ref().is_some_and(|r| anchored_in(r, &history));
    let in_context = match (applies, s.compact_at_tokens) {
        (true, _) | (false, Some(_)) => compaction::build_view(&history, record.as_ref(), s.search_compacted_messages),
        (false, None) => replay(),
    };
    if s.compact_at_tokens.is_none() {
        // Nothing reads a size without a threshold: no tokens are counted.
        return in_context;
    }
    let overhead = compaction::estimate_tokens(prefix) + tools_tokens(tools);
    if !s.should_compact(overhead + compaction::estimate_tokens(&in_context)) {
        return in_context;
    }
    let cut = match s.plan(&history, record.as_ref(), overhead) {
        Ok(cut) => cut,
        Err(declined) => {
            tracing::info!(session_id = %session.session_id, reason = %declined.message, "compaction threshold reached, no fold");
            return in_context;
        }
    };
    let fold =
        Fold { history: &history, previous: record.as_ref(), cut, run_id: Some(run_id), sent: &in_context, prefix };
    match make_fold(agent, c, db, session, fold, metrics).await {
        Some((new, stored)) => {
            if let Err(e) = stored {
                tracing::warn!(session_id = %session.session_id, error = %e, "cannot store the compaction record; it applies to this run only");
            }
            compaction::build_view(&history, Some(&new), s.search_compacted_messages)
        }
        None => in_context,
    }
}

/// What a continued run sends as its history: `fold` (the fold in force, read with the session)
/// applied; no new fold is made while a run continues.
pub(crate) fn history_for_continue(
    agent: &AgentInner,
    c: &Compaction,
    session: &AgentSession,
    fold: Option<&CompactionRecord>,
) -> Vec<Message> {
    let history = session.history_messages(None, None);
    match fold {
        Some(record) if anchored_in(record, &history) => {
            compaction::build_view(&history, Some(record), c.settings.search_compacted_messages)
        }
        _ => session.history_messages(agent.history.runs_limit(), agent.history.num_history_messages),
    }
}

/// The fold in force for a run of `session_id`, when its session was not loaded with it (the
/// run sends no history, or stores nothing).
pub(crate) async fn fold_in_force(agent: &AgentInner, session_id: &str) -> Option<CompactionRecord> {
    agent.compaction.as_ref()?;
    latest(agent.db.as_deref()?, session_id).await
}

/// Folds session `session_id` of `user_id` now (Agno's `agent.compact()`), without waiting for
/// the threshold; every other rule applies, and a decline is reported, not raised. The whole
/// stored history is read (the run window does not cap what a fold can see).
///
/// # Errors
/// A [`CompactError`]: no db, or reading the session or storing the record failed.
pub(crate) async fn compact_session(
    agent: &AgentInner,
    session_id: &str,
    user_id: Option<&str>,
) -> Result<CompactionOutcome, CompactError> {
    let Some(c) = &agent.compaction else {
        return Ok(CompactionOutcome::declined(
            CompactionStatus::NotEnabled,
            "Compaction is not enabled on this agent.",
        ));
    };
    let db = agent.db.as_deref().ok_or(CompactError::NoDb)?;
    let Some(session) = db.get_session(session_id, user_id, None).await? else {
        return Ok(CompactionOutcome::declined(CompactionStatus::NoHistory, "No such session."));
    };
    let history = session.history_messages(None, None);
    if history.is_empty() {
        return Ok(CompactionOutcome::declined(CompactionStatus::NoHistory, "This session has no stored history yet."));
    }
    let record = latest(db, session_id).await;
    let cut = match c.settings.plan(&history, record.as_ref(), 0) {
        Ok(cut) => cut,
        Err(declined) => return Ok(CompactionOutcome::declined(declined.status, declined.message)),
    };
    // "Before" is what the model was last sent: the fold in force applied, or the run window.
    let applies = record.as_ref().is_some_and(|r| anchored_in(r, &history));
    let sent = if applies || c.settings.compact_at_tokens.is_some() {
        compaction::build_view(&history, record.as_ref(), c.settings.search_compacted_messages)
    } else {
        session.history_messages(agent.history.runs_limit(), agent.history.num_history_messages)
    };
    let mut metrics = Metrics::default();
    let fold = Fold { history: &history, previous: record.as_ref(), cut, run_id: None, sent: &sent, prefix: &[] };
    let made = make_fold(agent, c, db, &session, fold, &mut metrics).await;
    let metrics = (!metrics.details.is_empty()).then_some(metrics);
    let Some((record, stored)) = made else {
        return Ok(CompactionOutcome {
            status: CompactionStatus::SummaryFailed,
            message: "The summarizer returned nothing, so history was left unchanged.".into(),
            record: None,
            metrics,
        });
    };
    stored?;
    let message = format!(
        "Compacted {} messages ({} -> {} tokens).",
        record.messages_compacted.unwrap_or(0),
        record.tokens_before.unwrap_or(0),
        record.tokens_after.unwrap_or(0)
    );
    Ok(CompactionOutcome { status: CompactionStatus::Compacted, message, record: Some(record), metrics })
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// Text to find, matched case-insensitively line by line against the stored transcript.
    /// Separate alternatives with "|" to find any of them, e.g. "build hash|rotation window".
    pattern: String,
    /// Lines of surrounding context to show around each match (at most 10).
    #[serde(default = "two")]
    context_lines: usize,
}

fn two() -> usize {
    2
}

/// The `search_compacted_history` tool of a run (Agno's): the folded messages of this session
/// only (the session is bound here, never taken from the model).
pub(crate) fn search_tool(db: Arc<dyn Db>, session_id: String) -> Arc<dyn DynTool> {
    Arc::new(Function::new(
        "search_compacted_history",
        "Search the earlier conversation that was compacted out of context.\n\nUse this when a question needs an \
         exact value - an identifier, figure, name, quote, command, or error message - that the summary does not \
         carry.",
        move |args: SearchArgs| {
            let (db, session_id) = (Arc::clone(&db), session_id.clone());
            async move {
                let terms = compaction::search_terms(&args.pattern);
                if terms.is_empty() {
                    return Err(ToolError::invalid_arguments("pattern must name some text to find"));
                }
                let shown: String = args.pattern.chars().take(200).collect();
                let rows = db
                    .search_compactions(&session_id, &terms, SEARCH_MAX_FOLDS)
                    .await
                    .map_err(|e| ToolError::execution(format!("cannot search the compacted history: {e}")))?;
                let mut blocks: Vec<String> = Vec::new();
                let mut used = 0;
                for row in rows {
                    let hits = compaction::grep(
                        row.archived_messages.as_deref().unwrap_or_default(),
                        &args.pattern,
                        args.context_lines,
                    );
                    if hits.is_empty() {
                        continue;
                    }
                    if !blocks.is_empty() && used + hits.len() > compaction::SEARCH_OUTPUT_CHARS {
                        blocks.push("... more matches in older folds; narrow the search.".into());
                        break;
                    }
                    used += hits.len();
                    blocks.push(hits);
                }
                if blocks.is_empty() {
                    return Ok(format!("No compacted history matches {shown:?}."));
                }
                Ok(blocks.join("\n\n---\n\n"))
            }
        },
    ))
}

/// The search tool when the agent searches its folds and the fold in force stored its messages.
pub(crate) fn tools_for_run(
    agent: &AgentInner,
    session_id: &str,
    fold: Option<&CompactionRecord>,
) -> Option<Arc<dyn DynTool>> {
    let c = agent.compaction.as_ref()?;
    if !(c.settings.search_compacted_messages && c.settings.store_compacted_messages) {
        return None;
    }
    fold.filter(|r| r.archived())?;
    Some(search_tool(Arc::clone(agent.db.as_ref()?), session_id.to_owned()))
}
