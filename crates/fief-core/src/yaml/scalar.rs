//! Plain scalars resolved as kubectl reads them (go-yaml v2 through `sigs.k8s.io/yaml`,
//! YAML 1.1 rules): legacy octal, `_` in numbers, `yes`/`no`/`on`/`off`/`y`/`n` booleans.
//!
//! In: a scalar's text, style and tag from the parser. Out: a `serde_json::Value`. Pure.

use serde_json::Value;
use serde_saphyr::granit_parser::{ScalarStyle, Tag};

/// Resolution of an untagged plain scalar as kubectl's YAML reader (go-yaml v2, YAML 1.1)
/// does it; quoted scalars and `!!str` stay strings.
pub(super) fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    let as_string = || Value::String(text.to_string());
    if let Some(tag) = tag {
        if tag.is_yaml_core_schema() && tag.suffix() == "str" {
            return as_string();
        }
    } else if style != ScalarStyle::Plain {
        return as_string();
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "y" | "Y" => {
            return Value::Bool(true);
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "n" | "N" => {
            return Value::Bool(false);
        }
        _ => {}
    }
    if let Some(n) = parse_int(text) {
        return n;
    }
    if looks_like_float(text)
        && let Some(n) = text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
    {
        return Value::Number(n);
    }
    as_string()
}

/// Integers as go-yaml v2 reads them: `_` ignored, `0x`/`0o`/`0b` prefixes, and a leading
/// `0` means octal (`0644` is 420); `08` (not octal) is 8, as kubectl sends it.
fn parse_int(text: &str) -> Option<Value> {
    let cleaned;
    let text = if text.contains('_') && text.bytes().any(|b| b.is_ascii_digit()) {
        cleaned = text.replace('_', "");
        cleaned.as_str()
    } else {
        text
    };
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(hex) = digits.strip_prefix("0x") {
        (16, hex)
    } else if let Some(oct) = digits.strip_prefix("0o") {
        (8, oct)
    } else if let Some(bin) = digits.strip_prefix("0b") {
        (2, bin)
    } else if digits.len() > 1
        && digits.starts_with('0')
        && digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        // Through i128: the smallest i64 has no positive counterpart in i64.
        let n = i64::try_from(-i128::from(magnitude)).ok()?;
        Some(Value::from(n))
    } else {
        Some(Value::from(magnitude))
    }
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn looks_like_float(text: &str) -> bool {
    let b = text.trim_start_matches(['-', '+']).as_bytes();
    if text.len() - b.len() > 1 {
        return false;
    }
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use serde_json::json;

    fn value(text: &str) -> Result<Option<Value>, YamlError> {
        parse_value(&split_documents(text)[0])
    }

    #[test]
    fn parse_value_resolves_core_schema_scalars() {
        let v = value("a: 1\nb: -2\nc: 1.5\nd: true\ne: ~\nf: \"1\"\ng: 0x1f\nh: 1e3\ni: .inf\nj: 08:00\nk: 'true'\nl: !!str 7\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            v,
            json!({"a": 1, "b": -2, "c": 1.5, "d": true, "e": null, "f": "1", "g": 31,
                   "h": 1000.0, "i": ".inf", "j": "08:00", "k": "true", "l": "7"})
        );
    }

    #[test]
    fn scalars_are_read_as_kubectl_reads_yaml_1_1() {
        let v = value("mode: 0644\nzero: 0\nnine: 09\nneg: -010\nbin: 0b101\nbig: 1_000\nq: '0644'\non: yes\noff: Off\nyn: n\nname: norway\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            v,
            json!({"mode": 420, "zero": 0, "nine": 9, "neg": -8, "bin": 5, "big": 1000,
                   "q": "0644", "on": true, "off": false, "yn": false, "name": "norway"})
        );
    }

    #[test]
    fn strings_written_by_fief_read_back_as_the_same_strings() {
        let v = json!({"a": "yes", "b": "0644", "c": "on", "d": "1_000", "e": "y", "f": "N",
                       "g": "0b11", "h": "08", "i": "Off"});
        let text = to_string(&v).unwrap();
        assert_eq!(value(&text).unwrap().unwrap(), v, "{text}");
    }

    #[test]
    fn fief_files_read_octal_as_kubectl_does() {
        let docs = split_documents("mode: 0644\nflag: yes\n");
        assert_eq!(
            parse::<Value>(&docs[0]).unwrap().unwrap(),
            json!({"mode": 420, "flag": true})
        );
    }

    #[test]
    fn the_smallest_i64_reads_back_as_an_integer() {
        let v = value(
            "min: -9223372036854775808\nmax: 9223372036854775807\nbelow: -9223372036854775809\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(v["min"], json!(i64::MIN));
        assert!(v["min"].is_i64(), "{v}");
        assert_eq!(v["max"], json!(i64::MAX));
        assert!(v["below"].is_f64(), "{v}");
    }

    #[test]
    fn a_quoted_merge_key_is_an_ordinary_key() {
        let text = "base: &b {x: 1}\nm:\n  \"<<\": *b\n  '<<': 2\n  y: 3\n";
        let err = value(text).unwrap_err();
        assert!(err.message.contains("duplicate key `<<`"), "{err:?}");
        let v = value("base: &b {x: 1}\nm:\n  \"<<\": *b\n  y: 3\n")
            .unwrap()
            .unwrap();
        assert_eq!(v["m"], json!({"<<": {"x": 1}, "y": 3}));
        let v = value("base: &b {x: 1}\nm:\n  <<: *b\n  y: 3\n")
            .unwrap()
            .unwrap();
        assert_eq!(v["m"], json!({"x": 1, "y": 3}));
        let v = value("m: {\"<<\": 1}\n").unwrap().unwrap();
        assert_eq!(v["m"], json!({"<<": 1}));
    }
}
