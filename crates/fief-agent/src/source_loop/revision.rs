//! A commit as the source task publishes it: the commit id, the parsed repo, each tenant's
//! input hash and what the pinned refs resolved to.
//!
//! In: what `read_commit` read. Out: [`Revision`], on the source task's watch channel, which
//! the syncs, the rollouts, the requests, the notifications and the web view read. Apart from
//! the loop that makes it, so that its readers do not depend on the loop.

use std::sync::Arc;

use fief_core::model::Repo;

/// A commit read from git.
pub struct Revision {
    /// The commit id.
    pub commit: String,
    /// The parsed repo.
    pub repo: Arc<Repo>,
    /// Input hash of each tenant.
    pub hashes: fief_core::inputs::Hashes,
    /// What each pinned (component, ref) resolved to.
    pub pins: crate::pins::Resolved,
}
