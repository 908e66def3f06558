//! Verification: tenants found as last applied need no render and no sync.
//!
//! In: the due tenants with what queued them, their inventories as they are read (recorded
//! input hash, status, and per object the live hash and the version fief applied: uid,
//! resourceVersion, fief's `managedFields` fingerprint) and the watches' view of the live
//! objects. Out: the drift baseline ([`Recorded`]) seeded from the candidates' inventories
//! before the watches list (the inventories themselves are not kept: they are read again
//! before the tenant's next sync), and after the lists each candidate either *verified* — its
//! live hashes are the recorded ones, it counts as synced at its input hash
//! (`fief_tenants_verified_total`), nothing is rendered, applied or written — or handed back
//! to be rendered and synced as usual.
//!
//! A candidate is a tenant queued by a commit (at start, every tenant) whose inventory
//! [stands for](fief_core::inventory::Inventory::stands_for) a render at its current input
//! hash: its last sync is settled and recorded those inputs, so a render would give the
//! objects recorded. It is verified when every recorded object exists and is, by its metadata,
//! still the version fief applied ([`AppliedVersion::still`]): nobody changed a field fief
//! sets since. A done object (a hook its delete policy deleted) need not exist. Until such a tenant is next rendered, the watches judge its objects by their
//! version instead of a live hash (see [`super::drift`]): an object that moved is drift.
//! Drift, resync, retry, rollout and `fief reconcile` triggers always render.
//!
//! [`AppliedVersion::still`]: fief_core::inventory::AppliedVersion::still

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::desired::Id;
use super::parts::index::Recorded;
use super::{LoopState, Shared};
use fief_core::digest::Digest;
use fief_core::inventory::{Inventory, InventoryError};

/// Kinds (apiVersion, kind) with the tenants using each.
pub(super) type Kinds = BTreeMap<(String, String), BTreeSet<String>>;

/// The candidates of one batch, found while its inventories are read (see the module docs).
/// A candidate's inventory is not kept: its objects are seeded into the drift baseline with
/// their versions (so the watches' lists can judge them), and the inventory is read again
/// before the tenant is next synced ([`LoopState::evicted`]).
pub(super) struct Seeder {
    /// Due tenants queued by a commit: their current input hash.
    wanted: HashMap<String, fief_core::inputs::InputHash>,
    /// Each candidate's recorded objects.
    pub(super) candidates: BTreeMap<String, Vec<Id>>,
    /// The kinds the candidates' inventories record.
    pub(super) kinds: Kinds,
}

impl Seeder {
    /// A seeder for the `due` tenants queued by a commit (`triggers`), at their revision.
    pub(super) fn new(
        state: &LoopState,
        due: &[String],
        triggers: &HashMap<String, &'static str>,
    ) -> Seeder {
        let wanted = due
            .iter()
            .filter(|t| triggers.get(*t).copied().unwrap_or("commit") == "commit")
            .filter_map(|t| {
                let rev = super::rollout::revision_for(state, t)?;
                Some((t.clone(), *rev.hashes.get(t)?))
            })
            .collect();
        Seeder {
            wanted,
            candidates: BTreeMap::new(),
            kinds: Kinds::new(),
        }
    }

    /// Forget every candidate (their inventories could not all be read: none is judged).
    pub(super) fn clear(&mut self) {
        self.candidates.clear();
        self.kinds.clear();
    }

    /// Take `inv` as a candidate's if it stands for a render of its due tenant: its objects
    /// seeded into the drift baseline. Returns whether it was taken (the caller drops it).
    pub(super) fn offer(&mut self, shared: &Shared, tenant: &str, inv: &Inventory) -> bool {
        let Some(hash) = self.wanted.get(tenant) else {
            return false;
        };
        if !inv.stands_for(&hash.to_string()) {
            return false;
        }
        let name: Arc<str> = tenant.into();
        let mut ids = Vec::with_capacity(inv.entries.len());
        shared.index.baseline(|recorded| {
            for e in inv.entries.values() {
                if e.done.is_some() {
                    recorded.record(
                        recorded.intern(&e.id),
                        Recorded {
                            tenant: name.clone(),
                            live: Digest::from_hex(&e.live),
                            version: None,
                            done: true,
                        },
                    );
                    continue;
                }
                self.kinds
                    .entry((e.api_version.clone(), e.id.kind.clone()))
                    .or_default()
                    .insert(tenant.to_string());
                let id: Id = recorded.intern(&e.id);
                recorded.record(
                    id.clone(),
                    Recorded {
                        tenant: name.clone(),
                        live: Digest::from_hex(&e.live),
                        version: Some(e.version()),
                        done: false,
                    },
                );
                ids.push(id);
            }
        });
        self.candidates.insert(tenant.to_string(), ids);
        true
    }

    /// Offer every held inventory of a due tenant; those taken leave `inventories` and are
    /// marked evicted.
    pub(super) fn offer_held(
        &mut self,
        shared: &Shared,
        inventories: &mut BTreeMap<String, Result<Inventory, InventoryError>>,
        evicted: &mut BTreeSet<String>,
    ) {
        let due: Vec<String> = self.wanted.keys().cloned().collect();
        for t in due {
            let taken = matches!(inventories.get(&t), Some(Ok(inv)) if self.offer(shared, &t, inv));
            if taken {
                inventories.remove(&t);
                evicted.insert(t);
            }
        }
    }

    /// After the watches listed: split the candidates into the verified (every recorded
    /// object exists with its recorded live hash, and no kind it uses is degraded) and the
    /// rest.
    pub(super) fn judge(
        self,
        shared: &Shared,
        degraded: &BTreeMap<String, String>,
    ) -> (Vec<String>, Vec<String>) {
        shared.index.as_recorded(|as_recorded| {
            let mut verified = Vec::new();
            let mut fallen = Vec::new();
            for (t, ids) in self.candidates {
                if !degraded.contains_key(&t) && ids.iter().all(as_recorded) {
                    verified.push(t);
                } else {
                    fallen.push(t);
                }
            }
            (verified, fallen)
        })
    }
}

/// Take the verified tenants as synced at their input hash: backoff reset, ready, and no
/// render until their inputs change or an object moves.
pub(super) fn account(shared: &Shared, state: &mut LoopState, verified: &[String]) {
    if verified.is_empty() {
        return;
    }
    shared.work.queue(|q| {
        for t in verified {
            q.succeeded(t);
            shared.cluster.metrics().tenant_ready(t, true);
            if let Some(rev) = super::rollout::revision_for(state, t)
                && let Some(h) = rev.hashes.get(t).copied()
            {
                super::web::verified(shared, t, &rev.commit);
                state.record_synced(t, h, rev);
            }
        }
    });
    shared
        .cluster
        .metrics()
        .tenants_verified
        .inc_by(verified.len() as u64);
    tracing::info!(
        tenants = verified.len(),
        "found as last applied (inputs and live objects unchanged): not rendered or synced"
    );
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
