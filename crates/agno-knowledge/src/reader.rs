//! Readers: turn a file's bytes into documents, chosen by the file's extension (Agno's
//! `TextReader`, `MarkdownReader`, `CSVReader`, `JSONReader`).

use agno_core::{Document, KnowledgeError};
use serde_json::{Map, Value};

/// The kinds of content that can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentKind {
    /// Plain text (`.txt`, text without a name).
    Text,
    /// Markdown (`.md`, `.markdown`).
    Markdown,
    /// Comma-separated values (`.csv`): one document, a line per row.
    Csv,
    /// JSON (`.json`): one document per element of a top-level array, else one.
    Json,
}

impl ContentKind {
    /// The kind for a file name, by extension.
    ///
    /// # Errors
    /// [`KnowledgeError::Read`] naming the extension and the supported ones.
    pub fn from_name(name: &str) -> Result<ContentKind, KnowledgeError> {
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
        match ext.as_str() {
            "txt" | "text" | "" => Ok(ContentKind::Text),
            "md" | "markdown" => Ok(ContentKind::Markdown),
            "csv" => Ok(ContentKind::Csv),
            "json" => Ok(ContentKind::Json),
            other => Err(KnowledgeError::Read(format!(
                "unsupported file type .{other} ({name}); supported: .txt, .md, .markdown, .csv, .json"
            ))),
        }
    }

    /// Agno's content `type` for the row (`txt`, `md`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ContentKind::Text => "txt",
            ContentKind::Markdown => "md",
            ContentKind::Csv => "csv",
            ContentKind::Json => "json",
        }
    }
}

/// Reads `bytes` as `kind` into documents named `name`.
///
/// # Errors
/// [`KnowledgeError::Read`] for text that is not UTF-8, empty content, malformed CSV or JSON.
pub fn read(kind: ContentKind, name: &str, bytes: &[u8]) -> Result<Vec<Document>, KnowledgeError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| KnowledgeError::Read(format!("{name} is not UTF-8 text: {e}")))?
        .trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        return Err(KnowledgeError::Read(format!("{name} is empty")));
    }
    let named = |content: String| Document { content, name: Some(name.to_owned()), ..Document::default() };
    match kind {
        ContentKind::Text | ContentKind::Markdown => Ok(vec![named(text.to_owned())]),
        ContentKind::Csv => Ok(vec![named(read_csv(name, text)?)]),
        ContentKind::Json => {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| KnowledgeError::Read(format!("{name} is not valid JSON: {e}")))?;
            match value {
                Value::Array(items) => {
                    let docs: Vec<Document> = items
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| {
                            let mut doc = named(item.to_string());
                            let mut meta = Map::new();
                            meta.insert("page".to_owned(), Value::from(i + 1));
                            doc.meta_data = meta;
                            doc
                        })
                        .collect();
                    if docs.is_empty() {
                        return Err(KnowledgeError::Read(format!("{name} is an empty JSON array")));
                    }
                    Ok(docs)
                }
                other => Ok(vec![named(other.to_string())]),
            }
        }
    }
}

/// CSV rows as lines of comma-separated cells (quoted cells unquoted), as Agno's CSV reader
/// joins them.
fn read_csv(name: &str, text: &str) -> Result<String, KnowledgeError> {
    let mut rows = Vec::new();
    let mut cell = String::new();
    let mut row: Vec<String> = Vec::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if cell.is_empty() => quoted = true,
            (',', false) => row.push(std::mem::take(&mut cell)),
            ('\n', false) => {
                row.push(std::mem::take(&mut cell).trim_end_matches('\r').to_owned());
                rows.push(std::mem::take(&mut row).join(", "));
            }
            (c, _) => cell.push(c),
        }
    }
    if quoted {
        return Err(KnowledgeError::Read(format!("{name}: a quoted CSV cell is never closed")));
    }
    if !cell.is_empty() || !row.is_empty() {
        row.push(cell.trim_end_matches('\r').to_owned());
        rows.push(row.join(", "));
    }
    Ok(rows.join("\n"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_extensions_and_unknown_ones_are_refused() {
        assert_eq!(ContentKind::from_name("a/B.MD").unwrap(), ContentKind::Markdown);
        let err = ContentKind::from_name("x.exe").unwrap_err().to_string();
        assert!(err.contains(".exe") && err.contains("supported"), "{err}");
    }

    #[test]
    fn csv_and_json_are_read_and_empty_content_is_refused() {
        let docs =
            read(ContentKind::Csv, "t.csv", b"name,city\n\"Doe, Jane\",Oslo\r\nBob,\"Rio \"\"RJ\"\"\"\n").unwrap();
        assert_eq!(docs[0].content, "name, city\nDoe, Jane, Oslo\nBob, Rio \"RJ\"");
        let docs = read(ContentKind::Json, "t.json", br#"[{"a":1},{"b":2}]"#).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].meta_data["page"], 2);
        assert!(read(ContentKind::Text, "e.txt", b"  \n").is_err());
        assert!(read(ContentKind::Json, "b.json", b"{nope").is_err());
        assert!(read(ContentKind::Text, "b.txt", &[0xff, 0xfe, 0x00]).is_err());
    }
}
