//! The messages the index task takes in, through one bounded channel, in the order they were
//! sent: what each kind's watch saw, and the few things the sync path asks of the index.
//!
//! In: the watches ([`crate::drift`]) send [`Event::Kind`]; the sync path sends the live
//! hashes it wrote, a relist it waits for, the kinds it wants watched. Out: nothing here; the
//! index task ([`crate::drift::index_task`]) takes each message in turn. A message that the
//! sender waits on carries a [`oneshot`] sender the task answers once it has taken the
//! message in (and every message sent before it).

use std::time::Instant;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::desired::Id;
use fief_core::digest::Digest;
use fief_core::inventory::AppliedVersion;
use fief_core::objects::ObjectId;

/// One message to the index task.
pub(crate) enum Event {
    /// What the watch of a kind (named by its key) saw.
    Kind(std::sync::Arc<str>, KindEvent),
    /// Of these kinds' keys, start watching those not watched yet: answered with the keys
    /// claimed (each now counted as listing; the sender starts their watches).
    Claim(Vec<String>, oneshot::Sender<Vec<String>>),
    /// The live hashes of the objects a sync recorded; answered once they are taken in.
    Written(Vec<LiveWrite>, oneshot::Sender<()>),
    /// Count every listed kind as listing and make every watch list afresh; answered once
    /// they are counted so.
    RelistNow(oneshot::Sender<()>),
    /// Answered once every message sent before it is taken in (tests wait on it).
    #[cfg(test)]
    Settled(oneshot::Sender<()>),
    /// Drop what the index task keeps per kind; answered once dropped (the heap harness).
    #[cfg(test)]
    DropKinds(oneshot::Sender<()>),
}

/// What the watch of one kind saw, in the order it saw it.
pub(crate) enum KindEvent {
    /// A list began (the first, or a relist after a gap or a resync) at this instant.
    ListBegan(Instant),
    /// An object in the list under way.
    Listed(Observed),
    /// The list under way is done: what was known and not listed is gone.
    ListDone,
    /// A watch event: an object created or changed.
    Applied(Observed),
    /// A watch event: an object deleted.
    Deleted(ObjectId),
    /// The watch stopped to list afresh (a relist was asked for).
    Relisting,
    /// The list or the watch failed (the watcher retries with backoff): why, as the tenants
    /// using the kind are told it when the kind was never listed.
    Failed(String),
}

/// An object as a watch saw it: what its live hash is computed from.
pub(crate) struct Observed {
    /// Its id.
    pub(crate) id: ObjectId,
    /// Its body (without `managedFields`).
    pub(crate) value: Value,
    /// Its version: uid, resourceVersion and fief's `managedFields` fingerprint.
    pub(crate) version: AppliedVersion,
}

/// The live hash a sync recorded for one object.
pub(crate) struct LiveWrite {
    /// The object.
    pub(crate) id: Id,
    /// Its live hash as the sync recorded it.
    pub(crate) hash: Digest,
    /// The sync wrote the object: its hash replaces the watches'. Otherwise it is taken only
    /// for an object the watches have no hash for.
    pub(crate) wrote: bool,
}
