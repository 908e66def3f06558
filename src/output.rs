//! Output: rendered objects as a multi-document YAML stream or as one file per object.
//!
//! In: [`TenantRender`]s. Out: text (stdout) and relative paths for `--out`; Secrets' values
//! redacted unless asked otherwise. Pure: the CLI does the writing.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::render::{RenderedObject, TenantRender};

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

/// One object as a YAML document with a `# Source:` comment, starting with `---`.
pub fn document(tenant: &str, o: &RenderedObject, show_secrets: bool) -> Result<String, String> {
    let body = if show_secrets {
        crate::yaml::to_string(&o.object)?
    } else {
        crate::yaml::to_string(&redact(&o.object))?
    };
    Ok(format!(
        "---\n# Source: {} (tenant {}, env {})\n{}",
        o.source, tenant, o.env, body
    ))
}

/// The whole stream for the tenants that rendered cleanly.
pub fn stream(renders: &[TenantRender], show_secrets: bool) -> Result<String, String> {
    let mut out = String::new();
    for r in renders.iter().filter(|r| r.is_ok()) {
        for o in &r.objects {
            out.push_str(&document(&r.tenant, o, show_secrets)?);
        }
    }
    Ok(out)
}

/// `<tenant>/<namespace or _cluster>/<kind>.<name>.yaml`.
pub fn out_path(tenant: &str, o: &RenderedObject) -> PathBuf {
    let ns = if o.id.namespace.is_empty() {
        "_cluster"
    } else {
        o.id.namespace.as_str()
    };
    let kind = o.id.kind.to_lowercase();
    PathBuf::from(tenant)
        .join(ns)
        .join(format!("{kind}.{}.yaml", o.id.name))
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
