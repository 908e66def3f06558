//! Split: a List's JSON text, received in chunks, cut into the text of each of its items and
//! of its metadata, so that each is parsed on its own (`serde_json::from_slice`) as soon as
//! it is complete.
//!
//! In: the answer's bytes, chunk by chunk ([`Splitter::push`]). Out: the byte ranges of the
//! items of the top-level `items` array and of the top-level `metadata` object
//! ([`Splitter::next_piece`]), or the error of a text that is not a list. It reads only the
//! structure (strings, their escapes, the nesting of objects and arrays, the top-level keys);
//! what a piece holds is left to `serde_json`. The scan keeps its state between chunks, so
//! every byte is looked at once, and the bytes before the piece being gathered are dropped as
//! chunks come: what it holds is about one item, whatever the page's size. `serde_json`
//! parses only a whole text from a slice, or from a blocking reader, which is slower and
//! needs a thread of its own; a page parsed that way from the answer's body cost a no-op
//! `fief apply` and the agent more memory and CPU than this split (the performance page), and
//! a page held whole is the memory a walk is to avoid.

use std::ops::Range;

/// One piece of the list, as a range of [`Splitter::text`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece {
    /// One element of `items`.
    Item(Range<usize>),
    /// The list's `metadata` object.
    Meta(Range<usize>),
}

/// A top-level key the splitter acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Items,
    Metadata,
    Other,
}

impl Key {
    fn of(text: &[u8]) -> Key {
        match text {
            b"items" => Key::Items,
            b"metadata" => Key::Metadata,
            _ => Key::Other,
        }
    }
}

/// The splitter's scan (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Splitter {
    buf: Vec<u8>,
    /// The next byte to look at.
    at: usize,
    depth: usize,
    string: bool,
    escaped: bool,
    /// Where the string being read at the top level starts (past its quote).
    key_start: usize,
    /// The top-level string read last, once it was followed by `:` (a key).
    key: Option<Key>,
    last: Option<Key>,
    /// Inside the top-level `items` array.
    items: bool,
    /// Where the piece being gathered starts.
    start: Option<usize>,
    /// The top-level object was closed.
    ended: bool,
}

impl Splitter {
    /// Take the next chunk, dropping what no piece needs any more.
    pub(super) fn push(&mut self, chunk: &[u8]) {
        let mut keep = self.start.unwrap_or(self.at);
        if self.string && self.depth == 1 {
            keep = keep.min(self.key_start);
        }
        if keep > 0 {
            self.buf.drain(..keep);
            self.at -= keep;
            self.start = self.start.map(|s| s - keep);
            self.key_start = self.key_start.saturating_sub(keep);
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The text the pieces' ranges index, until the next [`Splitter::push`].
    pub(super) fn text(&self) -> &[u8] {
        &self.buf
    }

    /// Whether the top-level object was read to its end.
    pub(super) fn ended(&self) -> bool {
        self.ended
    }

    /// The next piece complete in what was pushed so far (`None`: more is needed), or why
    /// the text is not a list.
    pub(super) fn next_piece(&mut self) -> Result<Option<Piece>, &'static str> {
        while self.at < self.buf.len() {
            let (i, b) = (self.at, self.buf[self.at]);
            self.at += 1;
            if self.string {
                self.in_string(i, b);
                continue;
            }
            if b.is_ascii_whitespace() {
                continue;
            }
            if self.depth == 0 && (b != b'{' || self.ended) {
                return Err("the answer is not a JSON object");
            }
            if self.depth == 1 {
                self.value_starts(i, b)?;
            }
            match b {
                b'"' => {
                    self.string = true;
                    self.key_start = i + 1;
                }
                b':' if self.depth == 1 => self.key = self.last,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.items && self.depth == 3 && b == b'{' {
                        self.start = Some(i);
                    }
                }
                b'}' | b']' => {
                    if let Some(piece) = self.closes() {
                        return Ok(Some(piece));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// A byte inside a string.
    fn in_string(&mut self, i: usize, b: u8) {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.string = false;
            if self.depth == 1 {
                self.last = Some(Key::of(&self.buf[self.key_start..i]));
            }
        }
    }

    /// The first byte of a top-level key's value: where `items` and `metadata` begin.
    fn value_starts(&mut self, i: usize, b: u8) -> Result<(), &'static str> {
        match (self.key.take(), b) {
            (Some(Key::Items), b'[') => self.items = true,
            (Some(Key::Items), b'n') => {}
            (Some(Key::Items), _) => return Err("its `items` is not an array"),
            (Some(Key::Metadata), b'{') => self.start = Some(i),
            _ => {}
        }
        Ok(())
    }

    /// A `}` or `]` at the byte before [`Splitter::at`]: the piece it completes, if any.
    fn closes(&mut self) -> Option<Piece> {
        self.depth = self.depth.saturating_sub(1);
        match self.depth {
            2 if self.items => self.start.take().map(|s| Piece::Item(s..self.at)),
            1 if self.items => {
                self.items = false;
                None
            }
            1 => self.start.take().map(|s| Piece::Meta(s..self.at)),
            0 => {
                self.ended = true;
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of `text` pushed in chunks of `size`, as text, and whether it ended.
    fn pieces(text: &str, size: usize) -> Result<(Vec<String>, bool), &'static str> {
        let mut split = Splitter::default();
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(size) {
            split.push(chunk);
            while let Some(piece) = split.next_piece()? {
                let (kind, range) = match piece {
                    Piece::Item(r) => ("item", r),
                    Piece::Meta(r) => ("meta", r),
                };
                let text = String::from_utf8_lossy(&split.text()[range]);
                out.push(format!("{kind} {text}"));
            }
        }
        Ok((out, split.ended()))
    }

    const LIST: &str = r#" {"kind":"List","metadata":{"continue":"a]}\"b"},
        "items":[{"metadata":{"name":"x"},"data":{"k":"{\"items\":[1]}"}}, {"a":[{}]} ],
        "items2":{"metadata":{}}} "#;

    #[test]
    fn a_list_in_any_chunks_gives_its_metadata_and_each_item_whole() {
        let want = vec![
            r#"meta {"continue":"a]}\"b"}"#.to_string(),
            r#"item {"metadata":{"name":"x"},"data":{"k":"{\"items\":[1]}"}}"#.to_string(),
            r#"item {"a":[{}]}"#.to_string(),
        ];
        for size in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(
                pieces(LIST, size),
                Ok((want.clone(), true)),
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn a_list_cut_short_has_not_ended() {
        let cut = &LIST[..LIST.find("{\"a\"").unwrap() + 3];
        let (got, ended) = pieces(cut, 5).unwrap();
        assert_eq!(got.len(), 2);
        assert!(!ended);
    }

    #[test]
    fn null_items_are_no_items_and_a_text_that_is_no_list_is_refused() {
        assert_eq!(
            pieces(r#"{"items":null,"metadata":{}}"#, 3),
            Ok((vec!["meta {}".to_string()], true))
        );
        assert!(pieces(r#"{"items":3}"#, 3).is_err());
        assert!(pieces(r#"[{"items":[]}]"#, 3).is_err());
        assert!(pieces(r#"{} {}"#, 3).is_err());
    }

    #[test]
    fn what_was_split_is_dropped_as_chunks_come() {
        let mut split = Splitter::default();
        let item = format!(r#"{{"data":"{}"}},"#, "x".repeat(1000));
        split.push(br#"{"items":["#);
        for _ in 0..100 {
            split.push(item.as_bytes());
            while split.next_piece().unwrap().is_some() {}
        }
        assert!(
            split.text().len() < 2 * item.len(),
            "{}",
            split.text().len()
        );
    }
}
