//! Taking a rollout up again after a restart, from its `fief-rollout` record.
//!
//! In: the record (read from the cluster), the head revision and the agent's clone. Out: the
//! loop state with each tenant synced at its held commit (or the rollout's), and the rollout
//! active again at its wave with the tenants of it released before; nothing when there is no record, it is complete, or it cannot be
//! read.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::{Active, labels_of};
use crate::{LoopState, Shared};
use fief_core::rollout::{Phase, Record, assign};
use fief_source::revision::Revision;

/// At start, before the first revision is taken: when the `fief-rollout` record says a
/// rollout was under way, take it up again — held tenants stay at the commit they were held
/// at (read from the agent's clone), the others count as synced at the rollout's commit, and
/// the rollout goes on from its wave (or, when the head moved on, a new one starts from them).
/// Without a record, or when it cannot be read, nothing is restored (and that is logged).
pub(crate) async fn restore(
    shared: &Shared,
    options: &crate::AgentOptions,
    state: &mut LoopState,
    head: &Arc<Revision>,
) {
    let Ok(config) = head.repo.config.as_ref() else {
        return;
    };
    // With shards each replica's record covers its own tenants only: none is kept.
    if config.rollout.is_none() || shared.shards.is_some() {
        return;
    }
    let record = match fief_kube::rollout_store::read_record(
        shared.cluster.client(),
        &config.agent_namespace,
    )
    .await
    {
        Ok(Some(r)) if r.phase != Phase::Complete => r,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the rollout record; held tenants are not restored");
            return;
        }
    };
    let revs = read_held_commits(shared, options, head, &record).await;
    let Some(target) = revs.get(&record.commit).cloned() else {
        return;
    };
    for t in target.hashes.keys() {
        let rev = record
            .held
            .get(t)
            .and_then(|c| revs.get(c))
            .unwrap_or(&target);
        state.synced_rev.insert(t.clone(), rev.clone());
    }
    let labels = labels_of(head);
    let Some(rollout) = config.rollout.as_ref() else {
        return;
    };
    let members = assign(rollout, &labels);
    let wave_of: HashMap<String, usize> = record
        .waves
        .iter()
        .enumerate()
        .flat_map(|(i, w)| w.tenants.iter().map(move |t| (t.clone(), i)))
        .collect();
    tracing::info!(
        commit = record.commit,
        wave = record.wave + 1,
        held = record.held.len(),
        "rollout taken up again after a restart"
    );
    // The current wave's tenants not recorded as held were released before the restart.
    let released = record
        .waves
        .get(record.wave)
        .map(|w| {
            w.tenants
                .iter()
                .filter(|t| !record.held.contains_key(*t))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    state.rollout = Some(Active {
        target,
        waves: record.waves,
        members,
        wave_of,
        wave: record.wave,
        released,
        phase: match record.phase {
            Phase::Halted => Phase::Halted,
            Phase::Progressing | Phase::Complete => Phase::Progressing,
        },
        reason: record.reason,
        started_at: record.started_at,
        updated_at: record.updated_at,
    });
}

/// The revisions of the record's commit and of each commit it holds tenants at (the head
/// taken as it is, the others read from the agent's clone); a commit that cannot be read is
/// left out (and logged).
async fn read_held_commits(
    shared: &Shared,
    options: &crate::AgentOptions,
    head: &Arc<Revision>,
    record: &Record,
) -> HashMap<String, Arc<Revision>> {
    let mut commits: BTreeSet<String> = record.held.values().cloned().collect();
    commits.insert(record.commit.clone());
    let mut revs: HashMap<String, Arc<Revision>> = HashMap::new();
    revs.insert(head.commit.clone(), head.clone());
    for c in commits {
        if revs.contains_key(&c) || c.is_empty() {
            continue;
        }
        let (o, c2) = (options.clone(), c.clone());
        let keys = shared.source.age_keys().cloned();
        let read = tokio::task::spawn_blocking(move || read_at(&o, &c2, keys.as_ref())).await;
        match read {
            Ok(Ok(rev)) => {
                revs.insert(c, Arc::new(rev));
            }
            Ok(Err(e)) => {
                tracing::warn!(commit = c, error = %e, "cannot read a held commit; its tenants are not held");
            }
            Err(e) => tracing::warn!(error = %e, "read task failed"),
        }
    }
    revs
}

/// A revision at `commit`, read from the agent's clone (no network).
fn read_at(
    options: &crate::AgentOptions,
    commit: &str,
    keys: Option<&Arc<fief_core::secrets::Keys>>,
) -> Result<Revision, String> {
    let git = fief_source::git::GitSource::open_or_clone(
        &options.repo,
        &options.branch,
        &options.cache_dir,
        options.auth.clone(),
    )
    .map_err(|e| e.to_string())?;
    fief_source::revision::read_at(&git, commit, keys).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "restore_tests.rs"]
mod tests;
