//! `secretValues:` of a `helm` or `kustomize` component: the tenant's SOPS secrets set into
//! the release's values at the paths the component names, after every layer.
//!
//! In: the component's mapping (values path → `shared.<key>` / `tenant.<key>`), the layered
//! values and the tenant's `secrets` context (plaintext, or `<encrypted>` placeholders when
//! fief has no key and only renders). Out: the values with each secret set, or one
//! diagnostic per entry that cannot be set, at the `secretValues` line of component.yaml.
//! The secrets are already among the tenant's secret leaves, so whatever echoes them (the
//! tool's errors, the API server's answers) is scrubbed as for templates. Pure.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Problem};
use crate::snapshot::Snapshot;

/// Where the secrets come from: the tenant's name and its `secrets` context.
pub(super) struct Secrets<'a> {
    /// The tenant (its own file is `secrets/tenants/<tenant>.sops.yaml`).
    pub(super) tenant: &'a str,
    /// `{shared: ..., tenant: ...}`.
    pub(super) context: &'a Value,
}

/// Set each of `mapping`'s secrets into `values`; the diagnostics of those that cannot be.
/// `dir` is the component's key under `components/`.
pub(super) fn set(
    snapshot: &Snapshot,
    dir: &str,
    mapping: &BTreeMap<String, String>,
    secrets: &Secrets<'_>,
    values: &mut Value,
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for (path, source) in mapping {
        if let Err(detail) = set_one(path, source, secrets, values) {
            let file = format!("components/{dir}/component.yaml");
            let line = match snapshot.get(&file) {
                Some(Ok(text)) => crate::model::line_of_key(text, "secretValues"),
                _ => None,
            };
            let problem = Problem::InvalidField {
                field: format!("secretValues.{path}"),
                detail,
            };
            errors.push(Diagnostic::new(file, line, problem));
        }
    }
    errors
}

/// Set the secret `source` names at the values path `path`.
fn set_one(
    path: &str,
    source: &str,
    secrets: &Secrets<'_>,
    values: &mut Value,
) -> Result<(), String> {
    let (file, key) = match source.split_once('.') {
        Some(("shared", key)) => ("secrets/shared.sops.yaml".to_string(), key),
        Some(("tenant", key)) => (format!("secrets/tenants/{}.sops.yaml", secrets.tenant), key),
        _ => {
            return Err(format!(
                "`{source}` names no secret: write `tenant.<key>` (the tenant's own file) or `shared.<key>` (secrets/shared.sops.yaml)"
            ));
        }
    };
    let scope = &source[..source.len() - key.len() - 1];
    let secret = key
        .split('.')
        .try_fold(&secrets.context[scope], |v, k| v.get(k))
        .ok_or_else(|| {
            format!(
                "`secrets.{source}` is not in {file}: add it with `sops edit`, or remove the entry"
            )
        })?;
    if path.split('.').any(str::is_empty) {
        return Err(format!(
            "`{path}` is not a values path: keys joined by dots, e.g. `auth.password`"
        ));
    }
    let mut at = values;
    let keys: Vec<&str> = path.split('.').collect();
    for (i, k) in keys.iter().enumerate() {
        if at.is_null() {
            *at = Value::Object(serde_json::Map::new());
        }
        let Value::Object(map) = at else {
            let parent = keys[..i].join(".");
            return Err(format!(
                "`{parent}` is not a mapping in the values, so `{path}` cannot be set"
            ));
        };
        at = map.entry(k.to_string()).or_insert(Value::Null);
    }
    *at = secret.clone();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// [`set_one`] for tenant `acme`, whose secrets are `db` and the shared `analytics.apiKey`.
    fn set_acme(path: &str, source: &str, values: &mut Value) -> Result<(), String> {
        let context =
            json!({"shared": {"analytics": {"apiKey": "k-123456"}}, "tenant": {"db": "pa55word"}});
        let secrets = Secrets {
            tenant: "acme",
            context: &context,
        };
        set_one(path, source, &secrets, values)
    }

    #[test]
    fn a_secret_is_set_at_its_path_creating_the_mappings_on_the_way() {
        let mut values = json!({"auth": {"user": "app"}});
        set_acme("auth.password", "tenant.db", &mut values).unwrap();
        set_acme("global.key", "shared.analytics.apiKey", &mut values).unwrap();
        assert_eq!(
            values,
            json!({"auth": {"user": "app", "password": "pa55word"}, "global": {"key": "k-123456"}})
        );
    }

    #[test]
    fn a_missing_secret_or_a_path_through_a_scalar_is_an_error_naming_what_to_do() {
        let mut values = json!({"auth": "plain"});
        let e = set_acme("x", "tenant.nope", &mut values).unwrap_err();
        assert!(
            e.contains("`secrets.tenant.nope` is not in secrets/tenants/"),
            "{e}"
        );
        let e = set_acme("auth.password", "tenant.db", &mut values).unwrap_err();
        assert!(e.contains("`auth` is not a mapping"), "{e}");
        let e = set_acme("x", "db", &mut values).unwrap_err();
        assert!(e.contains("write `tenant.<key>`"), "{e}");
        assert!(!e.contains("pa55word"));
    }
}
