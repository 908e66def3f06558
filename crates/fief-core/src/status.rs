//! Status policy: what a tenant's inventory status says after a sync step.
//!
//! In: the inventory, the tenant's render and the sync's [`TenantReport`]. Out: conditions
//! `Ready` / `Reconciling` / `Stalled`, revision, counts and last error set on the inventory's
//! status. Pure. Also the day-2 flags people set on an inventory (suspension, reconcile
//! requests): their annotation names and how they are read ([`Flags`]). The agent's
//! `/status` document, shared by the agent and `fief status`, is in [`agent`].

use serde::Serialize;

use crate::condition::{ConditionType, Reason};
use crate::diagnostic::Problem;
use crate::inventory::{Inventory, Status};
use crate::objects;
use crate::plan::phase::PhaseHold;
use crate::render::TenantRender;

pub mod agent;
pub mod failure;
pub mod hold;
pub mod moved;
mod report;

pub use failure::{Failure, SyncError};
pub use report::{Outcome, PruneHeld, TenantReport};

/// A tenant that did not render or validate (`RenderFailed`, outcome `invalid`), or that the
/// agent cannot watch a kind of (`ClusterAccessFailed`, outcome `failed`): `Ready=False`,
/// `Stalled=True` with the first error; the report lists every error.
pub fn record_invalid(
    inv: &mut Inventory,
    report: &mut TenantReport,
    render: &TenantRender,
    now: &str,
) {
    report.errors = render_errors(render);
    // The cluster refusing the agent a kind is a failure to sync, not an invalid repo.
    let failure = report.failure().unwrap_or(Failure::Render);
    report.outcome = if failure == Failure::Render {
        Outcome::Invalid
    } else {
        Outcome::Failed
    };
    let first = report.first_error().unwrap_or_default();
    let message = format!("{} error(s); first: {first}", render.errors.len());
    stall(&mut inv.status, failure.condition_reason(), &message, now);
    inv.status.last_error = Some(message);
    inv.status.inputs.clear();
    // Nothing was planned: no component waits for a dependency, no phase for another.
    inv.status.waiting.clear();
    inv.status.phase_waiting = None;
}

/// A render's errors as a sync reports them: a kind the agent cannot watch is
/// [`Failure::ClusterAccess`], any other problem [`Failure::Render`].
pub fn render_errors(render: &TenantRender) -> Vec<SyncError> {
    render
        .errors
        .iter()
        .map(|d| {
            let failure = match *d.problem {
                Problem::ClusterAccess { .. } => Failure::ClusterAccess,
                _ => Failure::Render,
            };
            SyncError::new(failure, d.to_string())
        })
        .collect()
}

/// `Ready=False` and `Stalled=True`, both with `reason` and `message`: the tenant cannot
/// progress without a change (a failed render or apply, a held prune).
pub fn stall(status: &mut Status, reason: Reason, message: &str, now: &str) {
    status.set_condition(ConditionType::Ready, false, reason, message, now);
    status.set_condition(ConditionType::Stalled, true, reason, message, now);
}

/// `Reconciling=True` (reason `Progressing`) while a sync that changes something is under
/// way.
pub fn mark_reconciling(inv: &mut Inventory, now: &str) {
    inv.status.set_condition(
        ConditionType::Reconciling,
        true,
        Reason::Progressing,
        "applying and pruning",
        now,
    );
}

/// Whether the inventory records a sync that began and never finished (the process stopped
/// between [`mark_reconciling`] and [`finish`]): only such a sync is applied again in full.
/// A finished sync waiting for its objects' health is `Reconciling=True` too, with the
/// reason [`Reason::WaitingForHealth`]: it is finished, and its objects stand.
pub fn interrupted(inv: &Inventory) -> bool {
    inv.status
        .condition(ConditionType::Reconciling)
        .is_some_and(|c| c.is_true() && c.has_reason(Reason::Progressing))
}

/// The final status of a sync: applied, failed, or prune held.
pub fn finish(
    inv: &mut Inventory,
    report: &mut TenantReport,
    render: &TenantRender,
    changed: bool,
    now: &str,
    commit: Option<&str>,
) {
    report.counts.objects = inv.entries.len();
    let status = &mut inv.status;
    status.spare = render.spare;
    status.waiting.clone_from(&report.waiting);
    status.phase_waiting = match &report.phase_hold {
        Some(hold @ PhaseHold::Waiting { .. }) => Some(hold.to_string()),
        _ => None,
    };
    if changed || report.counts.failed > 0 || status.counts.objects != report.counts.objects {
        status.counts = report.counts.clone();
    }
    if changed {
        status.set_condition(
            ConditionType::Reconciling,
            false,
            Reason::Done,
            "sync finished",
            now,
        );
        if commit.is_some() {
            status.commit = commit.map(str::to_string);
        }
    }
    if let (Some(first), Some(failure)) = (report.first_error(), report.failure()) {
        let mut message = format!("{} error(s); first: {first}", report.errors.len());
        if let Some(hold) = &report.prune_held {
            message.push_str(&format!("; prune held: {hold}"));
        }
        stall(status, failure.condition_reason(), &message, now);
        status.last_error = Some(message);
        status.inputs.clear();
    } else if let Some(hold) = &report.prune_held {
        let hold = hold.to_string();
        stall(status, Reason::PruneHeld, &hold, now);
        status.last_error = Some(hold);
        status.inputs.clear();
    } else if report.holds_back() {
        crate::health::set_waiting(status, now);
        status.revision = revision(render);
        status.last_error = None;
    } else if !changed && crate::health::holds_verdict(status) {
        // Nothing of the tenant changed: the health verdict on record still judges the
        // objects as this sync left them, so it stands (the health gate judges them again).
        status.revision = revision(render);
    } else {
        let rev = revision(render);
        let message = format!("applied revision {rev}: {} objects", report.counts.objects);
        status.set_condition(ConditionType::Ready, true, Reason::Applied, &message, now);
        status.set_condition(ConditionType::Stalled, false, Reason::Applied, "", now);
        status.revision = rev;
        status.last_error = None;
    }
}

/// Record the render's inputs on a successful sync's status, but only when the inventory is
/// written anyway (`changed`: it differs from the recorded one): a sync whose objects and
/// status are all as recorded sends no write just for this. The recorded hash then stays that
/// of an earlier render with the same result, which is still true of the objects.
pub fn record_inputs(inv: &mut Inventory, render: &TenantRender, changed: bool) {
    if !render.scope.is_all() {
        // Some environments were synced, the others not: no input hash describes the
        // tenant's objects now, so the next sync renders it in full.
        inv.status.inputs.clear();
    } else if changed && inv.status.last_error.is_none() {
        inv.status.inputs.clone_from(&render.inputs);
    }
}

/// Whether a tenant's last sync still stands with no render at all: its inventory
/// [stands for](Inventory::stands_for) a render at `inputs` (settled, recorded those inputs,
/// every entry with the version fief applied), and every object it recorded is live exactly
/// as fief left it (`unchanged` says so of an entry: same uid and resourceVersion, or fief's
/// own managedFields entry as recorded). A render of the same inputs then gives the recorded
/// objects, and the plan of each is "unchanged": a sync would send nothing and write nothing.
pub fn stands_unrendered(
    inv: &Inventory,
    inputs: &str,
    unchanged: impl Fn(&crate::inventory::Entry) -> bool,
) -> bool {
    inv.stands_for(inputs) && inv.entries.values().all(unchanged)
}

/// The report of a tenant whose last sync stands ([`stands_unrendered`]): applied, every
/// recorded object unchanged.
pub fn unchanged_report(inv: &Inventory) -> TenantReport {
    let mut report = TenantReport::new(&inv.tenant, Outcome::Applied);
    report.counts.objects = inv.entries.len();
    report.counts.unchanged = inv.entries.len();
    report
}

/// The revision of a render: a hash of its objects' content hashes (not the commit, so a
/// commit that does not change a tenant does not change its revision).
pub fn revision(render: &TenantRender) -> String {
    let hashes: Vec<&str> = render.objects.iter().map(|o| o.content_hash()).collect();
    objects::sha256_hex(hashes.join(",").as_bytes())[..16].to_string()
}

/// Annotation on a tenant's inventory ConfigMap: the tenant is suspended (`fief suspend`);
/// the value says who, when and why. Neither `fief apply` nor the agent applies, repairs or
/// prunes a suspended tenant.
pub const ANNOTATION_SUSPENDED: &str = "fief.dev/suspended";
/// Annotation set by `fief reconcile`: when a sync was asked for (RFC 3339). On a tenant's
/// inventory ConfigMap it asks for that tenant; on [`RECONCILE_ALL`] for every tenant.
pub const ANNOTATION_REQUESTED_AT: &str = "fief.dev/requestedAt";
/// Annotation set by the agent once it handled a request: the `requestedAt` it answered.
pub const ANNOTATION_HANDLED_AT: &str = "fief.dev/lastHandledReconcileAt";
/// Annotation set by the agent with [`ANNOTATION_HANDLED_AT`]: `Ready: ...` or `Failed: ...`.
pub const ANNOTATION_RECONCILE_RESULT: &str = "fief.dev/reconcileResult";
/// Annotation set by `fief reconcile --tenant T --allow-mass-prune` beside
/// [`ANNOTATION_REQUESTED_AT`] on the tenant's inventory ConfigMap: a person releases the
/// tenant's held mass prune for the sync that answers that request. The value says who and
/// when ([`suspension_note`] without a reason); the agent records it in the tenant's status
/// and removes the annotation once the request is answered.
pub const ANNOTATION_ALLOW_MASS_PRUNE: &str = "fief.dev/allowMassPrune";
/// Name of the ConfigMap (agent namespace) whose `requestedAt` asks for every tenant.
pub const RECONCILE_ALL: &str = "fief-reconcile";

/// The day-2 flags of one inventory ConfigMap, read from its annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Flags {
    /// Set when suspended: who, when, why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended: Option<String>,
    /// The last reconcile request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_at: Option<String>,
    /// The last request the agent handled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handled_at: Option<String>,
    /// The result of the last handled request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// A person's release of the held mass prune for the pending request: who, when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_mass_prune: Option<String>,
}

impl Flags {
    /// Read the flags from an object's annotations.
    pub fn from_annotations(annotations: &std::collections::BTreeMap<String, String>) -> Flags {
        let get = |k: &str| annotations.get(k).cloned();
        Flags {
            suspended: get(ANNOTATION_SUSPENDED),
            requested_at: get(ANNOTATION_REQUESTED_AT),
            handled_at: get(ANNOTATION_HANDLED_AT),
            result: get(ANNOTATION_RECONCILE_RESULT),
            allow_mass_prune: get(ANNOTATION_ALLOW_MASS_PRUNE),
        }
    }

    /// A reconcile request the agent has not answered yet.
    pub fn pending_request(&self) -> Option<&str> {
        let at = self.requested_at.as_deref()?;
        (self.handled_at.as_deref() != Some(at)).then_some(at)
    }
}

/// The value of [`ANNOTATION_SUSPENDED`]: `by alice at 2026-01-01T00:00:00Z: reason`.
pub fn suspension_note(who: &str, at: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) if !r.trim().is_empty() => format!("by {who} at {at}: {}", r.trim()),
        _ => format!("by {who} at {at}"),
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn a_request_is_pending_until_the_agent_answers_that_same_time() {
        let mut a = std::collections::BTreeMap::new();
        a.insert(ANNOTATION_REQUESTED_AT.to_string(), "t2".to_string());
        a.insert(ANNOTATION_HANDLED_AT.to_string(), "t1".to_string());
        assert_eq!(Flags::from_annotations(&a).pending_request(), Some("t2"));
        a.insert(ANNOTATION_HANDLED_AT.to_string(), "t2".to_string());
        assert_eq!(Flags::from_annotations(&a).pending_request(), None);
        assert_eq!(
            suspension_note("alice", "t", Some(" incident 42 ")),
            "by alice at t: incident 42"
        );
    }
}

#[cfg(test)]
mod inputs_tests {
    use super::*;

    fn render() -> TenantRender {
        TenantRender {
            tenant: "acme".into(),
            inputs: "h2".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_successful_sync_records_its_inputs_only_when_the_inventory_is_written_anyway() {
        let mut inv = Inventory::new("acme");
        inv.status.inputs = "h1".into();
        let mut report = TenantReport::new("acme", Outcome::Applied);
        finish(&mut inv, &mut report, &render(), false, "t", None);
        record_inputs(&mut inv, &render(), false);
        assert_eq!(inv.status.inputs, "h1", "no write just to record inputs");
        record_inputs(&mut inv, &render(), true);
        assert_eq!(inv.status.inputs, "h2");
    }

    #[test]
    fn a_failed_or_invalid_sync_clears_the_recorded_inputs() {
        let mut inv = Inventory::new("acme");
        inv.status.inputs = "h1".into();
        let mut report = TenantReport::new("acme", Outcome::Failed);
        report.fail(Failure::Apply, "apply failed");
        finish(&mut inv, &mut report, &render(), true, "t", None);
        record_inputs(&mut inv, &render(), true);
        assert!(inv.status.inputs.is_empty());

        let mut inv = Inventory::new("acme");
        inv.status.inputs = "h1".into();
        let mut report = TenantReport::new("acme", Outcome::Invalid);
        record_invalid(&mut inv, &mut report, &render(), "t");
        assert!(inv.status.inputs.is_empty());
    }
}

#[cfg(test)]
mod reuse_tests {
    use super::*;
    use crate::inventory::Entry;
    use crate::objects::ObjectId;

    fn settled() -> Inventory {
        let mut inv = Inventory::new("acme");
        for name in ["a", "b"] {
            let id = ObjectId {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "acme-prod".into(),
                name: name.into(),
            };
            inv.entries.insert(
                id.clone(),
                Entry {
                    id,
                    component: "web".into(),
                    api_version: "v1".into(),
                    hash: "h".into(),
                    live: "l".into(),
                    resource_version: "1".into(),
                    uid: "u".into(),
                    managed: String::new(),
                    created: None,
                    pending: false,
                    done: None,
                },
            );
        }
        inv.status.inputs = "in1".into();
        let s = &mut inv.status;
        s.set_condition(ConditionType::Ready, true, Reason::Applied, "", "t");
        s.set_condition(ConditionType::Stalled, false, Reason::Applied, "", "t");
        s.set_condition(ConditionType::Reconciling, false, Reason::Done, "", "t");
        inv
    }

    #[test]
    fn a_settled_tenant_with_the_same_inputs_and_untouched_objects_stands_without_a_render() {
        let inv = settled();
        assert!(stands_unrendered(&inv, "in1", |_| true));
        let report = unchanged_report(&inv);
        assert_eq!(
            (report.outcome, report.counts.unchanged),
            (Outcome::Applied, 2)
        );
        assert!(report.is_ok());
    }

    #[test]
    fn anything_moved_or_unsettled_needs_a_render() {
        let inv = settled();
        assert!(!stands_unrendered(&inv, "in2", |_| true), "inputs changed");
        assert!(!stands_unrendered(&inv, "", |_| true));
        assert!(!stands_unrendered(&inv, "opaque:in1", |_| true));
        assert!(
            !stands_unrendered(&inv, "in1", |e| e.id.name != "b"),
            "one object moved"
        );
        let mut reconciling = settled();
        reconciling.status.set_condition(
            ConditionType::Reconciling,
            true,
            Reason::Progressing,
            "",
            "t",
        );
        assert!(!stands_unrendered(&reconciling, "in1", |_| true));
        let mut failed = settled();
        failed.status.last_error = Some("boom".into());
        assert!(!stands_unrendered(&failed, "in1", |_| true));
        let mut orphaned = settled();
        orphaned.status.set_condition(
            ConditionType::Orphaned,
            true,
            Reason::TenantFileRemoved,
            "",
            "t",
        );
        assert!(!stands_unrendered(&orphaned, "in1", |_| true));
        let mut unapplied = settled();
        if let Some(e) = unapplied.entries.values_mut().next() {
            e.live.clear();
        }
        assert!(!stands_unrendered(&unapplied, "in1", |_| true));
        let mut empty = settled();
        empty.entries.clear();
        assert!(!stands_unrendered(&empty, "in1", |_| true));
    }
}
