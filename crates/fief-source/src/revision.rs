//! A commit read from git into what the agent syncs: the parsed repo, each tenant's input
//! hash and what its pinned refs resolved to — the whole read in one call, so the agent
//! enters the sources once per commit and the sources enter the core to parse and hash.
//!
//! In: a [`GitSource`] holding the commit, the agent's age keys (the repo's secrets are
//! unlocked with them) and, for the head the agent follows, the [`ReadCache`] the last read
//! left. Out: a [`Revision`] and what was parsed and hashed ([`LoadStats`], [`HashStats`]).
//! [`read_commit`] reads against the last read: unchanged blobs, parsed files and input hashes
//! are reused (persistent maps made from the last read's), so a commit that changes one
//! tenant costs that tenant at any fleet size. [`read_at`] reads a commit in full (a commit a
//! rollout holds tenants at). Pinned components are read at their refs from the same clone
//! ([`crate::pins::load`]), their tree ids mixed into the input hashes of the tenants that pin
//! them ([`fief_core::pins::hashes_with`]); [`pins_moved`] tells whether a pin moved since.

use std::sync::Arc;

use fief_core::inputs::{HashStats, Hashes, InputIndex};
use fief_core::model::{LoadStats, Repo};
use fief_core::pins::Resolved;
use fief_core::secrets::{Keys, Unlock};

use crate::git::{BlobCache, GitError, GitSource};

/// A commit read from git.
pub struct Revision {
    /// The commit id.
    pub commit: String,
    /// The parsed repo, its pinned components' folders added.
    pub repo: Arc<Repo>,
    /// Input hash of each tenant.
    pub hashes: Hashes,
    /// What each pinned (component, ref) resolved to.
    pub pins: Resolved,
    /// Whether a chart fief.lock names could not be fetched into the cache (the commit is
    /// read again at the next fetch, until it is).
    pub charts_missing: bool,
}

/// What the last read left for the next (see [`read_commit`]): the blobs, the parsed repo and
/// the input index.
#[derive(Default)]
pub struct ReadCache {
    blobs: BlobCache,
    last: Option<(Arc<Repo>, InputIndex)>,
}

/// Read `commit` (already fetched) into a [`Revision`] against the last read in `cache`;
/// returns what was parsed and hashed. Blocking. A read that fails leaves an empty cache, so
/// the next read is a full one.
pub fn read_commit(
    git: &GitSource,
    commit: &str,
    cache: &mut ReadCache,
    age_keys: Option<&Arc<Keys>>,
) -> Result<(Revision, LoadStats, HashStats), GitError> {
    let mut cached = std::mem::take(cache);
    let mut snapshot = git.snapshot_cached(commit, Some(&mut cached.blobs))?;
    // The charts fief.lock names, from the chart cache (fetched once per digest).
    crate::charts::shared().resolve(&mut snapshot);
    let snapshot = Arc::new(snapshot);
    let (mut repo, index, loaded, hashed) = match cached.last.take() {
        Some((prev, index)) => {
            let changed = snapshot.changed_since(&prev.snapshot);
            let (repo, loaded) = Repo::load_reusing(snapshot, &prev, &changed);
            let (index, hashed) = InputIndex::update(&repo, Some((&index, &changed)));
            (repo, index, loaded, hashed)
        }
        None => {
            let repo = Repo::load(snapshot);
            // The cross-tenant index, built now: every later read against this one carries it
            // and updates the changed tenants' entries. Built lazily instead, it would be built
            // whole by the first commit after a start that renders anything.
            repo.across();
            let loaded = LoadStats {
                tenants_parsed: repo.tenants.len(),
                components_parsed: repo.components.len(),
            };
            let (index, hashed) = InputIndex::update(&repo, None);
            (repo, index, loaded, hashed)
        }
    };
    unlock(&mut repo, age_keys);
    let hashes = index.hashes();
    let repo = Arc::new(repo);
    cached.last = Some((repo.clone(), index));
    *cache = cached;
    let (repo, hashes, pins) = with_pins(git, repo, hashes, age_keys);
    let rev = Revision {
        commit: commit.to_string(),
        charts_missing: crate::charts::unresolved(&repo.snapshot),
        repo,
        hashes,
        pins,
    };
    Ok((rev, loaded, hashed))
}

/// Read `commit` in full, with no cache (no network: the commit is in the clone). Blocking.
pub fn read_at(
    git: &GitSource,
    commit: &str,
    age_keys: Option<&Arc<Keys>>,
) -> Result<Revision, GitError> {
    let mut snapshot = git.snapshot(commit)?;
    // The commit's locked charts, from the chart cache.
    crate::charts::shared().resolve(&mut snapshot);
    let mut repo = Repo::load(Arc::new(snapshot));
    unlock(&mut repo, age_keys);
    let hashes = fief_core::inputs::tenant_hashes(&repo);
    let (repo, hashes, pins) = with_pins(git, Arc::new(repo), hashes, age_keys);
    Ok(Revision {
        commit: commit.to_string(),
        charts_missing: crate::charts::unresolved(&repo.snapshot),
        repo,
        hashes,
        pins,
    })
}

/// Whether any pin now resolves differently than in `resolved` (a tag or branch moved).
pub fn pins_moved(git: &GitSource, resolved: &Resolved) -> bool {
    resolved.iter().any(|((component, git_ref), was)| {
        let now = git
            .tree_at_ref(component, git_ref)
            .map_err(|e| e.to_string());
        &now != was
    })
}

fn unlock(repo: &mut Repo, age_keys: Option<&Arc<Keys>>) {
    if let Some(keys) = age_keys {
        repo.secrets.set_unlock(Unlock::Keys(keys.clone()));
    }
}

/// The head repo with its pinned components read from `git` (loaded afresh with their folders
/// added) and its input hashes with the pinned tree ids mixed in; unchanged when no tenant pins
/// a ref.
fn with_pins(
    git: &GitSource,
    head: Arc<Repo>,
    hashes: Hashes,
    age_keys: Option<&Arc<Keys>>,
) -> (Arc<Repo>, Hashes, Resolved) {
    if fief_core::pins::pins(&head).is_empty() {
        return (head, hashes, Resolved::new());
    }
    let (mut repo, resolved) = crate::pins::load(git, (*head.snapshot).clone());
    unlock(&mut repo, age_keys);
    let hashes =
        fief_core::pins::hashes_with(&repo, fief_core::inputs::tenant_hashes(&repo), &resolved);
    (Arc::new(repo), hashes, resolved)
}
