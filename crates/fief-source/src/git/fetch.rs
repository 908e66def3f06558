//! Cloning and fetching: the network side of a [`GitSource`].
//!
//! In: the source (URL, branch, credentials, cache path) and its cached bare repository. Out:
//! the commit id the branch points at after the fetch, or a [`GitError`] that says whether the
//! server's host key, the credentials, the clone, the fetch or the branch failed, with the
//! token and the URL's userinfo removed. Blocking.

use std::cell::Cell;
use std::path::Path;

use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, ErrorClass, ErrorCode,
    FetchOptions, FetchPrune, ProxyOptions, RemoteCallbacks, Repository,
};

use super::auth::{local_path, redact_url, ssh_host_port, token_user};
use super::known_hosts::known_hosts_verdict;
use super::{GitError, GitSource, REMOTE, remove_dir};

/// Whether the operation is the first clone or a later fetch (only changes the error variant).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Clone,
    Fetch,
}

/// What the callbacks saw refused during a fetch, to tell auth from host key failures.
#[derive(Default)]
struct Refusals {
    auth: Cell<bool>,
    host: Cell<bool>,
}

impl GitSource {
    /// Clone the branch into a temporary folder beside the cache and rename it into place.
    pub(super) fn clone_into_cache(&self, cache_dir: &Path, key: &str) -> Result<(), GitError> {
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

    /// Fetch the branch, the other branches and the tags into `repo`; the branch's commit id.
    pub(super) fn fetch_into(&self, repo: &Repository, phase: Phase) -> Result<String, GitError> {
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
        let refused = Refusals::default();
        let mut options = self.fetch_options(&refused);
        let result = remote.fetch(
            &[refspec.as_str(), pins[0], pins[1]],
            Some(&mut options),
            None,
        );
        drop(options);
        if let Err(e) = result {
            return Err(self.fetch_error(&e, &refused, phase));
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

    /// The fetch's options: credentials and host key checks (noting refusals), the system
    /// proxy, pruned refs, no automatic tags.
    fn fetch_options<'a>(&'a self, refused: &'a Refusals) -> FetchOptions<'a> {
        let mut callbacks = RemoteCallbacks::new();
        let mut tried = CredentialType::empty();
        callbacks.credentials(move |_url, user_from_url, allowed| {
            self.credentials(user_from_url, allowed, &mut tried)
                .inspect_err(|_| refused.auth.set(true))
        });
        let ssh_port = ssh_host_port(&self.url).and_then(|(_, port)| port);
        callbacks.certificate_check(move |cert, host| match cert.as_hostkey() {
            None => Ok(CertificateCheckStatus::CertificatePassthrough),
            Some(hostkey) => {
                let verdict = match hostkey.hostkey() {
                    Some(key) => self.check_host_key(host, ssh_port, key),
                    None => Err("libgit2 did not give the raw host key".to_string()),
                };
                verdict
                    .map(|()| CertificateCheckStatus::CertificateOk)
                    .map_err(|message| {
                        refused.host.set(true);
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
        options
    }

    /// A failed fetch as the error that says what failed: host key, credentials, clone, fetch.
    fn fetch_error(&self, e: &git2::Error, refused: &Refusals, phase: Phase) -> GitError {
        let url = redact_url(&self.url);
        let mut detail = self.clean(e.message());
        if let Some(path) = local_path(&self.url).filter(|p| !p.exists()) {
            // libgit2 says "unsupported URL protocol" for a path that does not exist.
            detail = format!("{} does not exist ({detail})", path.display());
        }
        if refused.host.get() || e.code() == ErrorCode::Certificate {
            GitError::HostKey { url, detail }
        } else if refused.auth.get() || e.code() == ErrorCode::Auth {
            GitError::Auth { url, detail }
        } else if phase == Phase::Clone {
            GitError::Clone { url, detail }
        } else {
            GitError::Fetch { url, detail }
        }
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

    /// Whether the SSH host key of `host` is in the known_hosts file (no file: refused).
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
}
