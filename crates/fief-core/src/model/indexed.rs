//! A repo loaded for rendering a large fleet a batch at a time: every part of [`Repo`] but the
//! parsed tenant files, which are read and parsed again when their tenant renders.
//!
//! In: a snapshot without the tenant files' text, the paths of those files (the source lists
//! them without reading them) and a [`TenantReader`] that reads one. Out: an [`Indexed`] repo
//! that holds per tenant only its name and file paths, its entries in the cross-tenant index
//! (namespaces, claimed host suffixes) and a hash of the file as that index read it, plus the
//! (component, ref) pins of the fleet; and, when a tenant renders, a [`Repo`] holding that
//! one tenant parsed ([`Indexed::tenant_repo`]), dropped with its render. Every diagnostic of
//! a tenant file is the one [`Repo::load`] gives. A file that changed between the two reads
//! fails its tenant (the checks across tenants judged the first one). Pure (the reader reads).

use std::collections::{BTreeSet, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use super::across::{Across, claims};
use super::load::tenants::{declared_twice, load_tenant};
use super::{Config, Parsed, Repo, Tenant, TenantFiles, Tenants, tenant_stem};
use crate::diagnostic::Problem;
use crate::snapshot::{Entry, Snapshot};

/// Reads one tenant file (the source of the repo: a checkout on disk).
pub trait TenantReader: Send + Sync {
    /// The file at the repo-relative `path`: its text, or why it cannot be used.
    fn read(&self, path: &str) -> Entry;
}

/// A snapshot that holds the tenant files reads them from memory (tests).
impl TenantReader for Snapshot {
    fn read(&self, path: &str) -> Entry {
        self.get(path).cloned().unwrap_or_else(|| {
            Err(Problem::Unreadable {
                reason: "no such file".to_string(),
            })
        })
    }
}

/// A tenant's name and the paths of its files (sorted).
type TenantPaths = (Box<str>, Box<[Box<str>]>);

/// Tenant files parsed at a time while the index is built, across the threads.
const CHUNK: usize = 1024;

/// A repo whose tenants are indexed, not held (see the module docs).
pub struct Indexed {
    /// Every part of the repo but the tenants: `tenants` and `tenant_files` are empty
    /// ([`Indexed::names`], [`Indexed::tenant_file`] hold them); `pinning` and
    /// [`Repo::across`] are the whole fleet's; `snapshot` lacks the tenant files the source
    /// listed.
    pub base: Repo,
    /// Every (component, ref) some tenant pins (see [`crate::pins::pins`]).
    pub pins: BTreeSet<(String, String)>,
    /// A hash of (path, text) of each tenant file the index read.
    seen: HashSet<u64>,
    /// Every tenant's name and files (sorted), by name: the [`Repo::tenant_files`] of the
    /// repo, in a few words per tenant.
    files: Vec<TenantPaths>,
    reader: Arc<dyn TenantReader>,
}

/// What the index keeps of one tenant file, parsed on a worker thread.
struct Read {
    stem: String,
    seen: Option<u64>,
    claims: Option<super::Claims>,
    pins: Vec<(String, String)>,
}

impl Indexed {
    /// Index the repo of `snapshot`, whose tenant files at `listed` (repo-relative paths) are
    /// read through `reader`, one at a time on a few threads, and dropped once indexed.
    pub fn load(snapshot: Snapshot, listed: Vec<String>, reader: Arc<dyn TenantReader>) -> Self {
        let mut base = Repo::load(Arc::new(snapshot));
        let in_snapshot = base.snapshot.under("tenants").map(|(p, _)| p.clone());
        let mut paths: Vec<String> = listed
            .into_iter()
            .chain(in_snapshot)
            .filter(|p| tenant_stem(p).is_some())
            .collect();
        // By tenant, then path: a tenant's files side by side, sorted.
        paths.sort_unstable_by(|a, b| (tenant_stem(a), a).cmp(&(tenant_stem(b), b)));
        paths.dedup();
        let mut files: Vec<TenantPaths> = Vec::with_capacity(paths.len());
        let mut paths = paths.into_iter().peekable();
        while let Some(first) = paths.next() {
            let stem: Box<str> = tenant_stem(&first).unwrap_or_default().into();
            let mut of = vec![first.into_boxed_str()];
            while let Some(next) = paths.next_if(|p| tenant_stem(p) == Some(&*stem)) {
                of.push(next.into_boxed_str());
            }
            files.push((stem, of.into_boxed_slice()));
        }
        base.tenants = Tenants::new();
        base.tenant_files = TenantFiles::new();
        let mut out = Indexed {
            pins: BTreeSet::new(),
            seen: HashSet::with_capacity(files.len()),
            reader,
            files: Vec::new(),
            base: base.clone(),
        };
        let mut claimed = Vec::with_capacity(files.len());
        let mut pinning = imbl::OrdSet::new();
        for chunk in files.chunks(CHUNK) {
            for read in out.read_chunk(chunk) {
                out.seen.extend(read.seen);
                if !read.pins.is_empty() {
                    pinning.insert(read.stem.clone());
                }
                out.pins.extend(read.pins);
                if let Some(claims) = read.claims {
                    claimed.push((read.stem, claims));
                }
            }
        }
        base.pinning = pinning;
        base.across = OnceLock::from(Arc::new(Across::frozen(claimed)));
        out.base = base;
        out.files = files;
        out
    }

    /// The tenant files of `chunk` (stem, its paths) read and indexed, on a few threads, in
    /// order.
    fn read_chunk(&self, chunk: &[TenantPaths]) -> Vec<Read> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 16);
        let part = chunk.len().div_ceil(threads).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .chunks(part)
                .map(|p| {
                    s.spawn(move || {
                        p.iter()
                            .map(|(stem, paths)| self.index(stem, paths))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// What the index keeps of the tenant `stem` whose files are `paths`.
    fn index(&self, stem: &str, paths: &[Box<str>]) -> Read {
        let mut read = Read {
            stem: stem.to_string(),
            seen: None,
            claims: None,
            pins: Vec::new(),
        };
        let (tenant, entry) = self.parse(stem, paths);
        if let (Some(path), Some(Ok(text))) = (paths.last(), &entry) {
            read.seen = Some(seen(path, text));
        }
        if let Ok(tenant) = &tenant {
            read.pins = tenant
                .spec
                .pinned_refs()
                .map(|(c, r)| (c.to_string(), r.to_string()))
                .collect();
            if let Ok(config) = &self.base.config {
                read.claims = Some(claims(config, stem, tenant));
            }
        }
        read
    }

    /// The tenant `stem` from its files `paths` (sorted) as [`Repo::load`] parses it, and the
    /// entry of the file it was read from (`None`: none was read).
    fn parse(&self, stem: &str, paths: &[Box<str>]) -> (Parsed<Arc<Tenant>>, Option<Entry>) {
        if paths.len() > 1 {
            let owned: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            if let Some(twice) = declared_twice(stem, &owned) {
                return (Err(twice), None);
            }
        }
        let Some(path) = paths.last() else {
            return (Err(Vec::new()), None);
        };
        let entry = match self.base.snapshot.get(path) {
            Some(entry) => entry.clone(),
            None => self.reader.read(path),
        };
        let tenant = load_tenant(path, Some(&entry), stem).map(Arc::new);
        (tenant, Some(entry))
    }

    /// The repo of one tenant: [`Indexed::base`] with the tenant `name`'s file read again,
    /// parsed into `tenants` and its text in the snapshot (the diagnostics quote its lines).
    /// A file whose text is not the one the index read fails the tenant.
    pub fn tenant_repo(&self, name: &str) -> Repo {
        let mut repo = self.base.clone();
        let Some(paths) = self.paths(name) else {
            return repo;
        };
        let listed = paths.iter().map(|p| p.to_string()).collect();
        repo.tenant_files.insert(name.to_string(), listed);
        let (tenant, entry) = self.parse(name, paths);
        let tenant = match (paths.last(), entry) {
            (Some(path), Some(entry)) if self.base.snapshot.get(path).is_none() => {
                let entry = self.unchanged(path, entry);
                let tenant = match &entry {
                    Ok(_) => tenant,
                    Err(_) => load_tenant(path, Some(&entry), name).map(Arc::new),
                };
                let mut snapshot = (*repo.snapshot).clone();
                snapshot.insert(path.to_string(), entry);
                repo.snapshot = Arc::new(snapshot);
                tenant
            }
            _ => tenant,
        };
        repo.tenants.insert(name.to_string(), tenant);
        repo
    }

    /// The tenant `name` read and parsed again, as [`Indexed::tenant_repo`] reads it, without
    /// a repo around it (`None`: no such tenant).
    pub fn tenant(&self, name: &str) -> Option<Parsed<Arc<Tenant>>> {
        let paths = self.paths(name)?;
        let (tenant, entry) = self.parse(name, paths);
        match (paths.last(), entry) {
            (Some(path), Some(entry)) if self.base.snapshot.get(path).is_none() => {
                match self.unchanged(path, entry) {
                    Ok(_) => Some(tenant),
                    entry => Some(load_tenant(path, Some(&entry), name).map(Arc::new)),
                }
            }
            _ => Some(tenant),
        }
    }

    /// `entry` read again at `path`, or a problem when its text is not what the index read.
    fn unchanged(&self, path: &str, entry: Entry) -> Entry {
        match &entry {
            Ok(text) if !self.seen.contains(&seen(path, text)) => Err(Problem::Unreadable {
                reason: "the file changed while fief read the repo: run the command again"
                    .to_string(),
            }),
            _ => entry,
        }
    }

    /// The tenants' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(name, _)| &**name)
    }

    /// The tenant `name` as the index holds it (`None`: no such tenant).
    pub fn name(&self, name: &str) -> Option<&str> {
        let at = self.files.binary_search_by(|(n, _)| (**n).cmp(name)).ok()?;
        Some(&self.files[at].0)
    }

    /// The files of tenant `name`, sorted.
    fn paths(&self, name: &str) -> Option<&[Box<str>]> {
        let at = self.files.binary_search_by(|(n, _)| (**n).cmp(name)).ok()?;
        Some(&self.files[at].1)
    }

    /// The file tenant `name` is read from (see [`Repo::tenant_file`]).
    pub fn tenant_file(&self, name: &str) -> String {
        match self.paths(name).and_then(|p| p.last()) {
            Some(path) => path.to_string(),
            None => format!("tenants/{name}.yaml"),
        }
    }

    /// The environments of tenant `name` (empty when its file or fief.yaml does not parse).
    pub fn environments(&self, name: &str) -> impl Iterator<Item = &String> {
        self.base
            .across()
            .claims(name)
            .into_iter()
            .flat_map(|c| c.namespaces.iter().map(|(env, _)| env))
    }

    /// Whether fief.yaml parses.
    pub fn config(&self) -> Option<&Config> {
        self.base.config.as_ref().ok()
    }
}

/// The hash the index keeps of the tenant file at `path` holding `text`.
fn seen(path: &str, text: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    path.hash(&mut hasher);
    text.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
#[path = "indexed_tests.rs"]
mod tests;
