//! The source loop: fetch git, read the new commit, queue the tenants whose inputs changed.
//!
//! In: the git source and the loop state. Out: an updated state (commit, repo, input hashes)
//! and tenants on the queue. A failed fetch keeps the last good revision.

use std::sync::{Arc, Mutex};

use super::*;
use crate::source::git::GitSource;

/// Fetch; on a new commit, read it and queue the tenants whose inputs changed. A failed fetch
/// keeps the last good revision and prunes nothing.
pub(super) async fn fetch(
    shared: &Arc<Shared>,
    git: &Arc<Mutex<GitSource>>,
    state: &mut LoopState,
) {
    let g = git.clone();
    let fetched =
        tokio::task::spawn_blocking(move || g.lock().unwrap_or_else(|e| e.into_inner()).fetch())
            .await;
    let commit = match fetched {
        Ok(Ok(commit)) => {
            shared.metrics.fetch_result(true);
            commit
        }
        Ok(Err(e)) => {
            shared.metrics.fetch_result(false);
            tracing::error!(error = %e, commit = ?state.commit, "git fetch failed; keeping the last good revision");
            return;
        }
        Err(e) => {
            shared.metrics.fetch_result(false);
            tracing::error!(error = %e, "git fetch task failed");
            return;
        }
    };
    if state.commit.as_deref() == Some(commit.as_str()) {
        return;
    }
    let g = git.clone();
    let c = commit.clone();
    let snapshot = tokio::task::spawn_blocking(move || {
        g.lock().unwrap_or_else(|e| e.into_inner()).snapshot(&c)
    })
    .await;
    let snapshot = match snapshot {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::error!(error = %e, commit, "cannot read the commit; keeping the last good revision");
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "snapshot task failed");
            return;
        }
    };
    let mut repo = Repo::load(Arc::new(snapshot));
    if let Some(keys) = &shared.age_keys {
        repo.secrets
            .set_unlock(crate::core::secrets::Unlock::Keys(keys.clone()));
    }
    let hashes = crate::core::inputs::tenant_hashes(&repo);
    let known: BTreeSet<String> = hashes.keys().cloned().collect();
    let now = Instant::now();
    let mut changed = 0;
    for (tenant, hash) in &hashes {
        if state.synced.get(tenant) != Some(hash) {
            shared
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(tenant, now);
            changed += 1;
        }
    }
    let removed: Vec<&String> = state.known.difference(&known).collect();
    if !removed.is_empty() || state.commit.is_none() {
        state.check_orphans = true;
    }
    for t in &removed {
        shared
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(t);
        state.synced.remove(*t);
    }
    tracing::info!(commit, changed, removed = removed.len(), "new commit");
    state.commit = Some(commit);
    state.repo = Some(Arc::new(repo));
    state.hashes = hashes;
    state.known = known;
}
