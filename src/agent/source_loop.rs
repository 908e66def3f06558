//! The source task: clone, fetch, read the new commit — on its own task, with a timeout.
//!
//! In: the git remote, the fetch interval and webhook triggers. Out: each new revision (commit,
//! parsed repo, per-tenant input hashes) on a watch channel, and the fetch status in the
//! agent's health (last commit, last error). Git unreachable at start is reported as not-ready
//! and retried with backoff; a fetch that hangs is reported after `git_timeout` and never
//! holds up syncs, drift repair or shutdown (they run on other tasks). A failed fetch keeps the
//! last good revision. Loading and hashing run on blocking threads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{AgentOptions, LoopState, Shared, jitter, lock};
use crate::core::model::Repo;
use crate::source::git::{GitError, GitSource};

/// A commit read from git.
pub struct Revision {
    /// The commit id.
    pub commit: String,
    /// The parsed repo.
    pub repo: Arc<Repo>,
    /// Input hash of each tenant.
    pub hashes: BTreeMap<String, String>,
    /// What each pinned (component, ref) resolved to.
    pub pins: super::pins::Resolved,
}

/// Longest wait between clone attempts at start.
const CLONE_BACKOFF_MAX: Duration = Duration::from_secs(60);

fn report_failure(shared: &Shared, what: &str, error: String) {
    shared.metrics.fetch_result(false);
    let mut h = lock(&shared.health);
    if !h.has_revision {
        h.source_problem = Some(format!("{what}: {error}"));
    }
    h.last_fetch_error = Some(error);
}

/// Wait for a blocking git call, at most `timeout`; a call that takes longer goes on in the
/// background (returned, so no second call starts on the same clone meanwhile).
async fn bounded<T: Send + 'static>(
    handle: &mut Option<JoinHandle<Result<T, GitError>>>,
    timeout: Duration,
) -> Option<Result<T, String>> {
    let h = handle.as_mut()?;
    match tokio::time::timeout(timeout, h).await {
        Err(_) => Some(Err(format!(
            "no answer after {}s; still waiting in the background",
            timeout.as_secs()
        ))),
        Ok(joined) => {
            *handle = None;
            Some(match joined {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(format!("git task failed: {e}")),
            })
        }
    }
}

/// Clone (with backoff until it works), then fetch on every tick or trigger; publish each new
/// revision. Returns on shutdown.
pub(super) async fn run(
    shared: Arc<Shared>,
    options: AgentOptions,
    tx: watch::Sender<Option<Arc<Revision>>>,
) {
    let stop = shared.shutdown.clone();
    let mut delay = Duration::from_secs(1);
    let mut pending: Option<JoinHandle<Result<GitSource, GitError>>> = None;
    let git = loop {
        if pending.is_none() {
            let (url, branch, dir, auth) = (
                options.repo.clone(),
                options.branch.clone(),
                options.cache_dir.clone(),
                options.auth.clone(),
            );
            pending = Some(tokio::task::spawn_blocking(move || {
                GitSource::open_or_clone(&url, &branch, &dir, auth)
            }));
        }
        let outcome = tokio::select! {
            o = bounded(&mut pending, options.git_timeout) => o,
            _ = stop.cancelled() => return,
        };
        match outcome {
            Some(Ok(git)) => break git,
            Some(Err(e)) => {
                tracing::error!(error = %e, retry_in_s = delay.as_secs(), "cannot clone the tenants repo; not ready, retrying");
                report_failure(&shared, "git clone", e);
            }
            None => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shared.fetch_now.notified() => {}
            _ = stop.cancelled() => return,
        }
        delay = (delay * 2).min(CLONE_BACKOFF_MAX);
    };
    let git = Arc::new(Mutex::new(git));
    let mut current: Option<String> = None;
    let mut pins = super::pins::Resolved::new();
    let mut pending: Option<JoinHandle<Result<String, GitError>>> = None;
    loop {
        if pending.is_none() {
            let g = git.clone();
            pending = Some(tokio::task::spawn_blocking(move || {
                g.lock().unwrap_or_else(|e| e.into_inner()).fetch()
            }));
        }
        let outcome = tokio::select! {
            o = bounded(&mut pending, options.git_timeout) => o,
            _ = stop.cancelled() => return,
        };
        match outcome {
            Some(Ok(commit)) => {
                shared.metrics.fetch_result(true);
                {
                    let mut h = lock(&shared.health);
                    h.last_fetch_error = None;
                    h.last_commit = Some(commit.clone());
                }
                let moved = !pins.is_empty() && {
                    let g = git.clone();
                    let p = pins.clone();
                    tokio::task::spawn_blocking(move || {
                        super::pins::moved(&g.lock().unwrap_or_else(|e| e.into_inner()), &p)
                    })
                    .await
                    .unwrap_or(true)
                };
                if current.as_deref() != Some(commit.as_str()) || moved {
                    match read_revision(&git, &commit, shared.age_keys.clone()).await {
                        Ok(rev) => {
                            current = Some(commit.clone());
                            pins = rev.pins.clone();
                            {
                                let mut h = lock(&shared.health);
                                h.has_revision = true;
                                h.source_problem = None;
                            }
                            let _ = tx.send(Some(Arc::new(rev)));
                        }
                        Err(e) => {
                            tracing::error!(error = %e, commit, "cannot read the commit; keeping the last good revision");
                            report_failure(&shared, "git", e);
                        }
                    }
                }
            }
            Some(Err(e)) => {
                tracing::error!(error = %e, commit = current.as_deref().unwrap_or(""), "git fetch failed; keeping the last good revision");
                report_failure(&shared, "git fetch", e);
            }
            None => {}
        }
        let next = Instant::now() + options.interval + jitter(options.interval);
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            _ = shared.fetch_now.notified() => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// Read a commit, parse the repo and hash every tenant's inputs, on a blocking thread.
async fn read_revision(
    git: &Arc<Mutex<GitSource>>,
    commit: &str,
    age_keys: Option<Arc<crate::core::secrets::Keys>>,
) -> Result<Revision, String> {
    let g = git.clone();
    let c = commit.to_string();
    tokio::task::spawn_blocking(move || {
        let git = g.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = git.snapshot(&c).map_err(|e| e.to_string())?;
        let (mut repo, pins) = super::pins::load(&git, snapshot);
        drop(git);
        if let Some(keys) = &age_keys {
            repo.secrets
                .set_unlock(crate::core::secrets::Unlock::Keys(keys.clone()));
        }
        let hashes = super::pins::hashes(&repo, crate::core::inputs::tenant_hashes(&repo), &pins);
        Ok(Revision {
            commit: c,
            repo: Arc::new(repo),
            hashes,
            pins,
        })
    })
    .await
    .map_err(|e| format!("snapshot task failed: {e}"))?
}

/// Take a new revision into the loop state: queue the tenants whose inputs changed, forget
/// the removed ones.
pub(super) fn take_revision(shared: &Shared, state: &mut LoopState, rev: Arc<Revision>) {
    if state
        .rev
        .as_ref()
        .is_some_and(|r| r.commit == rev.commit && r.pins == rev.pins)
    {
        return;
    }
    let now = Instant::now();
    let mut changed = 0;
    let mut q = lock(&shared.queue);
    for (tenant, hash) in &rev.hashes {
        if state.synced.get(tenant) != Some(hash) {
            q.push(tenant, now);
            changed += 1;
        }
    }
    let removed: Vec<String> = match &state.rev {
        Some(old) => old
            .hashes
            .keys()
            .filter(|t| !rev.hashes.contains_key(*t))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    if !removed.is_empty() || state.rev.is_none() {
        state.check_orphans = true;
    }
    for t in &removed {
        q.forget(t);
        state.synced.remove(t);
    }
    drop(q);
    tracing::info!(
        commit = rev.commit,
        changed,
        removed = removed.len(),
        "new commit"
    );
    state.rev = Some(rev);
}
