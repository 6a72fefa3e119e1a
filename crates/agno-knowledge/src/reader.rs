//! Readers: turn a file's bytes into documents, chosen by the file's extension (Agno's
//! `TextReader`, `MarkdownReader`, `CSVReader`, `JSONReader`, `PDFReader`, `DocxReader`,
//! `WebsiteReader` for HTML). PDF text comes from `pdf-extract`, DOCX from its
//! `word/document.xml` (read with `zip` and `quick-xml`), HTML from `html2text`.

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
    /// PDF (`.pdf`): one document per page.
    Pdf,
    /// Word (`.docx`): one document, a line per paragraph.
    Docx,
    /// HTML (`.html`, `.htm`): the page's text.
    Html,
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
            "pdf" => Ok(ContentKind::Pdf),
            "docx" => Ok(ContentKind::Docx),
            "html" | "htm" => Ok(ContentKind::Html),
            other => Err(KnowledgeError::Read(format!(
                "unsupported file type .{other} ({name}); supported: .txt, .md, .markdown, .csv, .json, .pdf, .docx, \
                 .html"
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
            ContentKind::Pdf => "pdf",
            ContentKind::Docx => "docx",
            ContentKind::Html => "html",
        }
    }
}

/// Reads `bytes` as `kind` into documents named `name`.
///
/// # Errors
/// [`KnowledgeError::Read`] for text that is not UTF-8, empty content, malformed CSV or JSON.
pub fn read(kind: ContentKind, name: &str, bytes: &[u8]) -> Result<Vec<Document>, KnowledgeError> {
    let named = |content: String| Document { content, name: Some(name.to_owned()), ..Document::default() };
    if bytes.is_empty() {
        return Err(KnowledgeError::Read(format!("{name} is empty")));
    }
    match kind {
        ContentKind::Pdf => return read_pdf(name, bytes).map(|pages| pages.into_iter().map(named).collect()),
        ContentKind::Docx => return Ok(vec![named(read_docx(name, bytes)?)]),
        ContentKind::Html => {
            let text = html2text::from_read(bytes, 10_000)
                .map_err(|e| KnowledgeError::Read(format!("{name} is not readable HTML: {e}")))?;
            if text.trim().is_empty() {
                return Err(KnowledgeError::Read(format!("{name} has no text")));
            }
            return Ok(vec![named(text)]);
        }
        _ => {}
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| KnowledgeError::Read(format!("{name} is not UTF-8 text: {e}")))?
        .trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        return Err(KnowledgeError::Read(format!("{name} is empty")));
    }
    match kind {
        ContentKind::Text | ContentKind::Markdown | ContentKind::Pdf | ContentKind::Docx | ContentKind::Html => {
            Ok(vec![named(text.to_owned())])
        }
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

/// The text of each page of a PDF (pages without text left out). A PDF the parser cannot read,
/// or that makes it panic, is a read error.
fn read_pdf(name: &str, bytes: &[u8]) -> Result<Vec<String>, KnowledgeError> {
    let fail = |why: String| KnowledgeError::Read(format!("{name} could not be parsed as PDF: {why}"));
    let parsed =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pdf_extract::extract_text_from_mem_by_pages(bytes)))
            .map_err(|_| fail("the PDF parser gave up".to_owned()))?
            .map_err(|e| fail(e.to_string()))?;
    let pages: Vec<String> = parsed.into_iter().map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect();
    if pages.is_empty() {
        return Err(KnowledgeError::Read(format!("{name} has no extractable text (a scanned PDF needs OCR)")));
    }
    Ok(pages)
}

/// The text of a Word document: a line per paragraph, tabs and line breaks kept.
fn read_docx(name: &str, bytes: &[u8]) -> Result<String, KnowledgeError> {
    use std::io::Read;

    use quick_xml::events::Event;

    let fail = |why: String| KnowledgeError::Read(format!("{name} could not be read as DOCX: {why}"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| fail(e.to_string()))?;
    let mut xml = String::new();
    archive
        .by_name("word/document.xml")
        .map_err(|e| fail(format!("word/document.xml: {e}")))?
        .read_to_string(&mut xml)
        .map_err(|e| fail(e.to_string()))?;
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut out, mut in_text) = (String::new(), false);
    loop {
        match reader.read_event().map_err(|e| fail(e.to_string()))? {
            Event::Start(e) if e.local_name().as_ref() == "t" => in_text = true,
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => out.push('\n'),
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "tab" => out.push('\t'),
                "br" | "cr" => out.push('\n'),
                _ => {}
            },
            Event::Text(t) if in_text => {
                out.push_str(&t.html_content());
            }
            Event::GeneralRef(r) if in_text => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    out.push(c);
                    continue;
                }
                out.push_str(match &*r {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    _ => "",
                });
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if out.trim().is_empty() {
        return Err(KnowledgeError::Read(format!("{name} has no text")));
    }
    Ok(out.trim_end().to_owned())
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
