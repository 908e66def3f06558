//! The source task: clone, fetch, read the new commit — on its own task, with a timeout.
//!
//! In: the git remote, the fetch interval and webhook triggers. Out: each new revision (commit,
//! parsed repo, per-tenant input hashes) on a watch channel, and the fetch status in the
//! agent's health (last commit, last error). Git unreachable at start is reported as not-ready
//! and retried with backoff; a fetch that hangs is reported after `git_timeout` and never
//! holds up syncs, drift repair or shutdown (they run on other tasks). A failed fetch keeps the
//! last good revision. Reading a commit ([`fief_source::revision`]) runs on a blocking thread,
//! against the previous read: unchanged blobs, parsed files and input hashes are reused, so a
//! commit costs what it changed (counted in `fief_tenants_loaded_total` / `fief_tenants_hashed_total`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use imbl::ordmap::DiffItem;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{AgentOptions, LoopState, Shared, jitter};
use fief_source::git::{GitError, GitSource};
use fief_source::revision::{ReadCache, Revision, pins_moved, read_commit};

/// Pushes that arrive while a fetch runs, or within this long of its start, collapse into one
/// follow-up fetch: a burst of webhooks costs at most two fetches, and a lone push is fetched
/// at once.
const PUSH_COALESCE: Duration = Duration::from_millis(250);

/// Longest wait between clone attempts at start.
const CLONE_BACKOFF_MAX: Duration = Duration::from_secs(60);

fn report_failure(shared: &Shared, what: &str, error: String) {
    shared.cluster.metrics().fetch_result(false);
    shared.report.fetch_failed(what, error);
    shared.work.changed();
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
    let Some(git) = clone(&shared, &options).await else {
        return;
    };
    let stop = shared.cluster.shutdown().clone();
    let mut follow = Follow {
        git: Arc::new(Mutex::new(git)),
        current: None,
        cache: Arc::new(Mutex::new(ReadCache::default())),
        pins: fief_core::pins::Resolved::new(),
        tx,
    };
    let mut pending: Option<JoinHandle<Result<String, GitError>>> = None;
    let mut started = Instant::now();
    let mut fetch_id = 0;
    loop {
        if pending.is_none() {
            // This fetch covers every push notified before it starts.
            let _ = futures::FutureExt::now_or_never(shared.source.fetch_requested());
            started = Instant::now();
            fetch_id = shared.source.fetches().start();
            let g = follow.git.clone();
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
                follow.fetched(&shared, commit).await;
                shared.source.fetches().finish(fetch_id);
            }
            Some(Err(e)) => {
                tracing::error!(error = %e, commit = follow.current.as_deref().unwrap_or(""), "git fetch failed; keeping the last good revision");
                report_failure(&shared, "git fetch", e);
            }
            None => {}
        }
        let next = Instant::now() + options.interval + jitter(options.interval);
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            _ = shared.source.fetch_requested() => {
                // Let the rest of a burst arrive: it is fetched once, after this wait.
                tokio::select! {
                    _ = tokio::time::sleep_until((started + PUSH_COALESCE).into()) => {}
                    _ = stop.cancelled() => return,
                }
            }
            _ = stop.cancelled() => return,
        }
    }
}

/// Open or clone the repo, with backoff until it works (`None`: shut down first).
async fn clone(shared: &Shared, options: &AgentOptions) -> Option<GitSource> {
    let stop = shared.cluster.shutdown().clone();
    let mut delays = super::doubling(Duration::from_secs(1), CLONE_BACKOFF_MAX);
    let mut pending: Option<JoinHandle<Result<GitSource, GitError>>> = None;
    loop {
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
            _ = stop.cancelled() => return None,
        };
        let delay = delays.next().unwrap_or(CLONE_BACKOFF_MAX);
        match outcome {
            Some(Ok(git)) => return Some(git),
            Some(Err(e)) => {
                tracing::error!(error = %e, retry_in_s = delay.as_secs(), "cannot clone the tenants repo; not ready, retrying");
                report_failure(shared, "git clone", e);
            }
            None => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shared.source.fetch_requested() => {}
            _ = stop.cancelled() => return None,
        }
    }
}

/// What the source task keeps between fetches.
struct Follow {
    git: Arc<Mutex<GitSource>>,
    /// The commit of the last revision published.
    current: Option<String>,
    cache: Arc<Mutex<ReadCache>>,
    /// What each pinned ref resolved to in the last revision.
    pins: fief_core::pins::Resolved,
    tx: watch::Sender<Option<Arc<Revision>>>,
}

impl Follow {
    /// A fetch succeeded at `commit`: read and publish it when it (or a pinned ref) moved.
    async fn fetched(&mut self, shared: &Arc<Shared>, commit: String) {
        shared.cluster.metrics().fetch_result(true);
        shared.report.fetched(&commit);
        shared.work.changed();
        let moved = !self.pins.is_empty() && {
            let g = self.git.clone();
            let p = self.pins.clone();
            tokio::task::spawn_blocking(move || {
                pins_moved(&g.lock().unwrap_or_else(|e| e.into_inner()), &p)
            })
            .await
            .unwrap_or(true)
        };
        // A locked chart that could not be fetched is tried again at every fetch until it is.
        let charts_missing = self
            .tx
            .borrow()
            .as_ref()
            .is_some_and(|rev| rev.charts_missing);
        if self.current.as_deref() == Some(commit.as_str()) && !moved && !charts_missing {
            return;
        }
        match read_revision(&self.git, &commit, shared, &mut self.cache).await {
            Ok(rev) => {
                self.current = Some(commit);
                self.pins = rev.pins.clone();
                shared.report.revision_read();
                let _ = self.tx.send(Some(Arc::new(rev)));
                shared.work.changed();
            }
            Err(e) => {
                tracing::error!(error = %e, commit, "cannot read the commit; keeping the last good revision");
                report_failure(shared, "git", e);
            }
        }
    }
}

/// Read a commit on a blocking thread ([`read_commit`], in the sources), counting what was
/// parsed and hashed.
/// A read that panics leaves an empty cache, so the next read is a full one.
async fn read_revision(
    git: &Arc<Mutex<GitSource>>,
    commit: &str,
    shared: &Arc<Shared>,
    cache: &mut Arc<Mutex<ReadCache>>,
) -> Result<Revision, String> {
    let g = git.clone();
    let c = commit.to_string();
    let cache_in = cache.clone();
    let sh = shared.clone();
    let read = tokio::task::spawn_blocking(move || {
        let mut guard = cache_in.lock().unwrap_or_else(|e| e.into_inner());
        let git = g.lock().unwrap_or_else(|e| e.into_inner());
        let (rev, loaded, hashed) =
            read_commit(&git, &c, &mut guard, sh.source.age_keys()).map_err(|e| e.to_string())?;
        sh.cluster
            .metrics()
            .tenants_loaded
            .inc_by(loaded.tenants_parsed as u64);
        sh.cluster
            .metrics()
            .tenants_hashed
            .inc_by(hashed.tenants_hashed as u64);
        tracing::debug!(
            commit = c,
            tenants_parsed = loaded.tenants_parsed,
            tenants_hashed = hashed.tenants_hashed,
            "commit read"
        );
        Ok(rev)
    })
    .await;
    match read {
        Ok(r) => r,
        Err(e) => {
            // The task panicked with the cache taken: start afresh.
            *cache = Arc::new(Mutex::new(ReadCache::default()));
            Err(format!("snapshot task failed: {e}"))
        }
    }
}

/// Take a new revision into the loop state: queue the tenants whose inputs changed, forget
/// the removed ones.
///
/// Only the tenants whose input hash differs between the two revisions (a diff of the two
/// persistent hash maps, which skips the parts they share) and the unsettled ones
/// ([`LoopState::unsettled`]) are looked at: every other tenant is synced at the old head's
/// hash, which is the new head's. A one-tenant commit looks at one tenant at any fleet size.
pub(super) fn take_revision(shared: &Shared, state: &mut LoopState, rev: Arc<Revision>) {
    // The same commit read again is new only when a pinned ref moved or a locked chart that
    // could not be fetched now could.
    if state.rev.as_ref().is_some_and(|r| {
        r.commit == rev.commit
            && r.pins == rev.pins
            && (Arc::ptr_eq(r, &rev) || r.charts_missing == rev.charts_missing)
    }) {
        return;
    }
    let now = Instant::now();
    let (candidates, removed) = moved_tenants(state, &rev);
    let mut changed = Vec::new();
    for tenant in candidates {
        let Some(hash) = rev.hashes.get(&tenant) else {
            continue;
        };
        if !shared.owns(&tenant) {
            continue;
        }
        if state.synced.get(&tenant) == Some(hash) {
            // Settled at this hash (synced at an older revision that renders it the same):
            // its revision is the head's from now on.
            state.synced_rev.remove(&tenant);
            continue;
        }
        // The revision it is synced at, for a rollout to hold it there: the old head's
        // when it was settled at it.
        if let Some(old) = &state.rev
            && !state.synced_rev.contains_key(&tenant)
            && let Some(synced) = state.synced.get(&tenant)
            && old.hashes.get(&tenant) == Some(synced)
        {
            state.synced_rev.insert(tenant.clone(), old.clone());
        }
        changed.push(tenant);
    }
    state.unsettled = changed.iter().cloned().collect();
    let changed_count = changed.len();
    let queued = super::rollout::begin(state, &rev, changed, shared.gate.max_in_flight());
    let held = changed_count - queued.len();
    shared.work.queue(|q| {
        for tenant in &queued {
            q.push(tenant, now);
        }
        if !removed.is_empty() || state.rev.is_none() {
            state.check_orphans = true;
        }
        for t in &removed {
            q.forget(t);
            state.synced.remove(t);
            state.synced_rev.remove(t);
        }
    });
    tracing::info!(
        commit = rev.commit,
        changed = changed_count,
        held,
        removed = removed.len(),
        "new commit"
    );
    state.rev = Some(rev);
}

/// The tenants a new head `rev` may have to sync (those whose input hash it changed or
/// added, and the unsettled ones), and those it removed. The first head: every tenant.
fn moved_tenants(state: &mut LoopState, rev: &Revision) -> (BTreeSet<String>, Vec<String>) {
    let Some(old) = &state.rev else {
        return (rev.hashes.keys().cloned().collect(), Vec::new());
    };
    let mut candidates = std::mem::take(&mut state.unsettled);
    let mut removed = Vec::new();
    for item in old.hashes.diff(&rev.hashes) {
        match item {
            DiffItem::Add(t, _) | DiffItem::Update { new: (t, _), .. } => {
                candidates.insert(t.clone());
            }
            DiffItem::Remove(t, _) => {
                candidates.remove(t);
                removed.push(t.clone());
            }
        }
    }
    (candidates, removed)
}

#[cfg(test)]
#[path = "source_loop_tests.rs"]
mod tests;
