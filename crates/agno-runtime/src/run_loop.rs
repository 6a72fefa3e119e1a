//! The run driver: prepares a run, loops model turns and tool batches until the run completes,
//! pauses, is cancelled or fails, then stores it.
//!
//! Every run that starts ends with exactly one terminal event (`RunCompleted`, `RunPaused`,
//! `RunCancelled` or `RunError` carrying the cause) and, when the agent has a db, one stored run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agno_core::{
    EventData, Message, Metrics, Model, ModelChunk, ModelError, ModelRequest, ModelResponse, ResponseAssembler,
    ResponseFormat, Role, RunOutput, RunStatus, ToolDefinition,
};
use futures::StreamExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::agent::AgentInner;
use crate::emitter::Emitter;
use crate::error::RunError;
use crate::messages::{system_message, user_message};
use crate::past_sessions::past_sessions_tools;
use crate::persist::{self, load_session, save};
use crate::request::RunRequest;
use crate::run_state::RunState;
use crate::structured::parse_structured;
use crate::tool_batch::{BatchEnd, execute_batch};
use crate::trace::{SpanScope, in_span};

/// How the model loop ended.
pub(crate) enum LoopEnd {
    Completed,
    Paused,
    Cancelled,
    Failed(RunError),
}

enum CallEnd {
    Done(ModelResponse),
    Cancelled(ModelResponse),
    Failed(ModelError),
}

/// Prepares the state of a new run: session, state, tools, messages.
pub(crate) async fn prepare(agent: &AgentInner, req: RunRequest) -> Result<RunState, RunError> {
    let run_id = req.run_id.unwrap_or_else(agno_core::new_id);
    let session_id = req.session_id.or_else(|| agent.session_id.clone()).unwrap_or_else(agno_core::new_id);
    let user_id = req.user_id.or_else(|| agent.user_id.clone());
    let add_history = req.add_history_to_context.unwrap_or(agent.history.add_history_to_context);
    let store = req.store.unwrap_or(true);
    let history = req.history.clone();
    let (session, loaded_fold) = if store {
        load_session(agent, &session_id, user_id.as_deref(), add_history).await?
    } else {
        (persist::new_session(agent, &session_id, user_id.as_deref()), None)
    };

    // Stored state, then the agent's defaults for missing keys, then the request's values. The
    // run's update (written as a merge, so concurrent runs keep each other's keys) is measured
    // from the state before the request's values: they are part of what the run writes.
    let mut base = session.session_state().cloned().unwrap_or_default();
    for (k, v) in &agent.session_state {
        base.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut state = base.clone();
    if let Some(overrides) = req.session_state {
        state.extend(overrides);
    }
    let mut dependencies: BTreeMap<String, Value> = agent.dependencies.clone();
    if let Some(extra) = req.dependencies {
        dependencies.extend(extra);
    }
    let schema = req.output_schema.or_else(|| agent.output_schema.clone());

    let mut output = RunOutput::new(&run_id, &session_id);
    output.agent_id = Some(agent.id.clone());
    output.agent_name.clone_from(&agent.name);
    output.user_id.clone_from(&user_id);
    output.model = Some(agent.model.id().to_owned());
    output.model_provider = Some(agent.model.provider().to_owned());
    output.input = Some(req.input.clone());
    output.parent_run_id = req.parent_run_id;
    output.workflow_id = req.workflow_id;
    output.tools = Some(Vec::new());
    output.metadata = req.metadata.or_else(|| agent.metadata.clone());
    if let Some(schema) = &schema {
        output.content_type.clone_from(&schema.name);
    }

    let mut tools = agent.tools.clone();
    // Memories belong to the run's user (Agno's "default" when there is none).
    let memory_user = user_id.clone().unwrap_or_else(|| "default".to_owned());
    let memories = match &agent.memory_manager {
        Some(manager) if agent.memory.add_memories_to_context == Some(true) => {
            Some(manager.get_user_memories(&memory_user).await?)
        }
        _ => None,
    };
    // Agno's order of default tools: past sessions, then memory.
    if agent.past_sessions.search_past_sessions
        && let Some(db) = &agent.db
    {
        tools.extend(past_sessions_tools(Arc::clone(db), &agent.past_sessions, &session_id, user_id.clone()));
    }
    if let Some(manager) = agent.memory_manager.as_ref().filter(|_| agent.memory.enable_agentic_memory) {
        tools.push(Arc::new(crate::memory::update_user_memory_tool(manager.clone(), memory_user, agent.id.clone())));
    }
    // The fold in force (compacting agents): its search tool, and later the history it cuts;
    // read with the session when the run sends history, else on its own.
    let fold =
        if store && add_history { loaded_fold } else { crate::compaction::fold_in_force(agent, &session_id).await };
    if let Some(search) = crate::compaction::tools_for_run(agent, &session_id, fold.as_ref()) {
        tools.push(search);
    }
    let kc = &agent.knowledge_config;
    if let Some(knowledge) = agent.knowledge.as_ref().filter(|_| kc.search_knowledge) {
        let filter = kc.knowledge_filters.clone();
        tools.push(crate::knowledge::search_tool(Arc::clone(knowledge), filter, user_id.clone()));
    }
    if agent.enable_agentic_state {
        tools.push(Arc::new(crate::agentic_state::UpdateSessionState::default()));
    }
    // Learning: its tools (agentic stores) and what it knows of the user, for this run's user.
    let learned = match (&agent.learning, user_id.as_deref()) {
        (Some(machine), Some(user)) => {
            tools.extend(
                machine.agent_tools(user, &agent.id).into_iter().map(|t| Arc::new(t) as Arc<dyn agno_core::DynTool>),
            );
            match machine.context(Some(user), &req.input.as_text()).await {
                Ok(text) => Some(text),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read what the agent learned about the user");
                    None
                }
            }
        }
        _ => None,
    };
    let client_tools = req.client.tools_beside(&tools);
    tools.extend(client_tools);
    // `add_knowledge_to_context`: references for the user's input, found before the run.
    let references = match agent.knowledge.as_ref().filter(|_| kc.add_knowledge_to_context) {
        Some(knowledge) => {
            let query = req.input.as_text();
            let filter = kc.knowledge_filters.as_ref();
            match crate::knowledge::search(knowledge.as_ref(), &query, filter, user_id.as_deref()).await {
                Ok(docs) if !docs.is_empty() => Some(crate::knowledge::references_block(&docs)),
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "failed to get references from the knowledge base");
                    None
                }
            }
        }
        None => None,
    };

    let reported_state = req.client.follows_state.then(|| state.clone());
    let mut st = RunState {
        output,
        messages: Vec::new(),
        session,
        user_id,
        tools,
        tool_hooks: agent.tool_config.tool_hooks.clone(),
        tool_call_limit: agent.tool_config.tool_call_limit,
        tool_calls_made: 0,
        initial_state: base,
        session_state: Arc::new(Mutex::new(state)),
        dependencies: Arc::new(dependencies),
        schema,
        fence: req.durable.fence.clone(),
        started: std::time::Instant::now(),
        metrics_counted: None,
        store,
        reported_state,
    };
    let native = st.schema.is_some() && agent.model.capabilities().native_structured_output;
    let summary = st.session.summary.as_ref().filter(|_| agent.summaries.add_session_summary_to_context == Some(true));
    let context = crate::messages::Context { memories: memories.as_deref(), summary, learnings: learned.as_deref() };
    if let Some(system) = system_message(agent, &st.state_snapshot(), st.schema.as_ref(), native, context) {
        st.messages.push(system);
    }
    if let Some(history) = history {
        st.messages.extend(history);
    } else if let (true, true, Some(c)) = (add_history, store, &agent.compaction) {
        let mut metrics = st.output.metrics.take().unwrap_or_default();
        let run_id = st.output.id().to_owned();
        let history = crate::compaction::history_for_run(
            agent,
            c,
            (&st.session, fold),
            &run_id,
            &st.messages,
            &st.tools,
            &mut metrics,
        )
        .await;
        st.output.metrics = (!metrics.is_empty()).then_some(metrics);
        st.messages.extend(history);
    } else if add_history {
        st.messages.extend(st.session.history_messages(agent.history.runs_limit(), agent.history.num_history_messages));
    }
    let mut user = user_message(&req.input);
    if let (Some(block), Some(Value::String(text))) = (references, user.content.as_mut()) {
        text.push_str(&block);
    }
    st.messages.push(user);
    Ok(st)
}

/// Runs pre-hooks, reasoning and the model loop (with whole-run retries), then finishes and
/// stores the run.
pub(crate) async fn drive_new(
    agent: &AgentInner,
    mut st: RunState,
    em: &mut Emitter,
    token: &CancellationToken,
) -> Result<RunOutput, RunError> {
    em.bind(&agent.id, agent.name.as_deref().unwrap_or_default(), st.output.id(), &st.session.session_id);
    // Stored as RUNNING before anything else happens, so the run is visible (and can be
    // cancelled by its owner) while it executes; and before `RunStarted` goes out, so a client
    // reading the session on that event finds the run in flight, never a session without it.
    let stored = if agent.db.is_some() && st.store { save(agent, &mut st).await } else { Ok(()) };
    em.emit(EventData::RunStarted {
        model: agent.model.id().to_owned(),
        model_provider: agent.model.provider().to_owned(),
    });
    let end = 'run: {
        if let Err(e) = stored {
            break 'run LoopEnd::Failed(RunError::Storage(e));
        }
        for hook in &agent.pre_hooks {
            em.emit(EventData::PreHookStarted { pre_hook_name: hook.name().to_owned() });
            let mut input = st.output.input.clone().unwrap_or_default();
            if let Err(e) = hook.run(&mut input).await {
                let err = RunError::Hook {
                    hook: hook.name().to_owned(),
                    message: e.0,
                    run: Box::new(RunOutput::new("", "")),
                };
                break 'run LoopEnd::Failed(err);
            }
            if Some(&input) != st.output.input.as_ref() {
                if let Some(user) = st.messages.iter_mut().rev().find(|m| m.role == Role::User) {
                    *user = user_message(&input);
                }
                st.output.input = Some(input);
            }
            em.emit(EventData::PreHookCompleted { pre_hook_name: hook.name().to_owned() });
        }
        if let Some(reasoning) = &agent.reasoning.reasoning_model
            && let Err(e) = reason(reasoning.as_ref(), &mut st, em).await
        {
            break 'run LoopEnd::Failed(model_failure(e));
        }
        let initial = st.messages.len();
        let mut attempt = 0;
        loop {
            let end = model_loop(agent, &mut st, em, token).await;
            match end {
                LoopEnd::Failed(RunError::Model { source, .. })
                    if source.is_retryable() && attempt < agent.retry.retries && !token.is_cancelled() =>
                {
                    tracing::warn!(run_id = st.output.id(), attempt = attempt + 1, error = %source, "retrying run");
                    tokio::time::sleep(agent.retry.delay(attempt)).await;
                    attempt += 1;
                    st.messages.truncate(initial);
                    st.output.tools = None;
                    st.output.requirements = None;
                }
                other => break 'run other,
            }
        }
    };
    finish(agent, &mut st, em, end).await
}

fn model_failure(source: ModelError) -> RunError {
    RunError::Model { source, run: Box::new(RunOutput::new("", "")) }
}

/// Runs the reasoning model over the conversation, streaming its reasoning as Agno's
/// `ReasoningStarted` / `ReasoningContentDelta` / `ReasoningCompleted`; the reasoning (its
/// native reasoning, else its answer) joins the conversation and `reasoning_content`.
async fn reason(model: &dyn Model, st: &mut RunState, em: &mut Emitter) -> Result<(), ModelError> {
    em.emit(EventData::ReasoningStarted {});
    let request = ModelRequest { messages: st.messages.clone(), ..ModelRequest::default() };
    let mut stream = model.stream(request).await?;
    let mut assembler = agno_core::ResponseAssembler::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if let ModelChunk::Reasoning(text) | ModelChunk::Content(text) = &chunk {
            em.emit(EventData::ReasoningContentDelta { reasoning_content: text.clone() });
        }
        assembler.push(&chunk);
    }
    let response = assembler.finish();
    let text = response.reasoning.filter(|r| !r.is_empty()).unwrap_or(response.content);
    em.emit(EventData::ReasoningCompleted {
        content: Some(Value::String(text.clone())),
        content_type: "str".to_owned(),
    });
    if !text.is_empty() {
        st.messages.push(Message::new(Role::Assistant, format!("<reasoning>\n{text}\n</reasoning>")));
        st.output.reasoning_content = Some(text);
    }
    Ok(())
}

/// The span of one model call (`{Model}.invoke`, streamed or not: the OS streams every run
/// internally, so the name says only that the model was called), with the messages it is sent
/// (serialised no further than the attribute size limit).
fn model_span(model: &dyn agno_core::Model, request: &ModelRequest) -> Option<SpanScope> {
    SpanScope::start_bounded("LLM", |max_len| {
        #[derive(serde::Serialize)]
        struct Input<'a> {
            messages: &'a [agno_core::Message],
        }
        let messages = crate::trace::json_cut(&Input { messages: &request.messages }, max_len);
        let attributes = vec![
            ("llm.model_name", Some(model.id().to_owned())),
            ("llm.provider", Some(model.provider().to_owned())),
            ("input.mime_type", Some("application/json".to_owned())),
            ("input.value", Some(messages)),
        ];
        (format!("{}.invoke", model.name()), attributes)
    })
}

/// Ends a model call's span with its answer and token counts, or its failure.
fn end_model_span(span: SpanScope, ended: &CallEnd) {
    match ended {
        CallEnd::Done(response) => {
            let output = if response.tool_calls.is_empty() {
                response.content.clone()
            } else {
                serde_json::json!({ "content": response.content, "tool_calls": response.tool_calls }).to_string()
            };
            span.text("output.value", output);
            if let Some(usage) = &response.usage {
                for (key, n) in [
                    ("llm.token_count.prompt", usage.input_tokens),
                    ("llm.token_count.completion", usage.output_tokens),
                    ("llm.token_count.total", usage.total_tokens),
                ] {
                    if n > 0 {
                        span.int(key, i64::try_from(n).unwrap_or(i64::MAX));
                    }
                }
            }
            span.ok();
        }
        CallEnd::Cancelled(_) => span.fail("the run was cancelled during the model call"),
        CallEnd::Failed(e) => span.fail(&e.to_string()),
    }
}

/// Model turns and tool batches until the run ends.
pub(crate) async fn model_loop(
    agent: &AgentInner,
    st: &mut RunState,
    em: &mut Emitter,
    token: &CancellationToken,
) -> LoopEnd {
    let capabilities = agent.model.capabilities();
    let response_format = st.schema.as_ref().map(|s| {
        if capabilities.native_structured_output {
            ResponseFormat::JsonSchema { name: sanitize_name(&s.name), schema: s.schema.clone(), strict: false }
        } else {
            ResponseFormat::JsonObject
        }
    });
    let mut schema_retry_used = false;
    loop {
        if token.is_cancelled() {
            return LoopEnd::Cancelled;
        }
        let tools: Vec<ToolDefinition> = st.tools.iter().map(|t| t.definition().clone()).collect();
        let request = ModelRequest {
            messages: st.messages.clone(),
            tools,
            tool_choice: agent.tool_config.tool_choice.clone(),
            response_format: response_format.clone(),
            session_id: Some(st.session.session_id.clone()),
        };
        em.emit(EventData::ModelRequestStarted {
            model: agent.model.id().to_owned(),
            model_provider: agent.model.provider().to_owned(),
        });
        let call_started = std::time::Instant::now();
        let llm = model_span(agent.model.as_ref(), &request);
        let ended = in_span(llm.as_ref(), call_model(agent.model.as_ref(), request, em, token)).await;
        if let Some(llm) = llm {
            end_model_span(llm, &ended);
        }
        let response = match ended {
            CallEnd::Done(r) => r,
            CallEnd::Cancelled(partial) => {
                if !partial.content.is_empty() {
                    st.output.content = Some(Value::String(partial.content.clone()));
                    st.messages.push(Message::assistant(partial.content, Vec::new()));
                }
                return LoopEnd::Cancelled;
            }
            CallEnd::Failed(e) => return LoopEnd::Failed(model_failure(e)),
        };
        let call_duration = call_started.elapsed().as_secs_f64();
        let usage = response.usage.unwrap_or_default();
        em.emit(EventData::ModelRequestCompleted {
            model: agent.model.id().to_owned(),
            model_provider: agent.model.provider().to_owned(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens,
            time_to_first_token: response.time_to_first_token,
            reasoning_tokens: usage.reasoning_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: 0,
        });
        let metrics = st.output.metrics.get_or_insert_with(Metrics::default);
        metrics.add_usage(&usage);
        metrics.add_detail("model", agent.model.id(), &agent.model.metrics_provider(), &usage);
        if metrics.time_to_first_token.is_none() {
            metrics.time_to_first_token = response.time_to_first_token;
        }
        if response.provider_data.is_some() {
            st.output.model_provider_data.clone_from(&response.provider_data);
        }
        if let Some(reasoning) = &response.reasoning {
            st.output.reasoning_content.get_or_insert_with(String::new).push_str(reasoning);
        }
        let mut assistant = Message::assistant(response.content.clone(), response.tool_calls.clone());
        assistant.reasoning_content.clone_from(&response.reasoning);
        let mut msg_metrics = Metrics::default();
        msg_metrics.add_usage(&usage);
        msg_metrics.duration = call_duration;
        // As Agno: an answer of tool calls alone has no first token.
        if !response.content.is_empty() || response.tool_calls.is_empty() {
            msg_metrics.time_to_first_token = response.time_to_first_token.or(Some(call_duration));
        }
        assistant.metrics = msg_metrics;
        assistant.provider_data.clone_from(&response.provider_data);
        st.messages.push(assistant);

        if response.tool_calls.is_empty() {
            st.output.content = Some(Value::String(response.content));
            if let Some(schema) = st.schema.clone() {
                match parse_structured(&st.output.content_text(), &schema) {
                    Ok(value) => st.output.content = Some(value),
                    Err(message) if !schema_retry_used => {
                        // One corrective turn: tell the model what was wrong.
                        schema_retry_used = true;
                        st.messages.push(Message::user(format!(
                            "Your previous answer did not match the required JSON schema: {message}. \
                             Answer again with only a JSON object that matches the schema."
                        )));
                        continue;
                    }
                    Err(message) => {
                        return LoopEnd::Failed(RunError::OutputSchema {
                            message,
                            run: Box::new(RunOutput::new("", "")),
                        });
                    }
                }
            }
            if let Some(follow_up) = &agent.follow_up {
                let state = st.session_state.lock().map(|s| s.clone()).unwrap_or_default();
                let calls = st.output.tools.as_ref().map_or(0, Vec::len);
                if let Some(message) = follow_up.next(&state, calls) {
                    st.messages.push(Message::user(message));
                    continue;
                }
            }
            return LoopEnd::Completed;
        }
        if !response.content.is_empty() {
            em.emit(EventData::RunIntermediateContent {
                content: Some(Value::String(response.content.clone())),
                content_type: "str".to_owned(),
            });
        }
        match execute_batch(st, &response.tool_calls, em, token).await {
            BatchEnd::Continue => checkpoint(agent, st).await,
            BatchEnd::Paused => return LoopEnd::Paused,
            BatchEnd::Cancelled => return LoopEnd::Cancelled,
            BatchEnd::Stop => {
                let last = st.messages.last().and_then(Message::content_text).unwrap_or_default().to_owned();
                let content = if response.content.is_empty() { last } else { response.content };
                st.output.content = Some(Value::String(content));
                return LoopEnd::Completed;
            }
        }
    }
}

fn sanitize_name(name: &str) -> String {
    let cleaned: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if cleaned.is_empty() { "output".to_owned() } else { cleaned }
}

async fn call_model(model: &dyn Model, request: ModelRequest, em: &mut Emitter, token: &CancellationToken) -> CallEnd {
    if !em.active() {
        return tokio::select! {
            r = model.invoke(request) => match r {
                Ok(r) => CallEnd::Done(r),
                Err(e) => CallEnd::Failed(e),
            },
            () = token.cancelled() => CallEnd::Cancelled(ModelResponse::default()),
        };
    }
    let mut assembler = ResponseAssembler::new();
    let mut stream = tokio::select! {
        r = model.stream(request) => match r {
            Ok(s) => s,
            Err(e) => return CallEnd::Failed(e),
        },
        () = token.cancelled() => return CallEnd::Cancelled(ModelResponse::default()),
    };
    loop {
        // A model stream whose chunks are all ready (a buffered body, the test model) and a
        // listener that left never make this loop wait: it yields once its share of the
        // scheduler is spent, so other requests on the worker thread are not starved.
        tokio::task::consume_budget().await;
        let next = tokio::select! {
            item = stream.next() => item,
            () = token.cancelled() => return CallEnd::Cancelled(assembler.finish()),
        };
        match next {
            None => return CallEnd::Done(assembler.finish()),
            Some(Err(e)) => return CallEnd::Failed(e),
            Some(Ok(chunk)) => {
                assembler.push(&chunk);
                let (content, reasoning) = match &chunk {
                    ModelChunk::Content(text) => (Some(Value::String(text.clone())), String::new()),
                    ModelChunk::Reasoning(text) => (None, text.clone()),
                    _ => continue,
                };
                em.emit(EventData::RunContent {
                    content,
                    workflow_agent: false,
                    content_type: "str".to_owned(),
                    reasoning_content: reasoning,
                    model_provider_data: assembler.provider_data().cloned(),
                });
                // A listener slower than the model: wait for it rather than queue without bound.
                tokio::select! {
                    () = em.paced() => {}
                    () = token.cancelled() => return CallEnd::Cancelled(assembler.finish()),
                }
            }
        }
    }
}

/// Sets the final status, runs post-hooks, emits the terminal event and stores the run.
pub(crate) async fn finish(
    agent: &AgentInner,
    st: &mut RunState,
    em: &mut Emitter,
    end: LoopEnd,
) -> Result<RunOutput, RunError> {
    let metrics = st.output.metrics.get_or_insert_with(Metrics::default);
    metrics.duration += st.started.elapsed().as_secs_f64();
    let mut failure = match end {
        LoopEnd::Completed => None,
        LoopEnd::Paused => {
            st.output.status = RunStatus::Paused;
            if st.output.content.is_none() {
                st.output.content = paused_content(st.output.tools.iter().flatten()).map(Value::String);
            }
            em.emit(EventData::RunPaused {
                tools: Some(
                    st.output.tools.iter().flatten().filter(|t| t.is_paused() && t.result.is_none()).cloned().collect(),
                ),
                requirements: Some(st.output.active_requirements().into_iter().cloned().collect()),
            });
            if let Some(db) = &agent.db {
                let source = crate::approvals::ApprovalSource {
                    source_type: "agent",
                    agent_id: Some(agent.id.clone()),
                    name: agent.name.clone(),
                    user_id: st.user_id.clone(),
                    expires_in: agent.tool_config.approval_timeout,
                    ..Default::default()
                };
                crate::approvals::record_pause(db.as_ref(), &mut st.output, &source).await;
            }
            return store(agent, st, em, None).await;
        }
        LoopEnd::Cancelled => {
            st.output.status = RunStatus::Cancelled;
            em.emit(EventData::RunCancelled { reason: Some("run cancelled by request".to_owned()) });
            return store(agent, st, em, None).await;
        }
        LoopEnd::Failed(e) => Some(e),
    };
    if failure.is_none() {
        for hook in &agent.post_hooks {
            em.emit(EventData::PostHookStarted { post_hook_name: hook.name().to_owned() });
            if let Err(e) = hook.run(&mut st.output).await {
                failure = Some(RunError::Hook {
                    hook: hook.name().to_owned(),
                    message: e.0,
                    run: Box::new(RunOutput::new("", "")),
                });
                break;
            }
            em.emit(EventData::PostHookCompleted { post_hook_name: hook.name().to_owned() });
        }
    }
    match failure {
        None => {
            st.output.status = RunStatus::Completed;
            update_memories(agent, st);
            learn(agent, st);
            em.emit(EventData::RunContentCompleted {});
            em.emit(EventData::RunCompleted {
                content: st.output.content.clone(),
                content_type: st.output.content_type.clone(),
                reasoning_content: st.output.reasoning_content.clone(),
                metrics: st.output.metrics.clone(),
                session_state: Some(st.state_snapshot()),
                metadata: st.output.metadata.clone(),
                model_provider_data: st.output.model_provider_data.clone(),
            });
            let stored = store(agent, st, em, None).await;
            if stored.is_ok() {
                refresh_summary(agent, st);
            }
            stored
        }
        Some(err) => {
            st.output.status = RunStatus::Error;
            let message = err.to_string();
            if st.output.content.is_none() {
                st.output.content = Some(Value::String(message.clone()));
            }
            let mut additional = Map::new();
            if let RunError::Model { source, .. } = &err
                && let Some(status) = source.status
            {
                additional.insert("status_code".to_owned(), Value::from(status));
            }
            em.emit(EventData::RunError {
                content: Some(Value::String(message)),
                error_type: Some(error_type(&err).to_owned()),
                error_id: Some(err.error_id().to_owned()),
                additional_data: (!additional.is_empty()).then_some(additional),
            });
            store(agent, st, em, Some(err)).await
        }
    }
}

/// With `checkpoint = ToolBatch`, writes the running run after a batch of tool results, its last
/// message marked as a checkpoint (Agno's `checkpoint_run`). A failed write is logged: the run
/// goes on, and is written again at its next checkpoint or its end.
async fn checkpoint(agent: &AgentInner, st: &mut RunState) {
    if agent.tool_config.checkpoint != crate::Checkpoint::ToolBatch || !st.store || agent.db.is_none() {
        return;
    }
    st.output.status = RunStatus::Running;
    let status = st.output.status.as_str();
    if let Some(last) = st.messages.iter_mut().rev().find(|m| !m.from_history) {
        last.mark_checkpoint(status, agno_core::now_epoch_secs());
    }
    let kept = st.messages.iter().filter(|m| !m.from_history).count();
    st.output.set_last_checkpoint(kept);
    if let Err(e) = save(agent, st).await {
        tracing::warn!(run_id = st.output.id(), error = %e, "cannot write the run's checkpoint");
    }
}

/// What a paused run says while it waits, as Agno says it (`get_paused_content`): what its last
/// paused call needs (confirmation, user input, external execution).
fn paused_content<'a>(tools: impl Iterator<Item = &'a agno_core::ToolExecution>) -> Option<String> {
    let mut said = None;
    for t in tools.filter(|t| t.external_execution_silent != Some(true)) {
        let confirm = t.requires_confirmation == Some(true) && t.confirmed != Some(true);
        let input = t.requires_user_input == Some(true);
        let external = t.external_execution_required == Some(true);
        let needs = match (confirm, input, external) {
            (true, true, true) => "confirmation, user input, or external execution.",
            (true, true, false) => "confirmation or user input.",
            (true, false, true) => "confirmation or external execution.",
            (false, true, true) => "user input or external execution.",
            (true, false, false) => "confirmation.",
            (false, true, false) => "user input.",
            (false, false, true) => {
                said = Some("I have tools to execute, but it needs external execution.".to_owned());
                continue;
            }
            (false, false, false) => continue,
        };
        said = Some(format!("I have tools to execute, but I need {needs}"));
    }
    said
}

/// `update_memory_on_run`: the memory manager reads what the user said, on its own task (off the
/// response path, as Agno's background memory task).
fn update_memories(agent: &AgentInner, st: &RunState) {
    let Some(manager) = agent.memory_manager.clone().filter(|_| agent.memory.update_memory_on_run) else { return };
    let message = st.output.input.as_ref().and_then(|i| i.input_content.as_ref()).map(|c| match c {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let Some(message) = message.filter(|m| !m.trim().is_empty()) else { return };
    let user = st.user_id.clone().unwrap_or_else(|| "default".to_owned());
    let agent_id = agent.id.clone();
    let run_id = st.output.id().to_owned();
    let work = async move {
        if let Err(e) = manager.create_user_memories(&message, &user, Some(&agent_id), None).await {
            tracing::warn!(run_id, error = %e, "updating the user's memories failed");
        }
    };
    spawn_after_run(work, "update memories");
}

/// `learning`: each `always` store's model reads the run's conversation, on its own task (off the
/// response path, as memories are).
fn learn(agent: &AgentInner, st: &RunState) {
    let (Some(machine), Some(user)) = (agent.learning.clone(), st.user_id.clone()) else { return };
    let conversation: Vec<String> = st
        .messages
        .iter()
        .filter_map(|m| {
            let who = match m.role {
                agno_core::Role::User => "User",
                agno_core::Role::Assistant => "Assistant",
                _ => return None,
            };
            let text = m.content_text()?;
            (!text.trim().is_empty()).then(|| format!("{who}: {text}"))
        })
        .collect();
    if conversation.is_empty() {
        return;
    }
    let agent_id = agent.id.clone();
    let run_id = st.output.id().to_owned();
    let work = async move {
        if let Err(e) = machine.extract(&conversation.join("\n"), &user, &agent_id).await {
            tracing::warn!(run_id, error = %e, "learning from the run failed");
        }
    };
    spawn_after_run(work, "learn from the run");
}

/// `enable_session_summaries`: once the run is stored, the summary manager rewrites the
/// session's summary on its own task (`RunCompleted` has been sent already).
fn refresh_summary(agent: &AgentInner, st: &RunState) {
    let (Some(manager), Some(db)) = (agent.summary_manager.clone(), agent.db.clone()) else { return };
    if !st.store {
        return;
    }
    let session_id = st.session.session_id.clone();
    let user_id = st.user_id.clone();
    let work = async move {
        if let Err(e) = manager.refresh(db.as_ref(), &session_id, user_id.as_deref()).await {
            tracing::warn!(session_id, error = %e, "updating the session summary failed");
        }
    };
    spawn_after_run(work, "update the session summary");
}

/// Runs `work` on its own task (never on the run's path), in the run's trace; `what` names it if
/// it cannot start.
fn spawn_after_run(work: impl std::future::Future<Output = ()> + Send + 'static, what: &str) {
    match crate::blocking::spawn_handle() {
        Ok(handle) => {
            handle.spawn(crate::trace::propagate(work));
        }
        Err(e) => tracing::warn!(error = %e, "cannot {what}: no runtime"),
    }
}

fn error_type(err: &RunError) -> &'static str {
    match err {
        RunError::Model { .. } => "ModelProviderError",
        RunError::Hook { .. } => "CheckTrigger",
        RunError::OutputSchema { .. } => "OutputSchemaError",
        RunError::Storage(_) => "StorageError",
        _ => "AgentRunException",
    }
}

async fn store(
    agent: &AgentInner,
    st: &mut RunState,
    em: &mut Emitter,
    failure: Option<RunError>,
) -> Result<RunOutput, RunError> {
    st.output.events = em.take_stored();
    if let Err(db_err) = save(agent, st).await {
        tracing::error!(run_id = st.output.id(), error = %db_err, "failed to store run");
        if failure.is_none() {
            em.emit(EventData::RunError {
                content: Some(Value::String(format!("storing the run failed: {db_err}"))),
                error_type: Some("StorageError".to_owned()),
                error_id: Some("storage_error".to_owned()),
                additional_data: None,
            });
        }
        return Err(failure.unwrap_or(RunError::Storage(db_err)));
    }
    match failure {
        None => Ok(st.output.clone()),
        Some(err) => Err(attach_run(err, &st.output)),
    }
}

fn attach_run(err: RunError, output: &RunOutput) -> RunError {
    let boxed = Box::new(output.clone());
    match err {
        RunError::Model { source, .. } => RunError::Model { source, run: boxed },
        RunError::Hook { hook, message, .. } => RunError::Hook { hook, message, run: boxed },
        RunError::OutputSchema { message, .. } => RunError::OutputSchema { message, run: boxed },
        other => other,
    }
}
