//! Declared environments: a tenant may only name environments the repo declares, so a typo
//! (`prd`) is an error instead of a new namespace (and the prune of the old one).
//!
//! In: the repo and a tenant's environment names. Out: a diagnostic per undeclared name, at
//! the tenant file's `environments` line, with the closest declared name as a suggestion. Pure.

use std::collections::BTreeSet;

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Repo, line_of_key};

/// The environments the repo declares: fief.yaml `environments` and `defaultEnvironments`,
/// and every `environments/<env>.yaml`. `None` when it declares none (any name is accepted).
pub fn declared(repo: &Repo) -> Option<BTreeSet<&str>> {
    let config = repo.config.as_ref().ok()?;
    if config.environments.is_empty() && repo.environments.is_empty() {
        return None;
    }
    let mut names: BTreeSet<&str> = repo.environments.keys().map(String::as_str).collect();
    names.extend(config.environments.iter().map(String::as_str));
    names.extend(config.default_environments.iter().map(String::as_str));
    Some(names)
}

/// A diagnostic for each of `envs` that the repo does not declare.
pub fn check_declared(repo: &Repo, tenant: &str, envs: &[String]) -> Vec<Diagnostic> {
    let Some(declared) = declared(repo) else {
        return Vec::new();
    };
    let file = repo.tenant_file(tenant);
    let line = repo
        .snapshot
        .get(&file)
        .and_then(|e| e.as_ref().ok())
        .and_then(|t| line_of_key(t, "environments"));
    envs.iter()
        .filter(|e| !declared.contains(e.as_str()))
        .map(|env| {
            let suggestion = closest(env, &declared)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            Diagnostic::new(
                file.clone(),
                line,
                Problem::UndeclaredEnvironment {
                    env: env.clone(),
                    suggestion,
                    declared: declared.iter().copied().collect::<Vec<_>>().join(", "),
                },
            )
        })
        .collect()
}

/// The declared name nearest to `name` by edit distance, if it is near enough to be a typo.
fn closest<'a>(name: &str, declared: &BTreeSet<&'a str>) -> Option<&'a str> {
    crate::suggest::suggest(name, declared.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Repo;
    use crate::snapshot::Snapshot;
    use std::sync::Arc;

    fn repo(files: &[(&str, &str)]) -> Repo {
        Repo::load(Arc::new(Snapshot::from_files(
            files.iter().map(|(p, t)| (p.to_string(), t.to_string())),
        )))
    }

    const TENANT: &str = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: b\nspec:\n  environments: [prd]\n";

    #[test]
    fn a_typo_in_an_environment_is_an_error_with_a_suggestion() {
        let r = repo(&[
            ("tenants/b.yaml", TENANT),
            ("environments/prod.yaml", "values: {}\n"),
            ("environments/dev.yaml", "values: {}\n"),
        ]);
        let ds = check_declared(&r, "b", &["prd".to_string()]);
        assert_eq!(ds.len(), 1);
        assert_eq!(ds[0].line, Some(6));
        let msg = ds[0].to_string();
        assert!(msg.contains("did you mean `prod`"), "{msg}");
    }

    #[test]
    fn environments_listed_in_fief_yaml_are_declared() {
        let r = repo(&[
            ("tenants/b.yaml", TENANT),
            ("fief.yaml", "environments: [prd]\n"),
        ]);
        assert!(check_declared(&r, "b", &["prd".to_string()]).is_empty());
    }

    #[test]
    fn a_repo_that_declares_no_environment_accepts_any() {
        let r = repo(&[("tenants/b.yaml", TENANT)]);
        assert!(check_declared(&r, "b", &["prd".to_string()]).is_empty());
    }
}
