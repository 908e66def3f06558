//! Verification: tenants found as last applied need no render and no sync.
//!
//! In: the due tenants with what queued them, their inventories (recorded input hash, status,
//! and per object the live hash and the version fief applied: uid, resourceVersion, fief's
//! `managedFields` fingerprint) and the watches' view of the live objects. Out: the drift
//! baseline ([`Recorded`]) seeded from those inventories before the watches list, and after
//! the lists each candidate either *verified* — its live hashes are the recorded ones, it
//! counts as synced at its input hash (`fief_tenants_verified_total`), nothing is rendered,
//! applied or written — or handed back to be rendered and synced as usual.
//!
//! A candidate is a tenant queued by a commit (at start, every tenant) whose inventory
//! [stands for](crate::core::inventory::Inventory::stands_for) a render at its current input
//! hash: its last sync is settled and recorded those inputs, so a render would give the
//! objects recorded. It is verified when every recorded object exists and is, by its metadata,
//! still the version fief applied ([`AppliedVersion::still`]): nobody changed a field fief
//! sets since. Until such a tenant is next rendered, the watches judge its objects by their
//! version instead of a live hash (see [`super::drift`]): an object that moved is drift.
//! Drift, resync, retry, rollout and `fief reconcile` triggers always render.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::desired::Id;
use super::{LoopState, Shared, lock, read, write};
use crate::core::inventory::AppliedVersion;

/// Kinds (apiVersion, kind) with the tenants using each.
pub(super) type Kinds = BTreeMap<(String, String), BTreeSet<String>>;

/// What fief last applied for one object: the drift baseline.
#[derive(Debug)]
pub struct Recorded {
    /// The tenant it belongs to.
    pub tenant: Arc<str>,
    /// The live hash recorded after it was applied.
    pub live: String,
    /// The version it was applied at, while its tenant has not been rendered since it was
    /// verified (the watches then judge it by this, having no desired shape for it).
    pub version: Option<Box<AppliedVersion>>,
}

/// The due tenants that may be verified (see the module docs), with the kinds their
/// inventories record (apiVersion, kind → tenants); their objects are seeded into the drift
/// baseline with their versions, so the watches' lists can judge them.
pub(super) fn candidates(
    shared: &Shared,
    state: &LoopState,
    due: &[String],
    triggers: &std::collections::HashMap<String, &'static str>,
) -> (Vec<String>, Kinds) {
    let mut out = Vec::new();
    let mut kinds = Kinds::new();
    let Some(inventories) = state.inventories.as_ref() else {
        return (out, kinds);
    };
    let desired = read(&shared.desired);
    let mut recorded = write(&shared.recorded);
    for t in due {
        if triggers.get(t).copied().unwrap_or("commit") != "commit" {
            continue;
        }
        let Some(Ok(inv)) = inventories.get(t) else {
            continue;
        };
        let Some(hash) =
            super::rollout::revision_for(state, t).and_then(|rev| rev.hashes.get(t).cloned())
        else {
            continue;
        };
        if !inv.stands_for(&hash) {
            continue;
        }
        let tenant: Arc<str> = t.as_str().into();
        for e in inv.entries.values() {
            kinds
                .entry((e.api_version.clone(), e.id.kind.clone()))
                .or_default()
                .insert(t.clone());
            let id: Id = desired
                .intern(&e.id)
                .unwrap_or_else(|| Arc::new(e.id.clone()));
            recorded.insert(
                id,
                Recorded {
                    tenant: tenant.clone(),
                    live: e.live.clone(),
                    version: Some(Box::new(e.applied_version())),
                },
            );
        }
        out.push(t.clone());
    }
    (out, kinds)
}

/// After the watches listed: split `candidates` into the verified (every recorded object
/// exists with its recorded live hash, and no kind it uses is degraded) and the rest.
pub(super) fn judge(
    shared: &Shared,
    state: &LoopState,
    candidates: Vec<String>,
    degraded: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>) {
    let Some(inventories) = state.inventories.as_ref() else {
        return (Vec::new(), candidates);
    };
    let live = read(&shared.live);
    candidates.into_iter().partition(|t| {
        !degraded.contains_key(t)
            && inventories.get(t).is_some_and(|i| {
                i.as_ref().is_ok_and(|inv| {
                    inv.entries
                        .values()
                        .all(|e| live.get(&e.id).is_some_and(|h| *h == e.live))
                })
            })
    })
}

/// Take the verified tenants as synced at their input hash: backoff reset, ready, and no
/// render until their inputs change or an object moves.
pub(super) fn account(shared: &Shared, state: &mut LoopState, verified: &[String]) {
    if verified.is_empty() {
        return;
    }
    let mut q = lock(&shared.queue);
    for t in verified {
        q.succeeded(t);
        shared.metrics.tenant_ready(t, true);
        if let Some(rev) = super::rollout::revision_for(state, t)
            && let Some(h) = rev.hashes.get(t)
        {
            state.synced.insert(t.clone(), h.clone());
            state.synced_rev.insert(t.clone(), rev);
        }
    }
    drop(q);
    shared
        .metrics
        .tenants_verified
        .inc_by(verified.len() as u64);
    tracing::info!(
        tenants = verified.len(),
        "found as last applied (inputs and live objects unchanged): not rendered or synced"
    );
}

/// Whether a live object whose tenant has not been rendered since it was verified is still
/// as fief applied it: its interned id, tenant and (when it is) its recorded live hash.
/// `None` when the object is not judged by its version.
pub(super) fn by_version(
    shared: &Shared,
    id: &crate::core::objects::ObjectId,
    version: &AppliedVersion,
) -> Option<(Id, Arc<str>, Option<String>)> {
    let recorded = read(&shared.recorded);
    let (interned, r) = recorded.get_key_value(id)?;
    let applied = r.version.as_ref()?;
    let live = applied.still(version).then(|| r.live.clone());
    Some((interned.clone(), r.tenant.clone(), live))
}
