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

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{self, Event, ScalarStyle};

mod emit;
mod fast;
mod scalar;
#[cfg(test)]
mod typed_tests;
#[cfg(test)]
pub(crate) use fast::parse as fast_parse;
use scalar::resolve_scalar;
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
///
/// Text after `--- ` on the separator line belongs to the next document (which then starts on
/// that line): a comment is ignored as usual, content is parsed (or refused with its line),
/// never dropped.
pub fn split_documents(text: &str) -> Vec<Document<'_>> {
    let mut docs = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut offset = 0usize;
    for (line_no, line) in (1usize..).zip(text.split_inclusive('\n')) {
        // Only a line led by `---` or `...` can be a marker.
        if !(line.starts_with("---") || line.starts_with("...")) {
            offset += line.len();
            continue;
        }
        let trimmed = line.trim_end();
        let is_separator =
            trimmed == "---" || trimmed.starts_with("--- ") || trimmed.starts_with("---\t");
        let is_end = trimmed == "...";
        if is_separator || is_end {
            docs.push(Document {
                text: &text[start..offset],
                first_line: start_line,
            });
            let rest = &trimmed[3..];
            if is_separator && !is_blank(rest) {
                start = offset + 3;
                start_line = line_no;
            } else {
                start = offset + line.len();
                start_line = line_no + 1;
            }
        }
        offset += line.len();
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
    let mut b = ValueBuilder::default();
    for item in granit_parser::Parser::new_from_str(doc.text) {
        let (event, span) = item.map_err(|e| YamlError {
            message: on_separator_line_hint(doc, e.info()),
            line: Some(doc.first_line + e.marker().line().max(1) - 1),
        })?;
        let line = doc.first_line + span.start.line().max(1) - 1;
        b.event(event).map_err(|message| YamlError {
            message,
            line: Some(line),
        })?;
    }
    Ok(b.root)
}

/// A parse error of a document that starts on its `---` line says so, since a block mapping
/// cannot start there.
fn on_separator_line_hint(doc: &Document<'_>, message: String) -> String {
    let first = doc.text.lines().next().unwrap_or("");
    if first.starts_with([' ', '\t']) && !is_blank(first) {
        format!("{message} (the document starts on its `---` line: move it to the next line)")
    } else {
        message
    }
}

enum Frame {
    Seq(Vec<Value>, usize),
    /// Explicit entries, pending key, `<<`-merged entries (explicit keys win), anchor.
    Map(Map<String, Value>, Option<Key>, Map<String, Value>, usize),
}

/// A mapping key read, waiting for its value.
enum Key {
    /// A plain `<<`: the value is merged.
    Merge,
    /// Any other key, quoted `"<<"` included.
    Name(String),
}

#[derive(Default)]
struct ValueBuilder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Value>,
    nodes: usize,
    documents: usize,
    root: Option<Value>,
    /// The scalar being pushed is a plain `<<` in key position.
    merge_key: bool,
}

impl ValueBuilder {
    fn event(&mut self, event: Event<'_>) -> Result<(), String> {
        match event {
            Event::DocumentStart(..) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err("expected one YAML document, found more".to_string());
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_key = matches!(self.stack.last(), Some(Frame::Map(_, None, _, _)));
                self.merge_key = is_key && style == ScalarStyle::Plain && text == "<<";
                let value = if is_key && style == ScalarStyle::Plain && text != "<<" {
                    // Keys as written: `y:` or `on:` stay `y` and `on` (kubectl would turn
                    // them into `true`), `0644:` stays `0644`.
                    Value::String(text.to_string())
                } else {
                    resolve_scalar(&text, style, tag.as_deref())
                };
                self.push(value, anchor)?;
                self.merge_key = false;
            }
            Event::SequenceStart(_, anchor, _) => self.open(Frame::Seq(Vec::new(), anchor))?,
            Event::MappingStart(_, anchor, _) => {
                self.open(Frame::Map(Map::new(), None, Map::new(), anchor))?
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, anchor) = match self.stack.pop() {
                    Some(Frame::Seq(items, anchor)) => (Value::Array(items), anchor),
                    Some(Frame::Map(mut map, _, merged, anchor)) => {
                        for (k, v) in merged {
                            map.entry(k).or_insert(v);
                        }
                        (Value::Object(map), anchor)
                    }
                    None => return Err("unbalanced collection end".to_string()),
                };
                self.push(value, anchor)?;
            }
            Event::Alias(id) => {
                let value = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| "alias to an unknown anchor".to_string())?;
                self.nodes += count_nodes(&value);
                self.check_nodes()?;
                self.push(value, 0)?;
            }
            Event::UnresolvedAlias(name) => return Err(format!("unknown anchor `{name}`")),
            _ => {}
        }
        Ok(())
    }

    fn check_nodes(&self) -> Result<(), String> {
        if self.nodes > MAX_NODES {
            Err(format!(
                "document has more than {MAX_NODES} nodes (alias expansion included)"
            ))
        } else {
            Ok(())
        }
    }

    fn open(&mut self, frame: Frame) -> Result<(), String> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.nodes += 1;
        self.check_nodes()?;
        self.stack.push(frame);
        Ok(())
    }

    fn push(&mut self, value: Value, anchor: usize) -> Result<(), String> {
        self.nodes += 1;
        self.check_nodes()?;
        if anchor != 0 {
            if self.anchors.len() >= 10_000 {
                return Err("too many anchors".to_string());
            }
            self.anchors.insert(anchor, value.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq(items, _)) => items.push(value),
            Some(Frame::Map(map, key, merged, _)) => match key.take() {
                None if self.merge_key => *key = Some(Key::Merge),
                None => *key = Some(Key::Name(key_text(value)?)),
                Some(Key::Merge) => merge_into(merged, value)?,
                Some(Key::Name(k)) => {
                    if map.contains_key(&k) {
                        return Err(format!("duplicate key `{k}`"));
                    }
                    map.insert(k, value);
                }
            },
        }
        Ok(())
    }
}

fn count_nodes(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

fn key_text(value: Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s),
        Value::Null => Ok("null".to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err("mapping keys must be scalars".to_string()),
    }
}

/// `<<: *base` (or a list of them): the first source of a key wins.
fn merge_into(map: &mut Map<String, Value>, value: Value) -> Result<(), String> {
    let sources = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    for source in sources {
        let Value::Object(source) = source else {
            return Err("`<<` merges only mappings".to_string());
        };
        for (k, v) in source {
            map.entry(k).or_insert(v);
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(text: &str) -> Result<Option<Value>, YamlError> {
        parse_value(&split_documents(text)[0])
    }

    #[test]
    fn a_document_on_its_separator_line_is_kept() {
        let text = "a: 1\n--- {b: 2}\n--- # note\nc: 3\n---   d: 4\n";
        let docs = split_documents(text);
        let values: Vec<Value> = docs
            .iter()
            .map(|d| parse_value(d).unwrap().unwrap())
            .collect();
        assert_eq!(
            values,
            [
                json!({"a": 1}),
                json!({"b": 2}),
                json!({"c": 3}),
                json!({"d": 4})
            ]
        );
        assert_eq!(docs[1].first_line, 2);
        let docs = split_documents("a: 1\n--- apiVersion: v1\nkind: ConfigMap\n");
        assert_eq!(docs.len(), 2);
        let err = parse_value(&docs[1]).unwrap_err();
        assert!(err.message.contains("move it to the next line"), "{err:?}");
        assert!(matches!(err.line, Some(2 | 3)), "{err:?}");
    }

    #[test]
    fn parse_value_matches_the_serde_path_on_the_example_render() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {a: b}\ndata:\n  k: |\n    line1\n    line2\nlist:\n- 1\n- [2, 3]\n";
        let docs = split_documents(text);
        assert_eq!(
            parse_value(&docs[0]).unwrap(),
            parse::<Value>(&docs[0]).unwrap()
        );
    }

    #[test]
    fn parse_value_expands_aliases_and_merge_keys() {
        let v = value("base: &b {x: 1, y: 2}\nthing:\n  <<: *b\n  y: 3\n")
            .unwrap()
            .unwrap();
        assert_eq!(v["thing"], json!({"x": 1, "y": 3}));
    }

    #[test]
    fn parse_value_refuses_duplicates_depth_and_bombs() {
        let err = value("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert!(err.message.contains("duplicate key `a`"), "{err:?}");
        assert_eq!(err.line, Some(3));
        assert!(value(&format!("{}1{}", "[".repeat(100), "]".repeat(100))).is_err());
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let start = std::time::Instant::now();
        assert!(value(&bomb).unwrap_err().message.contains("nodes"));
        // Refused by the node bound; the limit is generous so a loaded machine cannot fail it.
        assert!(start.elapsed().as_secs() < 60);
    }

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
        // Refused by the node bound, not a clock: unbounded, 10^12 nodes would take hours, so a
        // generous limit keeps a loaded machine from failing this.
        assert!(start.elapsed().as_secs() < 60);
    }

    #[test]
    fn duplicate_keys_are_an_error() {
        let docs = split_documents("a: 1\na: 2\n");
        assert!(parse::<Value>(&docs[0]).is_err());
    }
}
