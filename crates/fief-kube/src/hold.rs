//! Held prunes in a sync: who released the mass-prune guard for which tenants, why a
//! tenant's prune is held, and the hold as its status records it.
//!
//! In: the sync's options, a tenant's plan and report. Out: [`PruneRelease`] (options), the
//! report's [`PruneHeld`], and the hold (with what it would delete) on the inventory's status;
//! a sync that completes settles the entries it recorded as pending. Pure.

use std::collections::BTreeMap;

use fief_core::inventory::{Entry, Inventory};
use fief_core::plan::{self, Plan};
use fief_core::status::{self, PruneHeld, TenantReport};

/// A person's release of held mass prunes: the guard does not hold these tenants' prunes, and
/// each tenant it would have held records the note (who, when) in its status.
#[derive(Debug, Clone, Default)]
pub enum PruneRelease {
    /// The guard holds as configured.
    #[default]
    None,
    /// Released for every tenant of the sync, with this note.
    All(String),
    /// Released for these tenants, each with its note.
    Tenants(BTreeMap<String, String>),
}

impl PruneRelease {
    /// The note of the release that covers `tenant`, if one does.
    pub fn for_tenant(&self, tenant: &str) -> Option<&str> {
        match self {
            PruneRelease::None => None,
            PruneRelease::All(note) => Some(note),
            PruneRelease::Tenants(notes) => notes.get(tenant).map(String::as_str),
        }
    }
}

/// Record the sync's held prune (or that none is held) on the status, with what it would
/// delete. A sync that completes (nothing held, nothing failed) settles every entry it
/// recorded as pending: the mass-prune guard counts them from now on.
pub(super) fn record_hold(plan: &Plan<'_>, inv: &mut Inventory, report: &TenantReport, now: &str) {
    let would_delete: Vec<Entry> = match &report.prune_held {
        Some(PruneHeld::Hold(_)) if !plan.held.is_empty() => plan.held.clone(),
        Some(PruneHeld::Hold(_)) => plan.prune.clone(),
        Some(PruneHeld::PurgeIncomplete { .. }) => inv.entries.values().cloned().collect(),
        None => Vec::new(),
    };
    status::hold::record(
        &mut inv.status,
        report.prune_held.as_ref(),
        &would_delete,
        now,
    );
    if report.prune_held.is_none() && report.counts.failed == 0 {
        for e in inv.entries.values_mut() {
            e.pending = false;
        }
    }
}

/// Why the prune is held, if it is: the plan's own hold (a guard), or an apply that failed
/// (the new objects may not exist, so nothing old is deleted).
pub(super) fn prune_hold(plan: &Plan<'_>, report: &TenantReport) -> Option<PruneHeld> {
    match &plan.hold {
        Some(h) => Some(h.clone().into()),
        None if report.counts.failed > 0 && !plan.prune.is_empty() => {
            Some(PruneHeld::Hold(plan::PruneHold::ApplyFailed {
                failed: report.counts.failed,
            }))
        }
        None => None,
    }
}
