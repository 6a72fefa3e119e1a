//! A message's content as provider-neutral parts. Messages carry content as Chat Completions
//! does (a string, or parts `{"type": "text"}`, `{"type": "image_url", "image_url": {"url"}}`,
//! `{"type": "file", "file": {"file_data", "filename"}}`); each provider renders these parts in
//! its own shape.

use serde_json::{Value, json};

/// A conversation as providers with alternating roles want it (Anthropic, Bedrock, Gemini):
/// the blocks of consecutive messages of one role make one message, and a message without
/// blocks is left out.
#[derive(Debug, Default)]
pub(crate) struct Turns(Vec<(&'static str, Vec<Value>)>);

impl Turns {
    /// Adds a message's blocks, joining them to the last message when it has the same role.
    pub(crate) fn push(&mut self, role: &'static str, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => self.0.push((role, blocks)),
        }
    }

    /// The messages as `{"role": .., <blocks_key>: [..]}` objects.
    pub(crate) fn into_json(self, blocks_key: &str) -> Value {
        Value::Array(self.0.into_iter().map(|(role, blocks)| json!({"role": role, blocks_key: blocks})).collect())
    }
}

/// A request's `tool_choice` (Chat Completions' shape: `"auto"`, `"none"`, `"required"`, or
/// `{"type": "function", "function": {"name"}}`, also taken as a bare `{"name"}`), for providers
/// that word it their own way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ToolChoice<'a> {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// Some tool call.
    Required,
    /// A call of the tool of this name.
    Tool(&'a Value),
}

impl<'a> ToolChoice<'a> {
    /// `choice` read, or `None` for a value of no known shape.
    pub(crate) fn of(choice: &'a Value) -> Option<Self> {
        match choice {
            Value::String(s) => match s.as_str() {
                "auto" => Some(Self::Auto),
                "none" => Some(Self::None),
                "required" => Some(Self::Required),
                _ => None,
            },
            Value::Object(o) => {
                Some(Self::Tool(o.get("function").and_then(|f| f.get("name")).or_else(|| o.get("name"))?))
            }
            _ => None,
        }
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Text.
    Text(String),
    /// An image by URL.
    ImageUrl(String),
    /// An image's bytes, base64 encoded.
    ImageData {
        /// Its media type (`image/png`).
        mime: String,
        /// Base64 of the bytes.
        data: String,
    },
    /// A document's bytes (a PDF), base64 encoded.
    File {
        /// Its media type.
        mime: String,
        /// Base64 of the bytes.
        data: String,
        /// Its name, when given.
        name: Option<String>,
    },
}

/// `data:<mime>;base64,<data>` split, or `None` for another URL.
fn data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (mime, data) = rest.split_once(";base64,")?;
    Some((mime.to_owned(), data.to_owned()))
}

/// The parts of `content` (a string is one text part; unknown parts are left out).
pub(crate) fn parts(content: Option<&Value>) -> Vec<Part> {
    match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        Some(Value::Array(items)) => items.iter().filter_map(part).collect(),
        Some(other) => vec![Part::Text(other.to_string())],
    }
}

fn part(item: &Value) -> Option<Part> {
    match item.get("type").and_then(Value::as_str)? {
        "text" | "input_text" => Some(Part::Text(item.get("text")?.as_str()?.to_owned())),
        "image_url" => {
            let url = item.pointer("/image_url/url").or_else(|| item.get("image_url"))?.as_str()?;
            Some(match data_url(url) {
                Some((mime, data)) => Part::ImageData { mime, data },
                None => Part::ImageUrl(url.to_owned()),
            })
        }
        "file" => {
            let file = item.get("file")?;
            let (mime, data) = data_url(file.get("file_data")?.as_str()?)?;
            Some(Part::File { mime, data, name: file.get("filename").and_then(Value::as_str).map(str::to_owned) })
        }
        _ => None,
    }
}

/// The text of `content`'s parts, joined.
pub(crate) fn text_of(content: Option<&Value>) -> String {
    parts(content)
        .into_iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_completions_parts_are_read() {
        let content = json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "a.pdf"}},
            {"type": "input_audio"}
        ]);
        assert_eq!(
            parts(Some(&content)),
            vec![
                Part::Text("what is this?".into()),
                Part::ImageUrl("https://example.com/cat.png".into()),
                Part::ImageData { mime: "image/png".into(), data: "iVBOR".into() },
                Part::File { mime: "application/pdf".into(), data: "JVBER".into(), name: Some("a.pdf".into()) },
            ]
        );
        assert_eq!(parts(Some(&json!("hi"))), vec![Part::Text("hi".into())]);
        assert_eq!(text_of(Some(&content)), "what is this?");
    }

    #[test]
    fn tool_choices_are_read_in_every_chat_completions_shape() {
        assert_eq!(ToolChoice::of(&json!("auto")), Some(ToolChoice::Auto));
        assert_eq!(ToolChoice::of(&json!("none")), Some(ToolChoice::None));
        assert_eq!(ToolChoice::of(&json!("required")), Some(ToolChoice::Required));
        let forced = json!({"type": "function", "function": {"name": "add"}});
        assert_eq!(ToolChoice::of(&forced), Some(ToolChoice::Tool(&json!("add"))));
        assert_eq!(ToolChoice::of(&json!({"name": "add"})), Some(ToolChoice::Tool(&json!("add"))));
        assert_eq!(ToolChoice::of(&json!("sometimes")), None);
        assert_eq!(ToolChoice::of(&json!({"type": "function"})), None);
    }
}
