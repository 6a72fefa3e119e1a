//! Continuing a stored run from a boundary of its transcript, as Agno 3.1's unified `/continue`
//! does (`continue_from`, `fork`, `regenerate`, `replace_original`, `additional_instructions`,
//! `input`): which messages the run goes on from, whether it goes on as itself or as a new
//! sibling run (a fork, with its lineage), and what becomes of the original. Pure: the caller
//! stores what it returns and runs the result.

use serde_json::{Value, json};

use crate::{Message, RunOutput, RunStatus, new_id, safe_truncation_index};

/// Where a continued run goes on from (Agno's `continue_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Boundary {
    /// After its whole transcript (`"end"`).
    #[default]
    End,
    /// After its last user message (`"last_user"`): the answer to it is made again.
    LastUser,
    /// After this many messages (a checkpoint's `message_index`).
    Index(i64),
}

impl Boundary {
    /// `end`, `last_user` or a message index, as the form field is written.
    ///
    /// # Errors
    /// Agno's message for anything else.
    pub fn parse(text: &str) -> Result<Self, BranchError> {
        let text = text.trim();
        match text {
            "" | "end" => Ok(Boundary::End),
            "last_user" => Ok(Boundary::LastUser),
            n => n.parse().map(Boundary::Index).map_err(|_| {
                BranchError::Invalid(
                    "Invalid continue_from. Use 'end', 'last_user', or a numeric message index.".into(),
                )
            }),
        }
    }
}

/// How a stored run is continued, beyond answering its requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchOptions {
    /// A user message appended before the run goes on.
    pub input: Option<String>,
    /// Where it goes on from.
    pub boundary: Boundary,
    /// As a new sibling run (`forked_from_run_id`), the original untouched.
    pub fork: bool,
    /// Make its last answer again (a fork from after the last non-answer message).
    pub regenerate: bool,
    /// With `regenerate`: whether the original is marked `REGENERATED` (hidden from history;
    /// the default) or kept as it was (`false`).
    pub replace_original: Option<bool>,
    /// With `regenerate`: guidance appended as a user message (Agno's alias of `input`).
    pub additional_instructions: Option<String>,
}

impl BranchOptions {
    /// Whether these are the defaults: a plain continue of a paused run.
    pub fn is_plain(&self) -> bool {
        *self == BranchOptions::default()
    }
}

/// Why a run cannot be continued so (nothing changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BranchError {
    /// The options do not fit the run (Agno answers 400).
    #[error("{0}")]
    Invalid(String),
    /// The run cannot be continued at all (Agno answers 409).
    #[error("{0}")]
    NotContinuable(String),
}

/// What to store and run.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The run to go on with: the stored run cut at the boundary, or its fork.
    pub run: RunOutput,
    /// The original run as it must now be stored (`REGENERATED`), when a regenerate replaces it.
    pub replaced: Option<RunOutput>,
}

/// The message count a regenerate keeps: up to the last message that is not a plain answer.
fn regenerate_point(messages: &[Message]) -> Result<usize, BranchError> {
    let answers = messages
        .iter()
        .rev()
        .take_while(|m| m.role == crate::Role::Assistant && m.tool_calls.as_ref().is_none_or(Vec::is_empty))
        .count();
    match messages.len() - answers {
        0 => {
            Err(BranchError::Invalid("Cannot regenerate: run has no non-assistant messages to regenerate from.".into()))
        }
        keep => Ok(keep),
    }
}

/// The message count a boundary keeps.
fn resolve(run: &RunOutput, boundary: Boundary, regenerate: bool) -> Result<usize, BranchError> {
    let messages = run.messages();
    if regenerate {
        return match boundary {
            Boundary::Index(_) => {
                Err(BranchError::Invalid("`regenerate=True` derives the continuation boundary automatically.".into()))
            }
            _ => regenerate_point(messages),
        };
    }
    match boundary {
        Boundary::End => Ok(messages.len()),
        Boundary::LastUser => {
            messages.iter().rposition(|m| m.role == crate::Role::User).map(|i| i + 1).ok_or_else(|| {
                BranchError::Invalid("Cannot resolve `continue_from='last_user'`: run has no user messages.".into())
            })
        }
        Boundary::Index(i) => usize::try_from(i).ok().filter(|i| *i <= messages.len()).ok_or_else(|| {
            BranchError::Invalid(format!("continue_from must be a message index between 0 and {}", messages.len()))
        }),
    }
}

/// Cuts `run` after `index` messages (never inside a tool exchange), keeping the tools and
/// requirements the kept messages name; nothing when `index` keeps everything.
fn truncate(run: &mut RunOutput, index: usize) {
    if index < run.messages().len() {
        let safe = safe_truncation_index(run.messages(), index);
        crate::checkpoints::keep_messages(run, safe);
    }
}

/// Continues `run` as `options` say (Agno's `continue_run_dispatch` before the run goes on): a
/// completed run always goes on as a fork; a regenerate is a fork from before the last answer,
/// the original marked `REGENERATED` unless `replace_original` is false; `input` (or
/// `additional_instructions`) is appended as a user message.
///
/// # Errors
/// [`BranchError::NotContinuable`] for a cancelled run; [`BranchError::Invalid`] for options
/// that conflict or a boundary the run does not have.
pub fn branch(run: &RunOutput, options: &BranchOptions, now: i64) -> Result<Branch, BranchError> {
    if run.status == RunStatus::Cancelled {
        return Err(BranchError::NotContinuable(format!("Cannot continue run {}: run is cancelled", run.id())));
    }
    if options.additional_instructions.is_some() && options.input.is_some() {
        return Err(BranchError::Invalid("Provide either `additional_instructions` or `input`, not both.".into()));
    }
    if options.replace_original.is_some() && !options.regenerate {
        return Err(BranchError::Invalid("`replace_original` only makes sense with `regenerate=True`.".into()));
    }
    if options.additional_instructions.is_some() && !options.regenerate {
        return Err(BranchError::Invalid("`additional_instructions` only makes sense with `regenerate=True`.".into()));
    }
    if options.regenerate && options.fork {
        return Err(BranchError::Invalid(
            "`regenerate=True` derives the destructive/preserving choice from `replace_original`; do not pass `fork=True` directly."
                .into(),
        ));
    }
    let index = resolve(run, options.boundary, options.regenerate)?;
    let input = options.additional_instructions.clone().or_else(|| options.input.clone());
    let fork = options.fork || options.regenerate || run.status == RunStatus::Completed;
    let mut next = run.clone();
    if fork {
        let safe = safe_truncation_index(run.messages(), index);
        next.run_id = Some(new_id());
        next.extra.insert("forked_from_run_id".into(), json!(run.id()));
        next.extra.insert("forked_from_message_index".into(), json!(safe));
        next.metrics = None;
        next.created_at = now;
        next.events = None;
        next.extra.remove("events");
        truncate(&mut next, safe);
    } else {
        truncate(&mut next, index);
    }
    let mut replaced = None;
    if options.regenerate {
        next.extra.insert("regenerated_from".into(), json!(run.id()));
        if options.replace_original != Some(false) {
            let mut original = run.clone();
            original.status = RunStatus::Regenerated;
            replaced = Some(original);
        }
    }
    if let Some(text) = input.filter(|t| !t.is_empty()) {
        next.messages.get_or_insert_with(Vec::new).push(Message::user(text));
    }
    Ok(Branch { run: next, replaced })
}

/// The lineage fields a branch sets, for readers: `forked_from_run_id`,
/// `forked_from_message_index`, `regenerated_from`.
pub fn lineage(run: &RunOutput) -> [(&'static str, Option<&Value>); 3] {
    ["forked_from_run_id", "forked_from_message_index", "regenerated_from"].map(|k| (k, run.extra.get(k)))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::{FunctionCall, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall { name: "add".into(), arguments: "{}".into() },
        }
    }

    fn completed() -> RunOutput {
        let mut run = RunOutput::new("r1", "s1");
        run.status = RunStatus::Completed;
        run.messages = Some(vec![
            Message::system("be brief"),
            Message::user("add"),
            Message::assistant("", vec![call("c1")]),
            Message::tool_result("c1", "add", "5", false),
            Message::assistant("it is 5", vec![]),
        ]);
        run
    }

    #[test]
    fn a_completed_run_goes_on_as_a_fork() {
        let run = completed();
        let b = branch(&run, &BranchOptions { input: Some("and 6?".into()), ..Default::default() }, 7).unwrap();
        assert_ne!(b.run.id(), "r1");
        assert_eq!(b.run.extra["forked_from_run_id"], "r1");
        assert_eq!(b.run.extra["forked_from_message_index"], 5);
        assert_eq!(b.run.messages().len(), 6);
        assert_eq!(b.run.messages()[5].content, Some(json!("and 6?")));
        assert_eq!(b.run.created_at, 7);
        assert!(b.replaced.is_none());
    }

    #[test]
    fn regenerate_keeps_the_tool_exchange_and_replaces_the_original() {
        let run = completed();
        let b = branch(&run, &BranchOptions { regenerate: true, ..Default::default() }, 7).unwrap();
        assert_eq!(b.run.messages().len(), 4, "the last answer goes, the tool exchange stays");
        assert_eq!(b.run.extra["regenerated_from"], "r1");
        assert_eq!(b.run.extra["forked_from_message_index"], 4);
        assert_eq!(b.replaced.unwrap().status, RunStatus::Regenerated);
        let kept = BranchOptions { regenerate: true, replace_original: Some(false), ..Default::default() };
        assert!(branch(&run, &kept, 7).unwrap().replaced.is_none());
    }

    #[test]
    fn boundaries_and_conflicts() {
        let mut run = completed();
        run.status = RunStatus::Error;
        let last_user = branch(&run, &BranchOptions { boundary: Boundary::LastUser, ..Default::default() }, 7).unwrap();
        assert_eq!(last_user.run.id(), "r1", "an errored run goes on as itself");
        assert_eq!(last_user.run.messages().len(), 2);
        assert_eq!(last_user.run.last_checkpoint(), Some(2));
        let inside = branch(&run, &BranchOptions { boundary: Boundary::Index(3), ..Default::default() }, 7).unwrap();
        assert_eq!(inside.run.messages().len(), 2, "never inside a tool exchange");
        assert_eq!(inside.run.tools, None);
        for bad in [
            BranchOptions { boundary: Boundary::Index(9), ..Default::default() },
            BranchOptions { boundary: Boundary::Index(-1), ..Default::default() },
            BranchOptions { regenerate: true, fork: true, ..Default::default() },
            BranchOptions { regenerate: true, boundary: Boundary::Index(2), ..Default::default() },
            BranchOptions { replace_original: Some(true), ..Default::default() },
            BranchOptions { additional_instructions: Some("x".into()), ..Default::default() },
            BranchOptions {
                regenerate: true,
                input: Some("a".into()),
                additional_instructions: Some("b".into()),
                ..Default::default()
            },
        ] {
            assert!(matches!(branch(&run, &bad, 7), Err(BranchError::Invalid(_))), "{bad:?}");
        }
        run.status = RunStatus::Cancelled;
        assert!(matches!(branch(&run, &BranchOptions::default(), 7), Err(BranchError::NotContinuable(_))));
        assert!(Boundary::parse("soon").is_err());
        assert_eq!(Boundary::parse(" 3 ").unwrap(), Boundary::Index(3));
    }
}
