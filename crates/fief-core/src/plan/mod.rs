//! Plan: a tenant's desired objects against its previous inventory → apply, skip, prune.
//!
//! In: a [`TenantRender`], the previous [`Inventory`], the hashes of the live objects' fields
//! fief sets, and the prune guard. Out: a [`Plan`] — objects to apply in stage order, objects
//! unchanged, entries to prune in reverse stage order, or why pruning is held back. Pure.
//! Ordered phases ([`phase`]), hook delete policies ([`hooks`]) and `dependsOn`
//! ([`depends`]) then narrow what one sync applies.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::digest::Digest;
use crate::inventory::{Entry, Inventory};
use crate::model::TenantState;
use crate::model::{BASELINE, PruneGuard};
pub use crate::objects::content_hash;
use crate::objects::{self, ObjectId};
use crate::render::{RenderedObject, TenantRender};

/// Why nothing is pruned this time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PruneHold {
    /// The tenant did not render or validate.
    RenderFailed,
    /// The render is empty and the tenant is not `purged`.
    EmptyRender,
    /// An apply of this sync failed: the new objects may not be there, so the old ones stay
    /// (as Flux does); the next sync retries.
    ApplyFailed {
        /// Applies that failed.
        failed: usize,
    },
    /// The mass-prune guard tripped.
    MassPrune {
        /// Objects that would be pruned.
        count: usize,
        /// Objects in the inventory.
        total: usize,
    },
}

impl std::fmt::Display for PruneHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PruneHold::RenderFailed => write!(f, "the tenant failed to render; nothing pruned"),
            PruneHold::EmptyRender => write!(
                f,
                "the tenant rendered no objects; nothing pruned (set state: purged to delete a tenant)"
            ),
            PruneHold::ApplyFailed { failed } => write!(
                f,
                "{failed} apply(s) failed; nothing pruned (the objects they replace stay until an apply succeeds; retried next sync)"
            ),
            PruneHold::MassPrune { count, total } => write!(
                f,
                "refusing to prune {count} of {total} objects (mass-prune guard, fief.yaml pruneGuard); \
                 check the change, then rerun with --allow-mass-prune"
            ),
        }
    }
}

/// One object to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Apply<'a> {
    /// The rendered object.
    pub object: &'a RenderedObject,
    /// Hash of its rendered content.
    pub hash: String,
    /// Whether the previous inventory has it (configured) or not (created).
    pub existed: bool,
}

/// What one sync of one tenant does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan<'a> {
    /// Objects to apply, by stage (see [`stage_of`]).
    pub stages: [Vec<Apply<'a>>; STAGES],
    /// Objects unchanged since the last apply (no request at all).
    pub unchanged: Vec<Entry>,
    /// Entries to prune, workloads first, namespaces last.
    pub prune: Vec<Entry>,
    /// Why pruning is held back, if it is.
    pub hold: Option<PruneHold>,
    /// What the prune would delete were it not held (empty when not held).
    pub held: Vec<Entry>,
    /// The mass-prune guard would have held this prune, and `allow_mass_prune` released it.
    pub released: bool,
    /// Components set aside because what they depend on is not applied and healthy yet:
    /// component → what it waits for ([`depends::defer`]).
    pub waiting: BTreeMap<String, Vec<String>>,
    /// The placements set aside because a pre or post phase is not done, or failed
    /// ([`phase::gate`]).
    pub phase_hold: Option<phase::PhaseHold>,
    /// Pre and post objects with a delete policy that ended: to record as done, and to
    /// delete by their policy ([`phase::gate`], [`hooks`]).
    pub ended: Vec<hooks::Ended>,
}

impl Plan<'_> {
    /// Number of objects to apply.
    pub fn apply_count(&self) -> usize {
        self.stages.iter().map(Vec::len).sum()
    }
}

/// Number of apply stages.
pub const STAGES: usize = 4;

/// Stage of the baseline's RBAC and ServiceAccounts.
pub const STAGE_BASELINE_RBAC: usize = 1;

/// Apply stage of an object: 0 Namespaces and CRDs; 1 the baseline's RBAC and
/// ServiceAccounts (they let the tenant identity create component objects); 2 components'
/// ServiceAccounts and RBAC; 3 the rest. Component objects are never in a stage with the
/// RoleBinding that allows them. Prune runs in reverse order.
pub fn stage_of(id: &ObjectId, component: &str) -> usize {
    match (id.group.as_str(), id.kind.as_str()) {
        ("", "Namespace") | ("apiextensions.k8s.io", "CustomResourceDefinition") => 0,
        ("rbac.authorization.k8s.io", _) | ("", "ServiceAccount") if component == BASELINE => {
            STAGE_BASELINE_RBAC
        }
        ("rbac.authorization.k8s.io", _) | ("", "ServiceAccount") => 2,
        _ => 3,
    }
}

/// The live object's values at the paths the desired object sets. Comparing this (as the
/// server returned it after apply) with the same projection later detects hand edits of
/// fields fief owns, and ignores status and fields others own.
pub fn projection(desired: &Value, live: &Value) -> Value {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => Value::Object(
            d.iter()
                .map(|(k, dv)| {
                    let lv = l.get(k).unwrap_or(&Value::Null);
                    (k.clone(), projection(dv, lv))
                })
                .collect(),
        ),
        (Value::Array(d), Value::Array(l)) if d.len() == l.len() => {
            Value::Array(d.iter().zip(l).map(|(dv, lv)| projection(dv, lv)).collect())
        }
        (_, l) => l.clone(),
    }
}

/// Hash of [`projection`], leaving out `apiVersion` and `kind` (list responses omit them
/// from their items; the identity already pins them).
pub fn live_hash(desired: &Value, live: &Value) -> String {
    live_digest(desired, live).to_hex()
}

/// [`live_hash`] as bytes (what the agent keeps per object).
pub fn live_digest(desired: &Value, live: &Value) -> Digest {
    let mut projected = projection(desired, live);
    if let Some(map) = projected.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    Digest::of(&serde_json::to_vec(&projected).unwrap_or_default())
}

/// Fingerprint of field manager `manager`'s `Apply` entries in an object's
/// `metadata.managedFields` (given here; their apiVersion, time and field set), as the server
/// returns them; empty when it has none.
///
/// Server-side apply moves a field to whoever changes it (an update takes it over, a forced
/// apply too) and drops fields that are removed, so while this fingerprint (and the object's
/// uid) is the one recorded when fief last applied the object, nobody else has changed a
/// field fief sets: writes that bump the resourceVersion without touching fief's fields, such
/// as a controller's status updates, leave it unchanged. Not promised against a writer that
/// uses fief's own field manager name.
pub fn managed_fingerprint(managed_fields: &Value, manager: &str) -> String {
    let mut text = Vec::new();
    for m in managed_fields.as_array().into_iter().flatten() {
        let ours = m["manager"] == manager
            && m["operation"] == "Apply"
            && m["subresource"].as_str().unwrap_or_default().is_empty();
        if !ours {
            continue;
        }
        for key in ["apiVersion", "time"] {
            text.extend_from_slice(m[key].as_str().unwrap_or_default().as_bytes());
            text.push(0);
        }
        // serde_json's maps are sorted, so the field set serializes canonically.
        text.extend_from_slice(&serde_json::to_vec(&m["fieldsV1"]).unwrap_or_default());
        text.push(0);
    }
    if text.is_empty() {
        return String::new();
    }
    let mut hex = objects::sha256_hex(&text);
    hex.truncate(32);
    hex
}

/// Plan one tenant's sync.
///
/// `live` maps each object that exists in the cluster to the hash of its projection on the
/// desired fields; an object is skipped only when its rendered hash and its live hash both
/// match the inventory; a [done](Entry::done) object only when its rendered hash does (it may
/// be gone: a hook deleted by its delete policy is not run again). Only entries the render's scope covers may be pruned (`--env`).
///
/// The mass-prune guard counts only entries applied by a completed sync (not
/// [`Entry::pending`]) whose object may still exist (not [`Entry::done`]): a held prune is measured again against the same objects on every
/// later sync, so it stays held until `allow_mass_prune` or until git stops asking for it,
/// and objects added while it was held are pruned without counting (a revert).
pub fn plan<'a>(
    render: &'a TenantRender,
    previous: Option<&Inventory>,
    live: &HashMap<ObjectId, String>,
    guard: &PruneGuard,
    allow_mass_prune: bool,
) -> Plan<'a> {
    let mut plan = Plan::default();
    if !render.is_ok() {
        plan.hold = Some(PruneHold::RenderFailed);
        return plan;
    }
    let empty = BTreeMap::new();
    let prev = previous.map(|p| &p.entries).unwrap_or(&empty);
    let mut desired_ids = std::collections::HashSet::new();
    for object in &render.objects {
        desired_ids.insert(&object.id);
        let hash = object.content_hash().to_string();
        match prev.get(&object.id) {
            Some(entry)
                if entry.hash == hash
                    && (entry.done.is_some() || live.get(&object.id) == Some(&entry.live)) =>
            {
                plan.unchanged.push(entry.clone());
            }
            entry => plan.stages[stage_of(&object.id, &object.component)].push(Apply {
                object,
                hash,
                existed: entry.is_some(),
            }),
        }
    }
    // With `--env`, entries of the other environments are neither pruned nor counted.
    let in_scope = |e: &&Entry| render.scope.covers(&e.id, &render.namespaces);
    let mut prune: Vec<Entry> = prev.values().filter(in_scope).cloned().collect();
    prune.retain(|e| !desired_ids.contains(&e.id));
    prune.sort_by_key(|e| std::cmp::Reverse(stage_of(&e.id, &e.component)));
    if prune.is_empty() {
        return plan;
    }
    let purged = render.state == Some(TenantState::Purged);
    // The guard measures against what was applied before any sync that has not completed:
    // entries still `pending` were added by such a sync (one whose prune is held, or that
    // stopped), so they neither count as deletions nor towards the total. A done entry is an
    // object its delete policy already removed: pruning it deletes nothing, so it counts
    // neither.
    let settled = |e: &&Entry| !e.pending && e.done.is_none();
    let count = prune.iter().filter(settled).count();
    let total = prev.values().filter(in_scope).filter(settled).count();
    let trips = !purged && guard.trips(count, total);
    if render.objects.is_empty() && !purged {
        plan.hold = Some(PruneHold::EmptyRender);
        plan.held = prune;
    } else if trips && !allow_mass_prune {
        plan.hold = Some(PruneHold::MassPrune { count, total });
        plan.held = prune;
    } else {
        plan.released = trips;
        plan.prune = prune;
    }
    plan
}

pub mod depends;
pub mod hooks;
pub mod phase;
mod placement;

#[cfg(test)]
mod depends_tests;
#[cfg(test)]
mod hooks_tests;
#[cfg(test)]
mod phase_tests;
#[cfg(test)]
mod tests;
