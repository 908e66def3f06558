//! Pinned components in the agent: a tenant's `components: [{name, ref}]` renders that
//! component as it is at the ref, read from the agent's own clone (tags and branches are
//! fetched with the followed branch).
//!
//! In: the head snapshot and the git source. Out: the repo with every pinned component's
//! folder added ([`fief_core::pins::with_pins`]) — so tenant input hashes cover the pinned
//! content and a moved tag changes exactly the tenants pinned to it — and each pin's resolved
//! tree id, which the source task compares after every fetch to notice a moved tag or branch
//! when the followed branch did not move; tenant input hashes get the pinned tree ids mixed
//! in ([`hashes`]). A ref that cannot be read fails only the tenants that pin it (invalid,
//! with the reason).

use std::collections::BTreeMap;
use std::sync::Arc;

use fief_core::inputs::Hashes;
use fief_core::model::Repo;
use fief_core::snapshot::Snapshot;
use fief_source::git::GitSource;

/// Each pinned (component, ref) and what it resolved to (tree id, or why it cannot be read).
pub type Resolved = BTreeMap<(String, String), Result<String, String>>;

/// The repo at head with its pinned components read from `git`, and the pins' resolution.
pub fn load(git: &GitSource, snapshot: Snapshot) -> (Repo, Resolved) {
    let repo = Repo::load(Arc::new(snapshot));
    let wanted = fief_core::pins::pins(&repo);
    if wanted.is_empty() {
        return (repo, Resolved::new());
    }
    let mut resolved = Resolved::new();
    let pinned: Vec<_> = wanted
        .into_iter()
        .map(|(component, git_ref)| {
            let at = git
                .snapshot_at_ref(&component, &git_ref)
                .map_err(|e| e.to_string());
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

/// Whether any pin now resolves differently than in `resolved` (a tag or branch moved).
pub fn moved(git: &GitSource, resolved: &Resolved) -> bool {
    resolved.iter().any(|((component, git_ref), was)| {
        let now = git
            .tree_at_ref(component, git_ref)
            .map_err(|e| e.to_string());
        &now != was
    })
}

/// Tenant input hashes with each pinned component's tree id (or why it cannot be read)
/// mixed into the hash of the tenants that pin it: moving a tag re-syncs exactly them.
pub fn hashes(repo: &Repo, mut hashes: Hashes, resolved: &Resolved) -> Hashes {
    if resolved.is_empty() {
        return hashes;
    }
    for name in &repo.pinning {
        let Some(Ok(tenant)) = repo.tenants.get(name) else {
            continue;
        };
        let mut mix = String::new();
        // Component entries' refs and environment overrides' refs alike.
        for (component, git_ref) in tenant.spec.pinned_refs() {
            let at = resolved.get(&(component.to_string(), git_ref.to_string()));
            mix.push_str(&format!("{component}@{git_ref}={at:?};"));
        }
        if mix.is_empty() {
            continue;
        }
        if let Some(h) = hashes.get_mut(name) {
            *h = fief_core::inputs::mix(h, &mix);
        }
    }
    hashes
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
    let (mut repo, resolved) = load(git, (*head.snapshot).clone());
    if let Some(keys) = age_keys {
        repo.secrets
            .set_unlock(fief_core::secrets::Unlock::Keys(keys.clone()));
    }
    let hashes = self::hashes(&repo, fief_core::inputs::tenant_hashes(&repo), &resolved);
    (Arc::new(repo), hashes, resolved)
}
