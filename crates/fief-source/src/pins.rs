//! Pinned components read from git, the one way for the CLI and the agent: a tenant's
//! `components: [{name, ref}]` renders that component as it is at the ref.
//!
//! In: the head snapshot and a [`RefReader`] — a checkout's own git history for the CLI
//! ([`Checkout`]), the agent's clone ([`GitSource`], whose tags and branches are fetched with
//! the followed branch). Out: the repo with every pinned component's folder added
//! ([`fief_core::pins::with_pins`]) and each pin's resolution ([`Resolved`]: the id of what
//! was read at the ref, or why it cannot be read), from which the agent mixes the
//! component's tree ids into tenant input hashes ([`fief_core::pins::hashes_with`]). A ref that
//! cannot be read fails only the tenants that pin it (invalid, with the reason).

use std::path::Path;
use std::sync::Arc;

use fief_core::model::Repo;
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
    let repo = Repo::load(Arc::new(fief_core::pins::with_pins(
        &repo.snapshot,
        &pinned,
    )));
    (repo, resolved)
}
