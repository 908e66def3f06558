//! What the input index keeps of each tenant between updates, and what tells it which
//! tenants a commit touched.
//!
//! In: one tenant's hashing ([`TenantRead`]), a commit's changed paths. Out: the tenant's
//! [`TenantInputs`], its paths and component set shared with the other tenants of the update
//! ([`Shares`]); the tenants whose own or secret files changed ([`Changed`]). Pure.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use super::TenantInputs;

/// The paths and component sets the tenants of one [`super::InputIndex::update`] share:
/// most of a fleet reads the same environment files and uses the same components, so each is
/// held once, not once per tenant.
#[derive(Default)]
pub(super) struct Shares {
    paths: HashSet<Arc<str>>,
    sets: HashSet<Arc<BTreeSet<String>>>,
}

impl Shares {
    /// `read`'s paths and components as held in the index, shared with the tenants before.
    pub(super) fn keep(&mut self, read: TenantRead) -> TenantInputs {
        let files = read.files.iter().map(|f| self.path(f)).collect();
        let components = match self.sets.get(&read.components) {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(read.components);
                self.sets.insert(s.clone());
                s
            }
        };
        TenantInputs {
            hash: read.hash,
            files,
            components,
        }
    }

    fn path(&mut self, path: &str) -> Arc<str> {
        if let Some(p) = self.paths.get(path) {
            return p.clone();
        }
        let p: Arc<str> = Arc::from(path);
        self.paths.insert(p.clone());
        p
    }
}

/// What hashing one tenant found: its hash, and what [`TenantInputs`] keeps of what it read.
pub(super) struct TenantRead {
    pub(super) hash: super::InputHash,
    pub(super) files: Vec<String>,
    pub(super) components: BTreeSet<String>,
}

/// The tenant whose own secret file `path` is, if it is one.
pub(super) fn secret_stem(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("secrets/tenants/")?;
    let name = [".sops.yaml", ".sops.json"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))?;
    (!name.contains('/')).then_some(name)
}

/// What the changed paths say of every tenant at once, so a tenant's check costs no
/// allocation: which tenants' own files (a tenant file added anywhere under `tenants/`,
/// which no earlier hash read, or an own secret file) changed, and whether a shared secret
/// file did.
pub(super) struct Changed<'a> {
    owners: BTreeSet<&'a str>,
    shared_secrets: bool,
}

impl<'a> Changed<'a> {
    pub(super) fn of(changed: &'a BTreeSet<String>) -> Changed<'a> {
        let owners = changed
            .iter()
            .filter_map(|p| crate::model::tenant_stem(p).or_else(|| secret_stem(p)))
            .collect();
        let shared_secrets = crate::secrets::SHARED.iter().any(|f| changed.contains(*f));
        Changed {
            owners,
            shared_secrets,
        }
    }

    /// Whether tenant `name`'s own or shared secret files, or a tenant file of its name,
    /// changed.
    pub(super) fn touches(&self, name: &str) -> bool {
        self.shared_secrets || self.owners.contains(name)
    }
}
