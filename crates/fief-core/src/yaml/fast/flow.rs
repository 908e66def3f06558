//! Single-line flow collections (`{a: 1}`, `["x", "y"]`, JSON-like `{"a":1}`) for the fast
//! reader of [`super`].
//!
//! In: the rest of a block line that starts with `[` or `{`. Out: the collection's value, or
//! `None` for anything outside the subset (then the whole document goes to the full parser).

use serde_json::map::Entry;
use serde_json::{Map, Value};
use serde_saphyr::granit_parser::ScalarStyle;

use super::{MAX_KEY_LEN, Reader, bad_plain_start, quoted, resolve_scalar};

/// A single-line flow collection being read.
pub(super) struct Flow<'a> {
    pub(super) s: &'a [u8],
    pub(super) text: &'a str,
    pub(super) i: usize,
}

fn is_flow_indicator(b: u8) -> bool {
    matches!(b, b',' | b'[' | b']' | b'{' | b'}')
}

impl Flow<'_> {
    fn skip_spaces(&mut self) {
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    pub(super) fn node(&mut self, r: &mut Reader<'_>) -> Option<Value> {
        match self.peek()? {
            b'[' => self.sequence(r),
            b'{' => self.mapping(r),
            b'\'' | b'"' => {
                let (text, after) = quoted(&self.text[self.i..])?;
                self.i = self.text.len() - after.len();
                r.count(1)?;
                Some(Value::String(text.into_owned()))
            }
            _ => {
                let text = self.plain(false)?;
                r.count(1)?;
                let value = resolve_scalar(text, ScalarStyle::Plain, None);
                r.plain_scalar(text, &value);
                Some(value)
            }
        }
    }

    /// A plain scalar in flow context; `key` when it must end on `: `.
    fn plain(&mut self, key: bool) -> Option<&str> {
        let start = self.i;
        let rest = &self.text[start..];
        if bad_plain_start(rest, true) {
            return None;
        }
        let mut j = start;
        while j < self.s.len() {
            let b = self.s[j];
            if is_flow_indicator(b) {
                break;
            }
            if b == b':'
                && self
                    .s
                    .get(j + 1)
                    .is_none_or(|&n| n == b' ' || is_flow_indicator(n))
            {
                break;
            }
            if b == b'#' && self.s[j - 1] == b' ' {
                return None;
            }
            j += 1;
        }
        let stop = self.s.get(j).copied();
        let ok = match stop {
            Some(b':') => key,
            Some(b',' | b']' | b'}') => !key,
            _ => false,
        };
        let text = self.text[start..j].trim_end_matches(' ');
        if !ok || text.is_empty() || (key && (text == "<<" || text.len() > MAX_KEY_LEN)) {
            return None;
        }
        self.i = j;
        Some(text)
    }

    fn sequence(&mut self, r: &mut Reader<'_>) -> Option<Value> {
        r.open()?;
        self.i += 1;
        self.skip_spaces();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.i += 1;
        } else {
            loop {
                items.push(self.node(r)?);
                self.skip_spaces();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.skip_spaces();
                        if self.peek() == Some(b']') {
                            return None;
                        }
                    }
                    b']' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        r.depth -= 1;
        Some(Value::Array(items))
    }

    fn mapping(&mut self, r: &mut Reader<'_>) -> Option<Value> {
        r.open()?;
        self.i += 1;
        self.skip_spaces();
        let mut map = Map::new();
        if self.peek() == Some(b'}') {
            self.i += 1;
        } else {
            loop {
                let key = match self.peek()? {
                    b'\'' | b'"' => {
                        let (text, after) = quoted(&self.text[self.i..])?;
                        self.i = self.text.len() - after.len();
                        self.skip_spaces();
                        // A JSON-like key: its value may follow the `:` directly.
                        if self.peek() != Some(b':') {
                            return None;
                        }
                        self.i += 1;
                        text.into_owned()
                    }
                    _ => {
                        let text = self.plain(true)?.to_string();
                        r.plain_key(&text);
                        if self.s.get(self.i + 1) != Some(&b' ') {
                            return None;
                        }
                        self.i += 2;
                        text
                    }
                };
                self.skip_spaces();
                r.count(1)?;
                let value = self.node(r)?;
                match map.entry(key) {
                    Entry::Vacant(slot) => {
                        slot.insert(value);
                    }
                    Entry::Occupied(_) => return None,
                }
                self.skip_spaces();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.skip_spaces();
                        if self.peek() == Some(b'}') {
                            return None;
                        }
                    }
                    b'}' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        r.depth -= 1;
        Some(Value::Object(map))
    }
}
