//! A local checkout's own git history: the tenants repo as it is at a revision, read from the
//! checkout's repository (no clone, no network), for `fief diff --from REF [--to REF]`.
//!
//! In: a folder inside a git work tree (the tenants repo may be a subfolder of it) and a
//! revision (`main`, `origin/main`, a tag, a commit id, `HEAD~1`). Out: the [`Snapshot`] of
//! that folder at that revision, read with the same rules as every other source, and the
//! commit id.

use std::path::Path;

use git2::Repository;

use super::GitError;
use super::tree::{Node, TreeReader};
use crate::core::snapshot::{Snapshot, TOP_LEVEL};

/// The tenants repo at `checkout` as it is at `rev`; returns the snapshot and the commit id.
pub fn snapshot_at(checkout: &Path, rev: &str) -> Result<(Snapshot, String), GitError> {
    let not_checkout = |detail: String| GitError::NotACheckout {
        path: checkout.to_path_buf(),
        detail,
    };
    let bad_rev = |detail: String| GitError::BadRevision {
        path: checkout.to_path_buf(),
        rev: rev.to_string(),
        detail,
    };
    let repo = Repository::discover(checkout).map_err(|e| not_checkout(e.message().to_string()))?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| not_checkout("the repository is bare".to_string()))?;
    let full = checkout
        .canonicalize()
        .map_err(|e| not_checkout(e.to_string()))?;
    let top = workdir
        .canonicalize()
        .map_err(|e| not_checkout(e.to_string()))?;
    let prefix = full
        .strip_prefix(&top)
        .map_err(|_| not_checkout("the folder is outside the work tree".to_string()))?;
    let commit = repo
        .revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| bad_rev(e.message().to_string()))?;
    let mut tree = commit
        .tree()
        .map_err(|e| bad_rev(e.message().to_string()))?;
    if !prefix.as_os_str().is_empty() {
        let entry = tree.get_path(prefix).map_err(|_| {
            bad_rev(format!(
                "{} does not exist at this revision",
                prefix.display()
            ))
        })?;
        tree = entry
            .to_object(&repo)
            .and_then(|o| o.peel_to_tree())
            .map_err(|e| bad_rev(e.message().to_string()))?;
    }
    let id = commit.id().to_string();
    let label = format!("{}@{rev}", checkout.display());
    let mut reader = TreeReader {
        repo: &repo,
        root: tree,
        snapshot: Snapshot::default(),
        files: 0,
        url: &label,
        commit: &id,
    };
    for name in TOP_LEVEL {
        let node = reader.root.get_name(name).map(|entry| Node {
            oid: entry.id(),
            mode: entry.filemode(),
            kind: entry.kind(),
        });
        if let Some(node) = node {
            reader.walk(node, &[], name.to_string(), name.to_string(), 0)?;
        }
    }
    let snapshot = reader.snapshot;
    Ok((snapshot, commit.id().to_string()))
}
