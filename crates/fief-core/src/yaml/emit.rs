//! A small block-YAML emitter for the object tree (`serde_json::Value`), for `fief render`.
//!
//! In: a JSON value (an object as rendered). Out: one YAML document (no `---`, trailing
//! newline) that kubectl, the API server and fief's own reader read back as the same value.
//! Pure.
//!
//! Strings are written plain only when no reader could take them for anything else: they
//! start with a letter or one of `/_$(<` (not `<<`), hold only printable ASCII, contain no `: `, ` #`,
//! flow indicators or trailing `:`, and resolve as strings under YAML 1.1 (`yes`, `on`, `y`,
//! `null`, `~` are quoted); anything starting with a digit, sign or dot (`0644`, `1e3`,
//! `.inf`, `2001-12-14`) is quoted. Multi-line strings of printable text are literal blocks
//! (`|`, `|-`, `|+`); everything else is double-quoted with escapes. Keys follow the same
//! rules (never as blocks). Mapping keys come in the value's own order (sorted, as
//! `serde_json::Map` keeps them), so output is deterministic.

use std::fmt::Write;

use serde_json::Value;

use super::scalar::resolve_scalar;
use serde_saphyr::granit_parser::ScalarStyle;

/// Longest key written as an implicit key (YAML allows 1024 characters); a value with a
/// longer key is left to serde-saphyr's general serializer.
const MAX_IMPLICIT_KEY: usize = 1000;

/// Emit `value` as one block-YAML document, or `None` when it holds a key too long for an
/// implicit key (the caller then uses the general serializer).
pub(super) fn emit(value: &Value) -> Option<String> {
    let mut out = String::with_capacity(1024);
    emit_into(&mut out, value)?;
    Some(out)
}

/// [`emit`] appended to `out`; on `None`, `out` may hold part of the document (the caller
/// truncates it).
pub(super) fn emit_into(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Object(map) if !map.is_empty() => mapping(out, map, 0)?,
        Value::Array(items) if !items.is_empty() => sequence(out, items, 0)?,
        other => {
            inline(out, other, 0);
            out.push('\n');
        }
    }
    Some(())
}

fn indent(out: &mut String, n: usize) {
    const SPACES: &str = "                                                                ";
    let mut n = n;
    while n > 0 {
        let step = n.min(SPACES.len());
        out.push_str(&SPACES[..step]);
        n -= step;
    }
}

/// A block mapping whose keys start at column `ind` (the first key at the cursor).
fn mapping(out: &mut String, map: &serde_json::Map<String, Value>, ind: usize) -> Option<()> {
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            indent(out, ind);
        }
        if k.len() > MAX_IMPLICIT_KEY {
            return None;
        }
        key(out, k);
        out.push(':');
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                indent(out, ind + 2);
                mapping(out, m, ind + 2)?;
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                indent(out, ind);
                sequence(out, items, ind)?;
            }
            other => {
                out.push(' ');
                inline(out, other, ind + 2);
                out.push('\n');
            }
        }
    }
    Some(())
}

/// A block sequence whose dashes are at column `ind` (the first at the cursor).
fn sequence(out: &mut String, items: &[Value], ind: usize) -> Option<()> {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            indent(out, ind);
        }
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => mapping(out, m, ind + 2)?,
            Value::Array(inner) if !inner.is_empty() => sequence(out, inner, ind + 2)?,
            other => {
                inline(out, other, ind + 2);
                out.push('\n');
            }
        }
    }
    Some(())
}

/// A scalar or empty collection on the current line; a literal block's lines at `block_ind`.
fn inline(out: &mut String, value: &Value, block_ind: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => string(out, s, block_ind),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

fn key(out: &mut String, k: &str) {
    if is_plain_safe(k) && !k.contains(':') {
        out.push_str(k);
    } else {
        double_quoted(out, k);
    }
}

fn string(out: &mut String, s: &str, block_ind: usize) {
    if is_plain_safe(s) {
        out.push_str(s);
    } else if is_literal_safe(s) {
        literal(out, s, block_ind);
    } else {
        double_quoted(out, s);
    }
}

/// Whether `s` may be written as a plain scalar and read back as this same string by
/// YAML 1.1 (kubectl) and YAML 1.2 readers alike.
fn is_plain_safe(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&first) = b.first() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || matches!(first, b'/' | b'_' | b'$' | b'(' | b'<'))
        || s.starts_with("<<")
    {
        return false;
    }
    if b[b.len() - 1] == b' ' || b[b.len() - 1] == b':' {
        return false;
    }
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => {}
            b'-' | b'_' | b'.' | b'/' | b'=' | b'+' | b'@' | b'%' | b'$' | b'(' | b')' | b'^'
            | b'~' | b'<' | b'>' | b';' | b'*' | b'&' | b'!' | b'?' | b'|' | b'\\' => {}
            b':' if b.get(i + 1) != Some(&b' ') => {}
            b' ' if b.get(i + 1) != Some(&b'#') => {}
            _ => return false,
        }
    }
    // Starting with a letter (numbers, dates and `.inf` are excluded above), a plain scalar
    // could only resolve as a YAML 1.1 boolean or null word, five letters at most.
    if first.is_ascii_alphabetic() && b.len() > 5 {
        return true;
    }
    if first.is_ascii_alphabetic() {
        // Letter-led and short: only the YAML 1.1 boolean and null words read as non-strings.
        return !is_yaml11_word(s);
    }
    matches!(resolve_scalar(s, ScalarStyle::Plain, None), Value::String(ref r) if r == s)
}

/// The YAML 1.1 booleans and nulls kubectl reads from plain scalars (see `scalar.rs`).
fn is_yaml11_word(s: &str) -> bool {
    matches!(
        s,
        "null"
            | "Null"
            | "NULL"
            | "true"
            | "True"
            | "TRUE"
            | "yes"
            | "Yes"
            | "YES"
            | "on"
            | "On"
            | "ON"
            | "y"
            | "Y"
            | "false"
            | "False"
            | "FALSE"
            | "no"
            | "No"
            | "NO"
            | "off"
            | "Off"
            | "OFF"
            | "n"
            | "N"
    )
}

/// Whether `s` reads back unchanged from a literal block: several lines of printable text
/// (no carriage returns or Unicode line separators), not starting with a space or a newline
/// (indentation is then detected from the first line).
fn is_literal_safe(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\n'])
        && s.chars()
            .all(|c| c == '\n' || (c != '\t' && !needs_escape(c)))
}

fn literal(out: &mut String, s: &str, ind: usize) {
    let body = s.trim_end_matches('\n');
    let trailing = s.len() - body.len();
    out.push_str(match trailing {
        0 => "|-",
        1 => "|",
        _ => "|+",
    });
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            indent(out, ind);
            out.push_str(line);
        }
    }
    for _ in 1..trailing {
        out.push('\n');
    }
}

/// Characters a double-quoted scalar must escape: non-printable ones, line breaks (which
/// would fold), the byte-order mark, and anything outside YAML's printable set.
fn needs_escape(c: char) -> bool {
    !matches!(c, ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let n = c as u32;
                if n <= 0xff {
                    let _ = write!(out, "\\x{n:02x}");
                } else if n <= 0xffff {
                    let _ = write!(out, "\\u{n:04x}");
                } else {
                    let _ = write!(out, "\\U{n:08x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::super::{parse, parse_value, split_documents};
    use super::*;
    use serde_json::json;

    /// Strings that a careless emitter would let a YAML 1.1 or 1.2 reader take for another
    /// type or another string.
    const TRICKY: &[&str] = &[
        "",
        " ",
        "  lead",
        "trail ",
        "yes",
        "Yes",
        "NO",
        "on",
        "Off",
        "y",
        "n",
        "Y",
        "N",
        "true",
        "False",
        "null",
        "Null",
        "NULL",
        "~",
        "0644",
        "0",
        "08",
        "-1",
        "+1",
        "1_000",
        "0x1F",
        "0o17",
        "0b101",
        "1e3",
        "1E-3",
        "1.5",
        ".5",
        "-.5",
        ".inf",
        "-.Inf",
        ".nan",
        "NaN",
        "inf",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "12:30",
        "1:20:30",
        "=",
        "<<",
        "a: b",
        "a:",
        "a:b",
        "http://x.y/z",
        "nginx:1.25",
        "a #b",
        "a#b",
        "#x",
        "- x",
        "-",
        "--",
        "---",
        "...",
        "? x",
        "?x",
        ":x",
        ",x",
        "[x]",
        "{x}",
        "x]",
        "x}",
        "x,y",
        "&a",
        "*a",
        "!tag",
        "|",
        ">",
        "'q'",
        "\"q\"",
        "%x",
        "@x",
        "`x",
        "a\"b",
        "a'b",
        "a\\b",
        "tab\there",
        "line\nbreak",
        "ends\n",
        "two\n\n",
        "\nlead",
        "x\n  indented\n",
        "x\r\ny",
        "nel\u{85}x",
        "ls\u{2028}x",
        "bom\u{feff}",
        "del\u{7f}",
        "bell\u{7}",
        "é ü 日本",
        "emoji 🎉",
        "a  b",
        "a - b",
        "a\n#not comment\n",
        "x\n \ny",
        "x\n---\ny\n",
        "x\n...\n",
        "key: value\nother: 1\n",
        "$HOME",
        "<redacted>",
        "<<x",
        "(x)",
        "_x",
        "/path/to",
        "a=b",
        "3d",
        "1.21",
        "v1.2.3",
        "app.kubernetes.io/name",
        "2001-12-14 21:59:43.10 -5",
    ];

    fn round_trips(v: &Value) {
        let text = emit(v).unwrap();
        let docs = split_documents(&text);
        assert_eq!(docs.len(), 1, "{text}");
        assert_eq!(parse_value(&docs[0]).unwrap().as_ref(), Some(v), "{text}");
        assert_eq!(
            parse::<Value>(&docs[0]).unwrap().as_ref(),
            Some(v),
            "{text}"
        );
        let plain: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(&plain, v, "{text}");
    }

    #[test]
    fn every_kind_of_scalar_reads_back_as_written() {
        for s in TRICKY {
            round_trips(&json!({ "v": s, "l": [s, {"k": s}], "n": {"m": {"x": s}} }));
            // fief's reader takes even a quoted `<<` key for a merge key (kubectl does not).
            if *s != "<<" {
                round_trips(&json!({ *s: "key", "x": { *s: [ { *s: 1 } ] } }));
            }
        }
        round_trips(&json!({
            "int": 1, "neg": -7, "big": u64::MAX, "small": i64::MIN + 1, "float": 1.5,
            "exp": 1e300, "tiny": 1e-7, "whole": 1000.0, "t": true, "f": false, "null": null,
            "empty_map": {}, "empty_list": [], "nested": [[1, [2, []]], [{}], [{"a": []}]],
        }));
    }

    #[test]
    fn generated_strings_read_back_as_written() {
        let alphabet: Vec<char> = "ay0719._-:# \n\t'\"\\/{}[],&*!|>%@`?~=<+eE\u{85}é\r"
            .chars()
            .collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let len = (next() % 8) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            round_trips(&json!({ "v": s.clone(), "l": [s.clone()], s: 1 }));
        }
    }

    #[test]
    fn common_objects_stay_readable() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "labels": {"app.kubernetes.io/managed-by": "fief"}},
            "data": {"mode": "0644", "flag": "yes", "conf": "a = 1\nb = 2\n"}});
        let text = emit(&v).unwrap();
        assert_eq!(
            text,
            "apiVersion: v1\ndata:\n  conf: |\n    a = 1\n    b = 2\n  flag: \"yes\"\n  mode: \"0644\"\nkind: ConfigMap\nmetadata:\n  labels:\n    app.kubernetes.io/managed-by: fief\n  name: web\n"
        );
        round_trips(&v);
    }
}
