//! `fief.yaml`: repo-wide settings, render-time policy and the prune guard.
//!
//! In: the deserialized file. Out: [`Config`] with its defaults. Pure.

use serde::{Deserialize, Serialize};

/// Settings from `fief.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Config {
    /// Pattern of a tenant's namespace; `{tenant}` and `{env}` are replaced.
    pub namespace_pattern: String,
    /// Namespace of the agent and the inventories.
    pub agent_namespace: String,
    /// Environments of a tenant that lists none.
    pub default_environments: Vec<String>,
    /// Environments tenants may name, besides those with an `environments/<env>.yaml` file.
    /// When the repo declares none at all (no list, no file), any name is accepted.
    pub environments: Vec<String>,
    /// Base domain, given to templates as `fief.baseDomain`.
    pub base_domain: String,
    /// How much one sync may prune before it needs `--allow-mass-prune`.
    pub prune_guard: PruneGuard,
    /// Render-time policy every tenant's objects must pass.
    pub policy: Policy,
}

/// Render-time policy (fief.yaml `policy`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Policy {
    /// Host suffixes an Ingress of a tenant may use; `{tenant}` and `{baseDomain}` are
    /// replaced. A host matches a suffix when it equals it or ends with `.` + suffix.
    pub ingress_host_suffixes: Vec<String>,
    /// Registries (or registry/path prefixes) images may come from; empty allows any.
    /// Images without a registry are `docker.io/library/...` or `docker.io/...`.
    pub allowed_registries: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            ingress_host_suffixes: vec!["{tenant}.{baseDomain}".to_string()],
            allowed_registries: Vec::new(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            namespace_pattern: "{tenant}-{env}".to_string(),
            agent_namespace: "fief-system".to_string(),
            default_environments: vec!["prod".to_string()],
            environments: Vec::new(),
            base_domain: "example.com".to_string(),
            prune_guard: PruneGuard::default(),
            policy: Policy::default(),
        }
    }
}

impl Config {
    /// The namespace of `tenant` in `env`.
    pub fn namespace(&self, tenant: &str, env: &str) -> String {
        self.namespace_pattern
            .replace("{tenant}", tenant)
            .replace("{env}", env)
    }
}

/// Limits on how much one sync may delete (fief.yaml `pruneGuard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PruneGuard {
    /// Refuse to prune more objects than this in one sync.
    pub max_objects: usize,
    /// Refuse to prune more than this percentage of a tenant's inventory in one sync
    /// (only when more than `min_objects` objects would go).
    pub max_percent: usize,
    /// Prunes of at most this many objects never trip the percentage rule.
    pub min_objects: usize,
}

impl Default for PruneGuard {
    fn default() -> Self {
        PruneGuard {
            max_objects: 100,
            max_percent: 50,
            min_objects: 5,
        }
    }
}

impl PruneGuard {
    /// Whether pruning `count` of `total` inventory objects is too many.
    pub fn trips(&self, count: usize, total: usize) -> bool {
        count > self.max_objects
            || (count > self.min_objects && count * 100 > self.max_percent * total.max(1))
    }
}
