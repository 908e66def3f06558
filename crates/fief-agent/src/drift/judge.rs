//! Drift's decisions, taken by the index task ([`super::index_task`]) for each object a watch
//! saw or lost: its live hash, what the health gate is told, and whether it is drift.
//!
//! In: one object (its id, body and version, or its deletion) and how it reached the watch
//! ([`Seen`]); the desired objects and the drift baseline ([`crate::parts::index`]), the syncs
//! in flight and each tenant's last sync ([`crate::parts::work`]). Out, through the
//! [`Keeper`]: the object's live hash set or forgotten; the health gate told; on drift, the
//! drift counter and the tenant queued.

use std::time::Instant;

use serde_json::Value;

use crate::Shared;
use crate::desired::{Found, Id};
use crate::parts::index::Keeper;
use fief_core::inventory::AppliedVersion;
use fief_core::objects::{self, ObjectId};
use fief_core::plan;

/// How an object reached the watch: which of its changes may count as drift.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seen {
    /// In the first list: the baseline, never drift.
    First,
    /// In a relist that began at this instant: drift unless its tenant was synced since
    /// (the list may hold the object as it was before fief's own write).
    Listed(Instant),
    /// A watch event: the object as it is now.
    Event,
}

/// Whether a change seen as `seen` may be drift of `tenant`: not fief's own sync in flight,
/// and not a list older than the tenant's last sync.
fn may_drift(shared: &Shared, tenant: &str, seen: Seen) -> bool {
    match seen {
        Seen::First => false,
        Seen::Event => !shared.work.is_in_flight(tenant),
        Seen::Listed(since) => {
            !shared.work.is_in_flight(tenant)
                && shared.work.synced_at(tenant).is_none_or(|at| at < since)
        }
    }
}

/// A managed object is gone: forget its live hash; if it is desired and its tenant is not
/// being synced (fief's own prunes are not desired), count it and queue the tenant.
pub(crate) fn deleted(shared: &Shared, keeper: &Keeper, id: &ObjectId, seen: Seen) {
    keeper.forget_live(id);
    if let Some(tenant) = shared.index.tenant_of(id) {
        shared.gate.gone(&tenant, id);
        if may_drift(shared, &tenant, seen) && !shared.index.is_done(id) {
            drifted(shared, &tenant, id, "managed object deleted");
        }
    }
}

/// Count a drift (a hand edit or deletion, never fief's own sync) and queue its tenant.
fn drifted(shared: &Shared, tenant: &str, id: &ObjectId, what: &str) {
    tracing::info!(tenant, object = %id, "drift: {what}; queueing a sync");
    shared.cluster.metrics().drift.inc();
    shared.work.enqueue_for(tenant, "drift");
}

/// Record the live hash of an object; queue its tenant when it drifted from what was applied
/// (and the change is not fief's own sync of that tenant). Returns the interned id of a
/// desired object, or of one judged by its version (none for an object fief does not know).
pub(crate) fn observe(
    shared: &Shared,
    keeper: &Keeper,
    id: &ObjectId,
    value: &Value,
    version: &AppliedVersion,
    seen: Seen,
) -> Option<Id> {
    let Some(Found {
        id: interned,
        tenant,
        shape,
    }) = shared.index.find_desired(id)
    else {
        return observe_version(shared, keeper, id, value, version, seen);
    };
    let hash = plan::live_digest(&shape, value);
    let recorded = shared.index.recorded_live(id);
    shared.gate.observed(&tenant, &interned, true, value, || {
        keeper.set_live(interned.clone(), hash)
    });
    if recorded.is_some_and(|r| r != hash)
        && may_drift(shared, &tenant, seen)
        && !shared.index.is_done(id)
    {
        drifted(shared, &tenant, id, "a field fief owns changed");
    }
    Some(interned)
}

/// An object the agent has no desired shape or recorded version for (its tenant's render
/// failed since the agent started, and its sync has not recorded it yet): no live hash can be
/// taken, but its health and version are told to the health gate, so a later sync that
/// leaves it as it is finds it current.
fn unknown(shared: &Shared, keeper: &Keeper, id: &ObjectId, value: &Value) {
    if let Some(tenant) = value["metadata"]["labels"][objects::LABEL_TENANT].as_str() {
        shared
            .gate
            .observed(tenant, &keeper.intern(id), false, value, || ());
    }
}

/// An object of a tenant with no desired shape (verified and not rendered since, or its
/// render failed): still the version fief applied, its recorded live hash stands; else its
/// live hash is unknown (a sync applies it again) and, on a live event, it is drift.
fn observe_version(
    shared: &Shared,
    keeper: &Keeper,
    id: &ObjectId,
    value: &Value,
    version: &AppliedVersion,
    seen: Seen,
) -> Option<Id> {
    let Some((interned, tenant, hash)) = shared.index.by_version(id, version) else {
        unknown(shared, keeper, id, value);
        return None;
    };
    shared
        .gate
        .observed(&tenant, &interned, hash.is_some(), value, || match &hash {
            Some(h) => keeper.set_live(interned.clone(), *h),
            None => keeper.forget_live(id),
        });
    if hash.is_none() && may_drift(shared, &tenant, seen) {
        drifted(
            shared,
            &tenant,
            id,
            "fief's fields changed since it was applied",
        );
    }
    Some(interned)
}
