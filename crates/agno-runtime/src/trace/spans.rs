//! The spans the engines open: a run's root (`{Name}.run`, AGENT for agents and teams, CHAIN for
//! workflows), a model call (`{Model}.invoke`, LLM), a tool call (its name, TOOL; an MCP tool's
//! with its server), a workflow step (`{Step}.execute`, CHAIN) and a knowledge search
//! (`{Knowledge}.search`, RETRIEVER), each a child of the current context's span and current
//! while its work runs (a memory update is the memory manager's own run, a root like any other
//! nested where it starts). Every helper is a no-op when no [`Tracing`] is in the current context.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use agno_core::{RunOutput, RunStatus};
use futures::future::Either;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{SpanBuilder, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::Tracing;
use crate::error::RunError;

/// One open span, current for the futures run [`in_span`]; ended when dropped (at the latest).
pub(crate) struct SpanScope {
    cx: Context,
    max_len: usize,
}

impl std::fmt::Debug for SpanScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanScope").field("span", self.cx.span().span_context()).finish()
    }
}

impl SpanScope {
    /// A span of OpenInference kind `kind` (`AGENT`, `CHAIN`, `LLM`, `TOOL`) under the current
    /// context's span, named and described by `describe` (called only when the current context
    /// traces: none otherwise).
    pub(crate) fn start<N: Into<Cow<'static, str>>>(
        kind: &'static str,
        describe: impl FnOnce() -> (N, Vec<(&'static str, Option<String>)>),
    ) -> Option<SpanScope> {
        Self::start_under(None, kind, |_| describe())
    }

    /// As [`SpanScope::start`], `describe` told the longest text attribute kept (to bound work
    /// on text that would be cut anyway).
    pub(crate) fn start_bounded<N: Into<Cow<'static, str>>>(
        kind: &'static str,
        describe: impl FnOnce(usize) -> (N, Vec<(&'static str, Option<String>)>),
    ) -> Option<SpanScope> {
        Self::start_under(None, kind, describe)
    }

    /// As [`SpanScope::start`], traced by `own` when the current context does not trace (a run
    /// of a component built with its own [`Tracing`]).
    pub(crate) fn start_under<N: Into<Cow<'static, str>>>(
        own: Option<&Tracing>,
        kind: &'static str,
        describe: impl FnOnce(usize) -> (N, Vec<(&'static str, Option<String>)>),
    ) -> Option<SpanScope> {
        Context::map_current(|current| {
            let owned;
            let cx = match (current.get::<Tracing>(), own) {
                (Some(_), _) => current,
                (None, Some(own)) => {
                    owned = current.with_value(own.clone());
                    &owned
                }
                (None, None) => return None,
            };
            let tracing = cx.get::<Tracing>()?;
            let max_len = tracing.inner.max_attribute_len;
            let (name, attributes) = describe(max_len);
            let mut attrs = vec![KeyValue::new("openinference.span.kind", kind)];
            attrs.extend(attributes.into_iter().filter_map(|(k, v)| v.map(|v| KeyValue::new(k, cut(v, max_len)))));
            let builder = SpanBuilder::from_name(name).with_kind(SpanKind::Internal).with_attributes(attrs);
            let span = tracing.inner.tracer.build_with_context(builder, cx);
            Some(SpanScope { cx: cx.with_span(span), max_len })
        })
    }

    /// Sets a text attribute (cut to the size limit).
    pub(crate) fn text(&self, key: impl Into<opentelemetry::Key>, value: impl Into<String>) {
        self.cx.span().set_attribute(KeyValue::new(key, cut(value.into(), self.max_len)));
    }

    /// Sets an integer attribute.
    pub(crate) fn int(&self, key: impl Into<opentelemetry::Key>, value: i64) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// Sets a floating-point attribute.
    pub(crate) fn float(&self, key: impl Into<opentelemetry::Key>, value: f64) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// Sets a list-of-text attribute.
    pub(crate) fn texts(&self, key: &'static str, values: Vec<String>) {
        let values: Vec<opentelemetry::StringValue> = values.into_iter().map(Into::into).collect();
        self.cx.span().set_attribute(KeyValue::new(key, opentelemetry::Value::Array(values.into())));
    }

    /// Ends the span as succeeded.
    pub(crate) fn ok(self) {
        self.cx.span().set_status(Status::Ok);
    }

    /// Ends the span as failed with `message` (also its `exception.message`).
    pub(crate) fn fail(self, message: &str) {
        let message = cut(message.to_owned(), self.max_len);
        self.cx.span().set_attribute(KeyValue::new("exception.message", message.clone()));
        self.cx.span().set_status(Status::error(message));
    }
}

impl Drop for SpanScope {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), marked as cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut_bytes = text.len() - end;
        text.truncate(end);
        text.push_str(&format!("... [{cut_bytes} more bytes]"));
    }
    text
}

/// A span's name as Agno's instrumentation forms it: `{name}.{method}`, spaces and dashes in the
/// name turned into underscores.
pub(crate) fn span_name(name: &str, method: &str) -> String {
    format!("{}.{method}", name.replace([' ', '-'], "_"))
}

/// `value` as JSON text of at most `max` bytes: serialising stops at the limit (a long history
/// is not serialised whole only to be cut), and a cut text ends, on a character boundary, with
/// `... [cut]`.
pub(crate) fn json_cut<T: serde::Serialize + ?Sized>(value: &T, max: usize) -> String {
    const MARK: &str = "... [cut]";
    /// Takes bytes up to `limit`, then refuses (which stops the serialiser).
    struct Limited {
        buf: Vec<u8>,
        limit: usize,
    }
    impl std::io::Write for Limited {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            let room = self.limit.saturating_sub(self.buf.len());
            if data.len() > room {
                self.buf.extend_from_slice(&data[..room]);
                return Err(std::io::Error::other("the attribute is full"));
            }
            self.buf.extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // One byte past the limit tells a text that fits from one that does not.
    let mut out = Limited { buf: Vec::new(), limit: max.saturating_add(1) };
    let whole = serde_json::to_writer(&mut out, value).is_ok() && out.buf.len() <= max;
    let end = if whole { out.buf.len() } else { max.saturating_sub(MARK.len()).min(out.buf.len()) };
    let kept = &out.buf[..end];
    let text = match std::str::from_utf8(kept) {
        Ok(text) => text,
        // Cut inside a character: keep what precedes it.
        Err(e) => std::str::from_utf8(&kept[..e.valid_up_to()]).unwrap_or_default(),
    };
    if whole { text.to_owned() } else { format!("{text}{MARK}") }
}

/// `fut` with `scope`'s span current while it runs (as it is without one). Boxed: the futures of
/// runs and steps are large, and a wrapper holding one inline would make every future that
/// awaits it larger still (a nested workflow's steps would need more stack than a thread has).
pub(crate) fn in_span<F: Future>(
    scope: Option<&SpanScope>,
    fut: F,
) -> Either<opentelemetry::context::WithContext<Pin<Box<F>>>, Pin<Box<F>>> {
    match scope {
        Some(scope) => Either::Left(Box::pin(fut).with_context(scope.cx.clone())),
        None => Either::Right(Box::pin(fut)),
    }
}

/// Runs `work` in `span` (as it is without one), ended with how `work` ended: `output` records
/// a success on the span before it is marked OK; an error fails it.
pub(crate) async fn traced<T, E: std::fmt::Display>(
    span: Option<SpanScope>,
    work: impl Future<Output = Result<T, E>>,
    output: impl FnOnce(&SpanScope, &T),
) -> Result<T, E> {
    let result = in_span(span.as_ref(), work).await;
    if let Some(span) = span {
        match &result {
            Ok(value) => {
                output(&span, value);
                span.ok();
            }
            Err(e) => span.fail(&e.to_string()),
        }
    }
    result
}

/// `fut` carrying the current context onto the task it is spawned on, when it traces.
pub(crate) fn propagate<F: Future>(fut: F) -> Either<opentelemetry::context::WithContext<F>, F> {
    if Tracing::current().is_some() { Either::Left(fut.with_current_context()) } else { Either::Right(fut) }
}

/// The kind of component whose run a [`RunSpan`] is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Runner {
    Agent,
    Team,
    Workflow,
}

/// The root span of a run (or of a member's run, under its leader's delegation).
#[derive(Debug)]
pub(crate) struct RunSpan(SpanScope);

impl RunSpan {
    /// `{Name}.{method}` (`method`: `run`, `continue_run`) of the component `id`, with its
    /// input and the ids known at the start.
    pub(crate) fn start(
        runner: Runner,
        own: Option<&Tracing>,
        (id, name): (&str, Option<&str>),
        method: &str,
        input: impl FnOnce() -> String,
        (run_id, session_id, user_id): (Option<&str>, Option<&str>, Option<&str>),
    ) -> Option<RunSpan> {
        let (kind, default_name, id_key, name_key) = match runner {
            Runner::Agent => ("AGENT", "Agent", "agno.agent.id", "agno.agent"),
            Runner::Team => ("AGENT", "Team", "agno.team.id", "agno.team"),
            Runner::Workflow => ("CHAIN", "Workflow", "agno.workflow.id", "agno.workflow"),
        };
        let some = |s: Option<&str>| s.map(str::to_owned);
        let scope = SpanScope::start_under(own, kind, |_| {
            let attributes = vec![
                ("input.value", Some(input())),
                (id_key, Some(id.to_owned())),
                (name_key, some(name)),
                ("agno.run.id", some(run_id)),
                ("agno.session.id", some(session_id)),
                ("session.id", some(session_id)),
                ("agno.user.id", some(user_id)),
                ("user.id", some(user_id)),
            ];
            (span_name(name.filter(|n| !n.is_empty()).unwrap_or(default_name), method), attributes)
        })?;
        Some(RunSpan(scope))
    }

    /// Runs `run` under `span` (as it is without one) and ends the span with how it ended: what
    /// every engine's entry does around its run. Not an `async fn`: `run` is boxed before the
    /// returned future holds it (inline, a nested workflow's runs overflow a thread's stack).
    pub(crate) fn around(
        span: Option<RunSpan>,
        run: impl Future<Output = Result<RunOutput, RunError>>,
    ) -> impl Future<Output = Result<RunOutput, RunError>> {
        let run = in_span(span.as_ref().map(RunSpan::scope), run);
        async move {
            let result = run.await;
            if let Some(span) = span {
                span.finish(&result);
            }
            result
        }
    }

    /// The span, for the futures of the run.
    pub(crate) fn scope(&self) -> &SpanScope {
        &self.0
    }

    /// Ends the span with how the run ended: its output, ids and status.
    pub(crate) fn finish(self, result: &Result<RunOutput, RunError>) {
        let span = self.0;
        let run = match result {
            Ok(run) => Some(run),
            Err(e) => e.run(),
        };
        if let Some(run) = run {
            span.text("agno.run.id", run.id());
            if let Some(session) = run.session_id.as_deref().filter(|s| !s.is_empty()) {
                span.text("agno.session.id", session);
                span.text("session.id", session);
            }
            if let Some(user) = run.user_id.as_deref() {
                span.text("agno.user.id", user);
                span.text("user.id", user);
            }
            if let Some(content) = &run.content {
                let (text, mime) = match content {
                    Value::String(s) => (s.clone(), "text/plain"),
                    other => (other.to_string(), "application/json"),
                };
                span.text("output.value", text);
                span.text("output.mime_type", mime);
            }
        }
        match result {
            Ok(run) if run.status == RunStatus::Error => span.fail("run status: error"),
            Ok(_) => span.ok(),
            Err(e) => span.fail(&e.to_string()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::json_cut;

    #[test]
    fn json_cut_keeps_what_fits_and_stops_at_the_limit() {
        let small = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(json_cut(&small, 1000), small.to_string());
        let exact = small.to_string();
        assert_eq!(json_cut(&small, exact.len()), exact, "a text of exactly the limit is whole");
        let long: Vec<String> = (0..10_000).map(|i| format!("é{i}")).collect();
        for max in [64, 65, 66, 1000] {
            let cut = json_cut(&long, max);
            assert!(cut.len() <= max, "{max}: {} bytes", cut.len());
            assert!(cut.ends_with("... [cut]"), "{cut}");
            assert!(cut.starts_with("[\"é0\",\"é1\""), "{cut}");
        }
    }
}
