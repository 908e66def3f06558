//! Tenants whose prune is held: each synced tenant's last hold, counted by reason at scrape
//! time.
//!
//! In: each synced tenant's [`PruneHeld`] (or none, which clears it). Out:
//! `fief_tenants_prune_held{reason}`, one series per [`HoldReason`] (0 when no tenant has it),
//! so an alert can select a reason before any tenant has had one.

use std::collections::BTreeMap;
use std::sync::Mutex;

use fief_core::plan::PruneHold;
use fief_core::status::PruneHeld;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::gauge_value;

/// Why a tenant's prune is held, as the `reason` label: the holds that keep objects git no
/// longer holds running until someone (or the next sync) acts, as [`PruneHeld::blocks`]
/// counts them. A failed render is reported as a failing tenant already, and a purge that
/// keeps `fief.dev/prune: disabled` objects does what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HoldReason {
    /// The tenant rendered no objects and is not `purged`.
    EmptyRender,
    /// An apply of the sync failed (retried with backoff).
    ApplyFailed,
    /// The mass-prune guard tripped (only a person lifts it).
    MassPrune,
}

impl HoldReason {
    /// Every reason, each exported as a series.
    pub const ALL: [HoldReason; 3] = [
        HoldReason::EmptyRender,
        HoldReason::ApplyFailed,
        HoldReason::MassPrune,
    ];

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            HoldReason::EmptyRender => "empty_render",
            HoldReason::ApplyFailed => "apply_failed",
            HoldReason::MassPrune => "mass_prune",
        }
    }

    /// The reason of a hold that blocks a prune (none for one that does not).
    pub fn of(held: &PruneHeld) -> Option<HoldReason> {
        match held {
            PruneHeld::Hold(PruneHold::EmptyRender) => Some(HoldReason::EmptyRender),
            PruneHeld::Hold(PruneHold::ApplyFailed { .. }) => Some(HoldReason::ApplyFailed),
            PruneHeld::Hold(PruneHold::MassPrune { .. }) => Some(HoldReason::MassPrune),
            PruneHeld::Hold(PruneHold::RenderFailed) | PruneHeld::PurgeIncomplete { .. } => None,
        }
    }
}

/// A reason label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// The reason.
    pub reason: &'static str,
}

/// Each tenant whose last sync held its prune, and why.
#[derive(Debug, Default)]
pub struct Holds(Mutex<BTreeMap<String, HoldReason>>);

impl Holds {
    /// Take a tenant's sync in: its hold, or none (which clears an earlier one).
    pub fn record(&self, tenant: &str, held: Option<&PruneHeld>) {
        let mut holds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match held.and_then(HoldReason::of) {
            Some(reason) => {
                holds.insert(tenant.to_string(), reason);
            }
            None => {
                holds.remove(tenant);
            }
        }
    }

    /// Set the gauge: tenants held, by reason.
    pub fn export(&self, family: &Family<ReasonLabel, Gauge>) {
        let holds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for reason in HoldReason::ALL {
            let n = holds.values().filter(|r| **r == reason).count();
            family
                .get_or_create(&ReasonLabel {
                    reason: reason.as_str(),
                })
                .set(gauge_value(n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_counted_exactly_for_the_holds_that_block_a_prune() {
        for held in [
            PruneHeld::Hold(PruneHold::RenderFailed),
            PruneHeld::Hold(PruneHold::EmptyRender),
            PruneHeld::Hold(PruneHold::ApplyFailed { failed: 1 }),
            PruneHeld::Hold(PruneHold::MassPrune {
                count: 9,
                total: 10,
            }),
            PruneHeld::PurgeIncomplete { remaining: 1 },
        ] {
            assert_eq!(HoldReason::of(&held).is_some(), held.blocks(), "{held}");
        }
    }

    #[test]
    fn a_tenant_counts_once_under_its_last_hold_and_leaves_when_a_sync_holds_nothing() {
        let holds = Holds::default();
        let family = Family::<ReasonLabel, Gauge>::default();
        let mass = PruneHeld::Hold(PruneHold::MassPrune {
            count: 9,
            total: 10,
        });
        let failed = PruneHeld::Hold(PruneHold::ApplyFailed { failed: 1 });
        holds.record("a", Some(&mass));
        holds.record("b", Some(&mass));
        holds.record("b", Some(&failed));
        holds.record("c", Some(&PruneHeld::Hold(PruneHold::RenderFailed)));
        let count = |reason: HoldReason| {
            holds.export(&family);
            family
                .get_or_create(&ReasonLabel {
                    reason: reason.as_str(),
                })
                .get()
        };
        assert_eq!(count(HoldReason::MassPrune), 1);
        assert_eq!(count(HoldReason::ApplyFailed), 1);
        assert_eq!(count(HoldReason::EmptyRender), 0);
        holds.record("a", None);
        assert_eq!(count(HoldReason::MassPrune), 0);
    }
}
