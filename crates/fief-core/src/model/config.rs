//! `fief.yaml`: repo-wide settings, render-time policy and the prune guard.
//!
//! In: the deserialized file. Out: [`Config`] with its defaults. Pure.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Tenant;

/// Settings from `fief.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
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
    /// Glob patterns (`*` matches any run of characters) of namespaces no tenant may have,
    /// on top of the always reserved `kube-*`, `default` and the agent namespace.
    pub reserved_namespaces: Vec<String>,
    /// Kinds components may create beyond the default kinds (workloads, config, Services,
    /// Ingress, HPA, PDB, Lease, Role), as `group/Kind`
    /// (`monitoring.coreos.com/ServiceMonitor`) or `group/Kind/resource` when the plural
    /// resource name is not the regular English plural of the kind.
    pub component_kinds: Vec<String>,
    /// The Kubernetes version `helm` components' charts are rendered for (`1.34.0`): what
    /// `.Capabilities.KubeVersion` says and what a chart's `kubeVersion:` constraint is
    /// checked against, as `helm template --kube-version`. Default: Helm's built-in version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// API versions added to the ones `helm template` gives charts in
    /// `.Capabilities.APIVersions` (`monitoring.coreos.com/v1`, or `group/version/Kind`), as
    /// `helm template --api-versions`: charts gate objects of a CRD's kind (a ServiceMonitor)
    /// on them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// Progressive rollout waves for changes that reach many tenants (the agent only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<super::RolloutConfig>,
    /// The platform's notification channels (the agent only): each receives every tenant's
    /// messages and the rollout's.
    #[serde(skip_serializing_if = "super::Notifications::is_empty")]
    pub notifications: super::Notifications,
    /// Spare tenants kept ready for `fief allocate`: how many, and what each runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spares: Option<super::Spares>,
}

/// Namespaces no tenant may have, whatever fief.yaml says (the agent namespace too).
pub const ALWAYS_RESERVED_NAMESPACES: [&str; 2] = ["kube-*", "default"];

/// Kinds every component may create (`group/Kind`, core group empty), as the baseline
/// `fief-deployer` Role grants them to the tenant's `fief-tenant` ServiceAccount.
pub const DEFAULT_COMPONENT_KINDS: [&str; 17] = [
    "apps/Deployment",
    "apps/StatefulSet",
    "apps/DaemonSet",
    "apps/ReplicaSet",
    "/ConfigMap",
    "/Secret",
    "/Service",
    "/PersistentVolumeClaim",
    "/ServiceAccount",
    "/Pod",
    "batch/Job",
    "batch/CronJob",
    "networking.k8s.io/Ingress",
    "autoscaling/HorizontalPodAutoscaler",
    "policy/PodDisruptionBudget",
    "coordination.k8s.io/Lease",
    "rbac.authorization.k8s.io/Role",
];

/// Kinds that come with their default kind and need no entry of their own.
const IMPLIED_KINDS: [(&str, &str, &str); 1] =
    [("rbac.authorization.k8s.io", "Role", "RoleBinding")];

/// One kind components may create, with the resource name RBAC rules use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComponentKind {
    /// API group (`""` for the core group).
    pub group: String,
    /// Kind, e.g. `ServiceMonitor`.
    pub kind: String,
    /// Plural resource, e.g. `servicemonitors`.
    pub resource: String,
}

/// The plural resource name Kubernetes derives from a kind (`NetworkPolicy` → `networkpolicies`).
pub fn plural_of(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// Parse one `componentKinds` entry: `group/Kind` or `group/Kind/resource`.
pub fn parse_component_kind(entry: &str) -> Option<ComponentKind> {
    let mut parts = entry.split('/');
    let group = parts.next()?.trim();
    let kind = parts.next()?.trim();
    let resource = parts.next().map(str::trim);
    if parts.next().is_some()
        || kind.is_empty()
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
        || !kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !group
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        || resource.is_some_and(|r| {
            r.is_empty()
                || !r
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
    {
        return None;
    }
    Some(ComponentKind {
        group: group.to_string(),
        kind: kind.to_string(),
        resource: resource.map_or_else(|| plural_of(kind), str::to_string),
    })
}

/// Whether `name` matches the glob `pattern` (`*` matches any run of characters).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if name.len() < first.len() + last.len() || !name.starts_with(first) || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// Render-time policy (fief.yaml `policy`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
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
            reserved_namespaces: Vec::new(),
            component_kinds: Vec::new(),
            kubernetes_version: None,
            api_versions: Vec::new(),
            rollout: None,
            notifications: super::Notifications::default(),
            spares: None,
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

    /// The reserved pattern `namespace` matches, if any: `kube-*`, `default`, the agent
    /// namespace, then fief.yaml `reservedNamespaces`.
    pub fn reserved_match(&self, namespace: &str) -> Option<String> {
        ALWAYS_RESERVED_NAMESPACES
            .iter()
            .map(|p| p.to_string())
            .chain(std::iter::once(self.agent_namespace.clone()))
            .chain(self.reserved_namespaces.iter().cloned())
            .find(|p| glob_match(p, namespace))
    }

    /// Every kind components may create: the defaults, the kinds they imply (RoleBinding
    /// with Role) and fief.yaml `componentKinds` (entries that do not parse are left out;
    /// loading the repo reports them).
    pub fn component_kinds(&self) -> Vec<ComponentKind> {
        let mut kinds: Vec<ComponentKind> = DEFAULT_COMPONENT_KINDS
            .iter()
            .map(|s| s.to_string())
            .chain(self.component_kinds.iter().cloned())
            .filter_map(|s| parse_component_kind(&s))
            .collect();
        for (group, kind, implied) in IMPLIED_KINDS {
            if kinds.iter().any(|k| k.group == group && k.kind == kind) {
                kinds.push(ComponentKind {
                    group: group.to_string(),
                    kind: implied.to_string(),
                    resource: plural_of(implied),
                });
            }
        }
        let mut seen = Vec::new();
        kinds.retain(|k| {
            let key = (k.group.clone(), k.kind.clone());
            let new = !seen.contains(&key);
            seen.push(key);
            new
        });
        kinds
    }

    /// [`Config::component_kinds`], worked out once per thread for each `componentKinds`
    /// setting (every tenant's render and validation asks for it).
    pub fn component_kinds_shared(&self) -> Arc<[ComponentKind]> {
        type Cached = Option<(Vec<String>, Arc<[ComponentKind]>)>;
        thread_local! {
            static CACHE: RefCell<Cached> = const { RefCell::new(None) };
        }
        CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            match cache.as_ref() {
                Some((key, kinds)) if *key == self.component_kinds => kinds.clone(),
                _ => {
                    let kinds: Arc<[ComponentKind]> = self.component_kinds().into();
                    *cache = Some((self.component_kinds.clone(), kinds.clone()));
                    kinds
                }
            }
        })
    }
}

/// Limits on how much one sync may delete (fief.yaml `pruneGuard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct PruneGuard {
    /// Refuse to prune more objects than this in one sync.
    pub max_objects: usize,
    /// Refuse to prune more than this percentage of a tenant's inventory in one sync
    /// (only when more than `minObjects` objects would go).
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

/// The namespaces of a tenant, by environment.
pub fn namespaces(config: &Config, tenant: &Tenant) -> BTreeMap<String, String> {
    environments(config, tenant)
        .iter()
        .map(|e| (e.clone(), config.namespace(&tenant.metadata.name, e)))
        .collect()
}

/// The environments of a tenant: its own list, else fief.yaml's default ones.
pub fn environments(config: &Config, tenant: &Tenant) -> Vec<String> {
    if tenant.spec.environments.is_empty() {
        config.default_environments.clone()
    } else {
        tenant.spec.environments.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("kube-*", "kube-system"));
        assert!(!glob_match("kube-*", "my-kube-system"));
        assert!(glob_match("default", "default"));
        assert!(!glob_match("default", "default-x"));
        assert!(glob_match("*-infra-*", "team-infra-prod"));
        assert!(glob_match("cert-*r", "cert-manager"));
        assert!(!glob_match("ab*ba", "aba"));
    }

    #[test]
    fn reserved_namespaces_include_kube_default_and_the_agent_namespace() {
        let mut c = Config {
            agent_namespace: "ops".to_string(),
            reserved_namespaces: vec!["cert-*".to_string()],
            ..Config::default()
        };
        assert_eq!(c.reserved_match("kube-system").as_deref(), Some("kube-*"));
        assert_eq!(c.reserved_match("default").as_deref(), Some("default"));
        assert_eq!(c.reserved_match("ops").as_deref(), Some("ops"));
        assert_eq!(c.reserved_match("cert-manager").as_deref(), Some("cert-*"));
        assert_eq!(c.reserved_match("acme-prod"), None);
        c.reserved_namespaces.clear();
        assert_eq!(c.reserved_match("cert-manager"), None);
    }

    #[test]
    fn component_kinds_parse_with_regular_and_explicit_plurals() {
        let k = parse_component_kind("monitoring.coreos.com/ServiceMonitor").unwrap();
        assert_eq!(k.resource, "servicemonitors");
        assert_eq!(plural_of("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural_of("Ingress"), "ingresses");
        assert_eq!(plural_of("Gateway"), "gateways");
        let k = parse_component_kind("example.com/Octopus/octopi").unwrap();
        assert_eq!(k.resource, "octopi");
        assert!(parse_component_kind("ServiceMonitor").is_none());
        assert!(parse_component_kind("a/b/c/d").is_none());
        assert!(parse_component_kind("Monitoring/ServiceMonitor").is_none());
        let kinds = Config::default().component_kinds();
        assert!(kinds.iter().any(|k| k.kind == "RoleBinding"));
        assert_eq!(kinds.len(), DEFAULT_COMPONENT_KINDS.len() + 1);
    }
}
