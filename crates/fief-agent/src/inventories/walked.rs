//! A batch's inventories read in one walk of the agent namespace, a chunk's at a time.
//!
//! In: the batch's chunks (tenant names, in the order they sync) and the loop state's evicted
//! tenants. Out: for each chunk, an [`Ahead`] with the inventories of its evicted tenants the
//! walk reached, and which tenants it covered (a covered tenant the walk did not find has no
//! inventory).
//!
//! A batch that reads back many inventories (a change every tenant takes, the first after a
//! start or a resync above all) would read each one by name: one GET per tenant, as many
//! requests as the applies. A [`Walk`] lists them in pages, in the order of the tenants'
//! names, which is the order the queue hands due tenants out in: each chunk takes the
//! inventories up to its last tenant, those of tenants it does not sync are dropped as they
//! are passed. What the walk holds is bounded by its pages, whatever the fleet's size. A chunk
//! whose tenant the walk passed already (a chunk out of name order) reads that one by name, as
//! does every chunk after a walk that failed (a failed LIST, or a ConfigMap whose name and
//! tenant label disagree: no tenant's inventory, which the walk refuses to take or pass).
//!
//! The walk reads the inventories during the batch, a few ConfigMaps ahead of the chunk that
//! syncs them. A LIST in pages answers every page as of its first one's resourceVersion (a
//! list whose snapshot expired starts again, at a newer one), so an inventory is as the
//! batch's start left it, where a read by name a chunk ahead sees it a little later. Either read tells the agent of another writer's change to an inventory
//! that was made before the read; a change made after it is overwritten by the sync's write,
//! with both reads alike (the write is a patch without a resourceVersion).

use std::collections::{BTreeMap, BTreeSet};

use fief_kube::ClusterError;

use super::{Ahead, BY_NAME_MAX, Read};
use crate::LoopState;
use fief_kube::Resources;
use fief_kube::inventory_store::Walk;

/// The walk of one batch (see the module docs).
pub(crate) struct BatchWalk {
    walk: Walk,
    /// The last tenant the walk passed: every inventory up to it was taken or dropped.
    passed: Option<String>,
}

impl BatchWalk {
    /// A walk for the batch whose chunks are `chunks`, when more than [`BY_NAME_MAX`] of
    /// their tenants' inventories are to be read back; `None` otherwise, or while no
    /// inventories are in hand (the batch then reads them all another way).
    pub(crate) fn start(
        resources: &Resources,
        state: &LoopState,
        chunks: &[Vec<String>],
        namespace: &str,
    ) -> Option<BatchWalk> {
        state.inventories.as_ref()?;
        let evicted = chunks
            .iter()
            .flatten()
            .filter(|t| state.evicted.contains(*t))
            .take(BY_NAME_MAX + 1)
            .count();
        (evicted > BY_NAME_MAX).then(|| BatchWalk {
            walk: Walk::new(resources.client(), namespace),
            passed: None,
        })
    }

    /// The evicted inventories of `chunk` the walk has not passed yet, taken from it; `None`
    /// when the chunk has none to read. When the walk fails, `self` is of no more use: the
    /// caller drops it, and the chunks read their inventories by name.
    pub(crate) async fn take(
        &mut self,
        state: &LoopState,
        chunk: &[String],
    ) -> Result<Option<Ahead>, ClusterError> {
        let need: BTreeSet<&String> = chunk
            .iter()
            .filter(|t| state.evicted.contains(*t))
            .filter(|t| self.passed.as_ref().is_none_or(|p| *t > p))
            .collect();
        let Some(last) = need.last().map(|t| t.as_str()) else {
            return Ok(None);
        };
        let mut found = BTreeMap::new();
        while let Some(one) = self.walk.next_upto(Some(last)).await? {
            found.extend(
                one.into_map()
                    .into_iter()
                    .filter(|(tenant, _)| need.contains(tenant)),
            );
        }
        // Every inventory up to `last` was taken: a needed tenant not found has none.
        self.passed = Some(last.to_string());
        Ok(Some(Ahead {
            tenants: need.into_iter().cloned().collect(),
            read: Read::Walked(found),
        }))
    }
}
