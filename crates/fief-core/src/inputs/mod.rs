//! Inputs: a content hash of everything a tenant's render reads, so the agent re-renders only
//! the tenants a commit changed.
//!
//! In: a parsed [`Repo`]. Out: per tenant a hash over fief.yaml, the tenant file, the
//! environment files it uses, every file of the components it enables (and their
//! dependencies), every file those templates include, import or extend by a literal name
//! (followed transitively, wherever it lives in the repo), the baseline, `fief.lock` and the
//! chart archives it names, and the encrypted
//! secret files it reads (shared and its own, as committed: no decryption). A change to a
//! shared component changes exactly the hashes of the tenants that use it; a rotated
//! per-tenant secret changes only that tenant's. [`InputIndex`] remembers what each hash read,
//! so the next commit rehashes only the tenants and components that read a changed path. Every
//! hash is salted with the fief build, and a successful sync records the tenant's in its
//! inventory status ([`crate::inventory::Status::inputs`]). Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::model::{BUILTIN_BASELINE, LOCK_FILE, Repo, pinned_key};
use crate::snapshot::{CHART_ARCHIVES, Entry, Snapshot};

mod hash;
mod kept;
mod opaque;
mod refs;

use kept::{Changed, Shares, TenantRead, secret_stem};

pub use hash::InputHash;
use opaque::OPAQUE;
pub use opaque::reusable;

fn hash_entry(h: &mut Sha256, path: &str, entry: Option<&Entry>) {
    h.update(path.as_bytes());
    h.update([0]);
    match entry {
        None => h.update(b"<absent>"),
        Some(Ok(text)) => h.update(text.as_bytes()),
        // A binary file (a packed subchart) is read by its bytes.
        Some(Err(crate::diagnostic::Problem::Binary { bytes })) => h.update(bytes),
        Some(Err(problem)) => h.update(problem.to_string().as_bytes()),
    }
    h.update([0]);
}

fn hex(h: Sha256) -> String {
    hex::encode(h.finalize())
}

/// Input hash of each tenant, by tenant name (a persistent map: O(1) to copy, and a commit's
/// map shares the unchanged tenants' entries with the last one's).
pub type Hashes = imbl::OrdMap<String, InputHash>;

/// What each hash was computed from, so the next commit recomputes only the hashes whose
/// inputs changed. Build it with [`InputIndex::update`].
#[derive(Debug, Clone, Default)]
pub struct InputIndex {
    /// Hash of the inputs every tenant reads (fief.yaml, the baseline).
    shared: String,
    /// Per component: its hash and the files outside its folder that it includes.
    components: BTreeMap<String, ComponentInputs>,
    /// Per tenant: its hash and what it reads (a persistent map shared with the last index:
    /// a commit that changes only some tenants' own files costs those tenants).
    tenants: imbl::OrdMap<String, Arc<TenantInputs>>,
    /// Each tenant's hash (from `tenants`), kept beside it so [`InputIndex::hashes`] is a copy.
    hashes: Hashes,
}

#[derive(Debug, Clone)]
struct ComponentInputs {
    hash: String,
    outside: BTreeSet<String>,
    /// Some template of it (or one it reaches) names a template by a computed expression.
    computed: bool,
}

#[derive(Debug, Clone)]
struct TenantInputs {
    hash: InputHash,
    /// Its tenant file and environment files: a change to one (including appearing or
    /// disappearing) changes the hash. Secret files change it too, but are found by name
    /// ([`Changed`]), not kept here. Each path is held once for the tenants of one update
    /// ([`Shares`]).
    files: Box<[Arc<str>]>,
    /// The components it uses, dependencies included (missing ones too): one set for the
    /// tenants of an update that use the same ([`Shares`]).
    components: Arc<BTreeSet<String>>,
}

/// What [`InputIndex::update`] computed afresh.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HashStats {
    /// Tenant hashes computed (the others were kept).
    pub tenants_hashed: usize,
    /// Component hashes computed.
    pub components_hashed: usize,
}

fn dir_hash(snapshot: &Snapshot, dir: &str) -> String {
    let mut h = Sha256::new();
    for (path, entry) in snapshot.under(dir) {
        hash_entry(&mut h, path, Some(entry));
    }
    hex(h)
}

/// What every hash is salted with: the fief build that renders (its version, the commit it
/// was built from and a hash of its sources), so a recorded hash never outlives a change of
/// the renderer.
const RENDERER: &str = concat!(
    "fief ",
    env!("CARGO_PKG_VERSION"),
    " ",
    env!("FIEF_GIT_COMMIT"),
    " ",
    env!("FIEF_SOURCE_HASH")
);

fn shared_hash(snapshot: &Snapshot) -> String {
    let mut shared = Sha256::new();
    shared.update(RENDERER.as_bytes());
    shared.update([0]);
    hash_entry(&mut shared, "fief.yaml", snapshot.get("fief.yaml"));
    // The lock and the archives it names (or why one could not be fetched): a chart's
    // content, read by the tenants whose components take it from a repository.
    hash_entry(&mut shared, LOCK_FILE, snapshot.get(LOCK_FILE));
    for (path, entry) in snapshot.under(CHART_ARCHIVES) {
        hash_entry(&mut shared, path, Some(entry));
    }
    if snapshot.has_dir("baseline") {
        shared.update(dir_hash(snapshot, "baseline").as_bytes());
        let reach = refs::reach(snapshot, "baseline");
        for path in &reach.outside {
            hash_entry(&mut shared, path, snapshot.get(path));
        }
        if reach.computed {
            return format!("{OPAQUE}{}", hex(shared));
        }
    } else {
        for (name, text) in BUILTIN_BASELINE {
            shared.update(name.as_bytes());
            shared.update(text.as_bytes());
        }
    }
    hex(shared)
}

fn component_inputs(snapshot: &Snapshot, name: &str) -> ComponentInputs {
    let dir = format!("components/{name}");
    let mut h = Sha256::new();
    h.update(dir_hash(snapshot, &dir).as_bytes());
    let refs::Reach { outside, computed } = refs::reach(snapshot, &dir);
    for path in &outside {
        hash_entry(&mut h, path, snapshot.get(path));
    }
    ComponentInputs {
        hash: hex(h),
        outside,
        computed,
    }
}

fn tenant_inputs(
    repo: &Repo,
    name: &str,
    shared: &str,
    components: &BTreeMap<String, ComponentInputs>,
) -> TenantRead {
    let snapshot = &repo.snapshot;
    let mut files: Vec<String> = repo.tenant_files.get(name).cloned().unwrap_or_default();
    let mut h = Sha256::new();
    h.update(shared.as_bytes());
    let file = repo.tenant_file(name);
    hash_entry(&mut h, &file, snapshot.get(&file));
    for path in repo.secrets.paths_for(name) {
        hash_entry(&mut h, &path, snapshot.get(&path));
    }
    let mut seen = BTreeSet::new();
    if let Some(Ok(tenant)) = repo.tenants.get(name) {
        let envs = if tenant.spec.environments.is_empty() {
            repo.config
                .as_ref()
                .map(|c| c.default_environments.clone())
                .unwrap_or_default()
        } else {
            tenant.spec.environments.to_vec()
        };
        for env in envs {
            let path = format!("environments/{env}.yaml");
            hash_entry(&mut h, &path, snapshot.get(&path));
            files.push(path);
            files.push(format!("environments/{env}.yml"));
        }
        // Enabled components (a pinned one as the folder read at its ref) and, transitively,
        // what they depend on (at the head).
        let mut todo: Vec<String> = tenant.spec.components.iter().map(|c| c.key()).collect();
        // An environment's own ref reads that component's folder at it too.
        todo.extend(tenant.spec.pinned_refs().map(|(c, r)| pinned_key(c, r)));
        while let Some(c) = todo.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(Ok(component)) = repo.components.get(&c) {
                todo.extend(component.meta.depends_on.iter().cloned());
            }
        }
        for c in &seen {
            h.update(c.as_bytes());
            match components.get(c) {
                Some(inputs) => h.update(inputs.hash.as_bytes()),
                None => h.update(b"<missing>"),
            }
        }
    }
    let computed = shared.starts_with(OPAQUE)
        || seen
            .iter()
            .any(|c| components.get(c).is_some_and(|i| i.computed));
    TenantRead {
        hash: InputHash::finish(h, computed),
        files,
        components: seen,
    }
}

impl InputIndex {
    /// Index `repo` afresh (`prev` none), or from `prev`, the index of the previous commit,
    /// and `changed`, the paths changed since ([`Snapshot::changed_since`]): only the
    /// components and tenants that read a changed path are hashed again. The hashes equal a
    /// full index of the same repo; a one-tenant change hashes one tenant at any fleet size,
    /// a shared component change exactly the tenants that use it.
    pub fn update(
        repo: &Repo,
        prev: Option<(&InputIndex, &BTreeSet<String>)>,
    ) -> (InputIndex, HashStats) {
        let snapshot = &repo.snapshot;
        let mut stats = HashStats::default();
        let shared = match prev {
            Some((p, changed))
                if !changed.contains("fief.yaml")
                    && !changed.contains(LOCK_FILE)
                    && !touched("baseline/", changed)
                    && !touched(&format!("{CHART_ARCHIVES}/"), changed) =>
            {
                p.shared.clone()
            }
            _ => shared_hash(snapshot),
        };
        let shared_changed = prev.is_none_or(|(p, _)| p.shared != shared);
        let (components, dirty) = index_components(repo, prev, &mut stats);
        let mut shares = Shares::default();
        let mut hash = |name: &str| {
            stats.tenants_hashed += 1;
            Arc::new(shares.keep(tenant_inputs(repo, name, &shared, &components)))
        };
        // Only tenants' own files changed: rehash exactly those tenants.
        let own = prev
            .filter(|_| !shared_changed && dirty.is_empty())
            .and_then(|(p, changed)| Some((p, owners_of(changed)?)));
        let (tenants, hashes) = match own {
            Some((p, owners)) => rehash_owners(repo, p, owners, &mut hash),
            None => index_tenants(repo, prev.filter(|_| !shared_changed), &dirty, &mut hash),
        };
        let index = InputIndex {
            shared,
            components,
            tenants,
            hashes,
        };
        (index, stats)
    }

    /// Input hash of every tenant, by tenant name (an O(1) copy).
    pub fn hashes(&self) -> Hashes {
        self.hashes.clone()
    }
}

/// Whether a path under `prefix` changed.
fn touched(prefix: &str, changed: &BTreeSet<String>) -> bool {
    changed
        .range(prefix.to_string()..)
        .next()
        .is_some_and(|p| p.starts_with(prefix))
}

/// Every component's inputs, kept from `prev` when nothing it reads changed; and the
/// "dirty" components: new, removed or changed ones.
fn index_components(
    repo: &Repo,
    prev: Option<(&InputIndex, &BTreeSet<String>)>,
    stats: &mut HashStats,
) -> (BTreeMap<String, ComponentInputs>, BTreeSet<String>) {
    let mut dirty: BTreeSet<String> = BTreeSet::new();
    let mut components = BTreeMap::new();
    for name in repo.components.keys() {
        let kept = prev.and_then(|(p, changed)| {
            let old = p.components.get(name)?;
            let unchanged = !touched(&format!("components/{name}/"), changed)
                && old.outside.iter().all(|f| !changed.contains(f));
            unchanged.then(|| old.clone())
        });
        let inputs = kept.unwrap_or_else(|| {
            stats.components_hashed += 1;
            dirty.insert(name.clone());
            component_inputs(&repo.snapshot, name)
        });
        components.insert(name.clone(), inputs);
    }
    if let Some((p, _)) = prev {
        dirty.extend(
            p.components
                .keys()
                .filter(|c| !components.contains_key(*c))
                .cloned(),
        );
    }
    (components, dirty)
}

/// The tenants of the previous index with exactly `owners` hashed again (or removed).
fn rehash_owners(
    repo: &Repo,
    prev: &InputIndex,
    owners: BTreeSet<String>,
    hash: &mut dyn FnMut(&str) -> Arc<TenantInputs>,
) -> (imbl::OrdMap<String, Arc<TenantInputs>>, Hashes) {
    let (mut tenants, mut hashes) = (prev.tenants.clone(), prev.hashes.clone());
    for name in owners {
        if repo.tenants.contains_key(&name) {
            let inputs = hash(&name);
            hashes.insert(name.clone(), inputs.hash);
            tenants.insert(name, inputs);
        } else {
            tenants.remove(&name);
            hashes.remove(&name);
        }
    }
    (tenants, hashes)
}

/// Every tenant's inputs, kept from `prev` (given only when the shared inputs are unchanged)
/// when none of its files changed and none of its components is dirty.
fn index_tenants(
    repo: &Repo,
    prev: Option<(&InputIndex, &BTreeSet<String>)>,
    dirty: &BTreeSet<String>,
    hash: &mut dyn FnMut(&str) -> Arc<TenantInputs>,
) -> (imbl::OrdMap<String, Arc<TenantInputs>>, Hashes) {
    let mut tenants = imbl::OrdMap::new();
    let changes = prev.map(|(_, changed)| Changed::of(changed));
    for name in repo.tenants.keys() {
        let kept = prev.zip(changes.as_ref()).and_then(|((p, changed), by)| {
            p.tenants.get(name).filter(|old| {
                !by.touches(name)
                    && old.files.iter().all(|f| !changed.contains(&**f))
                    && old.components.iter().all(|c| !dirty.contains(c))
            })
        });
        let inputs = match kept {
            Some(old) => old.clone(),
            None => hash(name),
        };
        tenants.insert(name.clone(), inputs);
    }
    let hashes = tenants.iter().map(|(n, t)| (n.clone(), t.hash)).collect();
    (tenants, hashes)
}

/// The tenants whose own files (tenant file, own secret file) are the changed paths, when
/// every changed path is one of those; none when any other path changed.
fn owners_of(changed: &BTreeSet<String>) -> Option<BTreeSet<String>> {
    changed
        .iter()
        .map(|path| {
            crate::model::tenant_stem(path)
                .or_else(|| secret_stem(path))
                .map(str::to_string)
        })
        .collect()
}

/// What every tenant's hash shares (fief.yaml and the baseline, each component's files), to
/// hash tenants one at a time: [`TenantHasher::hash`] of a repo that holds the tenant (the
/// whole repo, or one tenant of an [`crate::model::Indexed`] repo) equals the tenant's entry
/// in [`tenant_hashes`] of the whole repo.
pub struct TenantHasher {
    shared: String,
    components: BTreeMap<String, ComponentInputs>,
}

impl TenantHasher {
    /// The shared inputs of `repo` (its tenants are not read).
    pub fn new(repo: &Repo) -> TenantHasher {
        let (components, _) = index_components(repo, None, &mut HashStats::default());
        TenantHasher {
            shared: shared_hash(&repo.snapshot),
            components,
        }
    }

    /// The input hash of tenant `name` of `repo`.
    pub fn hash(&self, repo: &Repo, name: &str) -> InputHash {
        tenant_inputs(repo, name, &self.shared, &self.components).hash
    }
}

/// Input hashes of every tenant of the repo, by tenant name.
pub fn tenant_hashes(repo: &Repo) -> Hashes {
    InputIndex::update(repo, None).0.hashes()
}

/// Fill in each render's [`TenantRender::inputs`] from `hashes` (renders of tenants it does
/// not name, or whose hash is not [`reusable`], keep an empty one: unknown).
pub fn stamp(renders: &mut [crate::render::TenantRender], hashes: &Hashes) {
    for r in renders {
        if let Some(h) = hashes.get(&r.tenant).filter(|h| h.is_reusable()) {
            r.inputs = h.to_string();
        }
    }
}

#[cfg(test)]
mod tests;
