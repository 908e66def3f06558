//! What the agent knows of the objects it manages: the desired objects of the last renders,
//! the one interned id per object, per object one record of its live hash (as the watches
//! keep it) and its drift baseline (what fief last applied), each kind's watch state and the
//! relist epoch the watches follow.
//!
//! The record of an object is small and fixed in size ([`objects`]): the hashes as bytes (one
//! while the live hash is the recorded one), the tenant as an index into a table of the
//! tenants' names (each held once), the version it is judged by (only while its tenant has no
//! desired shape) and a few flags. The records are one map under one lock, `objects`, and each
//! part of a record has one writer:
//!
//! - the live hash of each record, and `watches` (each kind's watch state): the index task
//!   ([`crate::drift::index_task`]), through the [`Keeper`], the one handle with their writes.
//! - `desired` (the renders' shapes): the sync path ([`crate::reconciler`]), through
//!   [`LiveIndex::replace_desired`].
//! - the drift baseline of each record: the sync path ([`crate::verify`],
//!   [`crate::outcome`]), through [`LiveIndex::baseline`].
//!
//! The index task holds the only [`Keeper`] (made once, with the index, by [`LiveIndex::new`])
//! and alone receives the [`feed`]: the watches' events, and the sync path's asks — the live
//! hashes a sync wrote ([`LiveIndex::written`]), a relist it waits for
//! ([`LiveIndex::relist_now`]), the kinds it wants watched ([`LiveIndex::claim_watches`]). The
//! sync path (the leader's loop, one task) writes the desired objects and the drift baseline
//! itself, under their locks: its next step needs them in place (the lists it waits for hash
//! objects by the shapes, the verifier judges by the baseline), which a write under a lock gives
//! without the round trip a message would add; the index task only reads them, to judge drift.
//! The interner `ids` is an allocator both call (interning an object again hands out the same
//! allocation, so no one sees another's call); the sync path sweeps it between batches. The
//! relist epoch is a request anyone may make ([`LiveIndex::relist`]); every watch follows it.
//!
//! In: the renders' shapes, the baseline seeded from the inventories of tenants that may stand
//! as last applied and replaced from each sync's inventories, and through the feed what the
//! watches saw. Out: per object its tenant, shape, live hash and recorded baseline; whether a
//! kind is listed, listing or failing; the relist epoch each watch subscribes to.
//!
//! Lock order: `desired`, then `objects`; `ids` is a leaf (nothing is locked while it is
//! held). The health gate's lock comes before `objects`: the gate reads the live hashes the
//! watches computed under it ([`crate::health`]). Each method takes what it reads or writes
//! under one lock (or, for [`LiveIndex::baseline`], its handle holds the lock until it
//! returns), so no caller splits one of these steps in two.

pub(crate) mod feed;
mod objects;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};

use tokio::sync::{mpsc, oneshot};

use self::feed::{Event, LiveWrite};
use self::objects::{DONE, LIVE, LiveFrom, Objects, RECORDED};
use crate::desired::{Desired, Found, Id, Ids, Shaped};
use crate::{WatchState, lock, read, write};
use fief_core::digest::{Digest, Version};
use fief_core::inventory::AppliedVersion;
use fief_core::objects::ObjectId;

/// Messages the feed holds before its senders wait: about one page of a list's objects, so
/// the watches never hold more than that ahead of the index task.
const FEED: usize = 128;

/// What fief last applied for one object: the drift baseline, as the sync path hands it in
/// ([`Baseline::record`]; the index keeps it in the object's [`Object`]).
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The tenant it belongs to.
    pub(crate) tenant: Arc<str>,
    /// The live hash recorded after it was applied.
    pub(crate) live: Digest,
    /// The version it was applied at, while its tenant has no desired shape for it: not
    /// rendered since it was verified, its render failed, or its last sync completed (the
    /// watches then judge it by this).
    pub(crate) version: Option<Version>,
    /// A pre or post object done by its delete policy ([`fief_core::inventory::Entry::done`]):
    /// it may be gone, and neither its absence nor a change of it is drift.
    pub(crate) done: bool,
}

/// The maps, shared by the index and its [`Keeper`].
struct Maps {
    /// Desired objects of the last render: tenant and interned shape.
    desired: RwLock<Desired>,
    /// Every object id the agent holds, allocated once (a leaf lock; the health gate shares
    /// it).
    ids: Ids,
    /// Per object its live hash and drift baseline.
    objects: RwLock<Objects>,
    /// One watch per kind: its state.
    watches: Mutex<HashMap<String, WatchState>>,
    /// Bumped by a relist: every watch lists afresh and diffs against what it knew.
    relist: tokio::sync::watch::Sender<u64>,
}

/// What the agent knows of the objects (see the module docs): the read side, the sync
/// path's writes, and the feed into the index task.
pub(crate) struct LiveIndex {
    maps: Arc<Maps>,
    feed: mpsc::Sender<Event>,
}

/// The index task's handle: the one writer of the live hashes and the watch states, and the
/// one receiver of the feed.
pub(crate) struct Keeper {
    maps: Arc<Maps>,
    events: mpsc::Receiver<Event>,
}

/// The drift baseline, write-locked while inventories are taken in.
pub(crate) struct Baseline<'a> {
    objects: RwLockWriteGuard<'a, Objects>,
    ids: &'a Ids,
}

impl Baseline<'_> {
    /// The agent's one allocation of `id`.
    pub(crate) fn intern(&self, id: &ObjectId) -> Id {
        self.ids.intern(id)
    }

    /// Record what fief applied for `id`.
    pub(crate) fn record(&mut self, id: Id, recorded: Recorded) {
        self.objects.record(id, recorded);
    }

    /// Forget what was recorded for `id` if `stale` says so of its tenant.
    pub(crate) fn forget_if(&mut self, id: &ObjectId, stale: impl FnOnce(&str) -> bool) {
        let Some(id) = self.ids.find(id) else {
            return;
        };
        let id = &id;
        let objects = &mut self.objects;
        let is_stale = objects
            .with(id, RECORDED)
            .is_some_and(|o| stale(&objects.tenant_of(o)));
        if is_stale {
            objects.forget(id, RECORDED);
        }
    }
}

impl LiveIndex {
    /// An empty index, and the [`Keeper`] the index task runs with.
    pub(crate) fn new() -> (LiveIndex, Keeper) {
        let maps = Arc::new(Maps {
            desired: RwLock::default(),
            ids: Ids::default(),
            objects: RwLock::default(),
            watches: Mutex::default(),
            relist: tokio::sync::watch::Sender::new(0),
        });
        let (feed, events) = mpsc::channel(FEED);
        let keeper = Keeper {
            maps: maps.clone(),
            events,
        };
        (LiveIndex { maps, feed }, keeper)
    }

    /// The agent's interner, for the other tables keyed on its ids (the health gate's).
    pub(crate) fn ids(&self) -> Ids {
        self.maps.ids.clone()
    }

    /// Send `event` to the index task, waiting while the feed is full (dropped once the
    /// task has stopped: the agent is shutting down).
    pub(crate) async fn send(&self, event: Event) {
        let _ = self.feed.send(event).await;
    }

    /// Send the message `ask` makes and wait for the index task's answer (`None` once the
    /// task has stopped).
    async fn ask<T>(&self, ask: impl FnOnce(oneshot::Sender<T>) -> Event) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.feed.send(ask(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Of `keys` (kinds' watch keys), those not watched yet, each now counted as listing
    /// (the caller starts their watches).
    pub(crate) async fn claim_watches(&self, keys: Vec<String>) -> Vec<String> {
        self.ask(|tx| Event::Claim(keys, tx))
            .await
            .unwrap_or_default()
    }

    /// Hand the live hashes a sync recorded to the index task; returns once they are taken
    /// in, so the next plan reads them.
    pub(crate) async fn written(&self, writes: Vec<LiveWrite>) {
        if !writes.is_empty() {
            self.ask(|tx| Event::Written(writes, tx)).await;
        }
    }

    /// Make every watch list afresh now; returns once each listed kind counts as listing
    /// until it has.
    pub(crate) async fn relist_now(&self) {
        self.ask(Event::RelistNow).await;
    }

    /// Returns once the index task has taken in every message sent before.
    #[cfg(test)]
    pub(crate) async fn settled(&self) {
        self.ask(Event::Settled).await;
    }

    /// Make every watch list afresh.
    pub(crate) fn relist(&self) {
        self.maps.relist.send_modify(|epoch| *epoch += 1);
    }

    /// A receiver that changes at each relist.
    pub(crate) fn relists(&self) -> tokio::sync::watch::Receiver<u64> {
        self.maps.relist.subscribe()
    }

    /// Forget the ids nothing holds any more (see [`Interner::sweep`]).
    pub(crate) fn sweep_ids(&self) {
        self.maps.ids.lock().sweep();
    }

    /// Replace the desired objects of each tenant given by its render's shapes, and forget
    /// the shapes no object uses any more; returns the distinct shapes held.
    pub(crate) fn replace_desired(
        &self,
        tenants: impl IntoIterator<Item = (String, Vec<Shaped>)>,
    ) -> usize {
        let mut desired = write(&self.maps.desired);
        let mut ids = self.maps.ids.lock();
        for (tenant, objects) in tenants {
            desired.replace(&tenant, objects, &mut ids);
        }
        drop(ids);
        desired.drop_unused_shapes();
        desired.shapes()
    }

    /// Run `f` on the drift baseline, write-locked for the whole of `f`.
    pub(crate) fn baseline<R>(&self, f: impl FnOnce(&mut Baseline<'_>) -> R) -> R {
        let mut baseline = Baseline {
            objects: write(&self.maps.objects),
            ids: &self.maps.ids,
        };
        f(&mut baseline)
    }

    /// A desired object's interned id, tenant and shape.
    pub(crate) fn find_desired(&self, id: &ObjectId) -> Option<Found> {
        let id = self.maps.ids.find(id)?;
        read(&self.maps.desired).find(&id)
    }

    /// The tenant of a desired object, or of an object judged by its version (its tenant
    /// not rendered since it was verified).
    pub(crate) fn tenant_of(&self, id: &ObjectId) -> Option<Arc<str>> {
        let id = &self.maps.ids.find(id)?;
        if let Some((t, _)) = read(&self.maps.desired).get(id) {
            return Some(t);
        }
        let objects = read(&self.maps.objects);
        objects
            .with(id, RECORDED)
            .filter(|o| o.version().is_some())
            .map(|o| objects.tenant_of(o))
    }

    /// The live hash recorded for `id` when fief last applied it.
    pub(crate) fn recorded_live(&self, id: &ObjectId) -> Option<Digest> {
        let id = self.maps.ids.find(id)?;
        read(&self.maps.objects)
            .with(&id, RECORDED)
            .and_then(|o| o.recorded())
    }

    /// A lookup of the live hash the watches computed last for an object, when that is the
    /// one known (not a sync's write no watch has reported yet): what the health gate judges
    /// whether a watch saw the version a sync applied by. It takes the records' lock: never
    /// call it with the interner's held.
    pub(crate) fn watched(&self) -> crate::health::Watched {
        let maps = self.maps.clone();
        Box::new(move |id| read(&maps.objects).watched(id))
    }

    /// Whether `id` is recorded done by its delete policy.
    pub(crate) fn is_done(&self, id: &ObjectId) -> bool {
        self.maps
            .ids
            .find(id)
            .is_some_and(|id| read(&self.maps.objects).with(&id, DONE).is_some())
    }

    /// Whether a live object whose tenant has not been rendered since it was verified is
    /// still as fief applied it: its interned id, tenant and (when it is) its recorded live
    /// hash. `None` when the object is not judged by its version.
    pub(crate) fn by_version(
        &self,
        id: &ObjectId,
        version: &AppliedVersion,
    ) -> Option<(Id, Arc<str>, Option<Digest>)> {
        let id = self.maps.ids.find(id)?;
        let objects = read(&self.maps.objects);
        let (interned, o) = objects.by_id.get_key_value(&id)?;
        let applied = o.version()?;
        let live = applied
            .still(&Version::from(version))
            .then(|| o.recorded())
            .flatten();
        Some((interned.clone(), objects.tenant_of(o), live))
    }

    /// The live hashes (hex) of `ids`, for those that have one.
    pub(crate) fn live_hashes<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a ObjectId>,
    ) -> HashMap<ObjectId, String> {
        let found: Vec<(&ObjectId, Id)> = {
            let interner = self.maps.ids.lock();
            ids.into_iter()
                .filter_map(|id| Some((id, interner.find(id)?)))
                .collect()
        };
        let objects = read(&self.maps.objects);
        found
            .into_iter()
            .filter_map(|(full, id)| objects.live(&id).map(|h| (full.clone(), h.to_hex())))
            .collect()
    }

    /// Run `f` with a test of whether an object's live hash is the one recorded, both read
    /// under one lock for the whole of `f`.
    pub(crate) fn as_recorded<R>(&self, f: impl FnOnce(&dyn Fn(&Id) -> bool) -> R) -> R {
        let objects = read(&self.maps.objects);
        f(&|id| objects.as_recorded(id))
    }

    /// Run `f` on every watch's state, under one lock.
    pub(crate) fn watches<R>(&self, f: impl FnOnce(&HashMap<String, WatchState>) -> R) -> R {
        f(&lock(&self.maps.watches))
    }

    /// The ids recorded in the drift baseline of `tenant`.
    #[cfg(test)]
    pub(crate) fn recorded_of(&self, tenant: &str) -> Vec<Id> {
        let objects = read(&self.maps.objects);
        objects
            .by_id
            .iter()
            .filter(|(_, o)| o.has(RECORDED) && objects.tenant_of(o).as_ref() == tenant)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Drop one of the maps (`desired`, `objects`, `ids`, `watches`), for the heap
    /// harness to measure what it held.
    #[cfg(test)]
    pub(crate) fn drop_map(&self, map: &str) {
        match map {
            "desired" => drop(std::mem::take(&mut *write(&self.maps.desired))),
            "objects" => drop(std::mem::take(&mut *write(&self.maps.objects))),
            "ids" => drop(std::mem::take(&mut *self.maps.ids.lock())),
            "watches" => drop(std::mem::take(&mut *lock(&self.maps.watches))),
            other => panic!("no map {other}"),
        }
    }

    /// Make the index task drop what it keeps per kind (the heap harness measures it).
    #[cfg(test)]
    pub(crate) async fn drop_kinds(&self) {
        self.ask(Event::DropKinds).await;
    }

    /// Objects with a live hash, and objects in the drift baseline.
    #[cfg(test)]
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let objects = read(&self.maps.objects);
        let count = |flag| objects.by_id.iter().filter(|(_, o)| o.has(flag)).count();
        (count(LIVE), count(RECORDED))
    }
}

impl Keeper {
    /// The next message of the feed (`None` once every sender is gone).
    pub(crate) async fn next(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The agent's one allocation of `id` (see [`Interner`]).
    pub(crate) fn intern(&self, id: &ObjectId) -> Id {
        self.maps.ids.intern(id)
    }

    /// Set the live hash of `id`, as a watch saw it.
    pub(crate) fn set_live(&self, id: Id, hash: Digest) {
        write(&self.maps.objects).set_live(id, hash, LiveFrom::Watch);
    }

    /// Forget the live hash of `id` (gone, or its hash unknown).
    pub(crate) fn forget_live(&self, id: &ObjectId) {
        if let Some(id) = self.maps.ids.find(id) {
            write(&self.maps.objects).forget(&id, LIVE);
        }
    }

    /// Take in the live hashes a sync recorded: each one it wrote, and the others where no
    /// hash is known.
    pub(crate) fn take_written(&self, writes: Vec<LiveWrite>) {
        let mut objects = write(&self.maps.objects);
        for w in writes {
            let from = if w.wrote {
                LiveFrom::Wrote
            } else {
                LiveFrom::Recorded
            };
            objects.set_live(w.id, w.hash, from);
        }
    }

    /// Of `keys`, those whose kind has no watch yet, each now counted as listing.
    pub(crate) fn claim(&self, keys: Vec<String>) -> Vec<String> {
        let mut watches = lock(&self.maps.watches);
        keys.into_iter()
            .filter(|key| {
                if watches.contains_key(key) {
                    return false;
                }
                watches.insert(key.clone(), WatchState::Listing);
                true
            })
            .collect()
    }

    /// Set the state of the watch of `key`.
    pub(crate) fn set_watch(&self, key: &str, state: WatchState) {
        lock(&self.maps.watches).insert(key.to_string(), state);
    }

    /// The state of the watch of `key`.
    pub(crate) fn watch_state(&self, key: &str) -> Option<WatchState> {
        lock(&self.maps.watches).get(key).cloned()
    }

    /// Count every listed kind as listing, and make every watch list afresh.
    pub(crate) fn relist_now(&self) {
        {
            let mut watches = lock(&self.maps.watches);
            for state in watches.values_mut() {
                if *state == WatchState::Synced {
                    *state = WatchState::Listing;
                }
            }
        }
        self.maps.relist.send_modify(|epoch| *epoch += 1);
    }
}
