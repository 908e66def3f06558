//! The inventories the agent's loop holds between batches, and those it does not.
//!
//! In: the agent namespace's inventory ConfigMaps (read in pages), the batch's verification
//! candidates ([`Seeder`]). Out: the loop state's inventories, and each chunk's
//! [`ClusterState`] (its inventories and the watches' live hashes). When every inventory is read
//! (at start and after a periodic resync) none is kept: each page is offered to the seeder
//! (a candidate's objects go into the drift baseline) and dropped, so a start never holds
//! every inventory, whether it verifies or renders the tenants. An inventory that is not
//! held (evicted) is read back before its tenant is next synced, a chunk's at a time, or when
//! orphaned inventories are looked for; the next chunk's are read while this one syncs.
//! Reads only.

use std::collections::{BTreeMap, BTreeSet};

use super::verify::Seeder;
use super::{LoopState, Shared};
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::render::TenantRender;
use fief_kube::inventory_store::{each_inventory, get_inventories};
use fief_kube::sync::{ClusterState, SyncOptions};
use fief_kube::{ClusterError, Resources};

mod walked;

pub(super) use walked::BatchWalk;

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
            let read = each_inventory(resources.client(), agent_namespace, |t, inv| {
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

/// The tenants with an inventory in the agent namespace (none yet: empty), each inventory
/// dropped as it is read; `None` when they cannot be read.
async fn tenants_with_inventories(
    resources: &Resources,
    namespace: &str,
) -> Option<BTreeSet<String>> {
    let mut tenants = BTreeSet::new();
    match each_inventory(resources.client(), namespace, |t, _| {
        tenants.insert(t);
    })
    .await
    {
        Ok(()) => Some(tenants),
        Err(e) if is_not_found(&e) => Some(BTreeSet::new()),
        Err(e) => {
            tracing::error!(error = %e, "cannot read inventories; retrying later");
            None
        }
    }
}

/// A chunk's evicted inventories, read ahead while the chunk before it syncs (so the read is
/// not on the way between two chunks' applies), or taken from the batch's walk.
pub(super) struct Ahead {
    /// The chunk's tenants whose inventories are read: those absent from the answer have
    /// none.
    tenants: Vec<String>,
    read: Read,
}

/// How an [`Ahead`]'s inventories come.
enum Read {
    /// Read by name (or listed) on a task of their own.
    Task(tokio::task::JoinHandle<Result<Inventories, ClusterError>>),
    /// Taken from the batch's walk, already in hand.
    Walked(Inventories),
}

/// Inventories by tenant, as read.
type Inventories = BTreeMap<String, Result<Inventory, InventoryError>>;

/// Tenants whose inventories are read one GET each; past this, every inventory is listed
/// (in pages) and theirs kept. A LIST that names tenants in its label selector costs the API
/// server every ConfigMap of the agent namespace anyway, a GET only the one it reads, so a
/// chunk (and a one-tenant change) is read by name whatever the fleet's size; the rare large
/// read (orphans after a resync) lists them all, with no names in its URL to outgrow it.
const BY_NAME_MAX: usize = 64;

/// The inventories of `tenants` (those that exist), by name or from a LIST of every
/// inventory ([`BY_NAME_MAX`]).
async fn read_named(
    client: kube::Client,
    namespace: String,
    tenants: Vec<String>,
) -> Result<Inventories, ClusterError> {
    if tenants.len() <= BY_NAME_MAX {
        return get_inventories(&client, &namespace, &tenants).await;
    }
    let wanted: BTreeSet<String> = tenants.into_iter().collect();
    let mut out = BTreeMap::new();
    each_inventory(&client, &namespace, |t, inv| {
        if wanted.contains(&t) {
            out.insert(t, inv);
        }
    })
    .await?;
    Ok(out)
}

/// Start reading the evicted inventories of `chunk` (none when every inventory is still to
/// be read at once, or none of the chunk's is evicted).
pub(super) fn read_ahead(
    resources: &Resources,
    state: &LoopState,
    chunk: &[String],
    namespace: &str,
) -> Option<Ahead> {
    state.inventories.as_ref()?;
    let tenants: Vec<String> = chunk
        .iter()
        .filter(|t| state.evicted.contains(*t))
        .cloned()
        .collect();
    if tenants.is_empty() {
        return None;
    }
    let (client, namespace, names) = (
        resources.client().clone(),
        namespace.to_string(),
        tenants.clone(),
    );
    let read = Read::Task(tokio::spawn(read_named(client, namespace, names)));
    Some(Ahead { tenants, read })
}

impl Ahead {
    /// Stop the read (its chunk is not synced now).
    pub(super) fn abort(self) {
        if let Read::Task(read) = self.read {
            read.abort();
        }
    }
}

/// Read back the evicted inventories this chunk needs: its tenants', and, when orphans are
/// looked for, those of tenants no longer in git. Those read ahead ([`read_ahead`]) are taken
/// from there; a failed read ahead is read again here. `false` when they cannot be read.
pub(super) async fn restore_evicted(
    resources: &Resources,
    state: &mut LoopState,
    inventories: &mut Inventories,
    renders: &[TenantRender],
    namespace: &str,
    ahead: Option<Ahead>,
) -> bool {
    if let Some(ahead) = ahead {
        let read = match ahead.read {
            Read::Task(task) => task.await,
            Read::Walked(read) => Ok(Ok(read)),
        };
        match read {
            Ok(Ok(mut read)) => {
                // Chunks are disjoint, so nothing synced these tenants since the read began.
                for t in &ahead.tenants {
                    if state.evicted.remove(t)
                        && let Some(inv) = read.remove(t)
                    {
                        inventories.insert(t.clone(), inv);
                    }
                }
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "inventories read ahead failed; reading again")
            }
            Err(e) => {
                tracing::debug!(error = %e, "inventory read-ahead task failed; reading again")
            }
        }
    }
    // The chunk's own tenants are looked up in the evicted set (a chunk costs its tenants, not
    // the fleet); only an orphan check walks every evicted tenant.
    let mut need: std::collections::BTreeSet<String> = renders
        .iter()
        .filter(|r| state.evicted.contains(&r.tenant))
        .map(|r| r.tenant.clone())
        .collect();
    if state.check_orphans {
        let known = state.rev.as_ref().map(|r| &r.hashes);
        need.extend(
            state
                .evicted
                .iter()
                .filter(|t| !known.is_some_and(|k| k.contains_key(*t)))
                .cloned(),
        );
    }
    let need: Vec<String> = need.into_iter().collect();
    if need.is_empty() {
        return true;
    }
    match read_named(
        resources.client().clone(),
        namespace.to_string(),
        need.clone(),
    )
    .await
    {
        Ok(read) => {
            inventories.extend(read);
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

/// Inventories and live hashes for this batch: the inventories as the last batch left them
/// (read afresh at start and on a periodic resync) and the watches' live hashes.
/// A tenant whose last sync was interrupted gets no live hashes, so that sync is finished in
/// full; one waiting for health finished its sync and is planned like any other.
pub(super) async fn cluster_state(
    shared: &Shared,
    resources: &Resources,
    state: &mut LoopState,
    renders: &[TenantRender],
    sync_options: &SyncOptions,
    mut ahead: Option<Ahead>,
) -> Option<ClusterState> {
    let mut inventories = match state.inventories.take() {
        Some(i) => i,
        None => {
            // None held (the read at the batch's start failed): none is kept now either;
            // every one is read back before its tenant is synced, as after a start.
            if let Some(a) = ahead.take() {
                a.abort();
            }
            state.evicted =
                tenants_with_inventories(resources, &sync_options.agent_namespace).await?;
            BTreeMap::new()
        }
    };
    let ns = &sync_options.agent_namespace;
    let restored = restore_evicted(resources, state, &mut inventories, renders, ns, ahead);
    if !restored.await {
        state.inventories = Some(inventories);
        return None;
    }
    tracing::debug!(tenants = inventories.len(), "inventories in hand");
    let live = shared
        .index
        .live_hashes(renders.iter().flat_map(|r| r.objects.iter().map(|o| &o.id)));
    let mut cs = ClusterState { inventories, live };
    for r in renders {
        let interrupted = cs
            .inventories
            .get(&r.tenant)
            .is_some_and(|i| i.as_ref().is_ok_and(fief_core::status::interrupted));
        if interrupted {
            tracing::info!(
                tenant = r.tenant,
                "the last sync was interrupted; applying every object again"
            );
            for o in &r.objects {
                cs.live.remove(&o.id);
            }
        }
    }
    Some(cs)
}
