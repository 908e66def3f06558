//! A tenant's status conditions: the stored [`Condition`] and the words it is written in.
//!
//! In: nothing (a vocabulary). Out: [`ConditionType`], [`ConditionStatus`] and [`Reason`],
//! each written as its variant's name (`Ready`, `True`, `ApplyFailed`, ...), and the
//! [`Condition`] the inventory's status records ([`crate::inventory::Status::set_condition`]
//! sets one). The stored condition keeps its type and reason as plain strings, so an
//! inventory written by another fief version, with a reason this one does not know, still
//! loads as it was written; its status is one of the three Kubernetes defines.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A status condition, as Kubernetes writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// A [`ConditionType`]: `Ready`, `Reconciling`, `Stalled`, `Orphaned` or `Moved`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True` or `False` (`Unknown` is Kubernetes' third word; fief does not write it).
    pub status: ConditionStatus,
    /// A [`Reason`], CamelCase (kept as read: another fief version may know other reasons).
    pub reason: String,
    /// For people.
    pub message: String,
    /// When `status` last changed (RFC 3339).
    pub last_transition_time: String,
}

impl Condition {
    /// Whether the condition has this reason.
    pub fn has_reason(&self, reason: Reason) -> bool {
        self.reason == reason.as_str()
    }

    /// Whether the condition holds (`status: "True"`).
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// Whether a condition holds, in the words Kubernetes writes it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Nobody can tell (or, in a table, the condition is not set).
    Unknown,
}

impl ConditionStatus {
    /// The status as Kubernetes writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }

    /// The status written as `word`, if it is one of the three.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "True" => Some(ConditionStatus::True),
            "False" => Some(ConditionStatus::False),
            "Unknown" => Some(ConditionStatus::Unknown),
            _ => None,
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(holds: bool) -> Self {
        if holds {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

impl fmt::Display for ConditionStatus {
    /// The word, padded to the formatter's width (a table's column).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The type of a tenant status condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ConditionType {
    /// The tenant's last sync applied it (and, once judged, its objects are healthy).
    Ready,
    /// A sync is under way, or a finished sync waits for its objects to become healthy.
    Reconciling,
    /// The tenant cannot progress without a change: a failed apply or render, a held
    /// prune, objects that failed.
    Stalled,
    /// The tenant file left git; its objects are left running.
    Orphaned,
    /// The tenant file names another cluster; its objects here are left running until
    /// `fief retire` deletes them.
    Moved,
}

impl ConditionType {
    /// The type as the status writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Stalled => "Stalled",
            ConditionType::Orphaned => "Orphaned",
            ConditionType::Moved => "Moved",
        }
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reason of a tenant status condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Reason {
    /// The sync applied every object (and pruned what left git).
    Applied,
    /// An apply, or a read or write the sync needed, failed.
    ApplyFailed,
    /// The tenant did not render or validate.
    RenderFailed,
    /// The cluster refuses the agent a kind the tenant uses.
    ClusterAccessFailed,
    /// Objects that left git were not pruned (a guard held the prune, or a purge is
    /// incomplete).
    PruneHeld,
    /// `Reconciling=False`: the sync finished.
    Done,
    /// `Reconciling=True`: a sync applies and prunes.
    Progressing,
    /// The tenant is applied and its objects are healthy.
    Healthy,
    /// The tenant is applied and waits for its objects to become healthy: its sync finished
    /// (`Reconciling=True` with this reason is the wait, not a sync under way).
    WaitingForHealth,
    /// The tenant is applied and some of its objects failed or timed out.
    Unhealthy,
    /// The tenant file is gone from git (`Orphaned=True`).
    TenantFileRemoved,
    /// The tenant file names another cluster (`Moved=True`, `Ready=False`).
    MovedAway,
    /// Some of the tenant's components wait for the components they depend on to be applied
    /// and healthy (`Ready=False`, `Reconciling=True`).
    DependencyNotReady,
    /// Objects of the tenant wait for an ordered phase before them (a `pre` Job to complete)
    /// (`Ready=False`, `Reconciling=True`).
    PhaseNotReady,
    /// A `pre` or `post` object failed (a migration Job): nothing placed after it is applied
    /// and nothing is pruned (`Ready=False`, `Stalled=True`).
    PhaseFailed,
}

impl Reason {
    /// The reason as the status writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Applied => "Applied",
            Reason::ApplyFailed => "ApplyFailed",
            Reason::RenderFailed => "RenderFailed",
            Reason::ClusterAccessFailed => "ClusterAccessFailed",
            Reason::PruneHeld => "PruneHeld",
            Reason::Done => "Done",
            Reason::Progressing => "Progressing",
            Reason::Healthy => "Healthy",
            Reason::WaitingForHealth => "WaitingForHealth",
            Reason::Unhealthy => "Unhealthy",
            Reason::TenantFileRemoved => "TenantFileRemoved",
            Reason::MovedAway => "MovedAway",
            Reason::DependencyNotReady => "DependencyNotReady",
            Reason::PhaseNotReady => "PhaseNotReady",
            Reason::PhaseFailed => "PhaseFailed",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_reasons_are_written_as_their_names_in_json_and_text() {
        for t in [
            ConditionType::Ready,
            ConditionType::Reconciling,
            ConditionType::Stalled,
            ConditionType::Orphaned,
            ConditionType::Moved,
        ] {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{t}\""));
            assert_eq!(serde_json::from_str::<ConditionType>(&json).unwrap(), t);
        }
        for r in [
            Reason::Applied,
            Reason::ApplyFailed,
            Reason::RenderFailed,
            Reason::ClusterAccessFailed,
            Reason::PruneHeld,
            Reason::Done,
            Reason::Progressing,
            Reason::Healthy,
            Reason::WaitingForHealth,
            Reason::Unhealthy,
            Reason::TenantFileRemoved,
            Reason::MovedAway,
            Reason::DependencyNotReady,
            Reason::PhaseNotReady,
            Reason::PhaseFailed,
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(format!("{r:?}"), r.as_str());
            assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), r);
        }
    }

    #[test]
    fn statuses_are_written_as_kubernetes_words_in_json_and_text() {
        for (s, word) in [
            (ConditionStatus::True, "True"),
            (ConditionStatus::False, "False"),
            (ConditionStatus::Unknown, "Unknown"),
        ] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{word}\""));
            assert_eq!(s.to_string(), word);
            assert_eq!(format!("{s:<8}|"), format!("{word:<8}|"));
            assert_eq!(ConditionStatus::parse(word), Some(s));
            assert_eq!(
                serde_json::from_str::<ConditionStatus>(&format!("\"{word}\"")).unwrap(),
                s
            );
        }
        assert_eq!(ConditionStatus::parse("true"), None);
        assert_eq!(ConditionStatus::from(true), ConditionStatus::True);
        assert_eq!(ConditionStatus::from(false), ConditionStatus::False);
    }

    #[test]
    fn a_condition_with_a_reason_this_version_does_not_know_loads_as_written() {
        let text = r#"{"type":"Ready","status":"False","reason":"SomethingNew","message":"m","lastTransitionTime":"t"}"#;
        let c: Condition = serde_json::from_str(text).unwrap();
        assert_eq!(c.reason, "SomethingNew");
        assert!(!c.has_reason(Reason::Applied));
        assert_eq!(serde_json::to_string(&c).unwrap(), text);
    }
}
