//! Why a tenant's sync failed, typed: every error a sync reports carries the [`Failure`]
//! that made it, set where the error is made.
//!
//! In: the step of a sync that failed and its message. Out: a [`SyncError`] (written as its
//! message alone, so reports read as before) and, from its [`Failure`], the words each
//! reader uses: the failure metric's `category` ([`Failure::metric_label`]), the inventory
//! Event's reason ([`Failure::event_reason`]) and the status condition's reason
//! ([`Failure::condition_reason`]). No reader looks into the message.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::condition::Reason;

/// The step of a sync that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Failure {
    /// The tenant did not render or validate.
    Render,
    /// The agent cannot list or watch a kind the tenant uses (its watch is down).
    ClusterAccess,
    /// The API server refused a request as forbidden (403).
    Forbidden,
    /// Reading, writing or deleting the tenant's inventory failed.
    Inventory,
    /// Applying the tenant's objects failed (an apply, a chart CRD, the status access, an
    /// adoption refused or handed over).
    Apply,
    /// Deleting an object failed (a prune, an ended hook).
    Prune,
    /// A `pre` or `post` object failed (a migration Job).
    Phase,
}

impl Failure {
    /// The `category` of `fief_tenant_failures_total`: `render`, `watch`, `forbidden`,
    /// `inventory`, `prune` or `apply` (a failed phase object counts as an apply).
    pub const fn metric_label(self) -> &'static str {
        match self {
            Failure::Render => "render",
            Failure::ClusterAccess => "watch",
            Failure::Forbidden => "forbidden",
            Failure::Inventory => "inventory",
            Failure::Prune => "prune",
            Failure::Apply | Failure::Phase => "apply",
        }
    }

    /// The reason of the Warning Event on the tenant's inventory: `RenderFailed` for a
    /// render, `SyncFailed` for the rest.
    pub const fn event_reason(self) -> &'static str {
        match self {
            Failure::Render => "RenderFailed",
            _ => "SyncFailed",
        }
    }

    /// The reason of `Ready=False` / `Stalled=True`.
    pub const fn condition_reason(self) -> Reason {
        match self {
            Failure::Render => Reason::RenderFailed,
            Failure::ClusterAccess => Reason::ClusterAccessFailed,
            Failure::Phase => Reason::PhaseFailed,
            Failure::Forbidden | Failure::Inventory | Failure::Apply | Failure::Prune => {
                Reason::ApplyFailed
            }
        }
    }
}

/// One error of a tenant's sync: what failed and the message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncError {
    /// What failed.
    pub failure: Failure,
    /// The message (never a secret value: the sync names a secret by its key).
    pub message: String,
}

impl SyncError {
    /// An error of `failure` with `message`.
    pub fn new(failure: Failure, message: impl Into<String>) -> SyncError {
        SyncError {
            failure,
            message: message.into(),
        }
    }

    /// The message.
    pub fn as_str(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Written as its message: a report's `errors` is a list of strings.
impl Serialize for SyncError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.message)
    }
}

/// The failure that stands for a sync's errors: a down watch when any error says so, else a
/// failed phase object when any does (either decides the tenant's condition wherever its
/// error stands in the list), else the first error's.
pub fn of_errors(errors: &[SyncError]) -> Option<Failure> {
    [Failure::ClusterAccess, Failure::Phase]
        .into_iter()
        .find(|f| errors.iter().any(|e| e.failure == *f))
        .or_else(|| errors.first().map(|e| e.failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_metric_label_event_reason_and_condition_reason() {
        let all = [
            (
                Failure::Render,
                "render",
                "RenderFailed",
                Reason::RenderFailed,
            ),
            (
                Failure::ClusterAccess,
                "watch",
                "SyncFailed",
                Reason::ClusterAccessFailed,
            ),
            (
                Failure::Forbidden,
                "forbidden",
                "SyncFailed",
                Reason::ApplyFailed,
            ),
            (
                Failure::Inventory,
                "inventory",
                "SyncFailed",
                Reason::ApplyFailed,
            ),
            (Failure::Apply, "apply", "SyncFailed", Reason::ApplyFailed),
            (Failure::Prune, "prune", "SyncFailed", Reason::ApplyFailed),
            (Failure::Phase, "apply", "SyncFailed", Reason::PhaseFailed),
        ];
        for (f, label, event, reason) in all {
            assert_eq!(f.metric_label(), label, "{f:?}");
            assert_eq!(f.event_reason(), event, "{f:?}");
            assert_eq!(f.condition_reason(), reason, "{f:?}");
        }
    }

    #[test]
    fn a_down_watch_or_a_failed_phase_stands_for_the_errors_else_the_first_does() {
        let e = |f| SyncError::new(f, "m");
        assert_eq!(of_errors(&[]), None);
        assert_eq!(
            of_errors(&[e(Failure::Forbidden), e(Failure::Prune)]),
            Some(Failure::Forbidden)
        );
        assert_eq!(
            of_errors(&[e(Failure::Apply), e(Failure::Phase)]),
            Some(Failure::Phase)
        );
        assert_eq!(
            of_errors(&[e(Failure::Render), e(Failure::ClusterAccess)]),
            Some(Failure::ClusterAccess)
        );
    }

    #[test]
    fn an_error_is_written_as_its_message() {
        let e = SyncError::new(Failure::Apply, "ConfigMap a/b: refused");
        assert_eq!(e.to_string(), "ConfigMap a/b: refused");
        assert_eq!(
            serde_json::to_string(&[e]).unwrap(),
            r#"["ConfigMap a/b: refused"]"#
        );
    }
}
