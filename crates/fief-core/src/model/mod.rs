//! The tenants repo model (format v1): fief.yaml, tenants, components, environments, baseline.
//!
//! In: a [`Snapshot`]. Out: a [`Repo`] whose parts are each either parsed or a list of
//! diagnostics, so one bad file fails only the tenants that read it; or, for a render of a
//! large fleet a batch at a time, an [`Indexed`] repo that holds a small index per tenant and
//! reads each tenant file again when it renders. Unknown fields are errors everywhere.

mod across;
mod chart;
mod component;
mod config;
mod indexed;
mod json_schema;
mod kustomize;
mod load;
mod notifications;
mod overrides;
mod packed;
mod reference;
mod rollout;
mod spares;
mod tenant;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::objects::is_dns_label;
pub use across::{Across, Claims, Suffix, label_key};
pub use chart::{
    ChartLock, ChartRef, ChartSource, LOCK_COMMAND, LOCK_FILE, Locked, LockedChart,
    is_exact_version,
};
pub use component::{
    Component, ComponentMeta, CrdPolicy, Dependencies, Environment, Health, Package, RenderKind,
    parse_duration,
};
pub use config::{
    ALWAYS_RESERVED_NAMESPACES, ComponentKind, Config, DEFAULT_COMPONENT_KINDS, Policy, PruneGuard,
    environments, glob_match, namespaces, parse_component_kind, plural_of,
};
pub use indexed::{Indexed, TenantReader};
pub use json_schema::RepoFile;
pub use kustomize::{
    ImageFromValues, ImageSetting, KustomizeFromValues, KustomizeSettings, ReplicaSetting,
    ReplicasFromValues, is_var_name, lookup as lookup_value,
};
pub use load::archive::{digest_of, unpack_chart};
pub use load::{LoadStats, line_of_key, tenant_stem};
pub use notifications::{
    Channel, Notifications, ProviderType, SecretKeyRef, SecretRef, UrlError, UrlSource, resolve_url,
};
pub use packed::Packed;
pub use reference::repo_format_markdown;
pub use rollout::{RolloutConfig, WaveSpec};
pub use spares::{Allocation, AllocationError, ID_LEN, Spares, allocate, tenant_yaml};
pub use tenant::{
    Access, AccessOverride, ComponentOverride, ComponentRef, EnvOverride, Owner, Quantity, Quota,
    Tenant, TenantMeta, TenantSpec, TenantState, pinned_key,
};

use crate::diagnostic::Diagnostic;
use crate::snapshot::Snapshot;

/// The component name reserved for the per-tenant baseline.
pub const BASELINE: &str = "baseline";
/// API version of tenant files.
pub const API_VERSION: &str = "fief.dev/v1alpha1";

/// Parsed, or the diagnostics of the file(s) behind it.
pub type Parsed<T> = Result<T, Vec<Diagnostic>>;

/// Every tenant file of a repo by file stem, parsed or not.
pub type Tenants = imbl::OrdMap<String, Parsed<Arc<Tenant>>>;

/// The files of each tenant by tenant name (the file name without `.yaml` or `.yml`): every
/// such file under `tenants/`, at any depth, sorted. One path, or `x.yaml` and `x.yml` side by
/// side, load the tenant; paths in two directories are an error. A persistent map, as
/// [`Tenants`].
pub type TenantFiles = imbl::OrdMap<String, Vec<String>>;

/// The whole repo, part by part.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The files.
    pub snapshot: Arc<Snapshot>,
    /// fief.yaml.
    pub config: Parsed<Config>,
    /// Tenants by file stem (a persistent map: a repo loaded from the previous one shares its
    /// unchanged tenants, and copying it costs nothing).
    pub tenants: Tenants,
    /// The file of each tenant, by name (see [`Repo::tenant_file`]).
    pub tenant_files: TenantFiles,
    /// The tenants whose file pins a component to a git ref (kept beside `tenants` by an
    /// incremental load, so finding the pins costs the pinning tenants, not the fleet).
    pub pinning: imbl::OrdSet<String>,
    /// Components by directory name (shared by the repo's copies: an indexed repo makes one
    /// per tenant it renders).
    pub components: Arc<BTreeMap<String, Parsed<Component>>>,
    /// Environments by file stem (shared as `components`).
    pub environments: Arc<BTreeMap<String, Parsed<Environment>>>,
    /// Baseline templates: the repo's `baseline/` if it has one, else the built-in ones.
    pub baseline: Vec<String>,
    /// SOPS secret files (parsed, not decrypted) and how to unlock them.
    pub secrets: crate::secrets::Secrets,
    /// The cross-tenant index, built on first use ([`Repo::across`]) or carried over from
    /// the previous repo by [`Repo::load_reusing`].
    pub(crate) across: std::sync::OnceLock<Arc<Across>>,
}

impl Repo {
    /// The file a tenant is read from: its path under `tenants/` (of `x.yaml` and `x.yml`
    /// side by side, `x.yml`), or `tenants/<name>.yaml` for a name no file declares.
    pub fn tenant_file(&self, name: &str) -> String {
        self.tenant_files
            .get(name)
            .and_then(|paths| paths.last())
            .cloned()
            .unwrap_or_else(|| format!("tenants/{name}.yaml"))
    }

    /// What the checks across tenants read of every tenant file (built once per repo).
    pub fn across(&self) -> &Across {
        self.across
            .get_or_init(|| Arc::new(Across::build(&self.config, &self.tenants)))
    }

    /// Whether [`Repo::across`] is built already: carried from the load this one reused
    /// ([`Repo::load_reusing`] updates the changed tenants' entries of it), or built by a call.
    pub fn across_built(&self) -> bool {
        self.across.get().is_some()
    }
}

/// The built-in baseline templates, keyed by the name they are rendered under.
pub const BUILTIN_BASELINE: [(&str, &str); 6] = [
    (
        "<builtin>/templates/namespace.yaml",
        include_str!("../../../../templates/namespace.yaml"),
    ),
    (
        "<builtin>/templates/rbac.yaml",
        include_str!("../../../../templates/rbac.yaml"),
    ),
    (
        "<builtin>/templates/quota.yaml",
        include_str!("../../../../templates/quota.yaml"),
    ),
    (
        "<builtin>/templates/networkpolicy.yaml",
        include_str!("../../../../templates/networkpolicy.yaml"),
    ),
    (
        "<builtin>/templates/serviceaccount.yaml",
        include_str!("../../../../templates/serviceaccount.yaml"),
    ),
    (
        "<builtin>/templates/deployer.yaml",
        include_str!("../../../../templates/deployer.yaml"),
    ),
];

impl Repo {
    /// [`Problem::UnknownComponent`](crate::diagnostic::Problem::UnknownComponent) for `name`,
    /// with the repo's nearest component name as a did-you-mean.
    pub fn unknown_component(&self, name: &str) -> crate::diagnostic::Problem {
        let known = self
            .components
            .keys()
            .filter(|k| !k.contains('@'))
            .map(String::as_str);
        crate::diagnostic::Problem::UnknownComponent {
            component: name.to_string(),
            suggestion: crate::suggest::suggest(name, known)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default(),
        }
    }
}
