//! Pinned components in the agent: a tenant's `components: [{name, ref}]` renders that
//! component as it is at the ref, read from the agent's own clone (tags and branches are
//! fetched with the followed branch).
//!
//! In: the head repo and the git source. Out: the repo with every pinned component's folder
//! added, read as the CLI reads it ([`fief_source::pins::load`]) — so tenant input hashes
//! cover the pinned content — its input hashes with the pinned tree ids mixed in
//! ([`fief_core::pins::hashes_with`]: a moved tag changes exactly the tenants pinned to it),
//! and each pin's resolved tree id, which the source task compares after every fetch
//! ([`moved`]) to notice a moved tag or branch when the followed branch did not move. A ref
//! that cannot be read fails only the tenants that pin it (invalid, with the reason).

use std::sync::Arc;

use fief_core::inputs::Hashes;
use fief_core::model::Repo;
pub use fief_core::pins::Resolved;
use fief_source::git::GitSource;

/// Whether any pin now resolves differently than in `resolved` (a tag or branch moved).
pub fn moved(git: &GitSource, resolved: &Resolved) -> bool {
    resolved.iter().any(|((component, git_ref), was)| {
        let now = git
            .tree_at_ref(component, git_ref)
            .map_err(|e| e.to_string());
        &now != was
    })
}

/// The head repo with its pinned components read from `git` (loaded afresh with their folders
/// added) and its input hashes with the pinned tree ids mixed in; unchanged when no tenant pins
/// a ref.
pub fn apply(
    git: &GitSource,
    head: Arc<Repo>,
    hashes: Hashes,
    age_keys: Option<&Arc<fief_core::secrets::Keys>>,
) -> (Arc<Repo>, Hashes, Resolved) {
    if fief_core::pins::pins(&head).is_empty() {
        return (head, hashes, Resolved::new());
    }
    let (mut repo, resolved) = fief_source::pins::load(git, (*head.snapshot).clone());
    if let Some(keys) = age_keys {
        repo.secrets
            .set_unlock(fief_core::secrets::Unlock::Keys(keys.clone()));
    }
    let hashes =
        fief_core::pins::hashes_with(&repo, fief_core::inputs::tenant_hashes(&repo), &resolved);
    (Arc::new(repo), hashes, resolved)
}
