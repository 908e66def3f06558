//! What the agent knows of the objects it manages: the desired objects of the last renders,
//! the one interned id per object, the live hashes the watches keep, the drift baseline (what
//! fief last applied), each kind's watch state and the relist epoch the watches follow.
//!
//! In: the renders' shapes ([`crate::reconciler`]); the watches' events and states
//! ([`crate::drift`]); the baseline seeded from the inventories of tenants that may stand as
//! last applied ([`crate::verify`]) and replaced from each sync's inventories
//! ([`crate::outcome`]); a relist asked for by the periodic resync or a shard taken. Out: per
//! object its tenant, shape, live hash and recorded baseline; whether a kind is listed,
//! listing or failing; the relist epoch each watch subscribes to.
//!
//! Lock order: `desired`, then `recorded`, then `live`; `ids` is a leaf (nothing is locked
//! while it is held). Each method takes what it reads or writes under one lock (or, for
//! [`LiveIndex::seed`] and [`LiveIndex::rebaseline`], its handle holds the locks until it
//! returns), so no caller splits one of these steps in two.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};

use crate::desired::{Desired, Found, Id, Interner, Shaped};
use crate::{WatchState, lock, read, write};
use fief_core::digest::{Digest, Version};
use fief_core::inventory::AppliedVersion;
use fief_core::objects::ObjectId;

/// What fief last applied for one object: the drift baseline.
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The tenant it belongs to.
    pub(crate) tenant: Arc<str>,
    /// The live hash recorded after it was applied.
    pub(crate) live: Digest,
    /// The version it was applied at, while its tenant has no desired shape for it: not
    /// rendered since it was verified, or its render failed (the watches then judge it by
    /// this).
    pub(crate) version: Option<Box<Version>>,
    /// A pre or post object done by its delete policy ([`fief_core::inventory::Entry::done`]):
    /// it may be gone, and neither its absence nor a change of it is drift.
    pub(crate) done: bool,
}

/// What the agent knows of the objects (see the module docs).
pub(crate) struct LiveIndex {
    /// Desired objects of the last render: tenant and interned shape.
    desired: RwLock<Desired>,
    /// Every object id the agent holds, allocated once (a leaf lock).
    ids: Mutex<Interner>,
    /// Live hashes from the watches (keyed on the objects' interned ids).
    live: RwLock<HashMap<Id, Digest>>,
    /// The drift baseline: per object, what fief last applied.
    recorded: RwLock<HashMap<Id, Recorded>>,
    /// One watch per kind: its state.
    watches: Mutex<HashMap<String, WatchState>>,
    /// Bumped by a relist: every watch lists afresh and diffs against what it knew.
    relist: tokio::sync::watch::Sender<u64>,
}

impl Default for LiveIndex {
    fn default() -> LiveIndex {
        LiveIndex {
            desired: RwLock::default(),
            ids: Mutex::default(),
            live: RwLock::default(),
            recorded: RwLock::default(),
            watches: Mutex::default(),
            relist: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// The drift baseline, write-locked while a batch's inventories are taken in.
pub(crate) struct Baseline<'a> {
    recorded: RwLockWriteGuard<'a, HashMap<Id, Recorded>>,
    ids: &'a Mutex<Interner>,
}

impl Baseline<'_> {
    /// The agent's one allocation of `id`.
    pub(crate) fn intern(&self, id: &ObjectId) -> Id {
        lock(self.ids).intern(id)
    }

    /// Record what fief applied for `id`.
    pub(crate) fn record(&mut self, id: Id, recorded: Recorded) {
        self.recorded.insert(id, recorded);
    }

    /// Forget what was recorded for `id` if `stale` says so.
    pub(crate) fn forget_if(&mut self, id: &ObjectId, stale: impl FnOnce(&Recorded) -> bool) {
        if self.recorded.get(id).is_some_and(stale) {
            self.recorded.remove(id);
        }
    }
}

/// The live hashes, write-locked while a batch's results are taken in.
pub(crate) struct LiveHashes<'a>(RwLockWriteGuard<'a, HashMap<Id, Digest>>);

impl LiveHashes<'_> {
    /// Whether a live hash is known for `id`.
    pub(crate) fn contains(&self, id: &ObjectId) -> bool {
        self.0.contains_key(id)
    }

    /// Set the live hash of `id`.
    pub(crate) fn set(&mut self, id: Id, hash: Digest) {
        self.0.insert(id, hash);
    }
}

impl LiveIndex {
    /// The agent's one allocation of `id` (see [`Interner`]).
    pub(crate) fn intern(&self, id: &ObjectId) -> Id {
        lock(&self.ids).intern(id)
    }

    /// Forget the ids nothing holds any more (see [`Interner::sweep`]).
    pub(crate) fn sweep_ids(&self) {
        lock(&self.ids).sweep();
    }

    /// Replace the desired objects of each tenant given by its render's shapes, and forget
    /// the shapes no object uses any more; returns the distinct shapes held.
    pub(crate) fn replace_desired(
        &self,
        tenants: impl IntoIterator<Item = (String, Vec<Shaped>)>,
    ) -> usize {
        let mut desired = write(&self.desired);
        let mut ids = lock(&self.ids);
        for (tenant, objects) in tenants {
            desired.replace(&tenant, objects, &mut ids);
        }
        drop(ids);
        desired.drop_unused_shapes();
        desired.shapes()
    }

    /// A desired object's interned id, tenant and shape.
    pub(crate) fn find_desired(&self, id: &ObjectId) -> Option<Found> {
        read(&self.desired).find(id)
    }

    /// The tenant of a desired object, or of an object judged by its version (its tenant
    /// not rendered since it was verified).
    pub(crate) fn tenant_of(&self, id: &ObjectId) -> Option<Arc<str>> {
        if let Some((t, _)) = read(&self.desired).get(id) {
            return Some(t);
        }
        read(&self.recorded)
            .get(id)
            .filter(|r| r.version.is_some())
            .map(|r| r.tenant.clone())
    }

    /// The live hash recorded for `id` when fief last applied it.
    pub(crate) fn recorded_live(&self, id: &ObjectId) -> Option<Digest> {
        read(&self.recorded).get(id).map(|r| r.live)
    }

    /// Whether `id` is recorded done by its delete policy.
    pub(crate) fn is_done(&self, id: &ObjectId) -> bool {
        read(&self.recorded).get(id).is_some_and(|r| r.done)
    }

    /// Whether a live object whose tenant has not been rendered since it was verified is
    /// still as fief applied it: its interned id, tenant and (when it is) its recorded live
    /// hash. `None` when the object is not judged by its version.
    pub(crate) fn by_version(
        &self,
        id: &ObjectId,
        version: &AppliedVersion,
    ) -> Option<(Id, Arc<str>, Option<Digest>)> {
        let recorded = read(&self.recorded);
        let (interned, r) = recorded.get_key_value(id)?;
        let applied = r.version.as_ref()?;
        let live = applied.still(&Version::from(version)).then_some(r.live);
        Some((interned.clone(), r.tenant.clone(), live))
    }

    /// Set the live hash of `id`, as a watch saw it.
    pub(crate) fn set_live(&self, id: Id, hash: Digest) {
        write(&self.live).insert(id, hash);
    }

    /// Forget the live hash of `id` (gone, or its hash unknown).
    pub(crate) fn forget_live(&self, id: &ObjectId) {
        write(&self.live).remove(id);
    }

    /// The live hashes (hex) of `ids`, for those that have one.
    pub(crate) fn live_hashes<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a ObjectId>,
    ) -> HashMap<ObjectId, String> {
        let live = read(&self.live);
        ids.into_iter()
            .filter_map(|id| live.get(id).map(|h| (id.clone(), h.to_hex())))
            .collect()
    }

    /// Run `f` with a test of whether an object's live hash is the one recorded, both read
    /// under one lock each for the whole of `f`.
    pub(crate) fn as_recorded<R>(&self, f: impl FnOnce(&dyn Fn(&Id) -> bool) -> R) -> R {
        let live = read(&self.live);
        let recorded = read(&self.recorded);
        f(&|id| matches!((live.get(id), recorded.get(id)), (Some(h), Some(r)) if *h == r.live))
    }

    /// Run `f` on the drift baseline, write-locked for the whole of `f`.
    pub(crate) fn seed<R>(&self, f: impl FnOnce(&mut Baseline<'_>) -> R) -> R {
        let mut baseline = Baseline {
            recorded: write(&self.recorded),
            ids: &self.ids,
        };
        f(&mut baseline)
    }

    /// Run `f` on the drift baseline and the live hashes, both write-locked for the whole
    /// of `f`.
    pub(crate) fn rebaseline<R>(
        &self,
        f: impl FnOnce(&mut Baseline<'_>, &mut LiveHashes<'_>) -> R,
    ) -> R {
        let mut baseline = Baseline {
            recorded: write(&self.recorded),
            ids: &self.ids,
        };
        let mut live = LiveHashes(write(&self.live));
        f(&mut baseline, &mut live)
    }

    /// Of `items` keyed by a kind's watch key, those whose kind has no watch yet, each now
    /// counted as listing (the caller starts their watches).
    pub(crate) fn claim_watches<T>(&self, items: Vec<(String, T)>) -> Vec<(String, T)> {
        let mut watches = lock(&self.watches);
        items
            .into_iter()
            .filter(|(key, _)| {
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
        lock(&self.watches).insert(key.to_string(), state);
    }

    /// The state of the watch of `key`.
    pub(crate) fn watch_state(&self, key: &str) -> Option<WatchState> {
        lock(&self.watches).get(key).cloned()
    }

    /// Run `f` on every watch's state, under one lock.
    pub(crate) fn watches<R>(&self, f: impl FnOnce(&HashMap<String, WatchState>) -> R) -> R {
        f(&lock(&self.watches))
    }

    /// Make every watch list afresh.
    pub(crate) fn relist(&self) {
        self.relist.send_modify(|epoch| *epoch += 1);
    }

    /// Make every watch list afresh now, each listed one counted as listing until it has.
    pub(crate) fn relist_now(&self) {
        {
            let mut watches = lock(&self.watches);
            for state in watches.values_mut() {
                if *state == WatchState::Synced {
                    *state = WatchState::Listing;
                }
            }
        }
        self.relist();
    }

    /// A receiver that changes at each relist.
    pub(crate) fn relists(&self) -> tokio::sync::watch::Receiver<u64> {
        self.relist.subscribe()
    }

    /// The ids recorded in the drift baseline of `tenant`.
    #[cfg(test)]
    pub(crate) fn recorded_of(&self, tenant: &str) -> Vec<Id> {
        read(&self.recorded)
            .iter()
            .filter(|(_, r)| r.tenant.as_ref() == tenant)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Objects with a live hash, and objects in the drift baseline.
    #[cfg(test)]
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (read(&self.live).len(), read(&self.recorded).len())
    }
}
