//! A tenant's `overrides:` may only name its own environments and, in each, its own
//! components: a typo (`prd:`, `wbe:`) is an error with a suggestion, never an override that
//! silently applies nowhere.
//!
//! In: the repo, a tenant and its environments. Out: a diagnostic per unknown key, at its line
//! in the tenant file. Pure.

use crate::diagnostic::{Diagnostic, OverrideTarget, Problem};
use crate::model::{Repo, Tenant};

use crate::suggest::suggest;

/// Diagnostics for the keys of `tenant`'s overrides that name none of its environments
/// (`envs`, as resolved) or none of its components.
pub fn check_overrides(repo: &Repo, tenant: &Tenant, envs: &[String]) -> Vec<Diagnostic> {
    let overrides = &tenant.spec.overrides;
    if overrides.is_empty() {
        return Vec::new();
    }
    let file = repo.tenant_file(&tenant.metadata.name);
    let text = repo
        .snapshot
        .get(&file)
        .and_then(|e| e.as_ref().ok())
        .map_or("", |t| &t[..]);
    let components: Vec<&str> = tenant
        .spec
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let mut out = Vec::new();
    for (env, over) in overrides {
        if !envs.contains(env) {
            let known: Vec<&str> = envs.iter().map(String::as_str).collect();
            out.push(unknown(
                &file,
                text,
                OverrideTarget::Environment,
                env,
                &known,
            ));
        }
        for component in over.components.keys() {
            if !components.contains(&component.as_str()) {
                out.push(unknown(
                    &file,
                    text,
                    OverrideTarget::Component,
                    component,
                    &components,
                ));
            }
        }
    }
    out
}

fn unknown(
    file: &str,
    text: &str,
    target: OverrideTarget,
    name: &str,
    known: &[&str],
) -> Diagnostic {
    let suggestion = suggest(name, known.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    Diagnostic::new(
        file.to_string(),
        line_after_overrides(text, name),
        Problem::UnknownOverride {
            target,
            name: name.to_string(),
            suggestion,
            known: known.join(", "),
        },
    )
}

/// The line of `key:` below the `overrides:` line (1-based).
fn line_after_overrides(text: &str, key: &str) -> Option<usize> {
    let needle = format!("{key}:");
    let start = text
        .lines()
        .position(|l| l.trim_start().starts_with("overrides:"))?;
    text.lines()
        .enumerate()
        .skip(start + 1)
        .find(|(_, l)| l.trim_start().starts_with(&needle))
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::model::Repo;
    use crate::snapshot::Snapshot;

    const TENANT: &str = "apiVersion: fief.dev/v1alpha1
kind: Tenant
metadata:
  name: acme
spec:
  environments: [dev, prod]
  components:
    - name: web
  overrides:
    prd:
      quota: {cpu: \"1\"}
    dev:
      components:
        wbe: {version: \"2.4\"}
";

    #[test]
    fn an_override_of_an_unknown_environment_or_component_is_an_error_at_its_line_with_a_suggestion()
     {
        let repo = Repo::load(Arc::new(Snapshot::from_files([(
            "tenants/acme.yaml",
            TENANT.to_string(),
        )])));
        let tenant = repo.tenants["acme"].as_ref().expect("parses");
        let envs = vec!["dev".to_string(), "prod".to_string()];
        let mut ds = super::check_overrides(&repo, tenant, &envs);
        ds.sort_by_key(|d| d.line);
        let text: Vec<String> = ds
            .iter()
            .map(|d| format!("{:?} {}", d.line, d.problem))
            .collect();
        assert_eq!(ds.len(), 2, "{text:?}");
        assert!(text[0].contains("Some(10)") && text[0].contains("`prd` (did you mean `prod`?)"));
        assert!(text[1].contains("Some(14)") && text[1].contains("`wbe` (did you mean `web`?)"));
    }
}
