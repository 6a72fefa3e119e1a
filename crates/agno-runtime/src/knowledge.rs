//! An agent's knowledge (Agno's `knowledge`, `search_knowledge`, `add_knowledge_to_context`):
//! the `search_knowledge_base` tool, the system-message instructions for it, and references
//! added to the user message. Every search is made for the run's user: their documents plus
//! shared ones.

use std::sync::Arc;

use agno_core::{Document, DynTool, Filter, KnowledgeBase, KnowledgeError, ToolError};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::trace::{SpanScope, span_name, traced};

/// Agno's instructions for the `search_knowledge_base` tool.
pub(crate) const SEARCH_INSTRUCTIONS: &str = "<knowledge_base>\nYou have a knowledge base you can search using the \
search_knowledge_base tool. Search before answering questions—don't assume you know the answer. For ambiguous \
questions, search first rather than asking for clarification.\n</knowledge_base>";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// The query to search for.
    query: String,
}

/// Documents as Agno hands them to the model (`Document.to_dict()`: name, meta_data, content),
/// pretty-printed JSON, or "No documents found".
pub(crate) fn format_documents(docs: &[Document]) -> String {
    if docs.is_empty() {
        return "No documents found".to_owned();
    }
    let list: Vec<Value> = docs
        .iter()
        .map(|d| {
            let mut item = json!({"content": d.content, "meta_data": d.meta_data});
            if let Some(name) = &d.name {
                item["name"] = json!(name);
            }
            item
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default()
}

/// `knowledge.search(...)` for a run, traced as a RETRIEVER span (`{Knowledge}.search`) with the
/// query and the documents found, in OpenInference's `retrieval.documents.*` attributes.
pub(crate) async fn search(
    knowledge: &dyn KnowledgeBase,
    query: &str,
    filter: Option<&Filter>,
    user_id: Option<&str>,
) -> Result<Vec<Document>, KnowledgeError> {
    let span = SpanScope::start("RETRIEVER", || {
        let name = knowledge.name();
        let attributes = vec![
            ("input.value", Some(query.to_owned())),
            ("input.mime_type", Some("text/plain".to_owned())),
            ("agno.knowledge.name", Some(name.to_owned())),
            ("agno.knowledge.filters", filter.and_then(|f| serde_json::to_string(f).ok())),
            ("agno.user.id", user_id.map(str::to_owned)),
        ];
        (span_name(if name.is_empty() { "Knowledge" } else { name }, "search"), attributes)
    });
    traced(span, knowledge.search(query, None, filter, user_id), |span, docs| {
        for (i, doc) in docs.iter().enumerate() {
            let key = |field: &str| format!("retrieval.documents.{i}.document.{field}");
            span.text(key("content"), doc.content.clone());
            if let Some(id) = &doc.id {
                span.text(key("id"), id.clone());
            }
            if let Some(score) = doc.reranking_score {
                span.float(key("score"), score);
            }
            if !doc.meta_data.is_empty() {
                span.text(key("metadata"), Value::Object(doc.meta_data.clone()).to_string());
            }
        }
        span.int("agno.knowledge.documents", i64::try_from(docs.len()).unwrap_or(i64::MAX));
    })
    .await
}

/// The `search_knowledge_base` tool for one run.
pub(crate) fn search_tool(
    knowledge: Arc<dyn KnowledgeBase>,
    filter: Option<Filter>,
    user_id: Option<String>,
) -> Arc<dyn DynTool> {
    Arc::new(Function::new(
        "search_knowledge_base",
        "Use this function to search the knowledge base for information about a query.",
        move |args: SearchArgs| {
            let (knowledge, filter, user_id) = (Arc::clone(&knowledge), filter.clone(), user_id.clone());
            async move {
                let query = args.query.trim();
                if query.is_empty() {
                    return Err(ToolError::invalid_arguments("query must not be empty"));
                }
                match search(knowledge.as_ref(), query, filter.as_ref(), user_id.as_deref()).await {
                    Ok(docs) => Ok(format_documents(&docs)),
                    Err(e) => {
                        tracing::warn!(error = %e, "knowledge search failed");
                        Ok(format!("Error searching knowledge base: {e}"))
                    }
                }
            }
        },
    ))
}

/// The references block Agno appends to the user message (`add_knowledge_to_context`).
pub(crate) fn references_block(docs: &[Document]) -> String {
    format!(
        "\n\nUse the following references from the knowledge base if it helps:\n<references>\n{}\n</references>",
        format_documents(docs)
    )
}
