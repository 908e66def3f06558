//! Status policy: what a tenant's inventory status says after a sync step.
//!
//! In: the inventory, the tenant's render and the sync's [`TenantReport`]. Out: conditions
//! `Ready` / `Reconciling` / `Stalled`, revision, counts and last error set on the inventory's
//! status. Pure.

use serde::Serialize;

use crate::core::inventory::{Counts, Inventory};
use crate::core::objects;
use crate::core::plan;
use crate::core::render::TenantRender;

/// What happened to one tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantReport {
    /// Tenant name.
    pub tenant: String,
    /// `applied`, `failed`, `invalid`, `purged`, `orphaned` or `skipped`.
    pub outcome: String,
    /// Counts of this sync.
    pub counts: Counts,
    /// Objects left in place although they left git (prune disabled, no longer ours).
    pub kept: Vec<String>,
    /// Why pruning was held back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prune_held: Option<String>,
    /// Whether a prune git asks for was held (failed apply, mass-prune guard, empty render):
    /// objects that left git still run, and a person or the next sync must act. Not set for
    /// a purge that keeps `fief.dev/prune: disabled` objects (that is what they asked for).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prune_blocked: bool,
    /// Errors.
    pub errors: Vec<String>,
}

impl TenantReport {
    /// A report with this outcome and nothing else yet.
    pub fn new(tenant: &str, outcome: &str) -> TenantReport {
        TenantReport {
            tenant: tenant.to_string(),
            outcome: outcome.to_string(),
            ..Default::default()
        }
    }

    /// Whether the tenant synced without errors.
    pub fn is_ok(&self) -> bool {
        matches!(
            self.outcome.as_str(),
            "applied" | "purged" | "orphaned" | "skipped"
        ) && self.errors.is_empty()
    }
}

/// A tenant that did not render or validate: `Ready=False`, `Stalled=True` with the first
/// error; the report lists every error.
pub fn record_invalid(
    inv: &mut Inventory,
    report: &mut TenantReport,
    render: &TenantRender,
    now: &str,
) {
    report.outcome = "invalid".to_string();
    report.errors = render.errors.iter().map(|d| d.to_string()).collect();
    let first = report.errors.first().cloned().unwrap_or_default();
    let message = format!("{} error(s); first: {first}", render.errors.len());
    inv.status
        .set_condition("Ready", false, "RenderFailed", &message, now);
    inv.status
        .set_condition("Stalled", true, "RenderFailed", &message, now);
    inv.status.last_error = Some(message);
}

/// `Reconciling=True` while a sync that changes something is under way.
pub fn mark_reconciling(inv: &mut Inventory, now: &str) {
    inv.status.set_condition(
        "Reconciling",
        true,
        "Progressing",
        "applying and pruning",
        now,
    );
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
    if changed || report.counts.failed > 0 || status.counts.objects != report.counts.objects {
        status.counts = report.counts.clone();
    }
    if changed {
        status.set_condition("Reconciling", false, "Done", "sync finished", now);
        if commit.is_some() {
            status.commit = commit.map(str::to_string);
        }
    }
    if let Some(first) = report.errors.first() {
        let mut message = format!("{} error(s); first: {first}", report.errors.len());
        if let Some(hold) = &report.prune_held {
            message.push_str(&format!("; prune held: {hold}"));
        }
        status.set_condition("Ready", false, "ApplyFailed", &message, now);
        status.set_condition("Stalled", true, "ApplyFailed", &message, now);
        status.last_error = Some(message);
    } else if let Some(hold) = &report.prune_held {
        status.set_condition("Ready", false, "PruneHeld", hold, now);
        status.set_condition("Stalled", true, "PruneHeld", hold, now);
        status.last_error = Some(hold.clone());
    } else {
        let rev = revision(render);
        let message = format!("applied revision {rev}: {} objects", report.counts.objects);
        status.set_condition("Ready", true, "Applied", &message, now);
        status.set_condition("Stalled", false, "Applied", "", now);
        status.revision = rev;
        status.last_error = None;
    }
}

/// The revision of a render: a hash of its objects' content hashes (not the commit, so a
/// commit that does not change a tenant does not change its revision).
pub fn revision(render: &TenantRender) -> String {
    let hashes: Vec<String> = render
        .objects
        .iter()
        .map(|o| plan::content_hash(&o.object))
        .collect();
    objects::sha256_hex(hashes.join(",").as_bytes())[..16].to_string()
}
