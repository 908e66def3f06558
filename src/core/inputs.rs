//! Inputs: a content hash of everything a tenant's render reads, so the agent re-renders only
//! the tenants a commit changed.
//!
//! In: a parsed [`Repo`]. Out: per tenant a hash over fief.yaml, the tenant file, the
//! environment files it uses, every file of the components it enables (and their
//! dependencies), every file those templates include, import or extend by a literal name
//! (followed transitively, wherever it lives in the repo), the baseline, and the encrypted
//! secret files it reads (shared and its own, as committed: no decryption). A change to a
//! shared component changes exactly the hashes of the tenants that use it; a rotated
//! per-tenant secret changes only that tenant's. Pure.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::core::model::{BUILTIN_BASELINE, Repo};
use crate::core::snapshot::Entry;

fn hash_entry(h: &mut Sha256, path: &str, entry: Option<&Entry>) {
    h.update(path.as_bytes());
    h.update([0]);
    match entry {
        None => h.update(b"<absent>"),
        Some(Ok(text)) => h.update(text.as_bytes()),
        Some(Err(problem)) => h.update(problem.to_string().as_bytes()),
    }
    h.update([0]);
}

fn hex(h: Sha256) -> String {
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Template names a file names by a literal in `{% include/import/extends/from ... %}`,
/// resolved as the renderer does (a name without `/` is next to the including file).
fn template_refs(path: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let dir = path.rsplit_once('/').map(|(d, _)| d);
    for block in text.split("{%").skip(1) {
        let body = block.split("%}").next().unwrap_or("");
        let body = body.trim_start_matches(['-', '+']).trim_start();
        let word = body.split_whitespace().next().unwrap_or("");
        if !matches!(word, "include" | "import" | "extends" | "from") {
            continue;
        }
        let mut rest = &body[word.len()..];
        while let Some(start) = rest.find(['"', '\'']) {
            let quote = &rest[start..start + 1];
            let after = &rest[start + 1..];
            let Some(end) = after.find(quote) else { break };
            let name = &after[..end];
            out.push(match (name.contains('/'), dir) {
                (false, Some(d)) => format!("{d}/{name}"),
                _ => name.to_string(),
            });
            rest = &after[end + 1..];
        }
    }
    out
}

/// Files outside `dir` that the templates under it reach by literal includes, transitively.
fn referenced_outside(snapshot: &crate::core::snapshot::Snapshot, dir: &str) -> BTreeSet<String> {
    let prefix = format!("{dir}/");
    let mut todo: Vec<String> = snapshot
        .under(dir)
        .filter_map(|(p, e)| e.as_ref().ok().map(|t| template_refs(p, t)))
        .flatten()
        .collect();
    let mut seen = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if path.starts_with(&prefix) || !seen.insert(path.clone()) {
            continue;
        }
        if let Some(Ok(text)) = snapshot.get(&path) {
            todo.extend(template_refs(&path, text));
        }
    }
    seen
}

/// Input hashes of every tenant of the repo, by tenant name.
pub fn tenant_hashes(repo: &Repo) -> BTreeMap<String, String> {
    let snapshot = &repo.snapshot;
    let dir_hash = |dir: &str| {
        let mut h = Sha256::new();
        for (path, entry) in snapshot.under(dir) {
            hash_entry(&mut h, path, Some(entry));
        }
        hex(h)
    };
    let mut shared = Sha256::new();
    hash_entry(&mut shared, "fief.yaml", snapshot.get("fief.yaml"));
    if snapshot.has_dir("baseline") {
        shared.update(dir_hash("baseline").as_bytes());
    } else {
        for (name, text) in BUILTIN_BASELINE {
            shared.update(name.as_bytes());
            shared.update(text.as_bytes());
        }
    }
    let shared = hex(shared);
    let components: BTreeMap<&str, String> = repo
        .components
        .keys()
        .map(|c| {
            let dir = format!("components/{c}");
            let mut h = Sha256::new();
            h.update(dir_hash(&dir).as_bytes());
            for path in referenced_outside(snapshot, &dir) {
                hash_entry(&mut h, &path, snapshot.get(&path));
            }
            (c.as_str(), hex(h))
        })
        .collect();
    let mut out = BTreeMap::new();
    for (name, tenant) in &repo.tenants {
        let mut h = Sha256::new();
        h.update(shared.as_bytes());
        let file = format!("tenants/{name}.yaml");
        hash_entry(&mut h, &file, snapshot.get(&file));
        for path in repo.secrets.paths_for(name) {
            hash_entry(&mut h, &path, snapshot.get(&path));
        }
        if let Ok(tenant) = tenant {
            let envs = if tenant.spec.environments.is_empty() {
                repo.config
                    .as_ref()
                    .map(|c| c.default_environments.clone())
                    .unwrap_or_default()
            } else {
                tenant.spec.environments.clone()
            };
            for env in envs {
                let path = format!("environments/{env}.yaml");
                hash_entry(&mut h, &path, snapshot.get(&path));
            }
            // Enabled components and, transitively, what they depend on.
            let mut todo: Vec<&str> = tenant
                .spec
                .components
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            let mut seen = BTreeSet::new();
            while let Some(c) = todo.pop() {
                if !seen.insert(c) {
                    continue;
                }
                if let Some(Ok(component)) = repo.components.get(c) {
                    todo.extend(component.meta.depends_on.iter().map(String::as_str));
                }
            }
            for c in seen {
                h.update(c.as_bytes());
                match components.get(c) {
                    Some(hash) => h.update(hash.as_bytes()),
                    None => h.update(b"<missing>"),
                }
            }
        }
        out.insert(name.clone(), hex(h));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snapshot::Snapshot;
    use std::sync::Arc;

    fn tenant(name: &str, components: &[&str]) -> (String, String) {
        let list: String = components
            .iter()
            .map(|c| format!("    - name: {c}\n"))
            .collect();
        (
            format!("tenants/{name}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n{list}"
            ),
        )
    }

    fn hashes(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut files = vec![
            tenant("a", &["web"]),
            tenant("b", &["db"]),
            tenant("c", &["web"]),
            (
                "components/web/templates/x.yaml".to_string(),
                "x".to_string(),
            ),
            (
                "components/web/component.yaml".to_string(),
                "dependsOn: [base]\n".to_string(),
            ),
            (
                "components/base/templates/x.yaml".to_string(),
                "b".to_string(),
            ),
            (
                "components/db/templates/x.yaml".to_string(),
                "d".to_string(),
            ),
        ];
        for (p, t) in extra {
            files.retain(|(q, _)| q != p);
            files.push((p.to_string(), t.to_string()));
        }
        tenant_hashes(&Repo::load(Arc::new(Snapshot::from_files(files))))
    }

    #[test]
    fn a_shared_component_change_touches_exactly_its_tenants() {
        let before = hashes(&[]);
        let after = hashes(&[("components/web/templates/x.yaml", "changed")]);
        assert_ne!(before["a"], after["a"]);
        assert_ne!(before["c"], after["c"]);
        assert_eq!(before["b"], after["b"]);
    }

    #[test]
    fn a_dependency_change_touches_the_dependent_tenants() {
        let before = hashes(&[]);
        let after = hashes(&[("components/base/templates/x.yaml", "changed")]);
        assert_ne!(before["a"], after["a"]);
        assert_eq!(before["b"], after["b"]);
    }

    #[test]
    fn one_tenant_file_change_touches_only_that_tenant() {
        let before = hashes(&[]);
        let (p, t) = tenant("b", &["db", "web"]);
        let after = hashes(&[(p.as_str(), t.as_str())]);
        assert_ne!(before["b"], after["b"]);
        assert_eq!(before["a"], after["a"]);
        assert_eq!(before["c"], after["c"]);
    }

    #[test]
    fn a_change_to_a_file_included_from_another_component_touches_the_including_tenants() {
        let include = (
            "components/db/templates/x.yaml",
            "{% include \"shared/snippet.txt\" %}\n",
        );
        let before = hashes(&[include, ("shared/snippet.txt", "one")]);
        let after = hashes(&[include, ("shared/snippet.txt", "two")]);
        assert_ne!(before["b"], after["b"]);
        assert_eq!(before["a"], after["a"]);
        let nested = ("shared/snippet.txt", "{%- include 'deep.txt' %}");
        let before = hashes(&[include, nested, ("shared/deep.txt", "one")]);
        let after = hashes(&[include, nested, ("shared/deep.txt", "two")]);
        assert_ne!(
            before["b"], after["b"],
            "followed transitively, relative names too"
        );
    }

    #[test]
    fn a_tenant_secret_file_change_touches_only_that_tenant() {
        let before = hashes(&[("secrets/tenants/a.sops.yaml", "x: 1\n")]);
        let after = hashes(&[("secrets/tenants/a.sops.yaml", "x: 2\n")]);
        assert_ne!(before["a"], after["a"]);
        assert_eq!(before["b"], after["b"]);
        let shared = hashes(&[
            ("secrets/tenants/a.sops.yaml", "x: 1\n"),
            ("secrets/shared.sops.yaml", "y: 1\n"),
        ]);
        for t in ["a", "b", "c"] {
            assert_ne!(before[t], shared[t]);
        }
    }

    #[test]
    fn fief_yaml_change_touches_every_tenant() {
        let before = hashes(&[]);
        let after = hashes(&[("fief.yaml", "baseDomain: other.example\n")]);
        for t in ["a", "b", "c"] {
            assert_ne!(before[t], after[t]);
        }
    }
}
