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

use std::cell::Cell;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, ErrorClass, ErrorCode,
    FetchOptions, FetchPrune, Oid, ProxyOptions, RemoteCallbacks, Repository,
};
use sha2::{Digest, Sha256};

use fief_core::snapshot::{Snapshot, TOP_LEVEL};

mod auth;
mod error;
mod known_hosts;
mod local;
mod packs;
mod tree;

pub use error::GitError;
pub use local::{can_commit, commit_files, snapshot_at};
pub use packs::MAX_PACKS;
pub use tree::BlobCache;

use auth::*;
use known_hosts::known_hosts_verdict;
use tree::*;

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

/// Whether the operation is the first clone or a later fetch (only changes the error variant).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Clone,
    Fetch,
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

    fn open(&self) -> Result<Repository, GitError> {
        Repository::open_bare(&self.path).map_err(|e| GitError::Cache {
            path: self.path.clone(),
            detail: e.message().to_string(),
        })
    }

    fn cached_repo_matches(&self) -> bool {
        let Ok(repo) = Repository::open_bare(&self.path) else {
            return false;
        };
        let Ok(remote) = repo.find_remote(REMOTE) else {
            return false;
        };
        remote.url().is_ok_and(|u| u == self.url)
    }

    fn clone_into_cache(&self, cache_dir: &Path, key: &str) -> Result<(), GitError> {
        let partial = cache_dir.join(format!(".{key}.partial-{}", std::process::id()));
        if partial.exists() {
            remove_dir(&partial)?;
        }
        let result = (|| {
            let repo = Repository::init_bare(&partial).map_err(|e| GitError::Cache {
                path: partial.clone(),
                detail: e.message().to_string(),
            })?;
            repo.remote(REMOTE, &self.url)
                .map_err(|e| GitError::Clone {
                    url: redact_url(&self.url),
                    detail: self.clean(e.message()),
                })?;
            self.fetch_into(&repo, Phase::Clone)?;
            Ok(())
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
        match std::fs::rename(&partial, &self.path) {
            Ok(()) => Ok(()),
            // Another process cloned the same URL meanwhile: keep theirs if it is usable.
            Err(_) if self.cached_repo_matches() => {
                let _ = std::fs::remove_dir_all(&partial);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&partial);
                Err(GitError::Cache {
                    path: self.path.clone(),
                    detail: e.to_string(),
                })
            }
        }
    }

    fn fetch_into(&self, repo: &Repository, phase: Phase) -> Result<String, GitError> {
        let mut remote = repo.find_remote(REMOTE).map_err(|e| GitError::Cache {
            path: self.path.clone(),
            detail: e.message().to_string(),
        })?;
        let local_ref = format!("refs/remotes/{REMOTE}/{}", self.branch);
        let refspec = format!("+refs/heads/{}:{local_ref}", self.branch);
        // Tags and the other branches too: tenants may pin a component to any of them.
        let pins = [
            "+refs/heads/*:refs/remotes/origin/*",
            "+refs/tags/*:refs/tags/*",
        ];

        let auth_refused = Cell::new(false);
        let host_refused = Cell::new(false);
        let result = {
            let mut callbacks = RemoteCallbacks::new();
            let mut tried = CredentialType::empty();
            callbacks.credentials(|_url, user_from_url, allowed| {
                self.credentials(user_from_url, allowed, &mut tried)
                    .inspect_err(|_| auth_refused.set(true))
            });
            let ssh_port = ssh_host_port(&self.url).and_then(|(_, port)| port);
            callbacks.certificate_check(|cert, host| match cert.as_hostkey() {
                None => Ok(CertificateCheckStatus::CertificatePassthrough),
                Some(hostkey) => {
                    let verdict = match hostkey.hostkey() {
                        Some(key) => self.check_host_key(host, ssh_port, key),
                        None => Err("libgit2 did not give the raw host key".to_string()),
                    };
                    verdict
                        .map(|()| CertificateCheckStatus::CertificateOk)
                        .map_err(|message| {
                            host_refused.set(true);
                            git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssh, message)
                        })
                }
            });
            let mut proxy = ProxyOptions::new();
            proxy.auto();
            let mut options = FetchOptions::new();
            options
                .remote_callbacks(callbacks)
                .proxy_options(proxy)
                .prune(FetchPrune::On)
                .download_tags(AutotagOption::None);
            remote.fetch(
                &[refspec.as_str(), pins[0], pins[1]],
                Some(&mut options),
                None,
            )
        };

        if let Err(e) = result {
            let url = redact_url(&self.url);
            let mut detail = self.clean(e.message());
            if let Some(path) = local_path(&self.url).filter(|p| !p.exists()) {
                // libgit2 says "unsupported URL protocol" for a path that does not exist.
                detail = format!("{} does not exist ({detail})", path.display());
            }
            return Err(
                if host_refused.get() || e.code() == ErrorCode::Certificate {
                    GitError::HostKey { url, detail }
                } else if auth_refused.get() || e.code() == ErrorCode::Auth {
                    GitError::Auth { url, detail }
                } else if phase == Phase::Clone {
                    GitError::Clone { url, detail }
                } else {
                    GitError::Fetch { url, detail }
                },
            );
        }

        // The server advertised its refs during the fetch; a branch it did not advertise is
        // gone or never existed (prune has removed a stale local copy).
        let wanted = format!("refs/heads/{}", self.branch);
        let advertised = remote
            .list()
            .map(|heads| heads.iter().any(|h| h.name() == wanted))
            .unwrap_or(false);
        if !advertised {
            if let Ok(mut stale) = repo.find_reference(&local_ref) {
                let _ = stale.delete();
            }
            return Err(self.bad_branch());
        }
        let commit = repo
            .find_reference(&local_ref)
            .and_then(|r| r.peel_to_commit())
            .map_err(|_| self.bad_branch())?;
        Ok(commit.id().to_string())
    }

    /// The credentials callback: each kind of credential is offered once, so a refused token or
    /// key ends the fetch instead of looping.
    fn credentials(
        &self,
        user_from_url: Option<&str>,
        allowed: CredentialType,
        tried: &mut CredentialType,
    ) -> Result<Cred, git2::Error> {
        let auth = &self.auth;
        if allowed.contains(CredentialType::USERNAME) && !tried.contains(CredentialType::USERNAME) {
            tried.insert(CredentialType::USERNAME);
            return Cred::username(user_from_url.unwrap_or("git"));
        }
        if allowed.contains(CredentialType::SSH_KEY)
            && let Some(key) = &auth.ssh_key
        {
            if tried.contains(CredentialType::SSH_KEY) {
                return Err(git2::Error::from_str("the server refused the SSH key"));
            }
            tried.insert(CredentialType::SSH_KEY);
            return Cred::ssh_key(user_from_url.unwrap_or("git"), None, key, None)
                .map_err(|e| git2::Error::from_str(&format!("SSH key: {}", e.message())));
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT)
            && let Some(token) = &auth.token
        {
            if tried.contains(CredentialType::USER_PASS_PLAINTEXT) {
                return Err(git2::Error::from_str("the server refused the token"));
            }
            tried.insert(CredentialType::USER_PASS_PLAINTEXT);
            let user = match user_from_url {
                Some(user) if !user.is_empty() => user,
                _ => token_user(&self.url),
            };
            return Cred::userpass_plaintext(user, token);
        }
        Err(git2::Error::from_str(
            "the server asks for credentials and none fitting were given (a token for https, an SSH key for ssh)",
        ))
    }

    fn check_host_key(&self, host: &str, port: Option<u16>, key: &[u8]) -> Result<(), String> {
        let Some(path) = &self.auth.known_hosts else {
            return Err(format!(
                "no known_hosts file given; refusing to trust the SSH host key of {host}"
            ));
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read known_hosts file {}: {e}", path.display()))?;
        known_hosts_verdict(&text, host, port, key)
    }

    /// A libgit2 message with the URL's userinfo and the token removed.
    fn clean(&self, message: &str) -> String {
        let mut message = message.replace(&self.url, &redact_url(&self.url));
        if let Some(token) = self.auth.token.as_deref().filter(|t| !t.is_empty()) {
            message = message.replace(token, "<redacted>");
        }
        message
    }

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

fn valid_branch(branch: &str) -> bool {
    !branch.is_empty() && git2::Reference::is_valid_name(&format!("refs/heads/{branch}"))
}

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
