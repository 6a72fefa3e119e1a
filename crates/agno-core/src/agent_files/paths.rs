//! The path grammar of an agent's files, as Agno 3.1's `agno.fs._paths`: one grammar for file
//! paths, namespace names and directory parameters, and one line transform for appended content
//! and `check_lines` input, so exact-line checks match what appends stored.

use unicode_normalization::UnicodeNormalization;

use super::FsError;

/// Longest path, in characters.
pub const MAX_PATH_CHARS: usize = 512;
/// Most segments in a path.
pub const MAX_SEGMENTS: usize = 16;
/// Longest segment, in characters.
pub const MAX_SEGMENT_CHARS: usize = 128;
/// Most lines one `check_lines` call checks.
pub const MAX_CHECK_LINES: usize = 200;

/// The placeholders a namespace may carry, filled from the run (never from the model).
pub const TEMPLATE_PLACEHOLDERS: [&str; 3] = ["user_id", "agent_id", "team_id"];

/// Characters a namespace keeps as they are; everything else is percent-encoded.
const NAMESPACE_SAFE: &str = "abcdefghijklmnopqrstuvwxyz0123456789.-_/@+";

fn invalid(original: &str, reason: &str) -> FsError {
    FsError::InvalidPath(format!("invalid path {original:?}: {reason}. Use relative paths like notes/topic.md."))
}

/// Validates and canonicalises a file path (NFC, no control characters or backslashes, repeated
/// slashes folded, no leading slash, no `.`/`..`, bounded lengths).
///
/// # Errors
/// [`FsError::InvalidPath`] naming the rule broken.
pub fn normalize_path(path: &str) -> Result<String, FsError> {
    let mut value: String = path.nfc().collect();
    if value.chars().any(char::is_control) {
        return Err(invalid(path, "control characters are not allowed"));
    }
    if value.contains('\\') {
        return Err(invalid(path, "backslashes are not allowed, use forward slashes"));
    }
    while value.contains("//") {
        value = value.replace("//", "/");
    }
    if let Some(rest) = value.strip_prefix('/') {
        value = rest.to_owned();
    }
    if value.ends_with('/') {
        return Err(invalid(path, "trailing slashes are not allowed, paths address files"));
    }
    if value.is_empty() {
        return Err(invalid(path, "path is empty"));
    }
    if value.chars().count() > MAX_PATH_CHARS {
        return Err(invalid(path, &format!("path is longer than {MAX_PATH_CHARS} characters")));
    }
    let segments: Vec<&str> = value.split('/').collect();
    if segments.len() > MAX_SEGMENTS {
        return Err(invalid(path, &format!("path has more than {MAX_SEGMENTS} segments")));
    }
    for segment in segments {
        if segment == "." || segment == ".." {
            return Err(invalid(path, "segments '.' and '..' are not allowed"));
        }
        if segment.chars().count() > MAX_SEGMENT_CHARS {
            return Err(invalid(path, &format!("a segment is longer than {MAX_SEGMENT_CHARS} characters")));
        }
    }
    Ok(value)
}

/// A directory parameter: `""` and `"."` are the namespace root, anything else a path.
///
/// # Errors
/// As [`normalize_path`].
pub fn normalize_directory(directory: &str) -> Result<String, FsError> {
    if directory.is_empty() || directory == "." {
        return Ok(String::new());
    }
    normalize_path(directory)
}

fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        let c = char::from(byte);
        if byte.is_ascii() && NAMESPACE_SAFE.contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{byte:02x}"));
        }
    }
    out
}

/// The placeholders of a namespace template, in order.
///
/// # Errors
/// An unknown placeholder, a stray brace or two placeholders with nothing between them.
pub fn template_placeholders(name: &str) -> Result<Vec<&'static str>, FsError> {
    let mut found = Vec::new();
    let mut rest = name;
    let mut remainder = String::new();
    while let Some(open) = rest.find('{') {
        remainder.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            remainder.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        if inner.contains('{') {
            remainder.push('{');
            rest = after;
            continue;
        }
        let Some(known) = TEMPLATE_PLACEHOLDERS.iter().find(|p| **p == inner) else {
            return Err(invalid(
                name,
                &format!(
                    "unknown placeholder {{{inner}}}, valid placeholders are {{user_id}}, {{agent_id}}, {{team_id}}"
                ),
            ));
        };
        found.push(*known);
        rest = &after[close + 1..];
    }
    remainder.push_str(rest);
    if remainder.contains('{') || remainder.contains('}') {
        return Err(invalid(name, "braces are reserved in namespace names"));
    }
    if name.contains("}{") {
        return Err(invalid(
            name,
            "placeholders must be separated (e.g. '{user_id}/{team_id}' or '{user_id}-{team_id}'), because adjacent \
             placeholders cannot be resolved back to distinct values",
        ));
    }
    Ok(found)
}

/// A namespace name in its canonical form: literal parts lowercased and percent-encoded to
/// URL-safe ASCII (so `BANK` and `bank` are one store), placeholders kept for each run to fill.
///
/// # Errors
/// A name that breaks the path grammar or the template rules.
pub fn normalize_namespace(name: &str) -> Result<String, FsError> {
    let value: String = name.nfc().collect();
    let placeholders = template_placeholders(&value)?;
    let encode = |literal: &str| quote(&literal.nfc().collect::<String>().to_lowercase());
    if placeholders.is_empty() {
        return Ok(encode(&normalize_path(&value)?));
    }
    let mut stand_in = value.clone();
    for p in &placeholders {
        stand_in = stand_in.replace(&format!("{{{p}}}"), "x");
    }
    normalize_path(&stand_in)?;
    let mut out = String::new();
    let mut rest = value.as_str();
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
        out.push_str(&encode(&rest[..open]));
        out.push_str(&rest[open..close]);
        rest = &rest[close..];
    }
    out.push_str(&encode(rest));
    Ok(out)
}

/// A value bound to a namespace placeholder (a user or agent id): one valid path segment,
/// percent-encoded with its case kept, so users `Alice` and `alice` stay apart.
///
/// # Errors
/// An empty value, or one that is not a single valid segment.
pub fn template_value(placeholder: &str, value: &str) -> Result<String, FsError> {
    let bad = |why: &str| FsError::InvalidPath(format!("invalid {placeholder} value {value:?}: {why}"));
    if value.is_empty() {
        return Err(bad("must be a non-empty string"));
    }
    let normalized: String = value.nfc().collect();
    if normalized.contains('/') {
        return Err(bad("must be a single path segment"));
    }
    if normalized.contains('{') || normalized.contains('}') {
        return Err(bad("braces are not allowed"));
    }
    match normalize_path(&normalized) {
        Ok(p) if p == normalized => Ok(quote(&normalized)),
        _ => Err(bad("must be a single valid path segment")),
    }
}

/// One record line: trailing `\r`/`\n` stripped; an interior newline is refused.
///
/// # Errors
/// A line holding a newline inside it.
pub fn normalize_line(line: &str) -> Result<&str, FsError> {
    let value = line.trim_end_matches(['\r', '\n']);
    if value.contains(['\n', '\r']) {
        return Err(FsError::InvalidPath(format!(
            "invalid record {line:?}: records must be single lines with no newlines."
        )));
    }
    Ok(value)
}

/// A `check_lines` batch: at most [`MAX_CHECK_LINES`], terminators stripped, empties dropped.
///
/// # Errors
/// Too many lines, or a line with a newline inside.
pub fn normalize_check_lines(lines: &[String]) -> Result<Vec<String>, FsError> {
    if lines.len() > MAX_CHECK_LINES {
        return Err(FsError::InvalidPath(format!(
            "too many records ({} > {MAX_CHECK_LINES}). Check them in batches of {MAX_CHECK_LINES} or fewer.",
            lines.len()
        )));
    }
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let l = normalize_line(line)?;
        if !l.is_empty() {
            out.push(l.to_owned());
        }
    }
    Ok(out)
}

/// The canonical chunk an append adds: lines split on `\n`, terminators stripped, empty lines
/// dropped, joined with `\n` and ending in one; `""` when nothing is left.
pub fn build_chunk(content: &str) -> String {
    let kept: Vec<&str> =
        content.split('\n').map(|l| l.trim_end_matches(['\r', '\n'])).filter(|l| !l.is_empty()).collect();
    if kept.is_empty() {
        return String::new();
    }
    let mut out = kept.join("\n");
    out.push('\n');
    out
}

/// Whether `path` is `directory` or under it, at segment boundaries (`seen` holds `seen/a`, not
/// `seen-old/a`); `""` holds everything.
pub fn path_in_directory(path: &str, directory: &str) -> bool {
    directory.is_empty() || path == directory || path.strip_prefix(directory).is_some_and(|rest| rest.starts_with('/'))
}

/// Orders paths by their segments, not their raw text.
pub fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_canonical_and_confined() {
        assert_eq!(normalize_path("//notes//a.md").unwrap(), "notes/a.md");
        for bad in ["", "/", "a/", "../etc/passwd", "a/./b", "a\\b", "a\u{7}b", &"x/".repeat(17)] {
            assert!(matches!(normalize_path(bad), Err(FsError::InvalidPath(_))), "{bad:?} accepted");
        }
        assert!(normalize_path(&"a".repeat(513)).is_err());
        assert_eq!(normalize_directory(".").unwrap(), "");
    }

    #[test]
    fn namespaces_fold_case_and_encode_and_values_keep_case() {
        assert_eq!(normalize_namespace("BANK").unwrap(), "bank");
        assert_eq!(normalize_namespace("Radar/{user_id}").unwrap(), "radar/{user_id}");
        assert_eq!(normalize_namespace("a b").unwrap(), "a%20b");
        assert!(normalize_namespace("{user_id}{team_id}").is_err());
        assert!(normalize_namespace("{nope}").is_err());
        assert_eq!(template_value("user_id", "Alice Smith").unwrap(), "%41lice%20%53mith");
        assert_eq!(template_value("agent_id", "notes-agent").unwrap(), "notes-agent");
        assert!(template_value("user_id", "a/b").is_err());
        assert!(template_value("user_id", "..").is_err());
    }

    #[test]
    fn chunks_and_directories() {
        assert_eq!(build_chunk("a\r\n\nb"), "a\nb\n");
        assert_eq!(build_chunk("\n\n"), "");
        assert!(path_in_directory("seen/a", "seen"));
        assert!(!path_in_directory("seen-old/a", "seen"));
        assert_eq!(path_order("a/b", "a-b"), std::cmp::Ordering::Less);
    }
}
