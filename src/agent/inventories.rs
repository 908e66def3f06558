//! The inventories the agent's loop holds between batches, and those it does not.
//!
//! In: the agent namespace's inventory ConfigMaps (read in pages), the batch's verification
//! candidates ([`Seeder`]). Out: the loop state's inventories. When every inventory is read
//! (at start and after a periodic resync) none is kept: each page is offered to the seeder
//! (a candidate's objects go into the drift baseline) and dropped, so a start never holds
//! every inventory, whether it verifies or renders the tenants. An inventory that is not
//! held (evicted) is read back before its tenant is next synced, a chunk's at a time, or when
//! orphaned inventories are looked for. Reads only.

use std::collections::{BTreeMap, BTreeSet};

use super::verify::Seeder;
use super::{LoopState, Shared};
use crate::core::inventory::{Inventory, InventoryError};
use crate::core::render::TenantRender;
use crate::kube::inventory_store::{each_inventory, load_inventories};
use crate::kube::{ClusterError, Resources};

/// Offer the batch's inventories to `seeder`: the held ones (those taken are evicted), or
/// (none held: at start and after a periodic resync) every inventory as it is read, none
/// kept.
pub(super) async fn offer(
    shared: &Shared,
    resources: &Resources,
    state: &mut LoopState,
    agent_namespace: &str,
    seeder: &mut Seeder,
) {
    match state.inventories.as_mut() {
        Some(held) => seeder.offer_held(shared, held, &mut state.evicted),
        None => {
            // None is kept: a candidate's objects are seeded into the drift baseline, and
            // every inventory is read back (a chunk's at a time) before its tenant is synced,
            // so a start that renders every tenant does not hold every inventory either.
            let mut evicted = BTreeSet::new();
            let read = each_inventory(resources.client(), agent_namespace, None, |t, inv| {
                if let Ok(i) = &inv {
                    seeder.offer(shared, &t, i);
                }
                evicted.insert(t);
            })
            .await;
            match read {
                Ok(()) => {
                    state.inventories = Some(BTreeMap::new());
                    state.evicted = evicted;
                }
                Err(e) if is_not_found(&e) => {
                    state.inventories = Some(BTreeMap::new());
                    state.evicted.clear();
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read inventories; retrying later");
                    seeder.clear();
                }
            }
        }
    }
}

/// Whether a read failed because the agent namespace does not exist yet (no inventories).
fn is_not_found(e: &ClusterError) -> bool {
    matches!(e, ClusterError::Unreachable { source: kube::Error::Api(s), .. } if s.code == 404)
}

/// Every inventory in the agent namespace (none yet: empty); `None` when they cannot be read.
pub(super) async fn load(
    resources: &Resources,
    namespace: &str,
) -> Option<BTreeMap<String, Result<Inventory, InventoryError>>> {
    match load_inventories(resources.client(), namespace).await {
        Ok(i) => Some(i),
        Err(e) if is_not_found(&e) => Some(BTreeMap::new()),
        Err(e) => {
            tracing::error!(error = %e, "cannot read inventories; retrying later");
            None
        }
    }
}

/// Read back the evicted inventories this chunk needs: its tenants', and, when orphans are
/// looked for, those of tenants no longer in git. `false` when they cannot be read.
pub(super) async fn restore_evicted(
    resources: &Resources,
    state: &mut LoopState,
    inventories: &mut BTreeMap<String, Result<Inventory, InventoryError>>,
    renders: &[TenantRender],
    namespace: &str,
) -> bool {
    let known = state.rev.as_ref().map(|r| &r.hashes);
    let need: Vec<String> = state
        .evicted
        .iter()
        .filter(|t| {
            renders.iter().any(|r| &r.tenant == *t)
                || (state.check_orphans && !known.is_some_and(|k| k.contains_key(*t)))
        })
        .cloned()
        .collect();
    if need.is_empty() {
        return true;
    }
    let read = each_inventory(resources.client(), namespace, Some(&need), |t, inv| {
        inventories.insert(t, inv);
    })
    .await;
    match read {
        Ok(()) => {
            for t in &need {
                state.evicted.remove(t);
            }
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read inventories; retrying later");
            false
        }
    }
}
