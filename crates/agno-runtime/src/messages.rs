//! Builds the messages of a run: the system message (as Agno assembles it), history, the user
//! message.

use agno_core::{Message, RunInput};
use serde_json::{Map, Value};

use crate::agent::AgentInner;
use crate::config::OutputSchema;

/// What a run adds to the system message from earlier interactions.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Context<'a> {
    /// The user's memories (`add_memories_to_context`).
    pub(crate) memories: Option<&'a [agno_core::UserMemory]>,
    /// The session's summary (`add_session_summary_to_context`).
    pub(crate) summary: Option<&'a agno_core::SessionSummary>,
    /// What the agent learned about the run's user (Agno's `learning`).
    pub(crate) learnings: Option<&'a str>,
}

/// The system message, or `None` when there is nothing to say.
pub(crate) fn system_message(
    agent: &AgentInner,
    state: &Map<String, Value>,
    schema: Option<&OutputSchema>,
    native_schema: bool,
    context: Context<'_>,
) -> Option<Message> {
    if let Some(custom) = &agent.system_message {
        return Some(Message::system(custom.clone()));
    }
    let mut parts: Vec<String> = Vec::new();
    if let Some(description) = &agent.description {
        parts.push(description.clone());
    }
    if let Some(role) = &agent.role {
        parts.push(format!("<your_role>\n{role}\n</your_role>"));
    }
    let mut instructions = agent.instructions.clone();
    if agent.markdown && schema.is_none() {
        instructions.push("Use markdown to format your answers.".to_owned());
    }
    if !instructions.is_empty() {
        let body = if instructions.len() == 1 {
            instructions[0].clone()
        } else {
            instructions.iter().map(|i| format!("- {i}")).collect::<Vec<_>>().join("\n")
        };
        parts.push(format!("<instructions>\n{body}\n</instructions>"));
    }
    let mut info: Vec<String> = Vec::new();
    if agent.add_datetime_to_context {
        info.push(format!("The current time is {}.", chrono::Local::now().format("%Y-%m-%d %H:%M:%S %Z")));
    }
    if agent.add_name_to_context
        && let Some(name) = &agent.name
    {
        info.push(format!("Your name is: {name}."));
    }
    if !info.is_empty() {
        parts.push(format!("<additional_information>\n{}\n</additional_information>", info.join("\n")));
    }
    for tool_instructions in &agent.tool_instructions {
        parts.push(tool_instructions.clone());
    }
    if let Some(expected) = &agent.expected_output {
        parts.push(format!("<expected_output>\n{expected}\n</expected_output>"));
    }
    if let Some(context) = &agent.additional_context {
        parts.push(context.clone());
    }
    if let Some(schema) = schema.filter(|_| !native_schema) {
        parts.push(json_output_prompt(schema));
    }
    if let Some(memories) = context.memories {
        // Agno's wording (`add_memories_to_context`).
        parts.push(if memories.is_empty() {
            "You have the capability to retain memories from previous interactions with the user, but have not \
             had any interactions with the user yet."
                .to_owned()
        } else {
            let list: Vec<String> = memories.iter().map(|m| format!("- {}", m.memory)).collect();
            format!(
                "You have access to user info and preferences from previous interactions that you can use to \
                 personalize your response:\n\n<memories_from_previous_interactions>\n{}\n\
                 </memories_from_previous_interactions>\n\nNote: this information is from previous interactions \
                 and may be updated in this conversation. You should always prefer information from this \
                 conversation over the past memories.",
                list.join("\n")
            )
        });
    }
    if let Some(summary) = context.summary {
        // Agno's wording (`add_session_summary_to_context`).
        parts.push(format!(
            "Here is a brief summary of your previous interactions:\n\n<summary_of_previous_interactions>\n{}\n\
             </summary_of_previous_interactions>\n\nNote: this information is from previous interactions and may \
             be outdated. You should ALWAYS prefer information from this conversation over the past summary.",
            summary.summary
        ));
    }
    if let Some(learned) = context.learnings.filter(|l| !l.is_empty()) {
        parts.push(learned.to_owned());
    }
    let kc = &agent.knowledge_config;
    if agent.knowledge.is_some() && kc.search_knowledge && kc.add_search_knowledge_instructions {
        parts.push(crate::knowledge::SEARCH_INSTRUCTIONS.to_owned());
    }
    if agent.add_session_state_to_context && !state.is_empty() {
        parts.push(format!("<session_state>\n{}\n</session_state>", Value::Object(state.clone())));
    }
    if parts.is_empty() { None } else { Some(Message::system(parts.join("\n\n"))) }
}

/// Agno's prompt asking a model without native structured output for JSON matching `schema`.
pub(crate) fn json_output_prompt(schema: &OutputSchema) -> String {
    format!(
        "Provide your output as a JSON object containing the following fields:\n<json_fields>\n{}\n</json_fields>\n\
         Start your response with `{{` and end it with `}}`.\n\
         Your output will be passed to json.loads() to convert it to a Python object.\n\
         Make sure it only contains valid JSON.",
        schema.schema
    )
}

/// The user message of a run.
pub(crate) fn user_message(input: &RunInput) -> Message {
    let mut msg = Message::user(input.as_text());
    if let Some(content @ Value::Array(_)) = &input.input_content {
        // Multimodal content parts pass through unchanged.
        msg.content = Some(content.clone());
    } else if !input.images().is_empty() || !input.files().is_empty() {
        // Attached media as content parts (each provider renders them its own way).
        let mut parts = vec![serde_json::json!({"type": "text", "text": input.as_text()})];
        parts.extend(input.images().iter().filter_map(|image| {
            let url = match (image.get("content").and_then(Value::as_str), image.get("url").and_then(Value::as_str)) {
                (Some(data), _) => {
                    let mime = image.get("mime_type").and_then(Value::as_str).unwrap_or("image/png");
                    format!("data:{mime};base64,{data}")
                }
                (None, Some(url)) => url.to_owned(),
                (None, None) => return None,
            };
            Some(serde_json::json!({"type": "image_url", "image_url": {"url": url}}))
        }));
        parts.extend(input.files().iter().filter_map(|file| {
            let data = file.get("content").and_then(Value::as_str)?;
            let mime = file.get("mime_type").and_then(Value::as_str).unwrap_or("application/pdf");
            Some(serde_json::json!({"type": "file", "file": {
                "file_data": format!("data:{mime};base64,{data}"),
                "filename": file.get("filename").and_then(Value::as_str).unwrap_or("file"),
            }}))
        }));
        msg.content = Some(Value::Array(parts));
    }
    msg
}
