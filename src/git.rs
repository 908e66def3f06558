//! Git: the only module that talks to git. Blocking; the agent calls it from `spawn_blocking`.
//!
//! In: a repository URL (local path, `file://`, `git://`, `https://` with a token, `ssh://` or
//! scp-like `user@host:path` with a key and a known_hosts file), a branch, and a cache folder.
//! Out: the commit id the branch points at after a fetch, and the tenants repo at a commit as a
//! [`Snapshot`], read straight from git objects (no checkout, nothing written outside the
//! cache). The snapshot follows the same rules as [`Snapshot::read_dir`]: only the top-level
//! entries fief knows, hidden names skipped, size and count limits, symlinks followed only
//! while they stay inside the repo.
//!
//! Secrets (token, key) never appear in errors: URLs are shown with their userinfo removed and
//! any occurrence of the token in a libgit2 message is replaced by `<redacted>`.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, ErrorClass, ErrorCode,
    FetchOptions, FetchPrune, ObjectType, Oid, ProxyOptions, RemoteCallbacks, Repository,
};
use sha2::{Digest, Sha256};

use crate::error::Problem;
use crate::snapshot::{Entry, MAX_FILE_BYTES, MAX_FILES, Snapshot, TOP_LEVEL};

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
/// Directory nesting below a top-level entry, as in [`Snapshot::read_dir`].
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

/// Why a git operation failed. URLs here never carry userinfo; messages never carry secrets.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The first clone into the cache failed (network, server, not a repository).
    #[error("{url}: cannot clone: {detail}")]
    Clone {
        /// The repository URL, without userinfo.
        url: String,
        /// What libgit2 reported.
        detail: String,
    },
    /// A fetch of the branch failed (network, server).
    #[error("{url}: cannot fetch: {detail}")]
    Fetch {
        /// The repository URL, without userinfo.
        url: String,
        /// What libgit2 reported.
        detail: String,
    },
    /// The server refused the credentials, or none were given and it wants some.
    #[error("{url}: authentication failed: {detail}")]
    Auth {
        /// The repository URL, without userinfo.
        url: String,
        /// What went wrong (never the credential itself).
        detail: String,
    },
    /// The server's SSH host key is not in the known_hosts file (or none was given), or its TLS
    /// certificate is not valid.
    #[error("{url}: server identity not verified: {detail}")]
    HostKey {
        /// The repository URL, without userinfo.
        url: String,
        /// What did not match.
        detail: String,
    },
    /// The branch does not exist on the server, or is not a valid branch name.
    #[error("{url}: branch `{branch}` not found")]
    BadBranch {
        /// The repository URL, without userinfo.
        url: String,
        /// The branch asked for.
        branch: String,
    },
    /// The commit is not a full hex id, or not a commit of the cached repository.
    #[error("{url}: commit `{commit}` not found: {detail}")]
    BadCommit {
        /// The repository URL, without userinfo.
        url: String,
        /// The commit asked for.
        commit: String,
        /// Why it could not be used.
        detail: String,
    },
    /// An object of the commit could not be read from the cached repository (corruption).
    #[error("{url}: commit {commit}: cannot read `{path}`: {detail}")]
    Read {
        /// The repository URL, without userinfo.
        url: String,
        /// The commit being read.
        commit: String,
        /// The repo-relative path being read.
        path: String,
        /// What libgit2 reported.
        detail: String,
    },
    /// The commit has more files than fief reads.
    #[error("{url}: commit {commit} has more than {MAX_FILES} files under {TOP_LEVEL:?}")]
    TooManyFiles {
        /// The repository URL, without userinfo.
        url: String,
        /// The commit being read.
        commit: String,
    },
    /// The cache folder could not be created, opened or cleaned.
    #[error("{path}: git cache: {detail}")]
    Cache {
        /// The folder or repository in the cache.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
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
        let key = hex(&Sha256::digest(url.as_bytes())[..16]);
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
    pub fn fetch(&self) -> Result<String, GitError> {
        let repo = self.open()?;
        self.fetch_into(&repo, Phase::Fetch)
    }

    /// The tenants repo at `commit`, read straight from git objects (no checkout) into a fief::snapshot::Snapshot.
    ///
    /// `commit` is a full hex commit id (as [`GitSource::fetch`] returns). Files that cannot be
    /// used become problem entries, as with [`Snapshot::read_dir`]; only an unreadable
    /// repository, an unknown commit or too many files fail the whole snapshot.
    pub fn snapshot(&self, commit: &str) -> Result<Snapshot, GitError> {
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
        let mut reader = TreeReader {
            repo: &repo,
            root: tree,
            snapshot: Snapshot::default(),
            files: 0,
            url: &self.url,
            commit,
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
        Ok(reader.snapshot)
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
            remote.fetch(&[refspec.as_str()], Some(&mut options), None)
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

/// Sets libgit2's network timeouts, once per process, before the first network operation.
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The user name sent with an HTTPS token when the URL names none: GitLab wants `oauth2`,
/// GitHub (and Gitea, Bitbucket app passwords aside) accept `x-access-token`.
fn token_user(url: &str) -> &'static str {
    let host = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or("");
    if host.to_ascii_lowercase().contains("gitlab") {
        "oauth2"
    } else {
        "x-access-token"
    }
}

/// `url` with any userinfo (`user:password@`) removed: `https://x:tok@host/r` → `https://host/r`,
/// `git@host:org/r` → `host:org/r`. Local paths are returned unchanged.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        return format!("{scheme}://{host}{path}");
    }
    // scp-like `user@host:path`: the part before the first `:` has no `/`.
    if let Some((before, after)) = url.split_once(':')
        && !before.contains('/')
        && let Some((_, host)) = before.rsplit_once('@')
    {
        return format!("{host}:{after}");
    }
    url.to_string()
}

/// The directory a local URL (a path or `file://`) names; None for network URLs.
fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    if url.contains("://") || ssh_host_port(url).is_some() {
        return None;
    }
    Some(PathBuf::from(url))
}

/// Host and explicit port of an SSH URL (`ssh://[user@]host[:port]/path` or scp-like
/// `[user@]host:path`); None for other URLs.
fn ssh_host_port(url: &str) -> Option<(String, Option<u16>)> {
    if let Some(rest) = url
        .strip_prefix("ssh://")
        .or_else(|| url.strip_prefix("git+ssh://"))
        .or_else(|| url.strip_prefix("ssh+git://"))
    {
        let authority = rest.split('/').next().unwrap_or("");
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(bracketed) = host_port.strip_prefix('[') {
            let (host, after) = bracketed.split_once(']')?;
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            return Some((host.to_string(), port));
        }
        return Some(match host_port.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().ok()),
            None => (host_port.to_string(), None),
        });
    }
    if url.contains("://") {
        return None;
    }
    let (before, _) = url.split_once(':')?;
    if before.contains('/') {
        return None;
    }
    let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
    Some((host.trim_matches(['[', ']']).to_string(), None))
}

/// Whether `key` (the raw SSH host key blob) is a known key of `host` in a known_hosts file.
///
/// Lines are `[marker] patterns keytype base64key [comment]`; patterns are comma-separated
/// host names or `[host]:port`, with `*` and `?` wildcards and `!` negation. `@revoked` lines
/// refuse their key; `@cert-authority` lines and hashed (`|1|...`) host names are not
/// supported and never match.
fn known_hosts_verdict(
    text: &str,
    host: &str,
    port: Option<u16>,
    key: &[u8],
) -> Result<(), String> {
    let name = match port {
        Some(p) if p != 22 => format!("[{host}]:{p}"),
        _ => host.to_string(),
    };
    let mut known = false;
    let mut host_listed = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(mut first) = fields.next() else {
            continue;
        };
        let mut revoked = false;
        if first.starts_with('@') {
            match first {
                "@revoked" => revoked = true,
                _ => continue,
            }
            let Some(next) = fields.next() else {
                continue;
            };
            first = next;
        }
        let (Some(_keytype), Some(encoded)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !hosts_match(first, &name) {
            continue;
        }
        let Some(line_key) = decode_base64(encoded) else {
            continue;
        };
        let same = line_key == key;
        if revoked && same {
            return Err(format!("the SSH host key of {name} is marked @revoked"));
        }
        if !revoked {
            host_listed = true;
            known |= same;
        }
    }
    if known {
        Ok(())
    } else if host_listed {
        Err(format!(
            "the SSH host key of {name} does not match the known_hosts file (possible man-in-the-middle)"
        ))
    } else {
        Err(format!("{name} is not in the known_hosts file"))
    }
}

fn hosts_match(patterns: &str, name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let mut matched = false;
    for pattern in patterns.split(',') {
        let pattern = pattern.to_ascii_lowercase();
        if let Some(negated) = pattern.strip_prefix('!') {
            if glob(negated.as_bytes(), name.as_bytes()) {
                return false;
            }
        } else if glob(pattern.as_bytes(), name.as_bytes()) {
            matched = true;
        }
    }
    matched
}

/// `*` (any run) and `?` (any one byte) matching, as OpenSSH does for host patterns.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// A tree entry: what it is and where its object is.
#[derive(Clone, Copy)]
struct Node {
    oid: Oid,
    mode: i32,
    kind: Option<ObjectType>,
}

/// Reads one commit's tree into a snapshot, following [`Snapshot::read_dir`]'s rules.
struct TreeReader<'r> {
    repo: &'r Repository,
    root: git2::Tree<'r>,
    snapshot: Snapshot,
    files: usize,
    url: &'r str,
    commit: &'r str,
}

/// Where a symlink leads: a node and its path from the repo root (empty for the root).
enum Resolved {
    Found(Vec<String>, Node),
    Problem(Problem),
}

impl TreeReader<'_> {
    /// `parent` is the real (symlink-free) path of the directory holding this entry; `rel` the
    /// key it gets in the snapshot; `real_name` its own name in `parent`.
    fn walk(
        &mut self,
        node: Node,
        parent: &[String],
        real_name: String,
        rel: String,
        depth: usize,
    ) -> Result<(), GitError> {
        if self.files >= MAX_FILES {
            return Err(GitError::TooManyFiles {
                url: redact_url(self.url),
                commit: self.commit.to_string(),
            });
        }
        let (real, node) = if node.mode == MODE_SYMLINK {
            match self.resolve_link(node, parent.to_vec(), &rel)? {
                Resolved::Found(real, target) => (real, target),
                Resolved::Problem(problem) => {
                    self.insert(rel, Err(problem));
                    return Ok(());
                }
            }
        } else {
            let mut real = parent.to_vec();
            real.push(real_name);
            (real, node)
        };
        match node.kind {
            Some(ObjectType::Tree) => {
                if depth > MAX_DEPTH {
                    self.insert_problem(rel, "directories nested too deeply".to_string());
                    return Ok(());
                }
                let tree = self
                    .repo
                    .find_tree(node.oid)
                    .map_err(|e| self.read_error(&rel, e))?;
                let mut children: Vec<(Vec<u8>, Node)> = tree
                    .iter()
                    .map(|e| {
                        let node = Node {
                            oid: e.id(),
                            mode: e.filemode(),
                            kind: e.kind(),
                        };
                        (e.name_bytes().to_vec(), node)
                    })
                    .collect();
                children.sort_by(|a, b| a.0.cmp(&b.0));
                for (name, child) in children {
                    let Ok(name) = String::from_utf8(name.clone()) else {
                        self.insert_problem(
                            format!("{rel}/{}", String::from_utf8_lossy(&name)),
                            "file name is not UTF-8".to_string(),
                        );
                        continue;
                    };
                    if name.starts_with('.') {
                        continue;
                    }
                    let child_rel = format!("{rel}/{name}");
                    self.walk(child, &real, name, child_rel, depth + 1)?;
                }
            }
            Some(ObjectType::Blob) => {
                let entry = self.read_blob(node.oid, &rel)?;
                self.insert(rel, entry);
            }
            Some(ObjectType::Commit) => {
                self.insert_problem(
                    rel,
                    "a git submodule; fief does not read submodules".to_string(),
                );
            }
            _ => self.insert_problem(rel, "not a file or directory".to_string()),
        }
        Ok(())
    }

    fn read_blob(&self, oid: Oid, rel: &str) -> Result<Entry, GitError> {
        let odb = self.repo.odb().map_err(|e| self.read_error(rel, e))?;
        let (size, _) = odb.read_header(oid).map_err(|e| self.read_error(rel, e))?;
        if size as u64 > MAX_FILE_BYTES {
            return Ok(Err(Problem::Unreadable {
                reason: format!("file is {size} bytes, more than the limit of {MAX_FILE_BYTES}"),
            }));
        }
        let blob = self
            .repo
            .find_blob(oid)
            .map_err(|e| self.read_error(rel, e))?;
        Ok(std::str::from_utf8(blob.content())
            .map(Arc::from)
            .map_err(|_| Problem::Unreadable {
                reason: "file is not UTF-8 text".to_string(),
            }))
    }

    /// Follow the symlink `link` found in directory `dir` (a real path), component by
    /// component, through further symlinks, without ever leaving the commit's tree.
    fn resolve_link(&self, link: Node, dir: Vec<String>, rel: &str) -> Result<Resolved, GitError> {
        let escapes = || {
            Resolved::Problem(Problem::EscapesRepo {
                path: rel.to_string(),
            })
        };
        let broken = |why: &str| {
            Resolved::Problem(Problem::Unreadable {
                reason: format!("broken symlink: {why}"),
            })
        };
        let mut current = dir;
        let mut pending: VecDeque<String> = VecDeque::new();
        let mut hops = 0;
        let mut next_link = Some(link);
        loop {
            if let Some(link) = next_link.take() {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Ok(broken("too many levels of symbolic links"));
                }
                let blob = self
                    .repo
                    .find_blob(link.oid)
                    .map_err(|e| self.read_error(rel, e))?;
                let Ok(target) = std::str::from_utf8(blob.content()) else {
                    return Ok(broken("target is not UTF-8"));
                };
                if target.is_empty() {
                    return Ok(broken("empty target"));
                }
                if target.starts_with('/') {
                    return Ok(escapes());
                }
                for part in target.split('/').rev() {
                    pending.push_front(part.to_string());
                }
            }
            let Some(part) = pending.pop_front() else {
                break;
            };
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if current.pop().is_none() {
                        return Ok(escapes());
                    }
                    continue;
                }
                _ => {}
            }
            let mut path = current.clone();
            path.push(part);
            let Ok(entry) = self.root.get_path(Path::new(&path.join("/"))) else {
                return Ok(broken("target not found in the commit"));
            };
            let node = Node {
                oid: entry.id(),
                mode: entry.filemode(),
                kind: entry.kind(),
            };
            if node.mode == MODE_SYMLINK {
                // Its target is relative to the directory holding it: `current`.
                next_link = Some(node);
                continue;
            }
            if !pending.iter().all(|p| p.is_empty() || p == ".")
                && node.kind != Some(ObjectType::Tree)
            {
                return Ok(broken("a path component is not a directory"));
            }
            current = path;
        }
        if current.is_empty() {
            let node = Node {
                oid: self.root.id(),
                mode: 0o040_000,
                kind: Some(ObjectType::Tree),
            };
            return Ok(Resolved::Found(current, node));
        }
        let entry = self
            .root
            .get_path(Path::new(&current.join("/")))
            .map_err(|e| self.read_error(rel, e))?;
        let node = Node {
            oid: entry.id(),
            mode: entry.filemode(),
            kind: entry.kind(),
        };
        Ok(Resolved::Found(current, node))
    }

    fn insert(&mut self, rel: String, entry: Entry) {
        self.files += 1;
        self.snapshot.insert(rel, entry);
    }

    fn insert_problem(&mut self, rel: String, reason: String) {
        self.insert(rel, Err(Problem::Unreadable { reason }));
    }

    fn read_error(&self, rel: &str, e: git2::Error) -> GitError {
        GitError::Read {
            url: redact_url(self.url),
            commit: self.commit.to_string(),
            path: rel.to_string(),
            detail: e.message().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_removes_userinfo() {
        assert_eq!(
            redact_url("https://x-access-token:s3cret@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(redact_url("https://s3cret@host:8443"), "https://host:8443");
        assert_eq!(
            redact_url("ssh://git@example.com:2222/o/r.git"),
            "ssh://example.com:2222/o/r.git"
        );
        assert_eq!(redact_url("git@github.com:o/r.git"), "github.com:o/r.git");
        assert_eq!(redact_url("/srv/git/r.git"), "/srv/git/r.git");
        assert_eq!(redact_url("file:///srv/git/r.git"), "file:///srv/git/r.git");
        assert_eq!(
            redact_url("git://127.0.0.1:9418/r.git"),
            "git://127.0.0.1:9418/r.git"
        );
    }

    #[test]
    fn ssh_host_and_port_are_read_from_both_url_forms() {
        assert_eq!(
            ssh_host_port("ssh://git@example.com:2222/o/r.git"),
            Some(("example.com".to_string(), Some(2222)))
        );
        assert_eq!(
            ssh_host_port("ssh://example.com/o/r.git"),
            Some(("example.com".to_string(), None))
        );
        assert_eq!(
            ssh_host_port("git@github.com:o/r.git"),
            Some(("github.com".to_string(), None))
        );
        assert_eq!(ssh_host_port("https://github.com/o/r.git"), None);
        assert_eq!(ssh_host_port("/srv/git/r.git"), None);
    }

    #[test]
    fn token_user_is_oauth2_for_gitlab_and_x_access_token_elsewhere() {
        assert_eq!(token_user("https://gitlab.example.com/g/r.git"), "oauth2");
        assert_eq!(token_user("https://github.com/o/r.git"), "x-access-token");
    }

    const KEY: &[u8] = b"\0\0\0\x0bssh-ed25519\0\0\0\x20abcdefghijklmnopqrstuvwxyz012345";
    const OTHER: &[u8] = b"\0\0\0\x0bssh-ed25519\0\0\0\x20ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn known_host_with_the_same_key_is_trusted() {
        let text = format!(
            "# comment\n\ngithub.com,140.82.121.4 ssh-ed25519 {}\n",
            b64(KEY)
        );
        assert_eq!(known_hosts_verdict(&text, "github.com", None, KEY), Ok(()));
        assert_eq!(
            known_hosts_verdict(&text, "140.82.121.4", Some(22), KEY),
            Ok(())
        );
    }

    #[test]
    fn unknown_host_or_changed_key_is_refused() {
        let text = format!("github.com ssh-ed25519 {}\n", b64(KEY));
        let unknown = known_hosts_verdict(&text, "gitlab.com", None, KEY).unwrap_err();
        assert!(unknown.contains("not in the known_hosts"), "{unknown}");
        let changed = known_hosts_verdict(&text, "github.com", None, OTHER).unwrap_err();
        assert!(changed.contains("does not match"), "{changed}");
        assert!(known_hosts_verdict("", "github.com", None, KEY).is_err());
    }

    #[test]
    fn known_host_on_another_port_needs_the_bracketed_form() {
        let text = format!("[git.example.com]:2222 ssh-ed25519 {}\n", b64(KEY));
        assert!(known_hosts_verdict(&text, "git.example.com", Some(2222), KEY).is_ok());
        assert!(known_hosts_verdict(&text, "git.example.com", None, KEY).is_err());
    }

    #[test]
    fn wildcards_negation_and_revoked_keys_follow_openssh() {
        let text = format!(
            "*.example.com,!evil.example.com ssh-ed25519 {}\n@revoked * ssh-ed25519 {}\n@cert-authority * ssh-ed25519 {}\n",
            b64(KEY),
            b64(OTHER),
            b64(OTHER)
        );
        assert!(known_hosts_verdict(&text, "git.example.com", None, KEY).is_ok());
        assert!(known_hosts_verdict(&text, "evil.example.com", None, KEY).is_err());
        let revoked = known_hosts_verdict(&text, "git.example.com", None, OTHER).unwrap_err();
        assert!(revoked.contains("@revoked"), "{revoked}");
    }

    #[test]
    fn hashed_known_hosts_entries_never_match() {
        let text = format!(
            "|1|JfKTdBh7rNbXkVAQCRp4OQoPfmI=|USECr3SWf1JUPsms5AqfD5QfxkM= ssh-ed25519 {}\n",
            b64(KEY)
        );
        assert!(known_hosts_verdict(&text, "github.com", None, KEY).is_err());
    }

    #[test]
    fn glob_matches_like_openssh_host_patterns() {
        assert!(glob(b"*", b"anything"));
        assert!(glob(b"git?.example.com", b"git1.example.com"));
        assert!(!glob(b"git?.example.com", b"git12.example.com"));
        assert!(glob(b"*.example.com", b"a.b.example.com"));
        assert!(!glob(b"*.example.com", b"example.com"));
    }

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
