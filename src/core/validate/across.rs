//! The cross-tenant index: what the checks across tenants read of every tenant file (its
//! namespaces and the host suffixes it claims), built once per repo.
//!
//! In: a repo's fief.yaml and tenant files; optionally the previous repo's index. Out: per
//! tenant its namespaces and claims, and the owners of each namespace. The checks
//! ([`super::check_namespace_collisions`], [`super::tenancy::check_host_suffixes`]) then cost
//! the renders they judge, not a pass over every tenant file per call: the agent checks a
//! chunk of renders at a time, and a commit that changes one tenant file rebuilds that
//! tenant's entry only (unchanged tenants are shared with the previous index while fief.yaml
//! is unchanged).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use crate::core::model::{Config, Parsed, Tenant};

/// What one tenant file claims.
#[derive(Debug, Default)]
pub struct Claims {
    /// Its namespaces, by environment.
    pub namespaces: BTreeMap<String, String>,
    /// The host suffixes it claims, in order: the policy's `{tenant}` patterns, then its
    /// `spec.hostSuffixes` (`explicit`).
    pub suffixes: Vec<Suffix>,
}

/// One host suffix a tenant claims.
#[derive(Debug)]
pub struct Suffix {
    /// The suffix, expanded and lower-cased.
    pub suffix: String,
    /// From `spec.hostSuffixes` (true) or a `{tenant}` pattern of `policy.ingressHostSuffixes`.
    pub explicit: bool,
}

/// The index of one repo (see the module docs).
#[derive(Debug, Default)]
pub struct Across {
    /// Per tenant whose file parses: what it claims (empty when fief.yaml does not parse).
    pub tenants: BTreeMap<String, Arc<Claims>>,
    /// Per namespace: the tenants that would own it, in tenant order.
    pub owners: HashMap<String, Vec<String>>,
}

type Tenants = BTreeMap<String, Parsed<Arc<Tenant>>>;

impl Across {
    /// The index of `tenants` under `config`.
    pub fn build(config: &Parsed<Config>, tenants: &Tenants) -> Across {
        Across::reusing(config, tenants, None)
    }

    /// The index of `tenants` under `config`, taking each tenant's entry from `prev` (the
    /// previous repo's tenants and index, under the same fief.yaml) while its parsed file is
    /// the same one.
    pub fn reusing(
        config: &Parsed<Config>,
        tenants: &Tenants,
        prev: Option<(&Tenants, &Across)>,
    ) -> Across {
        let Ok(config) = config else {
            return Across::default();
        };
        let mut out = Across::default();
        for (name, tenant) in tenants {
            let Ok(tenant) = tenant else { continue };
            let kept = prev.and_then(|(pt, pa)| {
                let same = matches!(pt.get(name), Some(Ok(old)) if Arc::ptr_eq(old, tenant));
                same.then(|| pa.tenants.get(name).cloned()).flatten()
            });
            let claims = kept.unwrap_or_else(|| Arc::new(claims(config, name, tenant)));
            for ns in claims.namespaces.values() {
                out.owners.entry(ns.clone()).or_default().push(name.clone());
            }
            out.tenants.insert(name.clone(), claims);
        }
        out
    }
}

/// The index a repo loaded from `prev` (under the same fief.yaml) starts with: carried over
/// for its unchanged tenants when `prev` built one; else empty (built on first use).
pub fn carried(
    prev: Option<&crate::core::model::Repo>,
    config: &Parsed<Config>,
    tenants: &Tenants,
) -> OnceLock<Arc<Across>> {
    let out = OnceLock::new();
    if let Some(prev) = prev
        && let Some(index) = prev.across.get()
    {
        let index = Across::reusing(config, tenants, Some((&prev.tenants, index)));
        let _ = out.set(Arc::new(index));
    }
    out
}

fn claims(config: &Config, name: &str, tenant: &Tenant) -> Claims {
    let mut suffixes = Vec::new();
    for pattern in &config.policy.ingress_host_suffixes {
        if pattern.contains("{tenant}") {
            suffixes.push(Suffix {
                suffix: expand(pattern, name, &config.base_domain),
                explicit: false,
            });
        }
    }
    for s in &tenant.spec.host_suffixes {
        suffixes.push(Suffix {
            suffix: expand(s, name, &config.base_domain),
            explicit: true,
        });
    }
    Claims {
        namespaces: crate::core::render::namespaces(config, tenant),
        suffixes,
    }
}

fn expand(pattern: &str, tenant: &str, base_domain: &str) -> String {
    pattern
        .replace("{tenant}", tenant)
        .replace("{baseDomain}", base_domain)
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::Repo;
    use crate::core::snapshot::Snapshot;

    fn repo(files: &[(&str, &str)]) -> Repo {
        let files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect::<Vec<_>>();
        Repo::load(Arc::new(Snapshot::from_files(files)))
    }

    fn tenant(name: &str, envs: &str) -> (String, String) {
        (
            format!("tenants/{name}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [{envs}]\n"
            ),
        )
    }

    #[test]
    fn an_unchanged_tenant_keeps_its_entry_and_a_changed_one_is_rebuilt() {
        let (a, b) = (tenant("a", "prod"), tenant("b", "prod"));
        let files = vec![
            ("fief.yaml", "baseDomain: example.com\n"),
            (a.0.as_str(), a.1.as_str()),
            (b.0.as_str(), b.1.as_str()),
        ];
        let first = repo(&files);
        let first_index = Across::build(&first.config, &first.tenants);
        let b2 = tenant("b", "prod, dev");
        let mut changed = files.clone();
        changed[2] = (b2.0.as_str(), b2.1.as_str());
        let changed_paths = [b2.0.clone()].into_iter().collect();
        let (second, _) = Repo::load_reusing(
            Arc::new(Snapshot::from_files(
                changed
                    .iter()
                    .map(|(p, t)| (p.to_string(), t.to_string()))
                    .collect::<Vec<_>>(),
            )),
            &first,
            &changed_paths,
        );
        let index = Across::reusing(
            &second.config,
            &second.tenants,
            Some((&first.tenants, &first_index)),
        );
        assert!(Arc::ptr_eq(&index.tenants["a"], &first_index.tenants["a"]));
        assert!(!Arc::ptr_eq(&index.tenants["b"], &first_index.tenants["b"]));
        assert_eq!(index.tenants["b"].namespaces.len(), 2);
        assert_eq!(index.owners["a-prod"], vec!["a".to_string()]);
        assert_eq!(index.owners["b-dev"], vec!["b".to_string()]);
        // Through the loader: a repo read from one that built its index starts with one.
        let (third, _) = Repo::load_reusing(second.snapshot.clone(), &first, &changed_paths);
        assert!(third.across.get().is_none(), "first built no index yet");
        let built = first.across();
        let (fourth, _) = Repo::load_reusing(second.snapshot.clone(), &first, &changed_paths);
        let carried = fourth.across.get().expect("carried over");
        assert!(Arc::ptr_eq(&carried.tenants["a"], &built.tenants["a"]));
    }
}
