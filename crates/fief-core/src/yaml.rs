//! YAML in and out, bounded: the only module that calls the YAML crate (serde-saphyr).
//!
//! In: text of a file or of a rendered template. Out: documents with the line each starts
//! on, typed values or `serde_json::Value`s, and parse errors with absolute line numbers.
//! Alias expansion, nesting and size are bounded so no input can exhaust the process.
//!
//! Scalars are read as kubectl and Helm read them (YAML 1.1 via `sigs.k8s.io/yaml`), not by
//! the YAML 1.2 core schema: `0644` is octal (420), `yes`/`no`/`on`/`off`/`y`/`n` are
//! booleans, `1_000` is 1000. A document may start on its `---` line (`--- {a: 1}`,
//! `--- # note`); it is never dropped.
//!
//! Here: parsing documents and writing values; splitting a stream in `split`, the event
//! parser to `serde_json::Value` in `events`, the fast reader in `fast`, scalar resolution in
//! `scalar`, the emitter in `emit`.

use serde::de::DeserializeOwned;
use serde_json::Value;

mod emit;
mod events;
mod fast;
mod scalar;
mod split;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod typed_tests;
#[cfg(test)]
pub(crate) use fast::parse as fast_parse;
use serde_saphyr::{Budget, DuplicateKeyPolicy, Options, options::AliasLimits};
pub use split::{is_blank, split_documents};

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
    // As kubectl reads YAML (1.1): `0644` is octal. YAML 1.1 booleans are the default.
    options.legacy_octal_numbers = true;
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

/// [`parse_single`] for files read into types (tenant files, settings): a file of plain block
/// YAML whose plain scalars every YAML reader takes the same way is read by the fast reader
/// and `serde_json`, several times cheaper; anything else, and every error (unknown fields,
/// wrong types, with their lines), goes through serde-saphyr exactly as [`parse_single`].
pub fn parse_single_typed<T: DeserializeOwned>(text: &str) -> Result<Option<T>, YamlError> {
    if let [doc] = split_documents(text).as_slice()
        && let Some(value) = fast::parse_canonical(doc.text)
        && let Ok(typed) = serde_json::from_value::<T>(value)
    {
        return Ok(Some(typed));
    }
    parse_single(text)
}

/// Deepest nesting of a YAML value fief accepts.
pub const MAX_DEPTH: usize = 64;
/// Most nodes (including those copied by aliases) in one YAML document.
pub const MAX_NODES: usize = 200_000;

/// Parse one document into a `serde_json::Value` straight from the parser's events.
///
/// Faster than the serde path (the render hot path parses every rendered object) and just as
/// bounded: depth, node count and alias expansion are limited, duplicate keys are errors.
/// Scalars resolve as kubectl reads them (see the module docs); mapping keys are kept as
/// written; plain `<<` merge keys are honoured (a quoted `"<<"` is an ordinary key). Plain
/// block YAML, what templates produce, takes a narrow fast path (`fast.rs`) with identical
/// results; anything else, and every error, goes through the full event parser.
pub fn parse_value(doc: &Document<'_>) -> Result<Option<Value>, YamlError> {
    if is_blank(doc.text) {
        return Ok(None);
    }
    if let Some(value) = fast::parse(doc.text) {
        return Ok(Some(value));
    }
    parse_value_full(doc)
}

/// [`parse_value`] through the full event parser, without the fast path: the reference the
/// fast path is tested against (and measured against by `benches/render.rs`).
pub fn parse_value_full(doc: &Document<'_>) -> Result<Option<Value>, YamlError> {
    if is_blank(doc.text) {
        return Ok(None);
    }
    events::parse(doc)
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

/// Serialize an object tree as one block-YAML document (no leading `---`, trailing newline),
/// quoted so that kubectl, the API server and [`parse_value`] read back the same value; much
/// faster than [`to_string`]. See `emit.rs` for the quoting rules.
pub fn value_to_string(value: &Value) -> Result<String, String> {
    match emit::emit(value) {
        Some(text) => Ok(text),
        None => to_string(value),
    }
}

/// [`value_to_string`] appended to `out` (no copy of the document on its own).
pub fn write_value(out: &mut String, value: &Value) -> Result<(), String> {
    let start = out.len();
    if emit::emit_into(out, value).is_none() {
        out.truncate(start);
        out.push_str(&to_string(value)?);
    }
    Ok(())
}
