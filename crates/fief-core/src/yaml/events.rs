//! One YAML document to a `serde_json::Value`, straight from the parser's events.
//!
//! In: a [`Document`]. Out: its value, or a [`YamlError`] at an absolute line. Depth, node
//! count (aliases included) and anchors are bounded; duplicate keys are errors; plain `<<`
//! merge keys are honoured; scalars resolve as kubectl reads them.

use std::collections::HashMap;

use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{self, Event, ScalarStyle};

use super::scalar::resolve_scalar;
use super::{Document, MAX_DEPTH, MAX_NODES, YamlError, is_blank};

/// The document's value through the full event parser (`None` when it holds no node).
pub(super) fn parse(doc: &Document<'_>) -> Result<Option<Value>, YamlError> {
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

/// A collection being read: its items so far and its anchor.
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

/// The value under construction from the parser's events, with the bounds' counters.
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
    /// Take one parser event.
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

    /// Refuse a document past the node bound.
    fn check_nodes(&self) -> Result<(), String> {
        if self.nodes > MAX_NODES {
            Err(format!(
                "document has more than {MAX_NODES} nodes (alias expansion included)"
            ))
        } else {
            Ok(())
        }
    }

    /// Start a collection.
    fn open(&mut self, frame: Frame) -> Result<(), String> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.nodes += 1;
        self.check_nodes()?;
        self.stack.push(frame);
        Ok(())
    }

    /// Put a finished value where it belongs: root, list item, key or value.
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

/// The nodes of a value (an alias adds all of them again).
fn count_nodes(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

/// A scalar mapping key as text.
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
