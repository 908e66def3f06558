//! Redaction: a Secret's values hidden before anything is shown to a person.
//!
//! In: an object. Out: the same object with every Secret value replaced. Pure; used by
//! `render`, `diff` and anything else that prints objects.

use serde_json::{Map, Value};

/// What Secret values are replaced with.
pub const REDACTED: &str = "<redacted>";

/// Replace a Secret's values: `data` and `stringData` keys are kept, values hidden. The result
/// stays a valid Secret (values move to `stringData`), so it can still be dry-run applied.
pub fn redact(object: &Value) -> Value {
    let is_secret = object.get("kind").and_then(Value::as_str) == Some("Secret")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if !is_secret {
        return object.clone();
    }
    let mut out = object.clone();
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    let mut hidden = Map::new();
    for field in ["data", "stringData"] {
        if let Some(Value::Object(values)) = map.remove(field) {
            for key in values.keys() {
                hidden.insert(key.clone(), Value::String(REDACTED.to_string()));
            }
        }
    }
    if !hidden.is_empty() {
        map.insert("stringData".to_string(), Value::Object(hidden));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_values_are_redacted_but_keys_kept() {
        let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
            "data": {"password": "c2VjcmV0"}, "stringData": {"user": "admin"}});
        let r = redact(&s);
        assert!(r.get("data").is_none());
        assert_eq!(r["stringData"]["password"], REDACTED);
        assert_eq!(r["stringData"]["user"], REDACTED);
        assert!(!r.to_string().contains("c2VjcmV0"));
    }

    #[test]
    fn non_secrets_are_untouched() {
        let c = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        assert_eq!(redact(&c), c);
    }
}
