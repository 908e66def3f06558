//! Git: the only module that talks to git. Blocking; the agent calls it from `spawn_blocking`.
//!
//! In: a repository URL (local path, `file://`, `git://`, `https://` with a token, `ssh://` or
//! scp-like `user@host:path` with a key and a known_hosts file), a branch, and a cache folder.
//! Out: the commit id the branch points at after a fetch, and the tenants repo at a commit as a
//! [`Snapshot`], read straight from git objects (no checkout, nothing written outside the
//! cache). The snapshot follows the same rules as [`crate::fs::read_dir`]: only the top-level
//! entries fief knows, hidden names skipped, size and count limits, symlinks followed only
//! while they stay inside the repo.
//!
//! Secrets (token, key) never appear in errors: URLs are shown with their userinfo removed and
//! any occurrence of the token in a libgit2 message is replaced by `<redacted>`.
//!
//! Here: [`GitSource`] and its cache; cloning and fetching in `fetch`, reading a commit or a
//! pinned ref in `read`, the tree walk in `tree` (symlinks in `symlink`), credentials and URLs in `auth`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use git2::Repository;
use sha2::{Digest, Sha256};

use fief_core::snapshot::TOP_LEVEL;

mod auth;
mod error;
mod fetch;
mod known_hosts;
mod local;
mod packs;
mod read;
mod symlink;
mod tree;

pub use error::GitError;
pub use local::{can_commit, commit_files, snapshot_at};
pub use packs::MAX_PACKS;
pub use tree::BlobCache;

use auth::*;
use fetch::Phase;

/// How long libgit2 waits to connect to a git server.
const CONNECT_TIMEOUT_MS: i32 = 30_000;
/// How long libgit2 waits for a git server to send or accept data before giving up.
const IO_TIMEOUT_MS: i32 = 120_000;
/// The name of the remote in the cached bare repository.
const REMOTE: &str = "origin";
/// Git's file mode of a symlink blob.
const MODE_SYMLINK: i32 = 0o120_000;
/// Symlinks followed while resolving one path, as in Linux (`ELOOP`).
const MAX_SYMLINK_HOPS: usize = 40;
/// Directory nesting below a top-level entry, as in [`crate::fs::read_dir`].
const MAX_DEPTH: usize = 16;

/// Credentials for the git server. Debug output never shows the token.
#[derive(Clone, Default)]
pub struct GitAuth {
    /// HTTPS token, sent as the password (user `x-access-token`, or `oauth2` for GitLab hosts,
    /// or the user named in the URL).
    pub token: Option<String>,
    /// SSH private key file (OpenSSH or PEM format, no passphrase).
    pub ssh_key: Option<PathBuf>,
    /// known_hosts file that SSH host keys are checked against. Without it, SSH is refused.
    pub known_hosts: Option<PathBuf>,
}

impl fmt::Debug for GitAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitAuth")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("ssh_key", &self.ssh_key)
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

/// One branch of one remote repository, cached as a bare repository on disk.
///
/// Cheap to clone and `Send + Sync`: each call opens the cached repository anew. Calls that
/// fetch should not run concurrently for the same cache folder (the agent serialises them).
#[derive(Clone)]
pub struct GitSource {
    url: String,
    branch: String,
    path: PathBuf,
    auth: Arc<GitAuth>,
}

impl fmt::Debug for GitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitSource")
            .field("url", &redact_url(&self.url))
            .field("branch", &self.branch)
            .field("path", &self.path)
            .field("auth", &self.auth)
            .finish()
    }
}

impl GitSource {
    /// Open the cached clone under `cache_dir` (keyed by a hash of the URL) or clone it (bare, branch only).
    ///
    /// Opening an existing cache does no network traffic. A new clone is built in a temporary
    /// folder beside its final place and renamed into place once the branch has been fetched,
    /// so an interrupted clone never leaves a half repository to be reopened. A cached folder
    /// that is not a repository of this URL is removed and cloned again.
    pub fn open_or_clone(
        url: &str,
        branch: &str,
        cache_dir: &Path,
        auth: GitAuth,
    ) -> Result<GitSource, GitError> {
        set_timeouts();
        let key = hex::encode(&Sha256::digest(url.as_bytes())[..16]);
        let source = GitSource {
            url: url.to_string(),
            branch: branch.to_string(),
            path: cache_dir.join(format!("{key}.git")),
            auth: Arc::new(auth),
        };
        if !valid_branch(branch) {
            return Err(source.bad_branch());
        }
        std::fs::create_dir_all(cache_dir).map_err(|e| GitError::Cache {
            path: cache_dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        if source.path.exists() {
            if source.cached_repo_matches() {
                return Ok(source);
            }
            remove_dir(&source.path)?;
        }
        source.clone_into_cache(cache_dir, &key)?;
        Ok(source)
    }

    /// Fetch the branch; return the commit id (hex) the branch now points at.
    ///
    /// Each fetch adds a pack to the cache, and every object read searches the packs, so a
    /// long-running agent's reads would slow down with every commit: once there are more than
    /// [`MAX_PACKS`], they are merged geometrically (the small ones into one; everything
    /// reachable from a ref when no pack stands out), so any pinned ref or ancestor commit
    /// stays readable. A failed merge is logged and leaves the packs as they were.
    pub fn fetch(&self) -> Result<String, GitError> {
        let repo = self.open()?;
        let head = self.fetch_into(&repo, Phase::Fetch)?;
        if let Err(e) = packs::compact(&repo, &self.path.join("objects/pack")) {
            tracing::warn!(cache = %self.path.display(), error = %e.message(), "cannot repack the git cache; reads slow down as packs accumulate");
        }
        Ok(head)
    }

    /// The repository URL with any userinfo removed, for logs and status.
    pub fn redacted_url(&self) -> String {
        redact_url(&self.url)
    }

    /// The branch this source follows.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The cached bare repository on disk.
    pub fn cache_path(&self) -> &Path {
        &self.path
    }

    /// The cached bare repository, opened.
    fn open(&self) -> Result<Repository, GitError> {
        Repository::open_bare(&self.path).map_err(|e| GitError::Cache {
            path: self.path.clone(),
            detail: e.message().to_string(),
        })
    }

    /// Whether the cache folder is a repository whose remote is this URL.
    fn cached_repo_matches(&self) -> bool {
        let Ok(repo) = Repository::open_bare(&self.path) else {
            return false;
        };
        let Ok(remote) = repo.find_remote(REMOTE) else {
            return false;
        };
        remote.url().is_ok_and(|u| u == self.url)
    }

    /// A libgit2 message with the URL's userinfo and the token removed.
    fn clean(&self, message: &str) -> String {
        let mut message = message.replace(&self.url, &redact_url(&self.url));
        if let Some(token) = self.auth.token.as_deref().filter(|t| !t.is_empty()) {
            message = message.replace(token, "<redacted>");
        }
        message
    }

    /// The error of a branch the server does not have (or an invalid name).
    fn bad_branch(&self) -> GitError {
        GitError::BadBranch {
            url: redact_url(&self.url),
            branch: self.branch.clone(),
        }
    }
}

/// Sets libgit2's network timeouts, once per process, before the first network operation; and
/// turns off the re-hashing of every object read back from the cache: a fetch already checks
/// each received object's id against its content when it indexes the pack, and re-hashing on
/// read cost a hash of the whole `tenants/` tree (every tenant's entry) on every commit.
#[allow(unsafe_code)] // the crate's one unsafe place: libgit2's global options; see SAFETY below
fn set_timeouts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: libgit2 options are process-global and not synchronised. Every use of git2
        // in fief goes through this module, whose only constructor runs this first; `Once`
        // blocks every other caller until it is done, so no libgit2 operation runs meanwhile.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(CONNECT_TIMEOUT_MS);
            let _ = git2::opts::set_server_timeout_in_milliseconds(IO_TIMEOUT_MS);
        }
        git2::opts::strict_hash_verification(false);
    });
}

/// Whether `branch` is a valid branch name.
fn valid_branch(branch: &str) -> bool {
    !branch.is_empty() && git2::Reference::is_valid_name(&format!("refs/heads/{branch}"))
}

/// Remove a cached folder that cannot be used.
fn remove_dir(path: &Path) -> Result<(), GitError> {
    std::fs::remove_dir_all(path).map_err(|e| GitError::Cache {
        path: path.to_path_buf(),
        detail: format!("cannot remove a stale cache: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_token() {
        let auth = GitAuth {
            token: Some("s3cret-token".to_string()),
            ..GitAuth::default()
        };
        assert!(!format!("{auth:?}").contains("s3cret-token"));
        let source = GitSource {
            url: "https://x:s3cret-token@example.com/r.git".to_string(),
            branch: "main".to_string(),
            path: PathBuf::from("/tmp/x"),
            auth: Arc::new(auth),
        };
        assert!(!format!("{source:?}").contains("s3cret-token"));
        let cleaned =
            source.clean("fetch of https://x:s3cret-token@example.com/r.git said s3cret-token");
        assert!(!cleaned.contains("s3cret-token"), "{cleaned}");
    }
}
