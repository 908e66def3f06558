//! Environment scope of a render and of the sync that applies it (`--env`).
//!
//! In: the environments chosen (or all) and a tenant's namespaces by environment. Out: which
//! environments a render emits ([`EnvScope::includes`]) and which inventory entries a sync of
//! that render may prune ([`EnvScope::covers`]). An entry belongs to a chosen environment
//! only when its namespace is that environment's, or it is that environment's Namespace; any
//! other entry (another environment's, a removed environment's, or a cluster-scoped object
//! that cannot be attributed) is out of scope: neither applied, pruned nor dropped from the
//! inventory. Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::objects::ObjectId;

/// Which of a tenant's environments a render covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EnvScope {
    /// Every environment of the tenant (what the agent and a plain `fief apply` do).
    #[default]
    All,
    /// Only these environments (`--env`); the others are left exactly as they stand.
    Only(BTreeSet<String>),
}

impl EnvScope {
    /// The scope of `envs`: [`EnvScope::All`] when empty.
    pub fn of(envs: &[String]) -> EnvScope {
        if envs.is_empty() {
            EnvScope::All
        } else {
            EnvScope::Only(envs.iter().cloned().collect())
        }
    }

    /// Whether this is every environment.
    pub fn is_all(&self) -> bool {
        matches!(self, EnvScope::All)
    }

    /// Whether environment `env` is rendered and applied.
    pub fn includes(&self, env: &str) -> bool {
        match self {
            EnvScope::All => true,
            EnvScope::Only(envs) => envs.contains(env),
        }
    }

    /// Whether a sync in this scope owns the recorded object `id` of a tenant whose
    /// namespaces are `namespaces` (by environment): the object is in a chosen environment's
    /// namespace, or is that namespace. Everything else is kept as recorded.
    pub fn covers(&self, id: &ObjectId, namespaces: &BTreeMap<String, String>) -> bool {
        let EnvScope::Only(envs) = self else {
            return true;
        };
        let namespace = if id.namespace.is_empty() {
            if !(id.group.is_empty() && id.kind == "Namespace") {
                // Cluster-scoped and not a namespace: its environment is not recorded.
                return false;
            }
            &id.name
        } else {
            &id.namespace
        };
        envs.iter()
            .any(|e| namespaces.get(e).is_some_and(|ns| ns == namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: &str, namespace: &str, name: &str) -> ObjectId {
        ObjectId {
            group: String::new(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn namespaces() -> BTreeMap<String, String> {
        [("dev", "t-dev"), ("prod", "t-prod")]
            .into_iter()
            .map(|(e, n)| (e.to_string(), n.to_string()))
            .collect()
    }

    #[test]
    fn an_env_scope_covers_its_namespaces_objects_and_the_namespace_itself_only() {
        let dev = EnvScope::of(&["dev".to_string()]);
        let ns = namespaces();
        assert!(dev.covers(&id("ConfigMap", "t-dev", "a"), &ns));
        assert!(dev.covers(&id("Namespace", "", "t-dev"), &ns));
        assert!(!dev.covers(&id("ConfigMap", "t-prod", "a"), &ns));
        assert!(!dev.covers(&id("Namespace", "", "t-prod"), &ns));
        // A removed environment's namespace, and a cluster-scoped object: kept.
        assert!(!dev.covers(&id("ConfigMap", "t-staging", "a"), &ns));
        assert!(!dev.covers(&id("ClusterRole", "", "t-dev"), &ns));
        assert!(dev.includes("dev") && !dev.includes("prod"));
    }

    /// A repo whose tenant `t` runs in dev and prod, with ConfigMaps `a` and (when `with_b`)
    /// `b` in both.
    fn repo(with_b: bool) -> crate::model::Repo {
        let cm =
            |n: &str| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n");
        let mut templates = cm("a");
        if with_b {
            templates.push_str(&cm("b"));
        }
        let files: Vec<(String, String)> = vec![
            ("fief.yaml".into(), "environments: [dev, prod]\n".into()),
            ("components/web/templates/cm.yaml".into(), templates),
            (
                "tenants/t.yaml".into(),
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: t\nspec:\n  environments: [dev, prod]\n  components: [{name: web}]\n".into(),
            ),
        ];
        crate::model::Repo::load(std::sync::Arc::new(crate::snapshot::Snapshot::from_files(
            files,
        )))
    }

    #[test]
    fn a_sync_scoped_to_dev_prunes_only_devs_objects_and_renders_only_dev() {
        use crate::inventory::{Entry, Inventory};
        use crate::pipeline::render_all_in;
        let full = render_all_in(&repo(true), &[], &EnvScope::All).remove(0);
        assert!(full.is_ok(), "{:?}", full.errors);
        let mut inv = Inventory::new("t");
        for o in &full.objects {
            let entry = Entry {
                id: o.id.clone(),
                component: o.component.clone(),
                api_version: "v1".into(),
                hash: o.content_hash().to_string(),
                live: String::new(),
                resource_version: String::new(),
                uid: String::new(),
                managed: String::new(),
                created: None,
                pending: false,
                done: None,
            };
            inv.entries.insert(o.id.clone(), entry);
        }
        let dev = EnvScope::of(&["dev".to_string()]);
        let scoped = render_all_in(&repo(false), &[], &dev).remove(0);
        assert!(scoped.objects.iter().all(|o| o.env == "dev"));
        assert_eq!(scoped.scope, dev);
        let guard = crate::model::PruneGuard::default();
        let live = std::collections::HashMap::new();
        let p = crate::plan::plan(&scoped, Some(&inv), &live, &guard, true);
        let pruned: Vec<String> = p.prune.iter().map(|e| e.id.to_string()).collect();
        assert_eq!(pruned, ["ConfigMap/t-dev/b"], "{pruned:?}");
        // The whole tenant: prod's copy goes too.
        let all = render_all_in(&repo(false), &[], &EnvScope::All).remove(0);
        let p = crate::plan::plan(&all, Some(&inv), &live, &guard, true);
        assert_eq!(p.prune.len(), 2, "{:?}", p.prune);
    }

    #[test]
    fn no_environment_chosen_is_every_environment() {
        let all = EnvScope::of(&[]);
        assert!(all.is_all());
        assert!(all.covers(&id("ClusterRole", "", "x"), &namespaces()));
        assert!(all.includes("anything"));
    }
}
