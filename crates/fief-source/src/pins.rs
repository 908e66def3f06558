//! Pinned components read from git, the one way for the CLI and the agent: a tenant's
//! `components: [{name, ref}]` renders that component as it is at the ref.
//!
//! In: the head snapshot and a [`RefReader`] — a checkout's own git history for the CLI
//! ([`Checkout`]), the agent's clone ([`GitSource`], whose tags and branches are fetched with
//! the followed branch). Out: the repo with every pinned component's folder added
//! ([`fief_core::pins::with_pins`]) and each pin's resolution ([`Resolved`]: the id of what
//! was read at the ref, or why it cannot be read), from which the agent mixes the
//! component's tree ids into tenant input hashes ([`fief_core::pins::hashes_with`]). A ref that
//! cannot be read fails only the tenants that pin it (invalid, with the reason). The same for
//! a repo indexed for a render of a large fleet ([`load_indexed`]).

use std::path::Path;
use std::sync::Arc;

use fief_core::model::{Indexed, Repo, TenantReader};
use fief_core::pins::Resolved;
use fief_core::snapshot::Snapshot;

use crate::git::GitSource;

/// Where a pinned component is read at a git ref.
pub trait RefReader {
    /// A snapshot holding `components/<component>/` as it is at `git_ref`, and an id of what
    /// was read (the folder's tree id where the reader has it, else the commit's); or why it
    /// cannot be read.
    fn at_ref(&self, component: &str, git_ref: &str) -> Result<(Snapshot, String), String>;
}

/// A checkout's own git history (the CLI: the repo it was given is a git work tree); the id
/// is the ref's commit.
pub struct Checkout<'a>(pub &'a Path);

impl RefReader for Checkout<'_> {
    fn at_ref(&self, _component: &str, git_ref: &str) -> Result<(Snapshot, String), String> {
        crate::git::snapshot_at(self.0, git_ref).map_err(|e| e.to_string())
    }
}

impl RefReader for GitSource {
    fn at_ref(&self, component: &str, git_ref: &str) -> Result<(Snapshot, String), String> {
        self.snapshot_at_ref(component, git_ref)
            .map_err(|e| e.to_string())
    }
}

/// The repo of `snapshot` with its pinned components read through `reader`, and the pins'
/// resolution; the repo as loaded, and no resolution, when no tenant pins a ref.
pub fn load(reader: &dyn RefReader, snapshot: Snapshot) -> (Repo, Resolved) {
    let repo = Repo::load(Arc::new(snapshot));
    let wanted = fief_core::pins::pins(&repo);
    if wanted.is_empty() {
        return (repo, Resolved::new());
    }
    let (snapshot, resolved) = read_pins(reader, &repo.snapshot, wanted);
    (Repo::load(Arc::new(snapshot)), resolved)
}

/// [`load`] for an [`Indexed`] repo: the snapshot without the tenant files at `listed`,
/// which `tenants` reads. The pinned components are added to the index's repo; its tenants
/// are not read again.
pub fn load_indexed(
    reader: &dyn RefReader,
    snapshot: Snapshot,
    listed: Vec<String>,
    tenants: Arc<dyn TenantReader>,
) -> (Indexed, Resolved) {
    let mut indexed = Indexed::load(snapshot, listed, tenants);
    if indexed.pins.is_empty() {
        return (indexed, Resolved::new());
    }
    let wanted = std::mem::take(&mut indexed.pins);
    let (snapshot, resolved) = read_pins(reader, &indexed.base.snapshot, wanted.clone());
    let changed = snapshot.changed_since(&indexed.base.snapshot);
    indexed.base = Repo::load_reusing(Arc::new(snapshot), &indexed.base, &changed).0;
    indexed.pins = wanted;
    (indexed, resolved)
}

/// `head` with each of the `wanted` (component, ref) folders read through `reader`, and
/// their resolution.
fn read_pins(
    reader: &dyn RefReader,
    head: &Snapshot,
    wanted: std::collections::BTreeSet<(String, String)>,
) -> (Snapshot, Resolved) {
    let mut resolved = Resolved::new();
    let pinned: Vec<_> = wanted
        .into_iter()
        .map(|(component, git_ref)| {
            let at = reader.at_ref(&component, &git_ref);
            resolved.insert(
                (component.clone(), git_ref.clone()),
                at.as_ref()
                    .map(|(_, tree)| tree.clone())
                    .map_err(Clone::clone),
            );
            (component, git_ref, at.map(|(s, _)| s))
        })
        .collect();
    (fief_core::pins::with_pins(head, &pinned), resolved)
}
