//! Compaction: a long session's older history folded into a summary (Agno 3.1's `Compaction`).
//!
//! A fold is a row of `agno_compactions` ([`CompactionRecord`]), written once and never updated:
//! the summary, the id of the first message kept verbatim (an id, never an index: history is
//! rebuilt from the stored runs on every run) and, when archiving is on, the folded messages as
//! markdown. Nothing stored in the session changes; only the messages sent to the model do
//! ([`build_view`]): the summary, as a user message, stands in for everything before the anchor.
//!
//! This module holds the rules a fold is made by, free of any model or database: where the cut
//! goes ([`CompactionSettings::plan`], pair-safe so a tool result never loses its call), how big
//! messages are ([`estimate_tokens`]), what the summarizer is asked ([`summary_prompt`]) and how
//! the archive is rendered and searched ([`render_messages`], [`grep`]). The runtime calls the
//! model and stores the row.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::db::DbResult;
use crate::message::{Message, Role};

/// The line opening the summary message a view sends (Agno's `SUMMARY_PREFIX`); fixed, so an
/// injected summary is recognised and never folded again.
pub const SUMMARY_PREFIX: &str = "Summary of earlier conversation (compacted):\n\n";

/// Added to the summary message when the folded messages are stored and the agent can search
/// them (Agno's `ARCHIVE_LOOKUP_INSTRUCTION`).
pub const ARCHIVE_LOOKUP_INSTRUCTION: &str = "\n\nThe full text of the folded conversation is stored and searchable.
Before answering any question about it that calls for an exact value - an identifier, figure,
name, quote, command, or error message - search it rather than relying on this
summary. Say you do not know only after looking.";

/// The summarizer's instructions (Agno's `DEFAULT_COMPACTION_PROMPT`); `{length_rule}` is
/// replaced by [`LENGTH_RULE_COMPACT`] or a budget.
pub const DEFAULT_COMPACTION_PROMPT: &str =
    "You maintain the running summary of a long conversation between a user and an AI agent. The
conversation exceeds the model's context window, so everything older than a recent tail is folded into
the summary you produce. Your summary is the ONLY memory of the folded conversation: anything you omit
is lost to the agent.

You are given the previous summary (if one exists) and a transcript segment to fold into it. Produce an
updated summary with exactly these sections, in this order:

## Goal
## In progress / next steps
## Critical context
## Constraints & preferences
## Key decisions & facts
## Errors & fixes
## Completed

The order is by importance, most important first. A summary that runs too long may be cut from the
end, so what the agent needs to carry on comes first and finished history last.

Section guidance:
- Goal: what the user is ultimately trying to achieve. Rarely changes.
- In progress / next steps: what is underway and what comes next.
- Critical context: exact file paths, identifiers, result_ids, URLs, error messages, and numbers -
  verbatim. Never paraphrase these.
- Constraints & preferences: standing user constraints and instructions that remain in force - coding
  rules, limits, style and process preferences. These are easy to lose; keep every one that has not been
  explicitly lifted.
- Key decisions & facts: decisions made and why, plus durable facts established in conversation.
- Errors & fixes: errors encountered and how they were resolved (or that they remain open).
- Completed: finished work, stated compactly.

Rules:
- Preserve everything from the previous summary unless the new segment supersedes it.
- Move items that the new segment shows are finished into Completed.
- Do not continue the conversation, answer questions, or add commentary.
- Output only the summary, starting at \"## Goal\".
{length_rule}

Durable state (offloaded tool results, defined variables, files on disk) outlives this summary and is
listed separately for the agent; you do not need to reproduce its contents, only reference identifiers
in Critical context when they matter.";

/// The length rule without a budget (Agno's `LENGTH_RULE_COMPACT`).
pub const LENGTH_RULE_COMPACT: &str =
    "- Keep the summary compact: compress prose before dropping facts, and do not pad a section to
  make it look complete. An empty section is one line.";

/// Added to the summarizer's prompt when the folded messages are archived (Agno's
/// `ARCHIVE_AWARE_PROMPT`).
pub const ARCHIVE_AWARE_PROMPT: &str = "

The full transcript of the folded segment remains available to the agent.
Directly under the Goal section, add one line beginning \"Not covered here:\" naming the kinds of detail
a reader would have to look up - for example bulk tabular data, long tool output, or full error text.
Omit the line only if the summary genuinely preserves every specific in the segment.";

/// What the summarizer reads at most, in characters (Agno's `DEFAULT_SUMMARIZE_CHAR_BUDGET`):
/// the oldest folded messages beyond it are left out of the transcript.
pub const SUMMARIZE_CHAR_BUDGET: usize = 400_000;

/// A tool result is clipped to this many characters in the archive
/// (Agno's `MAX_ARCHIVED_TOOL_RESULT_CHARS`).
pub const MAX_ARCHIVED_TOOL_RESULT_CHARS: usize = 20_000;

/// The most alternatives one archive search may carry (Agno's `MAX_SEARCH_TERMS`).
pub const MAX_SEARCH_TERMS: usize = 20;

/// One row of `agno_compactions` (Agno 3.1's columns, epoch seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The record's id.
    pub compaction_id: String,
    /// The session folded.
    pub session_id: String,
    /// The run that made the fold (none for a fold asked for through the API).
    pub run_id: Option<String>,
    /// The session's user.
    pub user_id: Option<String>,
    /// The first message kept verbatim: everything before it is replaced by the summary.
    pub first_kept_message_id: Option<String>,
    /// The summary standing in for the folded messages (it carries the previous fold's forward).
    pub summary: Option<String>,
    /// The folded messages as markdown; none when archiving is off.
    pub archived_messages: Option<String>,
    /// How many messages this fold replaced (those the previous fold had not).
    pub messages_compacted: Option<i64>,
    /// The context's estimated size before the fold.
    pub tokens_before: Option<i64>,
    /// The context's estimated size after it.
    pub tokens_after: Option<i64>,
    /// When the fold was made.
    pub created_at: i64,
}

impl CompactionRecord {
    /// True when the folded messages are stored with the record.
    pub fn archived(&self) -> bool {
        self.archived_messages.as_deref().is_some_and(|a| !a.is_empty())
    }

    /// The record as Agno's `CompactionRecord.to_dict()` gives it to API callers: `id`,
    /// `archived`, and no null keys.
    pub fn to_api(&self) -> Value {
        let mut out = Map::new();
        out.insert("messages_compacted".into(), json!(self.messages_compacted.unwrap_or(0)));
        out.insert("summary".into(), json!(self.summary.clone().unwrap_or_default()));
        let optional = [
            ("first_kept_message_id", self.first_kept_message_id.clone().map(Value::String)),
            ("id", Some(Value::String(self.compaction_id.clone()))),
            ("run_id", self.run_id.clone().map(Value::String)),
            ("archived", Some(Value::Bool(self.archived()))),
            ("tokens_before", self.tokens_before.map(Value::from)),
            ("tokens_after", self.tokens_after.map(Value::from)),
            ("created_at", Some(Value::from(self.created_at))),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                out.insert(key.into(), v);
            }
        }
        Value::Object(out)
    }
}

/// Where compaction records are kept (`agno_compactions`).
#[async_trait::async_trait]
pub trait CompactionStore: Send + Sync {
    /// Stores a record; a record with the same id already stored is left as it is (a record is
    /// a fact, written once).
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn upsert_compaction(&self, record: &CompactionRecord) -> DbResult<()>;

    /// The records of a session, newest first (at most `limit`).
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn get_compactions(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<CompactionRecord>>;

    /// The records of a session whose archived messages contain any of `terms` (case-insensitive
    /// substrings), newest first, at most `limit`. A candidate list: callers match exactly.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn search_compactions(
        &self,
        session_id: &str,
        terms: &[String],
        limit: usize,
    ) -> DbResult<Vec<CompactionRecord>>;

    /// Deletes the records of these sessions; how many were deleted.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn delete_compactions(&self, session_ids: &[String]) -> DbResult<u64>;
}

/// Why a compaction ended as it did (Agno's `CompactionStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStatus {
    /// The fold happened.
    Compacted,
    /// Compaction is not configured on this agent.
    NotEnabled,
    /// The session has no stored history yet.
    NoHistory,
    /// The kept tail covers the whole conversation.
    NothingToFold,
    /// A previous fold already covers everything up to the only safe cut.
    AlreadyCompacted,
    /// Folding would not shrink the context (only with `enforce_min_fold_ratio`).
    NotWorthIt,
    /// The summarizer returned nothing.
    SummaryFailed,
}

/// Estimated tokens of a text: Agno's count without a tokenizer (characters / 4).
pub fn estimate_text_tokens(text: &str) -> usize {
    text.chars().count() / 4
}

/// Estimated tokens of one message: its content, tool-call arguments, tool-call id, reasoning
/// and name, counted together as Agno counts a message.
pub fn estimate_message_tokens(m: &Message) -> usize {
    let mut parts: Vec<String> = Vec::new();
    match &m.content {
        Some(Value::String(s)) if !s.is_empty() => parts.push(s.clone()),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) => parts.push(s.clone()),
                    Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("text") => {
                        parts.push(o.get("text").and_then(Value::as_str).unwrap_or_default().to_owned());
                    }
                    other => parts.push(other.to_string()),
                }
            }
        }
        Some(Value::Null | Value::String(_)) | None => {}
        Some(other) => parts.push(other.to_string()),
    }
    parts.extend(m.tool_calls().iter().map(|c| c.function.arguments.clone()));
    parts.extend(m.tool_call_id.clone());
    parts.extend(m.reasoning_content.clone());
    parts.extend(m.name.clone());
    if parts.is_empty() { 0 } else { estimate_text_tokens(&parts.join(" ")) }
}

/// Estimated tokens of messages.
pub fn estimate_tokens<'a>(messages: impl IntoIterator<Item = &'a Message>) -> usize {
    messages.into_iter().map(estimate_message_tokens).sum()
}

/// The text of a message's content (JSON for anything but a string).
fn content_string(m: &Message) -> String {
    match &m.content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn clip(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((at, _)) => {
            let more = text[at..].chars().count();
            format!("{}\n... [clipped, {more} more characters]", &text[..at])
        }
    }
}

/// One message as a markdown block (Agno's `render_message`): the role (and tool) as a heading,
/// the content (a tool result clipped), the calls it makes.
pub fn render_message(m: &Message) -> String {
    let mut heading = m.role.as_str().to_owned();
    if let Some(tool) = &m.tool_name {
        heading = format!("{heading} ({tool})");
    }
    let mut parts = vec![format!("## {heading}")];
    let content = content_string(m);
    if !content.is_empty() {
        parts.push(if m.role == Role::Tool { clip(&content, MAX_ARCHIVED_TOOL_RESULT_CHARS) } else { content });
    }
    for call in m.tool_calls() {
        parts.push(format!("**calls** `{}`: {}", call.function.name, call.function.arguments));
    }
    parts.join("\n\n")
}

/// Messages as readable markdown (Agno's `render_messages`): the archive's text.
pub fn render_messages(messages: &[Message]) -> String {
    messages.iter().map(render_message).collect::<Vec<_>>().join("\n\n")
}

/// The literal terms of a search: the pattern split on `|` (at most [`MAX_SEARCH_TERMS`]).
pub fn search_terms(pattern: &str) -> Vec<String> {
    pattern.split('|').map(str::trim).filter(|t| !t.is_empty()).take(MAX_SEARCH_TERMS).map(str::to_owned).collect()
}

/// True for the summary message a view injected (never a cut point, never folded).
pub fn is_injected_summary(m: &Message) -> bool {
    m.from_history && m.content_text().is_some_and(|t| t.starts_with(SUMMARY_PREFIX))
}

/// The summary message standing in for the folded messages.
pub fn summary_message(record: &CompactionRecord, searchable: bool) -> Message {
    let mut content = format!("{SUMMARY_PREFIX}{}", record.summary.as_deref().unwrap_or_default());
    if searchable && record.archived() {
        content.push_str(ARCHIVE_LOOKUP_INSTRUCTION);
    }
    let mut m = Message::user(content);
    m.from_history = true;
    m
}

fn leading_system_count(messages: &[Message]) -> usize {
    messages.iter().take_while(|m| m.role == Role::System).count()
}

fn position_of(messages: &[Message], id: &str, start: usize) -> Option<usize> {
    messages.iter().skip(start).position(|m| m.id == id).map(|i| i + start)
}

/// What a run sends instead of `history` once `record` is in force (Agno's `build_view`):
/// leading system messages, the summary, then everything from the record's anchor on. An anchor
/// not found in `history` leaves it as it is (a summary is never sent without its cut).
pub fn build_view(history: &[Message], record: Option<&CompactionRecord>, searchable: bool) -> Vec<Message> {
    let lead = leading_system_count(history);
    let boundary = record.filter(|r| r.summary.as_deref().is_some_and(|s| !s.is_empty())).and_then(|r| {
        let anchor = r.first_kept_message_id.as_deref()?;
        Some((r, position_of(history, anchor, lead)?))
    });
    let mut view: Vec<Message> = history[..lead].to_vec();
    let start = match boundary {
        Some((record, at)) => {
            view.push(summary_message(record, searchable));
            at
        }
        None => lead,
    };
    view.extend(history[start..].iter().filter(|m| boundary.is_none() || !is_injected_summary(m)).cloned());
    view
}

/// Where `previous` cut, as an index into `messages` (0 when it does not apply here).
pub fn resolved_boundary(messages: &[Message], previous: Option<&CompactionRecord>) -> usize {
    previous
        .and_then(|p| p.first_kept_message_id.as_deref())
        .and_then(|anchor| position_of(messages, anchor, 0))
        .unwrap_or(0)
}

/// The assistant message whose call the tool result at `index` answers.
fn owning_call(messages: &[Message], index: usize) -> Option<usize> {
    let id = messages[index].tool_call_id.as_deref()?;
    (0..index).rev().find(|&i| messages[i].tool_calls().iter().any(|c| c.id == id))
}

/// The earliest assistant message before `boundary` whose call is answered at or after it.
fn earliest_orphan_head(messages: &[Message], boundary: usize) -> Option<usize> {
    (boundary..messages.len())
        .filter(|&i| messages[i].role == Role::Tool)
        .filter_map(|i| owning_call(messages, i))
        .filter(|&head| head < boundary)
        .min()
}

/// Where the kept tail of about `keep_tokens` starts, walking back from the end.
fn keep_tail_start(messages: &[Message], keep_tokens: usize, start: usize) -> usize {
    let mut total = 0;
    let mut index = messages.len();
    while index > start {
        let m = &messages[index - 1];
        if !is_injected_summary(m) {
            total += estimate_message_tokens(m);
            if total > keep_tokens {
                break;
            }
        }
        index -= 1;
    }
    index
}

/// What the kept tail is asked to be.
#[derive(Debug, Clone, Copy)]
enum Keep {
    /// From this index on.
    From(usize),
    /// About this many tokens.
    Tokens(usize),
}

/// The first message kept verbatim (Agno's `choose_boundary`): the requested tail snapped back
/// to a user or assistant message where no tool result is separated from its call; none when no
/// safe cut exists after `min_index`.
fn choose_boundary(messages: &[Message], keep: Keep, min_index: usize) -> Option<usize> {
    let floor = min_index.max(leading_system_count(messages));
    let candidate = match keep {
        Keep::From(i) => i.max(floor),
        Keep::Tokens(t) => keep_tail_start(messages, t, floor),
    };
    if candidate <= floor {
        return None;
    }
    let mut index = candidate.min(messages.len().saturating_sub(1));
    while index > floor {
        let m = &messages[index];
        if m.role == Role::Tool {
            index = match owning_call(messages, index) {
                Some(head) if head >= floor => head,
                _ => index - 1,
            };
            continue;
        }
        if m.role == Role::System || is_injected_summary(m) {
            index -= 1;
            continue;
        }
        if let Some(head) = earliest_orphan_head(messages, index) {
            index = head;
            continue;
        }
        return Some(index);
    }
    None
}

/// A compaction's settings (Agno's `Compaction` fields and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    /// Fold when the context reaches this many tokens; none folds only when asked.
    pub compact_at_tokens: Option<usize>,
    /// Recent runs kept verbatim (default 5).
    pub uncompacted_runs: Option<usize>,
    /// Recent history kept verbatim by size instead (exclusive with `uncompacted_runs`).
    pub uncompacted_tokens: Option<usize>,
    /// Store the folded messages with the record (default on).
    pub store_compacted_messages: bool,
    /// Give the agent a tool searching the stored messages (default: as storing).
    pub search_compacted_messages: bool,
    /// Extra guidance for the summarizer.
    pub instructions: Option<String>,
    /// Skip a fold that would not shrink the context.
    pub enforce_min_fold_ratio: bool,
    /// With `enforce_min_fold_ratio`: the folded span must be this many times the kept tail.
    pub min_fold_ratio: f64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            compact_at_tokens: Some(150_000),
            uncompacted_runs: Some(5),
            uncompacted_tokens: None,
            store_compacted_messages: true,
            search_compacted_messages: true,
            instructions: None,
            enforce_min_fold_ratio: false,
            min_fold_ratio: 2.0,
        }
    }
}

/// A fold the settings decline, with the reason a caller can show.
#[derive(Debug, Clone, PartialEq)]
pub struct Declined {
    /// Why.
    pub status: CompactionStatus,
    /// What to tell the user.
    pub message: String,
}

impl CompactionSettings {
    /// Checks the settings as Agno does when a `Compaction` is built.
    ///
    /// # Errors
    /// A message naming the contradiction.
    pub fn validate(&self) -> Result<(), String> {
        if self.compact_at_tokens == Some(0) {
            return Err("compact_at_tokens must be a positive integer".into());
        }
        if self.uncompacted_tokens == Some(0) {
            return Err("uncompacted_tokens must be a positive integer".into());
        }
        if self.uncompacted_tokens.is_some() && self.uncompacted_runs.is_some() {
            return Err("uncompacted_runs and uncompacted_tokens cannot both be set - they describe the same kept \
                        tail in different units"
                .into());
        }
        if let (Some(tail), Some(at)) = (self.uncompacted_tokens, self.compact_at_tokens)
            && tail >= at
        {
            return Err(format!(
                "uncompacted_tokens={tail} must be smaller than compact_at_tokens={at}: a tail that large holds \
                 the whole context, so nothing could fold"
            ));
        }
        if self.search_compacted_messages && !self.store_compacted_messages {
            return Err("search_compacted_messages needs store_compacted_messages: the search reads the stored \
                        messages"
                .into());
        }
        if self.min_fold_ratio < 0.0 || !self.min_fold_ratio.is_finite() {
            return Err(format!("min_fold_ratio must be zero or a positive number, got {}", self.min_fold_ratio));
        }
        Ok(())
    }

    fn fold_ratio(&self) -> f64 {
        if self.enforce_min_fold_ratio { self.min_fold_ratio } else { 0.0 }
    }

    fn tail_setting(&self) -> String {
        match (self.uncompacted_tokens, self.uncompacted_runs) {
            (Some(t), _) => format!("uncompacted_tokens={t}"),
            (None, Some(r)) => format!("uncompacted_runs={r}"),
            (None, None) => "uncompacted_runs=None".to_owned(),
        }
    }

    /// The largest tail a fold keeps once the system prompt, tools and summary (`overhead`) are
    /// counted: half of what the threshold leaves, never more than the ratio allows.
    fn tail_limit_after(&self, overhead: usize) -> Option<usize> {
        let at = self.compact_at_tokens?;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let limit = (at as f64 / (1.0 + self.fold_ratio())) as usize;
        Some(limit.min(at.saturating_sub(overhead) / 2))
    }

    /// `cut`, moved back to the newest user message when it would fold inside that exchange.
    fn outside_newest_exchange(messages: &[Message], cut: Option<usize>, min_index: usize) -> Option<usize> {
        let newest = messages.iter().rposition(|m| m.role == Role::User);
        match (cut, newest) {
            (Some(c), Some(n)) if c > n => choose_boundary(messages, Keep::From(n), min_index),
            _ => cut,
        }
    }

    fn boundary_for(&self, messages: &[Message], min_index: usize, overhead: usize) -> Option<usize> {
        let limit = self.tail_limit_after(overhead);
        if let Some(tail) = self.uncompacted_tokens {
            let budget = limit.map_or(tail, |l| tail.min(l));
            let cut = choose_boundary(messages, Keep::Tokens(budget), min_index);
            return Self::outside_newest_exchange(messages, cut, min_index);
        }
        let keep_runs = self.uncompacted_runs.unwrap_or(0);
        let users: Vec<usize> =
            messages.iter().enumerate().filter(|(_, m)| m.role == Role::User).map(|(i, _)| i).collect();
        let keep_from = if keep_runs == 0 {
            Some(messages.len())
        } else if users.len() <= keep_runs {
            None
        } else {
            Some(users[users.len() - keep_runs])
        };
        let boundary = keep_from.and_then(|k| choose_boundary(messages, Keep::From(k), min_index));
        let Some(limit) = limit else { return boundary };
        let tail_start = boundary.unwrap_or(min_index);
        if estimate_tokens(&messages[tail_start..]) <= limit {
            return boundary;
        }
        let cut = Self::outside_newest_exchange(
            messages,
            choose_boundary(messages, Keep::Tokens(limit), min_index),
            min_index,
        );
        match cut {
            Some(c) if c > tail_start => Some(c),
            _ => boundary,
        }
    }

    /// Where a fold of `messages` would cut (the first message kept), given the fold in force
    /// and the tokens the tail shares the threshold with; or why there is no fold to make
    /// (Agno's `plan_with_reason`).
    ///
    /// # Errors
    /// The decline: [`CompactionStatus::NothingToFold`], [`CompactionStatus::AlreadyCompacted`]
    /// or [`CompactionStatus::NotWorthIt`], with Agno's message.
    pub fn plan(
        &self,
        messages: &[Message],
        previous: Option<&CompactionRecord>,
        overhead: usize,
    ) -> Result<usize, Declined> {
        let already = resolved_boundary(messages, previous);
        let allowance = previous.and_then(|p| p.summary.as_deref()).map_or(0, estimate_text_tokens);
        let boundary = self.boundary_for(messages, already, overhead + allowance);
        let Some(boundary) = boundary.filter(|&b| b > already) else {
            return Err(if previous.is_none() {
                Declined {
                    status: CompactionStatus::NothingToFold,
                    message: format!(
                        "Nothing to fold yet - {} covers the whole conversation, so there is no history before the \
                         kept tail. Lower it to fold sooner.",
                        self.tail_setting()
                    ),
                }
            } else {
                Declined {
                    status: CompactionStatus::AlreadyCompacted,
                    message: "No safe cut past the previous fold yet - the conversation has not grown enough since \
                              then."
                        .to_owned(),
                }
            });
        };
        let ratio = self.fold_ratio();
        if ratio > 0.0 {
            let fold = estimate_tokens(&messages[already..boundary]);
            let keep = estimate_tokens(&messages[boundary..]).max(1);
            #[allow(clippy::cast_precision_loss)]
            let actual = fold as f64 / keep as f64;
            if actual < ratio {
                return Err(Declined {
                    status: CompactionStatus::NotWorthIt,
                    message: format!(
                        "This fold would replace {fold} tokens against a {keep}-token tail (ratio {actual:.2}, needs \
                         {}), so the context would not shrink. Continue the conversation, or lower {} or \
                         min_fold_ratio, or set enforce_min_fold_ratio=False, to fold sooner.",
                        self.min_fold_ratio,
                        self.tail_setting()
                    ),
                });
            }
        }
        Ok(boundary)
    }

    /// True when a context of `tokens` crosses the threshold.
    pub fn should_compact(&self, tokens: usize) -> bool {
        self.compact_at_tokens.is_some_and(|at| tokens >= at)
    }
}

/// The summarizer's two messages (Agno's `_summary_messages`): its instructions, and the folded
/// transcript (the oldest messages beyond [`SUMMARIZE_CHAR_BUDGET`] left out) after the previous
/// summary.
pub fn summary_prompt(
    folded: &[Message],
    previous: Option<&str>,
    instructions: Option<&str>,
    archived: bool,
) -> [Message; 2] {
    let mut budget = SUMMARIZE_CHAR_BUDGET;
    let mut kept: Vec<String> = Vec::new();
    for m in folded.iter().rev() {
        let block = render_message(m);
        let size = block.chars().count() + 2;
        if size > budget && !kept.is_empty() {
            break;
        }
        budget = budget.saturating_sub(size);
        kept.push(block);
    }
    kept.reverse();
    let mut transcript = kept.join("\n\n");
    if let Some(previous) = previous.filter(|p| !p.is_empty()) {
        transcript = format!(
            "Summary of the conversation before this point:\n{previous}\n\nConversation since then:\n{transcript}"
        );
    }
    let mut prompt = DEFAULT_COMPACTION_PROMPT.replace("{length_rule}", LENGTH_RULE_COMPACT);
    if let Some(extra) = instructions.filter(|i| !i.is_empty()) {
        prompt.push_str("\n\nAdditional instructions:\n");
        prompt.push_str(extra);
    }
    if archived {
        prompt.push_str(ARCHIVE_AWARE_PROMPT);
    }
    [Message::system(prompt), Message::user(transcript)]
}

const SEARCH_MAX_CONTEXT_LINES: usize = 10;
const SEARCH_LINE_CHARS: usize = 500;
/// The most characters one archive search returns (Agno's `_SEARCH_OUTPUT_CHARS`).
pub const SEARCH_OUTPUT_CHARS: usize = 8_000;
const SEARCH_MAX_MATCHES: usize = 20;

/// A line cut to [`SEARCH_LINE_CHARS`] around its match.
fn clip_line(line: &str, match_at: usize) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= SEARCH_LINE_CHARS {
        return line.to_owned();
    }
    let start = match_at.saturating_sub(SEARCH_LINE_CHARS / 2).min(chars.len() - SEARCH_LINE_CHARS);
    let end = start + SEARCH_LINE_CHARS;
    let mut out = String::new();
    if start > 0 {
        out.push_str("...");
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push_str("...");
    }
    out
}

/// The lines of `text` matching any literal term of `pattern` (case-insensitive), numbered, with
/// `context_lines` around each (at most 10), as `grep -n -C` shows them (Agno's `_grep`); empty
/// when nothing matches. Literal terms, never a regular expression: the pattern comes from a
/// model. The output is bounded ([`SEARCH_OUTPUT_CHARS`]).
pub fn grep(text: &str, pattern: &str, context_lines: usize) -> String {
    let terms: Vec<String> = search_terms(pattern).iter().map(|t| t.to_lowercase()).collect();
    if terms.is_empty() {
        return String::new();
    }
    let context = context_lines.min(SEARCH_MAX_CONTEXT_LINES);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut hits: Vec<(usize, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_lowercase();
        if let Some(at) = terms.iter().filter_map(|t| lower.find(t.as_str())).min() {
            hits.push((i, lower[..at].chars().count()));
        }
    }
    if hits.is_empty() {
        return String::new();
    }
    let mut truncated = hits.len() > SEARCH_MAX_MATCHES;
    hits.truncate(SEARCH_MAX_MATCHES);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for &(i, _) in &hits {
        let (start, end) = (i.saturating_sub(context), (i + context + 1).min(lines.len()));
        match spans.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => spans.push((start, end)),
        }
    }
    let mut rendered = String::new();
    for (start, end) in spans {
        let block: Vec<String> = (start..end)
            .map(|i| {
                let line = match hits.iter().find(|(h, _)| *h == i) {
                    Some(&(_, at)) => clip_line(lines[i], at),
                    None => clip_line(lines[i], 0),
                };
                format!("{}: {line}", i + 1)
            })
            .collect();
        let block = block.join("\n");
        let candidate = if rendered.is_empty() { block } else { format!("{rendered}\n--\n{block}") };
        if candidate.chars().count() > SEARCH_OUTPUT_CHARS {
            truncated = true;
            if rendered.is_empty() {
                rendered = candidate.chars().take(SEARCH_OUTPUT_CHARS).collect();
            }
            break;
        }
        rendered = candidate;
    }
    if truncated {
        rendered.push_str("\n... more matches than fit; narrow the search.");
    }
    rendered
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn turn(n: usize) -> Vec<Message> {
        vec![Message::user(format!("question {n}")), Message::assistant(format!("answer {n}"), vec![])]
    }

    fn conversation(runs: usize) -> Vec<Message> {
        (0..runs).flat_map(turn).collect()
    }

    fn manual() -> CompactionSettings {
        CompactionSettings { compact_at_tokens: None, ..CompactionSettings::default() }
    }

    #[test]
    fn the_cut_keeps_the_newest_runs() {
        let messages = conversation(12);
        let cut = manual().plan(&messages, None, 0).expect("a fold");
        assert_eq!(cut, 14, "five runs of two messages kept out of twelve");
        assert_eq!(messages[cut].content_text(), Some("question 7"));
    }

    #[test]
    fn a_conversation_no_longer_than_the_tail_has_nothing_to_fold() {
        let declined = manual().plan(&conversation(5), None, 0).expect_err("nothing to fold");
        assert_eq!(declined.status, CompactionStatus::NothingToFold);
        assert!(declined.message.contains("uncompacted_runs=5"), "{}", declined.message);
    }

    #[test]
    fn a_fold_at_the_same_place_is_already_compacted() {
        let messages = conversation(12);
        let cut = manual().plan(&messages, None, 0).expect("a fold");
        let previous = CompactionRecord {
            compaction_id: "c".into(),
            session_id: "s".into(),
            run_id: None,
            user_id: None,
            first_kept_message_id: Some(messages[cut].id.clone()),
            summary: Some("so far".into()),
            archived_messages: None,
            messages_compacted: Some(14),
            tokens_before: None,
            tokens_after: None,
            created_at: 1,
        };
        let declined = manual().plan(&messages, Some(&previous), 0).expect_err("covered");
        assert_eq!(declined.status, CompactionStatus::AlreadyCompacted);
        let view = build_view(&messages, Some(&previous), false);
        assert_eq!(view.len(), 1 + 10);
        assert_eq!(view[0].content_text(), Some("Summary of earlier conversation (compacted):\n\nso far"));
        assert!(view[0].from_history);
        assert_eq!(view[1].id, messages[cut].id);
    }

    #[test]
    fn the_cut_never_separates_a_tool_result_from_its_call() {
        let mut messages = conversation(6);
        // Run 6 (index 12..): the user asks, the assistant calls a tool, the result, the answer.
        messages.push(Message::user("question with a tool"));
        messages.push(Message::assistant("", vec![ToolCall::new("call-1", "lookup", "{}")]));
        messages.push(Message::tool_result("call-1", "lookup", "found", false));
        messages.push(Message::assistant("done", vec![]));
        messages.extend(conversation(4));
        // Asked to keep from the tool result, the cut moves back to the call it answers.
        let result = messages.iter().position(|m| m.role == Role::Tool).expect("a tool result");
        assert_eq!(choose_boundary(&messages, Keep::From(result), 0), Some(result - 1));
        assert_eq!(messages[result - 1].tool_calls().len(), 1);
        let settings = CompactionSettings { uncompacted_tokens: Some(12), uncompacted_runs: None, ..manual() };
        let cut = settings.plan(&messages, None, 0).expect("a fold");
        assert_ne!(messages[cut].role, Role::Tool);
        let tail = &messages[cut..];
        for (i, m) in tail.iter().enumerate() {
            if let Some(id) = &m.tool_call_id {
                assert!(tail[..i].iter().any(|a| a.tool_calls().iter().any(|c| &c.id == id)), "orphaned {id}");
            }
        }
    }

    #[test]
    fn an_anchor_that_is_not_found_leaves_the_history_whole() {
        let messages = conversation(3);
        let record = CompactionRecord {
            compaction_id: "c".into(),
            session_id: "s".into(),
            run_id: None,
            user_id: None,
            first_kept_message_id: Some("gone".into()),
            summary: Some("s".into()),
            archived_messages: None,
            messages_compacted: None,
            tokens_before: None,
            tokens_after: None,
            created_at: 1,
        };
        assert_eq!(build_view(&messages, Some(&record), true), messages);
    }

    #[test]
    fn grep_finds_literal_terms_with_context() {
        let text = "## user\n\nthe build hash is 9f3c\n\n## assistant\n\nnoted (a+)+$";
        let found = grep(text, "BUILD HASH|(a+)+$", 0);
        assert_eq!(found, "3: the build hash is 9f3c\n--\n7: noted (a+)+$");
        assert_eq!(grep(text, "absent", 2), "");
        assert_eq!(grep(text, " | ", 2), "");
    }

    #[test]
    fn settings_that_contradict_each_other_are_refused() {
        let both = CompactionSettings { uncompacted_tokens: Some(10), ..CompactionSettings::default() };
        assert!(both.validate().is_err());
        let search_without_store =
            CompactionSettings { store_compacted_messages: false, ..CompactionSettings::default() };
        assert!(search_without_store.validate().unwrap_err().contains("store_compacted_messages"));
        assert!(CompactionSettings::default().validate().is_ok());
    }
}
