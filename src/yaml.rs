//! YAML in and out, bounded: the only module that calls the YAML crate (serde-saphyr).
//!
//! In: text of a file or of a rendered template. Out: documents with the line each starts
//! on, typed values or `serde_json::Value`s, and parse errors with absolute line numbers.
//! Alias expansion, nesting and size are bounded so no input can exhaust the process.

use serde::de::DeserializeOwned;
use serde_saphyr::{Budget, DuplicateKeyPolicy, Options, options::AliasLimits};

/// One YAML document of a multi-document stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document<'a> {
    /// The document's text, without the `---` separator line.
    pub text: &'a str,
    /// 1-based line of the stream where `text` starts.
    pub first_line: usize,
}

/// A YAML parse error with its absolute line in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// The parser's message, without a snippet.
    pub message: String,
    /// 1-based line in the whole stream, when the parser knows it.
    pub line: Option<usize>,
}

/// Split a multi-document stream on `---` lines (as kubectl does), keeping line numbers.
pub fn split_documents(text: &str) -> Vec<Document<'_>> {
    let mut docs = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut offset = 0usize;
    let mut line_no = 1usize;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end();
        let is_separator = trimmed == "---" || trimmed.starts_with("--- ");
        let is_end = trimmed == "...";
        if is_separator || is_end {
            docs.push(Document {
                text: &text[start..offset],
                first_line: start_line,
            });
            start = offset + line.len();
            start_line = line_no + 1;
        }
        offset += line.len();
        line_no += 1;
    }
    docs.push(Document {
        text: &text[start..],
        first_line: start_line,
    });
    docs.retain(|d| !is_blank(d.text));
    docs
}

/// Whether a document holds nothing but whitespace and comments.
pub fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_depth = 64;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    budget.max_documents = 1;
    budget.max_nodes = 500_000;
    budget.max_total_scalar_bytes = 16 * 1024 * 1024;
    let mut alias_limits = AliasLimits::default();
    alias_limits.max_total_replayed_events = 100_000;
    alias_limits.max_replay_stack_depth = 16;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.alias_limits = alias_limits;
    options.duplicate_keys = DuplicateKeyPolicy::Error;
    options.with_snippet = false;
    options
}

/// Parse one document into `T`, reporting errors at absolute lines.
pub fn parse<T: DeserializeOwned>(doc: &Document<'_>) -> Result<Option<T>, YamlError> {
    if is_blank(doc.text) {
        return Ok(None);
    }
    match serde_saphyr::from_str_with_options::<T>(doc.text, options()) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            let line = e
                .location()
                .map(|l| l.line() as usize)
                .filter(|l| *l > 0)
                .map(|l| l + doc.first_line - 1);
            let message = e.without_snippet().to_string();
            let message = strip_location(&message);
            Err(YamlError {
                message,
                line: line.or(Some(doc.first_line)),
            })
        }
    }
}

/// Parse a whole file that must hold exactly one document.
pub fn parse_single<T: DeserializeOwned>(text: &str) -> Result<Option<T>, YamlError> {
    let docs = split_documents(text);
    match docs.as_slice() {
        [] => Ok(None),
        [doc] => parse(doc),
        [_, second, ..] => Err(YamlError {
            message: "this file must hold one YAML document, found more".to_string(),
            line: Some(second.first_line),
        }),
    }
}

/// Drop the parser's own " at line X column Y" suffix: we print the absolute line ourselves.
fn strip_location(message: &str) -> String {
    let first = message.lines().next().unwrap_or(message);
    match first.find(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    }
}

/// Serialize a value as one YAML document (no leading `---`, trailing newline).
pub fn to_string<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_saphyr::to_string(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn split_keeps_line_numbers_and_drops_empty_documents() {
        let text = "a: 1\n---\n# only a comment\n---\n\nb: 2\n--- \nc: 3\n";
        let docs = split_documents(text);
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0].first_line, 1);
        assert_eq!(docs[1].first_line, 5);
        assert_eq!(docs[2].first_line, 8);
    }

    #[test]
    fn parse_error_reports_absolute_line() {
        let text = "a: 1\n---\nb: 2\nc: [unclosed\n";
        let docs = split_documents(text);
        let err = parse::<Value>(&docs[1]).unwrap_err();
        assert!(err.line.unwrap() >= 3, "{err:?}");
    }

    #[test]
    fn alias_bomb_is_refused_quickly() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let start = std::time::Instant::now();
        let docs = split_documents(&text);
        assert!(parse::<Value>(&docs[0]).is_err());
        assert!(start.elapsed().as_secs() < 5);
    }

    #[test]
    fn duplicate_keys_are_an_error() {
        let docs = split_documents("a: 1\na: 2\n");
        assert!(parse::<Value>(&docs[0]).is_err());
    }
}
