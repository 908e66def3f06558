//! Redaction: a Secret's values hidden before anything is shown to a person.
//!
//! In: an object. Out: the same object with every Secret value replaced. Pure; used by
//! `render`, `diff` and anything else that prints objects.
//!
//! The redacted Secret is invalid on purpose: every value goes to `data` as `<redacted>`,
//! which is not base64, so the API server refuses it ("illegal base64 data"). Piping redacted
//! `fief render` output into `kubectl apply` can therefore never overwrite a real password
//! with the text `<redacted>`; `fief render --show-secrets` gives the real values.

use serde_json::{Map, Value};

/// What Secret values are replaced with.
pub const REDACTED: &str = "<redacted>";

/// Whether an object is a core/v1 Secret.
pub fn is_secret(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("Secret")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// Replace a Secret's values: `data` and `stringData` keys are kept (all under `data`),
/// values hidden as `<redacted>`. The result does not apply (not base64), on purpose.
pub fn redact(object: &Value) -> Value {
    if !is_secret(object) {
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
        map.insert("data".to_string(), Value::Object(hidden));
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
        assert!(r.get("stringData").is_none());
        assert_eq!(r["data"]["password"], REDACTED);
        assert_eq!(r["data"]["user"], REDACTED);
        assert!(!r.to_string().contains("c2VjcmV0"));
    }

    #[test]
    fn redacted_secret_values_are_not_base64_so_they_never_apply() {
        use base64::Engine;
        let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
            "stringData": {"password": "hunter22"}});
        let r = redact(&s);
        let v = r["data"]["password"].as_str().unwrap_or_default();
        assert!(base64::engine::general_purpose::STANDARD.decode(v).is_err());
    }

    #[test]
    fn non_secrets_are_untouched() {
        let c = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        assert_eq!(redact(&c), c);
    }
}
