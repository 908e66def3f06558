//! The report of one tenant's sync: its [`Outcome`], counts, errors, and why objects a prune
//! would delete still run ([`PruneHeld`]).
//!
//! In: what each step of a sync found. Out: a [`TenantReport`], as `fief apply` prints it
//! (progress lines, `--output json`) and the agent reads it (queue, metrics, Events,
//! `/status`). Its JSON writes the outcome as a lowercase word, `pruneHeld` as a sentence,
//! and `pruneBlocked` (derived from the hold) only when true.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::failure::{Failure, SyncError};
use crate::inventory::Counts;
use crate::plan::PruneHold;

/// What a sync did with one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Applied (or found as recorded) and pruned as planned, unless a prune was held.
    Applied,
    /// An apply, a prune, or a read or write of the inventory failed; or the cluster refuses
    /// the agent a kind the tenant uses.
    Failed,
    /// The tenant did not render or validate: nothing of it was applied.
    Invalid,
    /// A `state: purged` tenant: every object and the inventory deleted.
    Purged,
    /// An inventory whose tenant file left git: its objects are left running.
    Orphaned,
    /// The tenant belongs to another cluster (`spec.cluster`): left alone.
    Skipped,
    /// The tenant was applied here but its file now names another cluster: marked `Moved`,
    /// its objects left running until `fief retire` deletes them.
    Moved,
    /// The tenant is suspended (`fief suspend`): left alone.
    Suspended,
}

impl Outcome {
    /// The outcome as reports, logs and metrics write it: `applied`, `failed`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Failed => "failed",
            Outcome::Invalid => "invalid",
            Outcome::Purged => "purged",
            Outcome::Orphaned => "orphaned",
            Outcome::Skipped => "skipped",
            Outcome::Moved => "moved",
            Outcome::Suspended => "suspended",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why objects a sync would delete still run after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PruneHeld {
    /// The plan's prune was held back (failed render or apply, empty render, mass-prune
    /// guard).
    Hold(PruneHold),
    /// A purge deleted what it could; `remaining` objects stay (kept by
    /// `fief.dev/prune: disabled`, or their namespace).
    PurgeIncomplete {
        /// Objects left in the inventory.
        remaining: usize,
    },
}

impl PruneHeld {
    /// Whether a prune git asks for is held, so objects that left git still run and a person
    /// or the next sync must act: any hold but a failed render's. A purge that keeps
    /// `fief.dev/prune: disabled` objects does not block (that is what they asked for).
    pub fn blocks(&self) -> bool {
        matches!(self, PruneHeld::Hold(h) if *h != PruneHold::RenderFailed)
    }
}

impl From<PruneHold> for PruneHeld {
    fn from(hold: PruneHold) -> PruneHeld {
        PruneHeld::Hold(hold)
    }
}

impl fmt::Display for PruneHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PruneHeld::Hold(hold) => hold.fmt(f),
            PruneHeld::PurgeIncomplete { remaining } => write!(
                f,
                "purge incomplete: {remaining} objects remain (kept by fief.dev/prune: disabled, or their namespace); delete them or remove the annotation"
            ),
        }
    }
}

/// What happened to one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantReport {
    /// Tenant name.
    pub tenant: String,
    /// What the sync did with it.
    pub outcome: Outcome,
    /// Counts of this sync.
    pub counts: Counts,
    /// Objects left in place although they left git (prune disabled, no longer ours).
    pub kept: Vec<String>,
    /// Objects that existed, made by another tool, and that this sync took (`--adopt`).
    pub adopted: Vec<String>,
    /// Pre and post objects this sync deleted once they ended, as their
    /// `helm.sh/hook-delete-policy` asks: the object and how it ended.
    pub ended: Vec<String>,
    /// Why objects a prune would delete still run, if they do.
    pub prune_held: Option<PruneHeld>,
    /// Errors, each with the [`Failure`] that made it.
    pub errors: Vec<SyncError>,
    /// Why the tenant was left alone (outcome `suspended`): who suspended it, when, and why.
    pub suspended: Option<String>,
    /// The cluster its file now names (outcome `moved`).
    pub moved_to: Option<String>,
    /// Components not applied this sync because what they depend on is not applied and
    /// healthy yet: component → what it waits for.
    pub waiting: std::collections::BTreeMap<String, Vec<String>>,
    /// The placements not applied this sync because an ordered phase before them is not done
    /// yet, or failed ([`crate::plan::phase::PhaseHold`]).
    pub phase_hold: Option<crate::plan::phase::PhaseHold>,
}

impl TenantReport {
    /// A report with this outcome and nothing else yet.
    pub fn new(tenant: &str, outcome: Outcome) -> TenantReport {
        TenantReport {
            tenant: tenant.to_string(),
            outcome,
            counts: Counts::default(),
            kept: Vec::new(),
            adopted: Vec::new(),
            ended: Vec::new(),
            prune_held: None,
            errors: Vec::new(),
            suspended: None,
            moved_to: None,
            waiting: Default::default(),
            phase_hold: None,
        }
    }

    /// Record an error of `failure`.
    pub fn fail(&mut self, failure: Failure, message: impl Into<String>) {
        self.errors.push(SyncError::new(failure, message));
    }

    /// The failure that stands for the errors ([`super::failure::of_errors`]), if any.
    pub fn failure(&self) -> Option<Failure> {
        super::failure::of_errors(&self.errors)
    }

    /// The first error's message, if any.
    pub fn first_error(&self) -> Option<&str> {
        self.errors.first().map(SyncError::as_str)
    }

    /// Whether the tenant synced without errors.
    pub fn is_ok(&self) -> bool {
        let ok = matches!(
            self.outcome,
            Outcome::Applied
                | Outcome::Purged
                | Outcome::Orphaned
                | Outcome::Skipped
                | Outcome::Moved
                | Outcome::Suspended
        );
        ok && self.errors.is_empty()
    }

    /// Whether something of the tenant waits to be applied once what it waits for is
    /// healthy: components held for their dependencies, or a phase held for an earlier one
    /// (not one held by a failure).
    pub fn holds_back(&self) -> bool {
        let phase = matches!(
            self.phase_hold,
            Some(crate::plan::phase::PhaseHold::Waiting { .. })
        );
        phase || !self.waiting.is_empty()
    }

    /// Whether a prune git asks for was held ([`PruneHeld::blocks`]).
    pub fn prune_blocked(&self) -> bool {
        self.prune_held.as_ref().is_some_and(PruneHeld::blocks)
    }
}

/// A [`TenantReport`] as JSON and YAML write it.
#[derive(Serialize)]
#[serde(rename = "TenantReport", rename_all = "camelCase")]
struct Wire<'a> {
    tenant: &'a str,
    outcome: Outcome,
    counts: &'a Counts,
    kept: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    adopted: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    ended: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    prune_held: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    prune_blocked: bool,
    errors: &'a [SyncError],
    #[serde(skip_serializing_if = "Option::is_none")]
    suspended: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    moved_to: Option<&'a str>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    waiting: &'a std::collections::BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase_hold: Option<String>,
}

impl Serialize for TenantReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            tenant: &self.tenant,
            outcome: self.outcome,
            counts: &self.counts,
            kept: &self.kept,
            adopted: &self.adopted,
            ended: &self.ended,
            prune_held: self.prune_held.as_ref().map(ToString::to_string),
            prune_blocked: self.prune_blocked(),
            errors: &self.errors,
            suspended: self.suspended.as_deref(),
            moved_to: self.moved_to.as_deref(),
            waiting: &self.waiting,
            phase_hold: self.phase_hold.as_ref().map(ToString::to_string),
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_writes_its_outcome_as_a_word_and_prune_blocked_only_when_a_hold_blocks() {
        let mut a = TenantReport::new("acme", Outcome::Failed);
        a.prune_held = Some(PruneHold::ApplyFailed { failed: 2 }.into());
        a.fail(Failure::Apply, "boom");
        a.kept.push("ConfigMap/x".into());
        let mut b = TenantReport::new("beta", Outcome::Applied);
        b.prune_held = Some(PruneHeld::PurgeIncomplete { remaining: 3 });
        let mut c = TenantReport::new("gamma", Outcome::Suspended);
        c.suspended = Some("by x".into());
        let counts = r#""counts":{"objects":0,"created":0,"configured":0,"unchanged":0,"pruned":0,"failed":0}"#;
        let expected = format!(
            concat!(
                r#"[{{"tenant":"acme","outcome":"failed",{c},"kept":["ConfigMap/x"],"#,
                r#""pruneHeld":"2 apply(s) failed; nothing pruned (the objects they replace stay until an apply succeeds; retried next sync)","#,
                r#""pruneBlocked":true,"errors":["boom"]}},"#,
                r#"{{"tenant":"beta","outcome":"applied",{c},"kept":[],"#,
                r#""pruneHeld":"purge incomplete: 3 objects remain (kept by fief.dev/prune: disabled, or their namespace); delete them or remove the annotation","errors":[]}},"#,
                r#"{{"tenant":"gamma","outcome":"suspended",{c},"kept":[],"errors":[],"suspended":"by x"}}]"#
            ),
            c = counts
        );
        assert_eq!(serde_json::to_string(&[a, b, c]).unwrap(), expected);
        let held = |h: PruneHold| TenantReport {
            prune_held: Some(h.into()),
            ..TenantReport::new("t", Outcome::Applied)
        };
        assert!(held(PruneHold::EmptyRender).prune_blocked());
        assert!(!held(PruneHold::RenderFailed).prune_blocked());
    }

    #[test]
    fn only_failed_and_invalid_outcomes_or_errors_are_not_ok() {
        for o in [
            Outcome::Applied,
            Outcome::Purged,
            Outcome::Orphaned,
            Outcome::Skipped,
            Outcome::Moved,
            Outcome::Suspended,
        ] {
            assert!(TenantReport::new("t", o).is_ok(), "{o}");
            assert_eq!(serde_json::to_string(&o).unwrap(), format!("\"{o}\""));
        }
        for o in [Outcome::Failed, Outcome::Invalid] {
            assert!(!TenantReport::new("t", o).is_ok(), "{o}");
        }
        let mut r = TenantReport::new("t", Outcome::Applied);
        r.fail(Failure::Apply, "e");
        assert!(!r.is_ok());
    }
}
