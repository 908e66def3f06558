//! Git failures: what went wrong, for which repository, without secrets.
//!
//! In: libgit2 errors and context. Out: [`GitError`], one line each.

use std::path::PathBuf;

use fief_core::snapshot::{MAX_FILES, TOP_LEVEL};

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
    /// `fief diff --from` (or a pinned ref) on a folder that is not inside a git work tree.
    #[error("{path}: not inside a git checkout: {detail}")]
    NotACheckout {
        /// The folder given.
        path: PathBuf,
        /// What libgit2 reported.
        detail: String,
    },
    /// A commit was asked for, but git has no identity (user.name, user.email) to sign it.
    #[error(
        "{path}: git has no identity to commit with ({detail}); set it with `git config user.name \"Your Name\"` and `git config user.email you@example.com`, then run the command again"
    )]
    NoIdentity {
        /// The checkout.
        path: PathBuf,
        /// What libgit2 reported.
        detail: String,
    },
    /// A revision (branch, tag, commit) that the checkout's repository does not have.
    #[error("{path}: unknown revision `{rev}`: {detail}")]
    BadRevision {
        /// The checkout.
        path: PathBuf,
        /// The revision asked for.
        rev: String,
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
