//! A tenant whose file moved to another cluster: what the old cluster's inventory says, and
//! when the move may be finished by deleting what is left there (`fief retire`).
//!
//! In: the old cluster's inventory, the cluster the tenant file now names, and (to retire) the
//! new cluster's inventory and the tenant's current input hash. Out: `Moved=True` and
//! `Ready=False` (reason `MovedAway`) set on the old inventory, or cleared when the tenant
//! comes back; a [`RetireRefusal`] saying why its objects must stay. Pure.

use crate::condition::{Condition, ConditionType, Reason};
use crate::inventory::Inventory;

/// Mark an inventory as moved to cluster `to`: `Moved=True`, `Ready=False` (both reason
/// `MovedAway`), the objects untouched. Returns whether the status changed (a write is due).
pub fn mark_moved(inv: &mut Inventory, to: &str, now: &str) -> bool {
    let before = inv.status.clone();
    let message = format!(
        "the tenant file now names cluster {to}; its objects here are left running until `fief retire` deletes them"
    );
    let status = &mut inv.status;
    status.set_condition(ConditionType::Moved, true, Reason::MovedAway, &message, now);
    status.set_condition(
        ConditionType::Ready,
        false,
        Reason::MovedAway,
        &format!("moved to cluster {to}"),
        now,
    );
    status.set_condition(
        ConditionType::Reconciling,
        false,
        Reason::Done,
        "moved to another cluster",
        now,
    );
    status.moved_to = Some(to.to_string());
    inv.status != before
}

/// Clear the mark of [`mark_moved`] (the tenant file names this cluster again); its next
/// sync sets `Ready` anew.
pub fn clear_moved(inv: &mut Inventory) {
    inv.status.remove_condition(ConditionType::Moved);
    inv.status.moved_to = None;
}

/// Whether an inventory is marked moved (to a cluster).
pub fn moved_to(inv: &Inventory) -> Option<&str> {
    let moved = inv
        .status
        .condition(ConditionType::Moved)
        .is_some_and(Condition::is_true);
    moved.then(|| inv.status.moved_to.as_deref().unwrap_or(""))
}

/// Why `fief retire` leaves a tenant's objects on the old cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetireRefusal {
    /// The tenant file still names the old cluster.
    #[error("the tenant file still names cluster {cluster}: nothing to retire there")]
    NotMoved {
        /// The old cluster.
        cluster: String,
    },
    /// The old cluster has no inventory of the tenant.
    #[error("cluster {cluster} has no inventory of the tenant: nothing to retire")]
    NoInventory {
        /// The old cluster.
        cluster: String,
    },
    /// The old inventory is not marked `Moved` yet.
    #[error(
        "the inventory on cluster {cluster} is not marked Moved: sync it there first (`fief apply --cluster {cluster}` or its agent)"
    )]
    NotMarked {
        /// The old cluster.
        cluster: String,
    },
    /// The new cluster has no inventory of the tenant.
    #[error("the new cluster has no inventory of the tenant: apply it there first")]
    NotOnNew,
    /// The new cluster's inventory is not Ready (or is itself marked moved).
    #[error("the tenant is not Ready on the new cluster ({why}): wait until it is")]
    NotReadyOnNew {
        /// Its Ready message, or what is off.
        why: String,
    },
}

/// Whether the new cluster's inventory confirms the move: Ready and settled (its objects
/// applied and judged), not itself marked moved. Its inputs are not compared with the
/// checkout's: they hash fief's own version too, and the agent there may run another.
pub fn confirm_on_new(new: Option<&Inventory>) -> Result<(), RetireRefusal> {
    let new = new.ok_or(RetireRefusal::NotOnNew)?;
    if moved_to(new).is_some() || !new.status.is_settled() {
        let why = new
            .status
            .last_error
            .clone()
            .or_else(|| {
                new.status
                    .condition(ConditionType::Ready)
                    .map(|c| format!("Ready={}: {}", c.status, c.message))
            })
            .unwrap_or_else(|| "no Ready condition".to_string());
        return Err(RetireRefusal::NotReadyOnNew { why });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(inputs: &str) -> Inventory {
        let mut inv = Inventory::new("acme");
        inv.status
            .set_condition(ConditionType::Ready, true, Reason::Healthy, "ok", "t0");
        inv.status.inputs = inputs.to_string();
        inv
    }

    #[test]
    fn marking_moved_sets_moved_and_ready_false_once_and_clearing_removes_it() {
        let mut inv = ready("h");
        assert!(mark_moved(&mut inv, "b", "t1"));
        assert_eq!(moved_to(&inv), Some("b"));
        let ready = inv.status.condition(ConditionType::Ready).unwrap();
        assert!(
            ready.status == crate::condition::ConditionStatus::False
                && ready.has_reason(Reason::MovedAway)
        );
        assert!(!mark_moved(&mut inv, "b", "t2"), "no change, no write");
        clear_moved(&mut inv);
        assert_eq!(moved_to(&inv), None);
    }

    #[test]
    fn the_move_is_confirmed_only_by_a_settled_ready_inventory_not_itself_moved() {
        assert_eq!(confirm_on_new(None), Err(RetireRefusal::NotOnNew));
        assert_eq!(confirm_on_new(Some(&ready("h"))), Ok(()));
        let mut away = ready("h");
        mark_moved(&mut away, "c", "t1");
        assert!(matches!(
            confirm_on_new(Some(&away)),
            Err(RetireRefusal::NotReadyOnNew { .. })
        ));
        let mut failing = ready("h");
        failing.status.set_condition(
            ConditionType::Ready,
            false,
            Reason::ApplyFailed,
            "boom",
            "t2",
        );
        assert!(matches!(
            confirm_on_new(Some(&failing)),
            Err(RetireRefusal::NotReadyOnNew { .. })
        ));
    }
}
