//! The main loop's side of sharding: what a shard taken or handed back means for the queue.
//!
//! In: the shards this replica holds ([`super::Ownership`]), the fetches finished, the loop
//! state. Out: a shard taken asks for a fetch and, once a fetch that started after the take
//! has finished, is made ready and its tenants queued as a commit queues them (so those found
//! as last applied are verified, not applied again); a shard handed back has its tenants
//! forgotten (queue, sync records, held inventories), so taking it again later starts from the
//! cluster, not from what this replica knew before.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::super::{LoopState, Shared};
use fief_core::shard::Shard;

/// The shards the loop knows about.
#[derive(Default)]
pub(crate) struct Follow {
    /// Held shards the loop has seen.
    known: BTreeSet<Shard>,
    /// Held shards waiting for a fetch numbered at least this.
    waiting: BTreeMap<Shard, u64>,
}

/// Bring the loop state in line with the shards held; returns whether a shard was made ready.
pub(crate) fn follow(shared: &Shared, state: &mut LoopState) -> bool {
    let Some(own) = shared.shards.as_ref() else {
        return false;
    };
    let held = own.held();
    let f = &mut state.shards;
    let taken: Vec<Shard> = held.difference(&f.known).copied().collect();
    let lost: BTreeSet<Shard> = f.known.difference(&held).copied().collect();
    for s in &taken {
        f.waiting.insert(*s, shared.source.fetches().next());
    }
    if !taken.is_empty() {
        shared.source.request_fetch();
    }
    f.waiting.retain(|s, _| held.contains(s));
    f.known = held;
    if !lost.is_empty() {
        forget(shared, state, &lost, |t| own.shard_of(t));
    }
    let Some(rev) = state.rev.clone() else {
        return false;
    };
    let done = shared.source.fetches().done();
    let ready: Vec<Shard> = state
        .shards
        .waiting
        .iter()
        .filter(|(_, id)| done >= **id)
        .map(|(s, _)| *s)
        .collect();
    if ready.is_empty() {
        return false;
    }
    let now = Instant::now();
    let queued = shared.work.queue(|q| {
        for s in &ready {
            state.shards.waiting.remove(s);
            own.make_ready(*s);
        }
        let mut queued = 0usize;
        for tenant in rev.hashes.keys() {
            if ready.contains(&own.shard_of(tenant)) {
                q.push(tenant, now);
                state.unsettled.insert(tenant.clone());
                queued += 1;
            }
        }
        queued
    });
    state.check_orphans = true;
    // Read every inventory afresh: those standing for the head are verified, not applied.
    state.inventories = None;
    tracing::info!(shards = ?ready, tenants = queued, "shards ready; their tenants queued");
    true
}

/// Forget the tenants of the `lost` shards.
fn forget(
    shared: &Shared,
    state: &mut LoopState,
    lost: &BTreeSet<Shard>,
    shard_of: impl Fn(&str) -> Shard,
) {
    let gone = |t: &String| lost.contains(&shard_of(t));
    if let Some(rev) = &state.rev {
        shared.work.queue(|q| {
            for t in rev.hashes.keys().filter(|t| gone(t)) {
                q.forget(t);
            }
        });
    }
    state.synced.retain(|t, _| !gone(t));
    state.synced_rev.retain(|t, _| !gone(t));
    state.unsettled.retain(|t| !gone(t));
    state.evicted.retain(|t| !gone(t));
    // Another replica writes these inventories from now on: read them afresh.
    state.inventories = None;
    tracing::info!(shards = ?lost, "shards handed back; their tenants forgotten");
}
