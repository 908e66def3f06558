//! The fast path of [`super::parse_value`]: a narrow reader for the plain block YAML that
//! templates produce, about ten times cheaper than the full event parser.
//!
//! In: one document's text. Out: `Some(value)` when the document stays inside the narrow
//! subset below, or `None` ("not mine"), in which case the caller parses it with the full
//! serde-saphyr event parser, which also produces every error. The fast path never reports an
//! error of its own, so its only duty is identity: whenever it answers, the answer is the one
//! the full parser would give (proven by the differential tests at the end of this file).
//!
//! The subset: printable ASCII and newlines only (no tab, CR, BOM or other characters);
//! block mappings and block sequences (including compact `- key: value` entries and sequences
//! at their parent key's indentation); single-line plain, single-quoted and double-quoted
//! scalars (YAML escapes decoded); single-line flow collections (JSON-like `{"a":1}` too)
//! without trailing commas;
//! comments. Anything else is declined: anchors, aliases, tags, `<<` merge keys, block
//! scalars (`|`, `>`), multi-line scalars or flow collections, explicit `?` keys, directives,
//! document markers, duplicate keys, keys over 1,000 characters, deep nesting or more than
//! [`super::MAX_NODES`] nodes. Scalars resolve through the same [`super::scalar::resolve_scalar`].

use std::borrow::Cow;

use serde_json::map::Entry;
use serde_json::{Map, Value};
use serde_saphyr::granit_parser::ScalarStyle;

use super::scalar::resolve_scalar;

mod canonical;
mod flow;
#[cfg(test)]
mod tests;

use flow::Flow;

/// Nesting the fast path handles; deeper documents go to the full parser (limit 64).
const MAX_FAST_DEPTH: usize = 40;
/// Longest mapping key the fast path handles (YAML limits implicit keys to 1,024 characters).
const MAX_KEY_LEN: usize = 1_000;

/// Parse `text` if it lies inside the fast subset; `None` means "use the full parser".
pub(crate) fn parse(text: &str) -> Option<Value> {
    read(text, false)
}

/// [`parse`], and `None` too unless every plain scalar and key is one that every YAML reader
/// (kubectl's rules, serde-saphyr's typed and untyped reads) takes the same way: see
/// [`canonical`]. For typed files read through `serde_json` (`super::parse_single_typed`).
pub(crate) fn parse_canonical(text: &str) -> Option<Value> {
    read(text, true)
}

fn read(text: &str, check: bool) -> Option<Value> {
    // Printable ASCII and newlines only (a branch-free fold the compiler vectorizes).
    let refused = text.bytes().fold(false, |refused, b| {
        refused | ((b != b'\n') & !(0x20..0x7f).contains(&b))
    });
    if refused {
        return None;
    }
    let mut lines = Vec::with_capacity(text.len() / 16);
    for line in text.split('\n') {
        let indent = line.bytes().take_while(|b| *b == b' ').count();
        let rest = line[indent..].trim_end_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            continue;
        }
        if indent == 0
            && (rest.starts_with("---") || rest.starts_with("...") || rest.starts_with('%'))
        {
            return None;
        }
        lines.push(Line { indent, text: rest });
    }
    let first = lines.first()?.indent;
    let mut reader = Reader {
        lines,
        pos: 0,
        nodes: 0,
        depth: 0,
        check,
        canonical: true,
    };
    let root = reader.block_node(first)?;
    (reader.pos == reader.lines.len() && reader.canonical).then_some(root)
}

/// One content line: its indentation and its text without the indentation or trailing spaces.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
    nodes: usize,
    depth: usize,
    /// Whether to check that scalars are canonical ([`parse_canonical`]).
    check: bool,
    /// No scalar or key seen so far is outside [`canonical`]'s rules.
    canonical: bool,
}

fn is_seq_entry(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// Nothing but spaces and an optional comment (led by a space) after a quoted scalar or a flow
/// collection.
fn only_comment(after: &str) -> bool {
    let rest = after.trim_start_matches(' ');
    rest.is_empty() || (rest.starts_with('#') && after.starts_with(' '))
}

/// A plain scalar may not start with these (or with `-`, `?`, `:` followed by a space).
fn bad_plain_start(s: &str, flow: bool) -> bool {
    let b = s.as_bytes();
    match b.first() {
        None => true,
        Some(b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>')
        | Some(b'\'' | b'"' | b'%' | b'@' | b'`') => true,
        Some(b'-' | b'?' | b':') => match b.get(1) {
            None | Some(b' ') => true,
            Some(b',' | b'[' | b']' | b'{' | b'}') => flow,
            _ => false,
        },
        _ => false,
    }
}

/// `'text'` at the start of `s` (which starts with `'`): the text and what follows.
fn single_quoted(s: &str) -> Option<(Cow<'_, str>, &str)> {
    let body = &s[1..];
    let end = body.find('\'')?;
    if !body[end + 1..].starts_with('\'') {
        // No `''` escape: the text is a slice of the line.
        return Some((Cow::Borrowed(&body[..end]), &body[end + 1..]));
    }
    let mut out = String::new();
    let mut rest = body;
    loop {
        let end = rest.find('\'')?;
        out.push_str(&rest[..end]);
        if rest[end + 1..].starts_with('\'') {
            out.push('\'');
            rest = &rest[end + 2..];
        } else {
            return Some((Cow::Owned(out), &rest[end + 1..]));
        }
    }
}

/// `"text"` at the start of `s` (which starts with `"`), escapes decoded.
fn double_quoted(s: &str) -> Option<(Cow<'_, str>, &str)> {
    let body = &s[1..];
    match body.bytes().position(|b| b == b'"' || b == b'\\') {
        // No escape before the closing quote: the text is a slice of the line.
        Some(end) if body.as_bytes()[end] == b'"' => {
            return Some((Cow::Borrowed(&body[..end]), &body[end + 1..]));
        }
        Some(_) => {}
        None => return None,
    }
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((Cow::Owned(out), &s[i + 2..])),
            '\\' => {
                let (_, e) = chars.next()?;
                let hex = |n: usize, chars: &mut std::str::CharIndices<'_>| {
                    let digits: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                    if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return None;
                    }
                    char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
                };
                out.push(match e {
                    '0' => '\0',
                    'a' => '\x07',
                    'b' => '\x08',
                    't' => '\t',
                    'n' => '\n',
                    'v' => '\x0b',
                    'f' => '\x0c',
                    'r' => '\r',
                    'e' => '\x1b',
                    ' ' | '"' | '/' | '\\' => e,
                    'N' => '\u{85}',
                    '_' => '\u{a0}',
                    'L' => '\u{2028}',
                    'P' => '\u{2029}',
                    'x' => hex(2, &mut chars)?,
                    'u' => hex(4, &mut chars)?,
                    'U' => hex(8, &mut chars)?,
                    _ => return None,
                });
            }
            c => out.push(c),
        }
    }
    None
}

fn quoted(s: &str) -> Option<(Cow<'_, str>, &str)> {
    if s.starts_with('\'') {
        single_quoted(s)
    } else {
        double_quoted(s)
    }
}

/// A block mapping entry `key: rest` (or `key:`): the key and the text after `: `.
fn split_key(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let (key, after) = if text.starts_with(['\'', '"']) {
        let (key, after) = quoted(text)?;
        (key, after.trim_start_matches(' '))
    } else {
        if bad_plain_start(text, false) {
            return None;
        }
        let b = text.as_bytes();
        let colon =
            (0..b.len()).find(|&i| b[i] == b':' && matches!(b.get(i + 1), None | Some(b' ')))?;
        let key = text[..colon].trim_end_matches(' ');
        if key == "<<"
            || key
                .bytes()
                .any(|b| matches!(b, b'#' | b'[' | b']' | b'{' | b'}' | b','))
        {
            return None;
        }
        (Cow::Borrowed(key), &text[colon..])
    };
    let rest = after.strip_prefix(':')?;
    if !(rest.is_empty() || rest.starts_with(' ')) || key.len() > MAX_KEY_LEN {
        return None;
    }
    Some((key, rest.trim_start_matches(' ')))
}

impl<'a> Reader<'a> {
    fn count(&mut self, n: usize) -> Option<()> {
        self.nodes += n;
        (self.nodes <= super::MAX_NODES).then_some(())
    }

    fn open(&mut self) -> Option<()> {
        self.depth += 1;
        self.count(2)?;
        (self.depth <= MAX_FAST_DEPTH).then_some(())
    }

    fn next_indent(&self) -> Option<usize> {
        self.lines.get(self.pos).map(|l| l.indent)
    }

    /// The block node whose first line is the current one, at `indent`.
    fn block_node(&mut self, indent: usize) -> Option<Value> {
        let line = *self.lines.get(self.pos)?;
        debug_assert_eq!(line.indent, indent);
        if is_seq_entry(line.text) {
            self.sequence(indent)
        } else {
            // Not a `key:` line: `mapping` declines on it.
            self.mapping(indent)
        }
    }

    /// The value of a mapping key or sequence entry with nothing after it on its line.
    fn empty_value(&mut self, indent: usize, in_mapping: bool) -> Option<Value> {
        match self.lines.get(self.pos) {
            Some(l) if l.indent > indent => self.block_node(l.indent),
            Some(l) if in_mapping && l.indent == indent && is_seq_entry(l.text) => {
                self.sequence(indent)
            }
            _ => {
                self.count(1)?;
                // Typed reads differ on what an empty value means for a field.
                self.canonical &= !self.check;
                Some(Value::Null)
            }
        }
    }

    /// Note a plain scalar that typed reads could take differently.
    fn plain_scalar(&mut self, text: &str, value: &Value) {
        if self.check && !canonical::plain(text, value) {
            self.canonical = false;
        }
    }

    /// Note a plain key that typed reads could take differently.
    fn plain_key(&mut self, key: &str) {
        if self.check && !canonical::key(key) {
            self.canonical = false;
        }
    }

    fn mapping(&mut self, indent: usize) -> Option<Value> {
        self.open()?;
        let mut map = Map::new();
        while let Some(line) = self.lines.get(self.pos).copied() {
            if line.indent != indent {
                break;
            }
            if is_seq_entry(line.text) {
                return None;
            }
            let (key, rest) = split_key(line.text)?;
            if !line.text.starts_with(['\'', '"']) {
                self.plain_key(&key);
            }
            self.count(1)?;
            self.pos += 1;
            let value = if rest.is_empty() || rest.starts_with('#') {
                self.empty_value(indent, true)?
            } else {
                let value = self.inline(rest)?;
                if self.next_indent().is_some_and(|i| i > indent) {
                    return None;
                }
                value
            };
            match map.entry(key.into_owned()) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(_) => return None,
            }
        }
        if self.next_indent().is_some_and(|i| i > indent) {
            return None;
        }
        self.depth -= 1;
        Some(Value::Object(map))
    }

    fn sequence(&mut self, indent: usize) -> Option<Value> {
        self.open()?;
        let mut items = Vec::new();
        while let Some(line) = self.lines.get(self.pos).copied() {
            if line.indent != indent || !is_seq_entry(line.text) {
                break;
            }
            let after_dash = &line.text[1..];
            let rest = after_dash.trim_start_matches(' ');
            let column = indent + 1 + (after_dash.len() - rest.len());
            let value = if rest.is_empty() || rest.starts_with('#') {
                self.pos += 1;
                self.empty_value(indent, false)?
            } else if is_seq_entry(rest) || split_key(rest).is_some() {
                // A compact nested node: the rest of the line is its first line.
                self.lines[self.pos] = Line {
                    indent: column,
                    text: rest,
                };
                self.block_node(column)?
            } else {
                self.pos += 1;
                let value = self.inline(rest)?;
                if self.next_indent().is_some_and(|i| i > indent) {
                    return None;
                }
                value
            };
            items.push(value);
        }
        if self.next_indent().is_some_and(|i| i > indent) {
            return None;
        }
        self.depth -= 1;
        Some(Value::Array(items))
    }

    /// A scalar or flow collection that fills the rest of a block line.
    fn inline(&mut self, rest: &str) -> Option<Value> {
        match rest.as_bytes().first()? {
            b'\'' | b'"' => {
                let (text, after) = quoted(rest)?;
                self.count(1)?;
                only_comment(after).then(|| Value::String(text.into_owned()))
            }
            b'[' | b'{' => {
                let mut flow = Flow {
                    s: rest.as_bytes(),
                    text: rest,
                    i: 0,
                };
                let value = flow.node(self)?;
                only_comment(&rest[flow.i..]).then_some(value)
            }
            _ => {
                if bad_plain_start(rest, false) {
                    return None;
                }
                let b = rest.as_bytes();
                // One scan: a ` #` comment ends the scalar; a `: ` before it is not ours.
                let mut end = b.len();
                let mut colon_space = false;
                for i in 1..b.len() {
                    if b[i] == b'#' && b[i - 1] == b' ' {
                        end = i - 1;
                        break;
                    }
                    colon_space |= b[i] == b' ' && b[i - 1] == b':';
                }
                let text = rest[..end].trim_end_matches(' ');
                if colon_space || text.ends_with(':') {
                    return None;
                }
                self.count(1)?;
                let value = resolve_scalar(text, ScalarStyle::Plain, None);
                self.plain_scalar(text, &value);
                Some(value)
            }
        }
    }
}
