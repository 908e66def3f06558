//! A held prune as a tenant's status records it.
//!
//! In: the sync's [`PruneHeld`] and the entries its prune would delete. Out: [`HeldPrune`] on
//! the inventory's status (what kind of hold, its message, since when, the objects), kept
//! with its first time while a hold of the same kind stands and cleared by a sync that holds
//! nothing. Pure.

use super::PruneHeld;
use crate::inventory::{Entry, Status};
pub use crate::inventory::{HeldPrune, HoldKind, MAX_LISTED};
use crate::plan::PruneHold;

/// The kind of a hold the status records (a failed render is no hold of its own: nothing
/// of the tenant was planned).
pub fn kind_of(held: &PruneHeld) -> Option<HoldKind> {
    match held {
        PruneHeld::Hold(PruneHold::MassPrune { .. }) => Some(HoldKind::MassPrune),
        PruneHeld::Hold(PruneHold::EmptyRender) => Some(HoldKind::EmptyRender),
        PruneHeld::Hold(PruneHold::ApplyFailed { .. }) => Some(HoldKind::ApplyFailed),
        PruneHeld::Hold(PruneHold::RenderFailed) => None,
        PruneHeld::PurgeIncomplete { .. } => Some(HoldKind::PurgeIncomplete),
    }
}

/// Record the sync's hold (or its absence) on `status`; `would_delete` is what the held
/// prune would delete. A hold of the kind already recorded keeps its `since`.
pub fn record(status: &mut Status, held: Option<&PruneHeld>, would_delete: &[Entry], now: &str) {
    let Some((held, kind)) = held.and_then(|h| Some((h, kind_of(h)?))) else {
        status.prune_hold = None;
        return;
    };
    let since = match &status.prune_hold {
        Some(h) if h.kind == kind => h.since.clone(),
        _ => now.to_string(),
    };
    status.prune_hold = Some(HeldPrune {
        kind,
        message: held.to_string(),
        since,
        count: would_delete.len(),
        objects: would_delete
            .iter()
            .take(MAX_LISTED)
            .map(|e| e.id.to_string())
            .collect(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::ObjectId;

    fn entry(name: &str) -> Entry {
        Entry {
            id: ObjectId {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "t-prod".into(),
                name: name.into(),
            },
            component: "app".into(),
            api_version: "v1".into(),
            hash: String::new(),
            live: String::new(),
            resource_version: String::new(),
            uid: String::new(),
            managed: String::new(),
            created: None,
            pending: false,
            done: None,
        }
    }

    #[test]
    fn a_hold_is_recorded_with_what_it_would_delete_and_keeps_its_first_time() {
        let mut status = Status::default();
        let held = PruneHeld::Hold(PruneHold::MassPrune { count: 2, total: 2 });
        let doomed = [entry("a"), entry("b")];
        record(&mut status, Some(&held), &doomed, "t1");
        record(&mut status, Some(&held), &doomed, "t2");
        let h = status.prune_hold.clone().unwrap();
        assert_eq!(
            (h.kind, h.since.as_str(), h.count),
            (HoldKind::MassPrune, "t1", 2)
        );
        assert_eq!(h.objects, ["ConfigMap/t-prod/a", "ConfigMap/t-prod/b"]);
        record(&mut status, None, &[], "t3");
        assert_eq!(status.prune_hold, None);
    }

    #[test]
    fn a_failed_render_records_no_hold() {
        let mut status = Status::default();
        let held = PruneHeld::Hold(PruneHold::RenderFailed);
        record(&mut status, Some(&held), &[entry("a")], "t1");
        assert_eq!(status.prune_hold, None);
    }
}
