//! Chunking strategies (Agno's `FixedSizeChunker`, `RecursiveChunker`, `DocumentChunker`,
//! `MarkdownChunker`): split a document into pieces of at most `chunk_size` characters, each
//! keeping the document's metadata plus `chunk` (1-based) and `chunk_size`.

use agno_core::Document;
use serde_json::Value;

/// Agno's default chunk size, in characters.
pub const DEFAULT_CHUNK_SIZE: usize = 5000;

/// Why [`Chunking::by_name`] refused a chunker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkingError {
    /// Not one of Agno's chunker names.
    #[error("unknown chunker {0:?}; known: FixedSizeChunker, RecursiveChunker, DocumentChunker, MarkdownChunker")]
    UnknownName(String),
    /// A chunk size of zero.
    #[error("chunk_size must be at least 1")]
    EmptyChunks,
    /// An overlap as large as the chunks (each chunk would start where the last one did).
    #[error("chunk_overlap ({overlap}) must be smaller than chunk_size ({size})")]
    OverlapTooLarge {
        /// The overlap asked for.
        overlap: usize,
        /// The chunk size asked for (or the default).
        size: usize,
    },
}

/// How documents are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// Windows of `size` characters, cut at whitespace near the end when possible, each
    /// starting `overlap` characters before the previous one ended.
    FixedSize {
        /// Most characters per chunk.
        size: usize,
        /// Characters repeated from the previous chunk.
        overlap: usize,
    },
    /// Cut at the strongest separator inside the window: a blank line, a line break, a
    /// sentence end, a space, else anywhere.
    Recursive {
        /// Most characters per chunk.
        size: usize,
        /// Characters repeated from the previous chunk.
        overlap: usize,
    },
    /// Whole paragraphs (blank-line separated) packed up to `size`; a longer paragraph is cut
    /// as `Recursive`.
    Document {
        /// Most characters per chunk.
        size: usize,
        /// Characters repeated from the previous chunk (for cut paragraphs).
        overlap: usize,
    },
    /// Markdown sections (a heading and its text) packed up to `size`; a longer section is cut
    /// as `Recursive`.
    Markdown {
        /// Most characters per chunk.
        size: usize,
        /// Characters repeated from the previous chunk (for cut sections).
        overlap: usize,
    },
}

impl Default for Chunking {
    fn default() -> Self {
        Chunking::FixedSize { size: DEFAULT_CHUNK_SIZE, overlap: 0 }
    }
}

impl Chunking {
    /// Agno's names of the strategies [`Chunking::by_name`] knows.
    pub const NAMES: [&'static str; 4] = ["FixedSizeChunker", "RecursiveChunker", "DocumentChunker", "MarkdownChunker"];

    /// A strategy by Agno's name (`FixedSizeChunker`, `RecursiveChunker`, `DocumentChunker`,
    /// `MarkdownChunker`, or the short `fixed`, `recursive`, `document`, `markdown`).
    ///
    /// # Errors
    /// An unknown name (checked first), then sizes that cannot chunk anything.
    pub fn by_name(name: &str, size: Option<usize>, overlap: Option<usize>) -> Result<Chunking, ChunkingError> {
        let key = name.trim().to_ascii_lowercase().replace(['_', '-'], "");
        let make: fn(usize, usize) -> Chunking = match key.trim_end_matches("chunker").trim_end_matches("chunking") {
            "fixedsize" | "fixed" => |size, overlap| Chunking::FixedSize { size, overlap },
            "recursive" => |size, overlap| Chunking::Recursive { size, overlap },
            "document" => |size, overlap| Chunking::Document { size, overlap },
            "markdown" => |size, overlap| Chunking::Markdown { size, overlap },
            _ => return Err(ChunkingError::UnknownName(name.to_owned())),
        };
        let size = size.unwrap_or(DEFAULT_CHUNK_SIZE);
        let overlap = overlap.unwrap_or(0);
        if size == 0 {
            return Err(ChunkingError::EmptyChunks);
        }
        if overlap >= size {
            return Err(ChunkingError::OverlapTooLarge { overlap, size });
        }
        Ok(make(size, overlap))
    }

    fn size_overlap(self) -> (usize, usize) {
        match self {
            Chunking::FixedSize { size, overlap }
            | Chunking::Recursive { size, overlap }
            | Chunking::Document { size, overlap }
            | Chunking::Markdown { size, overlap } => (size.max(1), overlap.min(size.max(1) - 1)),
        }
    }

    /// Splits `doc` into chunks. `id_prefix` names them (`<prefix>_<n>`).
    pub fn chunk(self, doc: &Document, id_prefix: &str) -> Vec<Document> {
        self.chunk_within(doc, id_prefix, usize::MAX).unwrap_or_default()
    }

    /// The fewest chunks a text of `chars` characters (not counting whitespace, which chunks
    /// may drop at their edges) can be cut into: every chunk holds at most `size` of them.
    pub fn min_chunks(self, chars: usize) -> usize {
        chars.div_ceil(self.size_overlap().0)
    }

    /// Its chunk size, in characters.
    pub fn size(self) -> usize {
        self.size_overlap().0
    }

    /// [`Chunking::chunk`], giving up (without building the rest) once more than `max` chunks
    /// would be made.
    ///
    /// # Errors
    /// [`TooManyChunks`].
    pub fn chunk_within(self, doc: &Document, id_prefix: &str, max: usize) -> Result<Vec<Document>, TooManyChunks> {
        let (size, overlap) = self.size_overlap();
        let pieces = match self {
            Chunking::FixedSize { .. } => windows(&doc.content, size, overlap, &[" ", "\n", "\t"], max),
            Chunking::Recursive { .. } => windows(&doc.content, size, overlap, RECURSIVE_SEPARATORS, max),
            Chunking::Document { .. } => pack(split_paragraphs(&doc.content), size, overlap, max),
            Chunking::Markdown { .. } => pack(split_sections(&doc.content), size, overlap, max),
        };
        if pieces.len() > max {
            return Err(TooManyChunks { max, size });
        }
        Ok(pieces
            .into_iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .enumerate()
            .map(|(i, content)| {
                let n = i + 1;
                let mut meta = doc.meta_data.clone();
                meta.insert("chunk".to_owned(), Value::from(n));
                meta.insert("chunk_size".to_owned(), Value::from(content.chars().count()));
                Document {
                    id: Some(format!("{id_prefix}_{n}")),
                    name: doc.name.clone(),
                    content_id: doc.content_id.clone(),
                    meta_data: meta,
                    content,
                    reranking_score: None,
                }
            })
            .collect())
    }
}

/// A document that would be cut into more chunks than allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("it would be cut into more than {max} chunks of {size} characters")]
pub struct TooManyChunks {
    /// The limit.
    pub max: usize,
    /// The chunk size.
    pub size: usize,
}

/// Characters of UTF-8 `bytes` that are not whitespace (a lower bound on what chunks must hold;
/// invalid UTF-8 counts byte by byte).
pub fn non_whitespace_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| !b.is_ascii_whitespace() && (**b & 0xC0) != 0x80).count()
}

const RECURSIVE_SEPARATORS: &[&str] = &["\n\n", "\n", ". ", " "];

/// Byte offset of the `n`th character of `s` (or its end).
fn char_offset(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// Windows of at most `size` characters; each ends after the strongest separator found in the
/// window's second half (else at the window's end), the next starts `overlap` characters back.
/// Stops once it holds more than `max` windows.
fn windows(text: &str, size: usize, overlap: usize, separators: &[&str], max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() && out.len() <= max {
        let end = char_offset(rest, size);
        if end == rest.len() {
            out.push(rest.to_owned());
            break;
        }
        let window = &rest[..end];
        let half = char_offset(window, size / 2);
        let cut = separators
            .iter()
            .find_map(|sep| window[half..].rfind(sep).map(|i| half + i + sep.len()))
            .filter(|c| *c > 0)
            .unwrap_or(end);
        out.push(rest[..cut].to_owned());
        // Step back `overlap` characters, but always move forward.
        let taken = rest[..cut].chars().count();
        let step = taken.saturating_sub(overlap).max(1);
        rest = &rest[char_offset(rest, step)..];
    }
    out
}

fn split_paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect()
}

/// Sections of a Markdown text: each starts at a heading line (outside code fences).
fn split_sections(text: &str) -> Vec<String> {
    let mut sections = Vec::new();
    let mut current = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') && !current.trim().is_empty() {
            sections.push(std::mem::take(&mut current));
        }
        current.push_str(line);
        current.push('\n');
    }
    if !current.trim().is_empty() {
        sections.push(current);
    }
    sections
}

/// Packs parts into chunks of at most `size` characters (joined by blank lines); a part longer
/// than `size` is cut recursively. Stops once it holds more than `max` chunks.
fn pack(parts: Vec<String>, size: usize, overlap: usize, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for part in parts {
        if out.len() > max {
            return out;
        }
        let part = part.trim().to_owned();
        let len = part.chars().count();
        if len > size {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            out.extend(windows(&part, size, overlap, RECURSIVE_SEPARATORS, max.saturating_sub(out.len())));
            continue;
        }
        if !current.is_empty() && current.chars().count() + 2 + len > size {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push_str("\n\n");
        }
        current.push_str(&part);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document { name: Some("d".into()), ..Document::new(text) }
    }

    #[test]
    fn every_strategy_keeps_chunks_within_size_and_loses_no_words() {
        let text = "# Title\n\nAlpha beta gamma. Delta epsilon zeta.\n\n## Part two\n\nEta theta iota kappa lambda mu nu xi omicron pi rho sigma tau.\n\n```\n# not a heading\n```\n";
        for strategy in [
            Chunking::FixedSize { size: 30, overlap: 0 },
            Chunking::Recursive { size: 30, overlap: 5 },
            Chunking::Document { size: 40, overlap: 0 },
            Chunking::Markdown { size: 60, overlap: 0 },
        ] {
            let chunks = strategy.chunk(&doc(text), "c");
            assert!(chunks.len() > 1, "{strategy:?}");
            for (i, c) in chunks.iter().enumerate() {
                let max = strategy.size_overlap().0;
                assert!(c.content.chars().count() <= max, "{strategy:?}: {:?}", c.content);
                assert_eq!(c.meta_data["chunk"], i + 1);
                assert_eq!(c.id.as_deref(), Some(format!("c_{}", i + 1).as_str()));
            }
            let joined: String = chunks.iter().map(|c| c.content.as_str()).collect::<Vec<_>>().join(" ");
            for word in ["Alpha", "zeta", "omicron", "tau"] {
                assert!(joined.contains(word), "{strategy:?} lost {word}");
            }
        }
        let md = Chunking::Markdown { size: 60, overlap: 0 }.chunk(&doc(text), "m");
        assert!(md.iter().any(|c| c.content.starts_with("## Part two")), "{md:?}");
        assert!(md.iter().all(|c| !c.content.starts_with("# not a heading")));
    }

    #[test]
    fn names_and_bad_sizes_are_checked() {
        assert_eq!(
            Chunking::by_name("RecursiveChunker", Some(10), Some(2)),
            Ok(Chunking::Recursive { size: 10, overlap: 2 })
        );
        assert_eq!(Chunking::by_name("markdown", None, None), Ok(Chunking::Markdown { size: 5000, overlap: 0 }));
        assert!(Chunking::by_name("semantic", None, None).unwrap_err().to_string().contains("known"));
        assert_eq!(
            Chunking::by_name("fixed", Some(10), Some(10)),
            Err(ChunkingError::OverlapTooLarge { overlap: 10, size: 10 })
        );
        assert_eq!(Chunking::by_name("fixed", Some(0), None), Err(ChunkingError::EmptyChunks));
        // The name is judged before the sizes.
        assert!(matches!(Chunking::by_name("semantic", Some(0), None), Err(ChunkingError::UnknownName(_))));
    }

    #[test]
    fn chunking_stops_at_the_limit_without_building_the_rest() {
        let text = "word ".repeat(100_000);
        for strategy in [
            Chunking::FixedSize { size: 1, overlap: 0 },
            Chunking::Recursive { size: 10, overlap: 9 },
            Chunking::Document { size: 2, overlap: 1 },
            Chunking::Markdown { size: 2, overlap: 0 },
        ] {
            let err = strategy.chunk_within(&doc(&text), "c", 1000).unwrap_err();
            assert_eq!(err.max, 1000, "{strategy:?}");
        }
        assert_eq!(
            Chunking::FixedSize { size: 5000, overlap: 0 }.chunk_within(&doc(&text), "c", 1000).unwrap().len(),
            100
        );
        assert_eq!(non_whitespace_chars("ab c\nżó".as_bytes()), 5);
        assert_eq!(Chunking::FixedSize { size: 2, overlap: 0 }.min_chunks(5), 3);
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "żółw ".repeat(50);
        let chunks = Chunking::FixedSize { size: 7, overlap: 2 }.chunk(&doc(&text), "u");
        assert!(chunks.iter().all(|c| c.content.contains('ż') || c.content.contains('w')));
    }
}
