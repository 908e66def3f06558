//! A tenant file (`tenants/<tenant>.yaml`): who the tenant is, where it runs, what it runs.
//!
//! In: the deserialized file. Out: [`Tenant`] and its parts, its per-environment overrides
//! ([`EnvOverride`]) among them; how an override applies is `overrides.rs`'s. Pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Packed;

/// Lifecycle state of a tenant.
#[derive(
    Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TenantState {
    /// Everything rendered.
    #[default]
    Active,
    /// Workloads scaled to zero.
    Frozen,
    /// Only the baseline and data-holding objects.
    Archived,
    /// Nothing rendered: everything of the tenant is deleted.
    Purged,
}

/// A tenant file.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tenant {
    /// Must be `fief.dev/v1alpha1`.
    #[schemars(extend("const" = "fief.dev/v1alpha1"))]
    pub api_version: String,
    /// Must be `Tenant`.
    #[schemars(extend("const" = "Tenant"))]
    pub kind: String,
    /// Name and labels.
    pub metadata: TenantMeta,
    /// What the tenant runs.
    #[serde(default)]
    pub spec: TenantSpec,
}

/// Tenant metadata.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantMeta {
    /// DNS-1123 label, equal to the file name (without `.yaml`; wherever the file is under
    /// `tenants/`).
    pub name: String,
    /// Free-form labels, given to templates.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Free-form annotations, given to templates.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// A tenant's spec. Its default (a tenant file without `spec:`) is the same as an empty
/// `spec: {}`: cluster `default`, active, nothing else.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TenantSpec {
    /// Lifecycle state.
    #[serde(default)]
    pub state: TenantState,
    /// Which cluster's agent owns this tenant.
    #[serde(default = "default_cluster")]
    pub cluster: String,
    /// Who owns the tenant.
    #[serde(default)]
    pub owner: Arc<Owner>,
    /// Environments; one namespace each. Empty means fief.yaml's default.
    #[serde(default)]
    pub environments: Arc<[String]>,
    /// Resource quota per namespace.
    #[serde(default)]
    pub quota: Arc<Quota>,
    /// Who may do what in the tenant's namespaces.
    #[serde(default)]
    pub access: Access,
    /// Components the tenant runs.
    // Each entry, as the environments, owner and quota, is shared by the tenants of one load
    // that declare it alike (`load/tenants.rs`): they repeat across a fleet, and the agent
    // keeps every tenant parsed. (A plain comment: doc comments are the JSON Schema's text.)
    #[serde(default)]
    pub components: Vec<Arc<ComponentRef>>,
    /// Extra Ingress host suffixes this tenant may use (e.g. its own domain).
    #[serde(default)]
    pub host_suffixes: Vec<String>,
    /// What differs per environment, by environment name: a component's version and values,
    /// the quota, the access lists. Each key must be one of the tenant's environments.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, EnvOverride>,
    /// The tenant's own notification channels (the agent only): each receives this tenant's
    /// messages, and no other tenant's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<super::Channel>,
    /// A spare (fief.yaml `spares:`): applied and kept ready like any tenant, shown as a spare
    /// in status, until `fief allocate` makes it a customer's tenant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spare: bool,
}

fn default_cluster() -> String {
    "default".to_string()
}

impl Default for TenantSpec {
    fn default() -> Self {
        TenantSpec {
            state: TenantState::default(),
            cluster: default_cluster(),
            owner: Arc::default(),
            environments: Arc::from([]),
            quota: Arc::default(),
            access: Access::default(),
            components: Vec::new(),
            host_suffixes: Vec::new(),
            overrides: BTreeMap::new(),
            notifications: Vec::new(),
            spare: false,
        }
    }
}

/// Owner of a tenant.
#[derive(
    Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, Hash, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Owner {
    /// Contact e-mail.
    #[serde(default)]
    pub email: String,
    /// Organisation name.
    #[serde(default)]
    pub organization: String,
}

/// A Kubernetes quantity written as a string or a number.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Quantity {
    /// `"2"`, `4Gi`.
    Text(String),
    /// `2`.
    Int(i64),
    /// `0.5`.
    Float(f64),
}

/// Per-namespace quota; absent fields are not limited.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// CPU (requests and limits).
    pub cpu: Option<Quantity>,
    /// Memory (requests and limits).
    pub memory: Option<Quantity>,
    /// Number of pods.
    pub pods: Option<Quantity>,
    /// Storage requested by PVCs.
    pub storage: Option<Quantity>,
}

/// Users (or `group:NAME` groups) per role.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Access {
    /// Full control of workloads, config and secrets.
    #[serde(default)]
    pub admins: Vec<String>,
    /// Workloads and config, no secrets or RBAC.
    #[serde(default)]
    pub operators: Vec<String>,
    /// Read-only.
    #[serde(default)]
    pub viewers: Vec<String>,
}

/// What differs in one environment of the tenant. Fields left out keep the tenant's setting.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvOverride {
    /// Quota fields for this environment's namespace; the fields given replace the tenant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
    /// Access lists for this environment's namespace; each list given replaces the tenant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessOverride>,
    /// Per component of the tenant (by name): its version, git ref and values in this
    /// environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, ComponentOverride>,
}

/// A component of the tenant in one environment.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentOverride {
    /// The version in this environment (given to templates as `component.version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Render `components/<name>/` as it is at this git ref of the tenants repo (tag, branch
    /// or commit) in this environment, over the component entry's own `ref` (or the head).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Values over the tenant's own for this environment, merged key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Packed>,
}

/// Access lists of one environment; a list left out keeps the tenant's.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessOverride {
    /// Full control of workloads, config and secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admins: Option<Vec<String>>,
    /// Workloads and config, no secrets or RBAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operators: Option<Vec<String>>,
    /// Read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewers: Option<Vec<String>>,
}

/// A component enabled for a tenant.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentRef {
    /// Name of a directory under `components/`.
    pub name: String,
    /// Version given to templates; defaults to component.yaml's `version`.
    #[serde(default)]
    pub version: Option<String>,
    /// Render `components/<name>/` as it is at this git ref of the tenants repo (tag, branch
    /// or commit) instead of the head.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Per-tenant overrides of the component's values.
    #[serde(default)]
    pub values: Option<Packed>,
}

impl ComponentRef {
    /// The key of the component this entry renders in [`super::Repo::components`]: the name,
    /// or the pinned folder name when it pins a ref.
    pub fn key(&self) -> String {
        match &self.git_ref {
            Some(r) => pinned_key(&self.name, r),
            None => self.name.clone(),
        }
    }
}

/// The folder a pinned component is read into: `<component>@<ref>` with `/` and `%` escaped,
/// so `release/1.5` stays one path segment.
pub fn pinned_key(component: &str, git_ref: &str) -> String {
    format!(
        "{component}@{}",
        git_ref.replace('%', "%25").replace('/', "%2F")
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::model::Repo;
    use crate::snapshot::Snapshot;

    #[test]
    fn a_tenant_file_without_spec_belongs_to_the_default_cluster_like_an_empty_spec() {
        let head = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: ";
        let files = [
            ("tenants/bare.yaml", format!("{head}bare\n")),
            ("tenants/empty.yaml", format!("{head}empty\nspec: {{}}\n")),
        ];
        let repo = Repo::load(Arc::new(Snapshot::from_files(files)));
        let bare = &repo.tenants["bare"].as_ref().unwrap().spec;
        let empty = &repo.tenants["empty"].as_ref().unwrap().spec;
        assert_eq!(bare.cluster, "default");
        assert_eq!(bare, empty);
    }
}
