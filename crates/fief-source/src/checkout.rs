//! A checkout on disk loaded as a command reads it, in one call into the sources: its files
//! ([`crate::fs`]), the charts fief.lock names (from the chart cache, fetched once when
//! missing: [`crate::charts`]) and the components tenants pin to git refs, read from the
//! checkout's own history ([`crate::pins`]); the core parses what was read.
//!
//! In: the checkout's folder (and, for [`load_snapshot`], a snapshot of it read elsewhere).
//! Out: the parsed [`Repo`] — or, for a command that renders a large fleet a batch at a time,
//! the [`Indexed`] repo whose tenant files are read again when each renders. A ref that cannot
//! be read fails only the tenants that pin it.

use std::path::Path;
use std::sync::Arc;

use fief_core::model::{Indexed, Repo};
use fief_core::snapshot::{Snapshot, SnapshotError};

use crate::pins::Checkout;

/// The repo in `dir`, parsed, with its locked charts and pinned components.
pub fn load(dir: &Path) -> Result<Repo, SnapshotError> {
    Ok(load_snapshot(dir, crate::fs::read_dir(dir)?))
}

/// The repo of `snapshot` (the checkout in `dir`, read elsewhere: at a git ref, say), parsed,
/// with its locked charts and the components pinned to refs read from `dir`'s history.
pub fn load_snapshot(dir: &Path, mut snapshot: Snapshot) -> Repo {
    crate::charts::shared().resolve(&mut snapshot);
    load_unresolved(dir, snapshot)
}

/// [`load_snapshot`] without the charts of fief.lock (`fief chart update`, which writes it).
pub fn load_unresolved(dir: &Path, snapshot: Snapshot) -> Repo {
    crate::pins::load(&Checkout(dir), snapshot).0
}

/// The repo in `dir`, indexed: per tenant a small index held, its file read and parsed again
/// when it renders; with its locked charts and pinned components.
pub fn load_indexed(dir: &Path) -> Result<Indexed, SnapshotError> {
    let mut listed = crate::fs::read_dir_indexed(dir)?;
    crate::charts::shared().resolve(&mut listed.snapshot);
    let (indexed, _) = crate::pins::load_indexed(
        &Checkout(dir),
        listed.snapshot,
        listed.tenant_files,
        Arc::new(listed.reader),
    );
    Ok(indexed)
}
