//! The index task: the one task that takes in what the watches saw, keeps the live hashes and
//! the watch states, and takes the drift decisions.
//!
//! In: the feed ([`crate::parts::index::feed`]), one message at a time in the order sent —
//! per kind its lists (begun, objects, done), its watch events (applied, deleted), a relist
//! or a failure; from the sync path the live hashes a sync wrote, a relist it waits for, the
//! kinds it wants watched. It reads the desired objects and the drift baseline the sync path
//! keeps, and the work part's syncs in flight and last synced. Out, through its
//! [`Keeper`] (the only writer of both): the live hashes and each kind's [`WatchState`]; the
//! tenants queued by drift and the drift counter ([`super::judge`]); the health gate told of
//! each object seen or gone; the loop woken when a watch state changes.
//!
//! What each kind's watch knows between events — the objects it listed, the list under way,
//! whether its first list is done — is kept here per kind, so a relist of one kind diffs
//! against that kind's objects only.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use super::judge::{Seen, deleted, observe};
use crate::desired::Id;
use crate::parts::index::Keeper;
use crate::parts::index::feed::{Event, KindEvent, Observed};
use crate::{Shared, WatchState};

/// Run the index task until shutdown (or until every sender of the feed is gone).
pub(crate) async fn run(shared: Arc<Shared>, mut keeper: Keeper) {
    let mut kinds: HashMap<Arc<str>, KindState> = HashMap::new();
    loop {
        let event = tokio::select! {
            e = keeper.next() => e,
            _ = shared.cluster.shutdown().cancelled() => return,
        };
        let Some(event) = event else { return };
        match event {
            Event::Kind(key, event) => {
                let kind = kinds.entry(key.clone()).or_default();
                kind.take(&shared, &keeper, &key, event);
            }
            Event::Claim(keys, done) => {
                let _ = done.send(keeper.claim(keys));
            }
            Event::Written(writes, done) => {
                keeper.take_written(writes);
                let _ = done.send(());
            }
            Event::RelistNow(done) => {
                keeper.relist_now();
                let _ = done.send(());
            }
            #[cfg(test)]
            Event::Settled(done) => {
                let _ = done.send(());
            }
            #[cfg(test)]
            Event::DropKinds(done) => {
                kinds = HashMap::new();
                let _ = done.send(());
            }
        }
    }
}

/// What the index task keeps of one kind's watch between its events.
#[derive(Default)]
struct KindState {
    /// The first list is done.
    synced_once: bool,
    /// Objects of this kind the watch knows. Desired objects are held by their interned id
    /// (one allocation for the whole agent).
    known: HashSet<Id>,
    /// Objects seen in the list under way.
    seen: HashSet<Id>,
    /// When the list under way began (its objects may predate a sync that ended since).
    listing_since: Option<Instant>,
}

impl KindState {
    /// Take in one event of the watch of `key`.
    fn take(&mut self, shared: &Shared, keeper: &Keeper, key: &str, event: KindEvent) {
        match event {
            KindEvent::ListBegan(at) => {
                self.seen.clear();
                self.listing_since = Some(at);
            }
            KindEvent::Listed(object) => {
                let seen = match (self.synced_once, self.listing_since) {
                    (true, Some(since)) => Seen::Listed(since),
                    _ => Seen::First,
                };
                let id = take_object(shared, keeper, object, seen);
                self.seen.insert(id);
            }
            KindEvent::ListDone => self.list_done(shared, keeper, key),
            KindEvent::Applied(object) => {
                let id = take_object(shared, keeper, object, Seen::Event);
                self.known.insert(id);
            }
            KindEvent::Deleted(id) => {
                self.known.remove(crate::desired::key(&id));
                deleted(shared, keeper, &id, Seen::Event);
            }
            KindEvent::Relisting => set_state(shared, keeper, key, WatchState::Listing),
            KindEvent::Failed(reason) => self.failed(shared, keeper, key, reason),
        }
    }

    /// A list is done: after a relist, what is gone was deleted during the gap.
    fn list_done(&mut self, shared: &Shared, keeper: &Keeper, key: &str) {
        if self.synced_once {
            let since = self.listing_since.unwrap_or_else(Instant::now);
            for id in self.known.difference(&self.seen) {
                deleted(shared, keeper, &id.to_object_id(), Seen::Listed(since));
            }
        } else {
            tracing::debug!(kind = key, "initial list done");
        }
        self.known = std::mem::take(&mut self.seen);
        self.known.shrink_to_fit();
        self.synced_once = true;
        set_state(shared, keeper, key, WatchState::Synced);
    }

    /// A list or watch error: before the first list it degrades the kind; after, the watcher
    /// relists with backoff (and the relist diff repairs the gap).
    fn failed(&self, shared: &Shared, keeper: &Keeper, key: &str, reason: String) {
        if self.synced_once {
            tracing::warn!(
                kind = key,
                error = reason,
                "watch error; relisting with backoff"
            );
            return;
        }
        if keeper.watch_state(key) != Some(WatchState::Failed(reason.clone())) {
            tracing::error!(
                kind = key,
                error = reason,
                "cannot list/watch this kind; tenants using it are degraded; retrying with backoff"
            );
        }
        set_state(shared, keeper, key, WatchState::Failed(reason));
    }
}

/// Take in an object a watch saw; returns its interned id.
fn take_object(shared: &Shared, keeper: &Keeper, object: Observed, seen: Seen) -> Id {
    let Observed { id, value, version } = object;
    observe(shared, keeper, &id, &value, &version, seen).unwrap_or_else(|| keeper.intern(&id))
}

/// Set the state of the watch of `key` and wake the loop (it may wait for the lists).
fn set_state(shared: &Shared, keeper: &Keeper, key: &str, state: WatchState) {
    keeper.set_watch(key, state);
    shared.work.wake();
    shared.work.changed();
}
