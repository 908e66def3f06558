//! Reading the tenants repo out of the cached repository at a commit or a pinned ref.
//!
//! In: a [`GitSource`] whose cache holds the commit (after a fetch), a full commit id or a
//! ref a tenant pins, and optionally the blobs of the last snapshot. Out: the [`Snapshot`]
//! read straight from git objects (and, at a ref, the tree id of the pinned component's
//! folder), or a [`GitError::BadCommit`] naming the commit or ref.

use std::path::Path;

use git2::Oid;

use fief_core::snapshot::Snapshot;

use super::auth::redact_url;
use super::tree::{BlobCache, read_tree};
use super::{GitError, GitSource, REMOTE};

impl GitSource {
    /// The tenants repo at `commit`, read straight from git objects (no checkout) into a fief::core::snapshot::Snapshot.
    ///
    /// `commit` is a full hex commit id (as [`GitSource::fetch`] returns). Files that cannot be
    /// used become problem entries, as with [`crate::fs::read_dir`]; only an unreadable
    /// repository, an unknown commit or too many files fail the whole snapshot.
    pub fn snapshot(&self, commit: &str) -> Result<Snapshot, GitError> {
        self.snapshot_cached(commit, None)
    }

    /// [`GitSource::snapshot`], taking unchanged files from `cache` (the blobs of the last
    /// snapshot read through it) and leaving this commit's blobs in it: the agent reads each
    /// new commit at the cost of what changed.
    pub fn snapshot_cached(
        &self,
        commit: &str,
        cache: Option<&mut BlobCache>,
    ) -> Result<Snapshot, GitError> {
        let repo = self.open()?;
        let bad_commit = |detail: String| GitError::BadCommit {
            url: redact_url(&self.url),
            commit: commit.to_string(),
            detail,
        };
        let is_hex = commit.chars().all(|c| c.is_ascii_hexdigit());
        if !is_hex || !(commit.len() == 40 || commit.len() == 64) {
            return Err(bad_commit("not a full hex commit id".to_string()));
        }
        let oid = Oid::from_str(commit).map_err(|e| bad_commit(e.message().to_string()))?;
        let tree = repo
            .find_commit(oid)
            .and_then(|c| c.tree())
            .map_err(|e| bad_commit(e.message().to_string()))?;
        read_tree(&repo, tree, &self.url, commit, cache)
    }

    /// The tenants repo at a git ref a tenant pins (a tag, a branch, or a commit id), as
    /// fetched; with the id of the tree of `components/<component>` there (which changes
    /// exactly when that folder's content does; empty when the ref has no such folder).
    pub fn snapshot_at_ref(
        &self,
        component: &str,
        git_ref: &str,
    ) -> Result<(Snapshot, String), GitError> {
        self.at_ref(component, git_ref, true)
    }

    /// The tree id of `components/<component>` at a pinned ref (see
    /// [`GitSource::snapshot_at_ref`]).
    pub fn tree_at_ref(&self, component: &str, git_ref: &str) -> Result<String, GitError> {
        self.at_ref(component, git_ref, false).map(|(_, tree)| tree)
    }

    /// The snapshot (when `read`) and the component's tree id at a pinned ref.
    fn at_ref(
        &self,
        component: &str,
        git_ref: &str,
        read: bool,
    ) -> Result<(Snapshot, String), GitError> {
        let repo = self.open()?;
        let bad = |detail: String| GitError::BadCommit {
            url: redact_url(&self.url),
            commit: git_ref.to_string(),
            detail,
        };
        let object = [
            format!("refs/tags/{git_ref}"),
            format!("refs/remotes/{REMOTE}/{git_ref}"),
        ]
        .iter()
        .find_map(|name| {
            repo.find_reference(name)
                .ok()?
                .peel(git2::ObjectType::Commit)
                .ok()
        })
        .map_or_else(|| repo.revparse_single(git_ref), Ok)
        .map_err(|_| bad("no such tag, branch or commit in the fetched repo".to_string()))?;
        let commit = object
            .peel_to_commit()
            .map_err(|e| bad(e.message().to_string()))?;
        let tree = commit.tree().map_err(|e| bad(e.message().to_string()))?;
        let tree_id = tree
            .get_path(Path::new(&format!("components/{component}")))
            .map(|e| e.id().to_string())
            .unwrap_or_default();
        if !read {
            return Ok((Snapshot::default(), tree_id));
        }
        let commit_id = commit.id().to_string();
        let snapshot = read_tree(&repo, tree, &self.url, &commit_id, None)?;
        Ok((snapshot, tree_id))
    }
}
