//! Plain scalars and keys that every YAML reader fief uses takes the same way, so that a typed
//! file read by the fast reader and `serde_json` gets exactly what serde-saphyr's typed read
//! gives (and where they might differ, the file goes to serde-saphyr).
//!
//! In: a plain scalar's text and what [`super::resolve_scalar`] made of it, or a plain key.
//! Out: whether it is canonical. Conservative on purpose: `yes`, `0644`, `1e3`, `-1`, `.5`,
//! dates and other forms whose reading depends on the YAML version or the target type are
//! not. Pure.

use serde_json::Value;

/// Words that YAML 1.1 or 1.2 read as booleans or null in some spelling.
const SPECIAL: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];

fn special(text: &str) -> bool {
    text.len() <= 5 && SPECIAL.iter().any(|w| w.eq_ignore_ascii_case(text))
}

/// A plain scalar: `null`/`~`, `true`/`false`, a non-negative decimal without leading zeros
/// (at most 15 digits each side of the point), a letter-led word that is not a boolean or null
/// in any spelling, a Kubernetes quantity (`4Gi`, `500m`, `1.5G`; not `1E`, an exponent
/// look-alike), or a dotted version of three or more parts (`1.4.2`, `1.4.2-rc.1`).
pub(super) fn plain(text: &str, value: &Value) -> bool {
    match value {
        Value::Null => text == "null" || text == "~",
        Value::Bool(_) => text == "true" || text == "false",
        Value::Number(_) => decimal(text).is_some_and(|rest| rest.is_empty()),
        Value::String(_) => word(text) || quantity(text) || version(text),
        _ => false,
    }
}

/// A plain mapping key: a letter-led word that is not a boolean or null in any spelling.
pub(super) fn key(text: &str) -> bool {
    word(text)
}

fn word(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic()) && !special(text)
}

/// `digits[.digits]` at the start of `text` (no sign, no leading zero): what follows.
fn decimal(text: &str) -> Option<&str> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let int = digits(text);
    if int == 0 || int > 15 || (int > 1 && text.starts_with('0')) {
        return None;
    }
    let rest = &text[int..];
    match rest.strip_prefix('.') {
        Some(frac) => {
            let n = digits(frac);
            (n > 0 && n <= 15).then(|| &frac[n..])
        }
        None => Some(rest),
    }
}

/// `1.4.2`, optionally followed by `-` and letters, digits and dots (`1.4.2-rc.1`).
fn version(text: &str) -> bool {
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (text, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() >= 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && pre.is_none_or(|p| {
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')
        })
}

fn quantity(text: &str) -> bool {
    const SUFFIXES: &[&str] = &[
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P",
    ];
    decimal(text).is_some_and(|suffix| SUFFIXES.contains(&suffix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_forms_every_reader_agrees_on_are_canonical() {
        for (text, value) in [
            ("web", json!("web")),
            ("4Gi", json!("4Gi")),
            ("500m", json!("500m")),
            ("1.5G", json!("1.5G")),
            ("1.4.2", json!("1.4.2")),
            ("1.4.2-rc.1", json!("1.4.2-rc.1")),
            ("3", json!(3)),
            ("0", json!(0)),
            ("0.5", json!(0.5)),
            ("1.4", json!(1.4)),
            ("true", json!(true)),
            ("null", json!(null)),
            ("~", json!(null)),
        ] {
            assert!(plain(text, &value), "{text}");
        }
        for (text, value) in [
            ("yes", json!(true)),
            ("Yes", json!(true)),
            ("nO", json!("nO")),
            ("On", json!(true)),
            ("NULL", json!(null)),
            ("0644", json!(420)),
            ("-1", json!(-1)),
            ("1e3", json!(1000.0)),
            ("1E", json!("1E")),
            ("1.4.", json!("1.4.")),
            ("1.4.2-", json!("1.4.2-")),
            ("1_000", json!(1000)),
            ("0x10", json!(16)),
            ("2024-01-02", json!("2024-01-02")),
            (".inf", json!(".inf")),
            ("1234567890123456", json!(1234567890123456u64)),
        ] {
            assert!(!plain(text, &value), "{text}");
        }
        assert!(key("app.kubernetes.io/name") && key("replicas"));
        assert!(!key("y") && !key("on") && !key("0644") && !key("<<") && !key("_x"));
    }
}
