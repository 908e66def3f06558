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
use super::tree::read_tree;
use fief_core::snapshot::Snapshot;

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
    let snapshot = read_tree(&repo, tree, &label, &id, None)?;
    Ok((snapshot, commit.id().to_string()))
}

/// Whether `checkout` is a git work tree that can commit: it exists, is not bare, and git has
/// an identity to sign with. Checked before anything is edited, so a refusal changes nothing.
pub fn can_commit(checkout: &Path) -> Result<(), GitError> {
    let fail = |detail: String| GitError::NotACheckout {
        path: checkout.to_path_buf(),
        detail,
    };
    let repo = Repository::discover(checkout).map_err(|e| fail(e.message().to_string()))?;
    if repo.workdir().is_none() {
        return Err(fail("the repository is bare".to_string()));
    }
    repo.signature().map_err(|e| GitError::NoIdentity {
        path: checkout.to_path_buf(),
        detail: e.message().to_string(),
    })?;
    Ok(())
}

/// Commit `files` (inside the checkout's work tree) with `message`, as the user git is
/// configured with; returns the new commit id. Nothing else in the index is committed.
pub fn commit_files(
    checkout: &Path,
    files: &[std::path::PathBuf],
    message: &str,
) -> Result<String, GitError> {
    let fail = |detail: String| GitError::NotACheckout {
        path: checkout.to_path_buf(),
        detail,
    };
    let repo = Repository::discover(checkout).map_err(|e| fail(e.message().to_string()))?;
    let top = repo
        .workdir()
        .ok_or_else(|| fail("the repository is bare".to_string()))?
        .canonicalize()
        .map_err(|e| fail(e.to_string()))?;
    let signature = repo.signature().map_err(|e| GitError::NoIdentity {
        path: checkout.to_path_buf(),
        detail: e.message().to_string(),
    })?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| fail(e.message().to_string()))?;
    // The commit is HEAD's tree with these files replaced, built directly from blobs: other
    // staged changes stay staged and uncommitted. The index then records the same files so
    // `git status` shows them committed.
    let err = |e: git2::Error| fail(e.message().to_string());
    let mut tree_id = head.tree_id();
    let mut index = repo.index().map_err(err)?;
    for file in files {
        let full = file.canonicalize().map_err(|e| fail(e.to_string()))?;
        let rel = full
            .strip_prefix(&top)
            .map_err(|_| fail(format!("{} is outside the work tree", file.display())))?
            .to_path_buf();
        let blob = repo.blob_path(&full).map_err(err)?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let tree = repo.find_tree(tree_id).map_err(err)?;
        tree_id = replace_in_tree(&repo, &tree, &parts, blob).map_err(err)?;
        index.add_path(&rel).map_err(err)?;
    }
    index.write().map_err(err)?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| fail(e.message().to_string()))?;
    let id = repo
        .commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &[&head],
        )
        .map_err(|e| fail(e.message().to_string()))?;
    Ok(id.to_string())
}

/// `tree` with the file at `path` (split in components) set to `blob`; returns the new tree.
fn replace_in_tree(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    path: &[String],
    blob: git2::Oid,
) -> Result<git2::Oid, git2::Error> {
    let mut builder = repo.treebuilder(Some(tree))?;
    match path {
        [] => Ok(tree.id()),
        [name] => {
            let mode = tree
                .get_name(name)
                .map(|e| e.filemode())
                .unwrap_or(0o100_644);
            builder.insert(name, blob, mode)?;
            builder.write()
        }
        [dir, rest @ ..] => {
            let sub = match tree.get_name(dir) {
                Some(entry) => entry.to_object(repo)?.peel_to_tree()?,
                None => repo.find_tree(repo.treebuilder(None)?.write()?)?,
            };
            let new_sub = replace_in_tree(repo, &sub, rest, blob)?;
            builder.insert(dir, new_sub, 0o040_000)?;
            builder.write()
        }
    }
}
