//! One record per object the agent holds: its live hash, as the watches keep it, and its drift
//! baseline, what fief last applied.
//!
//! In: the live hashes the index task sets and forgets, the baselines the sync path records
//! and forgets ([`super::Baseline`]). Out: per object its live hash, its recorded live hash,
//! its tenant, the version it is judged by and whether its delete policy is done with it.
//!
//! A record is small and fixed in size: the tenant is an index into a table of the tenants'
//! names (each held once; one string per tenant ever recorded), and the two hashes are kept as
//! one [`Digest`] while they are equal (an object as fief applied it, which is most of them at
//! rest), the live one apart, in a table of the few that moved, only when it moved. The
//! version it is judged by is held in the record itself: most records have one (every object
//! of a tenant not being synced). A record with neither a live hash nor a baseline is
//! removed. The records are held at their ids' slots ([`Slots`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::desired::{Id, Slots};
use fief_core::digest::{Digest, Version};

/// [`Object::flags`]: the live hash is known.
pub(super) const LIVE: u8 = 1;
/// [`Object::flags`]: the drift baseline is recorded.
pub(super) const RECORDED: u8 = 2;
/// [`Object::flags`]: recorded done by its delete policy ([`super::Recorded::done`]).
pub(super) const DONE: u8 = 4;
/// [`Object::flags`]: judged by its version ([`Object::version`]).
pub(super) const VERSIONED: u8 = 8;

/// [`Object::flags`]: the live hash is known and is not the recorded one; it is kept apart
/// ([`Objects::moved`]).
pub(super) const MOVED: u8 = 16;

/// [`Object::flags`]: the live hash known is the one a watch computed last (not one a sync
/// wrote that no watch has reported yet): what the health gate judges an object's version by.
pub(super) const WATCHED: u8 = 32;

/// Who tells an object's live hash ([`Objects::set_live`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LiveFrom {
    /// A watch computed it from the object it saw: it replaces the one known.
    Watch,
    /// A sync wrote the object and recorded this hash: it replaces the one known, and counts
    /// as seen by the watch only when the watch had reported this very hash already.
    Wrote,
    /// A sync recorded it without writing the object: taken only where none is known.
    Recorded,
}

/// One object's record: its live hash and its drift baseline.
#[derive(Default)]
pub(super) struct Object {
    /// The recorded live hash when [`RECORDED`], else the live hash (when [`LIVE`]).
    hash: Digest,
    /// The version it was applied at, while it is judged by it ([`VERSIONED`],
    /// [`super::Recorded::version`]).
    version: Version,
    /// Its tenant, as an index into [`Objects::tenants`] (when [`RECORDED`]).
    tenant: u32,
    /// [`LIVE`], [`RECORDED`], [`DONE`], [`VERSIONED`], [`MOVED`], [`WATCHED`].
    flags: u8,
}

impl Object {
    /// Whether any of `flags` is set.
    pub(super) fn has(&self, flags: u8) -> bool {
        self.flags & flags != 0
    }

    /// The version it is judged by, when it is (and recorded).
    pub(super) fn version(&self) -> Option<&Version> {
        (self.flags & (VERSIONED | RECORDED) == VERSIONED | RECORDED).then_some(&self.version)
    }

    /// The live hash recorded after fief applied it, when recorded.
    pub(super) fn recorded(&self) -> Option<Digest> {
        self.has(RECORDED).then_some(self.hash)
    }
}

/// Set both hashes of `o`, the record of `id` (`None`: not known, not recorded); a live hash
/// that is not the recorded one goes to `moved`. Without a baseline, its version and done flag
/// go too.
fn set_hashes(
    o: &mut Object,
    moved: &mut HashMap<Id, Digest>,
    id: &Id,
    live: Option<Digest>,
    recorded: Option<Digest>,
) {
    let mut flags = o.flags & (DONE | VERSIONED | WATCHED);
    if live.is_some() {
        flags |= LIVE;
    } else {
        flags &= !WATCHED;
    }
    if recorded.is_some() {
        flags |= RECORDED;
    } else {
        flags &= !(DONE | VERSIONED);
        o.version = Version::default();
    }
    o.hash = match (live, recorded) {
        (Some(l), Some(r)) if l != r => {
            flags |= MOVED;
            moved.insert(id.clone(), l);
            r
        }
        (_, Some(h)) | (Some(h), None) => h,
        (None, None) => Digest::default(),
    };
    if flags & MOVED == 0 && o.has(MOVED) {
        moved.remove(id);
    }
    o.flags = flags;
}

/// The records of the objects, and the names of their tenants.
#[derive(Default)]
pub(super) struct Objects {
    /// One record per object, at its interned id's slot.
    pub(super) by_id: Slots<Object>,
    /// The live hash of each object whose live hash is known and is not the recorded one
    /// ([`MOVED`]): the few objects changed since fief applied them, not a word in every
    /// record.
    moved: HashMap<Id, Digest>,
    /// The tenants' names, each held once ([`Object::tenant`] is an index here).
    tenants: Vec<Arc<str>>,
    /// The index of each name in `tenants`.
    tenant_index: HashMap<Arc<str>, u32>,
}

impl Objects {
    /// Record `id`'s baseline: its recorded live hash, tenant, version and done flag (its
    /// live hash is kept).
    pub(super) fn record(&mut self, id: Id, recorded: super::Recorded) {
        let tenant = self.tenant(&recorded.tenant);
        let live = self.live(&id);
        let o = self.by_id.get_or_default(id.clone());
        set_hashes(o, &mut self.moved, &id, live, Some(recorded.live));
        o.flags &= !(DONE | VERSIONED);
        if let Some(version) = recorded.version {
            o.version = version;
            o.flags |= VERSIONED;
        } else {
            o.version = Version::default();
        }
        o.tenant = tenant;
        if recorded.done {
            o.flags |= DONE;
        }
    }

    /// The index of `tenant`'s name, added on first use.
    fn tenant(&mut self, tenant: &Arc<str>) -> u32 {
        if let Some(i) = self.tenant_index.get(tenant) {
            return *i;
        }
        let i = u32::try_from(self.tenants.len()).unwrap_or(u32::MAX);
        self.tenants.push(tenant.clone());
        self.tenant_index.insert(tenant.clone(), i);
        i
    }

    /// The name of the tenant of `o`.
    pub(super) fn tenant_of(&self, o: &Object) -> Arc<str> {
        self.tenants
            .get(o.tenant as usize)
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    /// The record of `id`, when it has any of `flags`.
    pub(super) fn with(&self, id: &Id, flags: u8) -> Option<&Object> {
        self.by_id.get(id).filter(|o| o.has(flags))
    }

    /// The live hash of `id`, when known.
    pub(super) fn live(&self, id: &Id) -> Option<Digest> {
        let o = self.by_id.get(id).filter(|o| o.has(LIVE))?;
        if o.has(MOVED) {
            self.moved.get(id).copied()
        } else {
            Some(o.hash)
        }
    }

    /// Whether the live hash of `id` is known and is the recorded one.
    pub(super) fn as_recorded(&self, id: &Id) -> bool {
        self.by_id
            .get(id)
            .is_some_and(|o| o.flags & (LIVE | RECORDED | MOVED) == LIVE | RECORDED)
    }

    /// The live hash of `id` as a watch computed it last, when that is the one known.
    pub(super) fn watched(&self, id: &Id) -> Option<Digest> {
        self.with(id, WATCHED).and_then(|_| self.live(id))
    }

    /// Set the live hash of `id` as `from` tells it (see [`LiveFrom`]).
    pub(super) fn set_live(&mut self, id: Id, hash: Digest, from: LiveFrom) {
        let known = self.live(&id);
        if from == LiveFrom::Recorded && known.is_some() {
            return;
        }
        let watched = match from {
            LiveFrom::Watch => true,
            LiveFrom::Wrote => known == Some(hash) && self.with(&id, WATCHED).is_some(),
            LiveFrom::Recorded => false,
        };
        let o = self.by_id.get_or_default(id.clone());
        let recorded = o.recorded();
        set_hashes(o, &mut self.moved, &id, Some(hash), recorded);
        if watched {
            o.flags |= WATCHED;
        } else {
            o.flags &= !WATCHED;
        }
    }

    /// Forget the live hash (`LIVE`) or the baseline (`RECORDED`) of `id`; a record left with
    /// nothing is removed.
    pub(super) fn forget(&mut self, id: &Id, what: u8) {
        let live = if what & LIVE != 0 {
            None
        } else {
            self.live(id)
        };
        if let Some(o) = self.by_id.get_mut(id) {
            let recorded = if what & RECORDED != 0 {
                None
            } else {
                o.recorded()
            };
            set_hashes(o, &mut self.moved, id, live, recorded);
            if !o.has(LIVE | RECORDED) {
                self.by_id.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::{Interner, configmap as object};

    fn recorded(tenant: &str, live: Digest) -> super::super::Recorded {
        super::super::Recorded {
            tenant: tenant.into(),
            live,
            version: None,
            done: true,
        }
    }

    #[test]
    fn a_record_keeps_its_live_and_recorded_hashes_apart_only_when_they_differ() {
        let (a, b) = (Digest::of(b"a"), Digest::of(b"b"));
        let x = Interner::default().intern(&object("x"));
        let mut objects = Objects::default();
        objects.set_live(x.clone(), a, LiveFrom::Watch);
        objects.record(x.clone(), recorded("t", a));
        let o = objects.with(&x, LIVE).unwrap();
        assert_eq!((objects.live(&x), o.recorded()), (Some(a), Some(a)));
        assert!(objects.moved.is_empty(), "equal hashes are held once");
        assert!(objects.as_recorded(&x));
        objects.set_live(x.clone(), b, LiveFrom::Recorded);
        assert_eq!(
            objects.live(&x),
            Some(a),
            "a known live hash is not replaced"
        );
        objects.set_live(x.clone(), b, LiveFrom::Watch);
        let o = objects.with(&x, LIVE).unwrap();
        assert_eq!((objects.live(&x), o.recorded()), (Some(b), Some(a)));
        assert_eq!(
            objects.moved.len(),
            1,
            "a live hash that moved is kept apart"
        );
        assert!(!objects.as_recorded(&x));
        assert_eq!(objects.tenant_of(o).as_ref(), "t");
        assert!(o.has(DONE));
        objects.forget(&x, RECORDED);
        let o = objects.with(&x, LIVE).unwrap();
        assert_eq!((objects.live(&x), o.recorded()), (Some(b), None));
        assert!(objects.moved.is_empty(), "one hash is held in the record");
        assert!(!o.has(DONE), "done goes with the baseline");
        objects.forget(&x, LIVE);
        assert!(objects.by_id.is_empty(), "a record of nothing is removed");
        assert!(objects.moved.is_empty());
    }

    #[test]
    fn a_live_hash_counts_as_watched_until_a_write_the_watch_has_not_reported_replaces_it() {
        let (a, b) = (Digest::of(b"a"), Digest::of(b"b"));
        let x = Interner::default().intern(&object("x"));
        let mut objects = Objects::default();
        objects.set_live(x.clone(), a, LiveFrom::Recorded);
        assert_eq!(objects.watched(&x), None, "recorded by a sync, not seen");
        objects.set_live(x.clone(), a, LiveFrom::Watch);
        assert_eq!(objects.watched(&x), Some(a));
        objects.set_live(x.clone(), a, LiveFrom::Wrote);
        assert_eq!(
            objects.watched(&x),
            Some(a),
            "the watch reported it already"
        );
        objects.record(x.clone(), recorded("t", a));
        assert_eq!(objects.watched(&x), Some(a), "a baseline leaves it");
        objects.set_live(x.clone(), b, LiveFrom::Wrote);
        assert_eq!(objects.watched(&x), None, "a write no watch reported yet");
        assert_eq!(objects.live(&x), Some(b));
        objects.set_live(x.clone(), b, LiveFrom::Watch);
        assert_eq!(objects.watched(&x), Some(b));
        objects.forget(&x, LIVE);
        assert_eq!(objects.watched(&x), None, "forgotten with the live hash");
    }

    #[test]
    fn tenant_names_are_held_once() {
        let mut ids = Interner::default();
        let mut objects = Objects::default();
        for n in ["x", "y"] {
            objects.record(
                ids.intern(&object(n)),
                recorded("t", Digest::of(n.as_bytes())),
            );
        }
        assert_eq!(objects.tenants.len(), 1);
    }
}
