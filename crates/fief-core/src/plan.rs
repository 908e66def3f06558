//! Plan: a tenant's desired objects against its previous inventory → apply, skip, prune.
//!
//! In: a [`TenantRender`], the previous [`Inventory`], the hashes of the live objects' fields
//! fief sets, and the prune guard. Out: a [`Plan`] — objects to apply in stage order, objects
//! unchanged, entries to prune in reverse stage order, or why pruning is held back. Pure.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::digest::Digest;
use crate::inventory::{Entry, Inventory};
use crate::model::TenantState;
use crate::model::{BASELINE, PruneGuard};
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

/// Hash of an object's rendered content (keys are sorted, so it is canonical).
pub fn content_hash(object: &Value) -> String {
    objects::sha256_hex(&serde_json::to_vec(object).unwrap_or_default())
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
/// match the inventory. Only entries the render's scope covers may be pruned (`--env`).
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
            Some(entry) if entry.hash == hash && live.get(&object.id) == Some(&entry.live) => {
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
    let purged = render.state == Some(TenantState::Purged);
    let scoped_total = || prev.values().filter(in_scope).count();
    if prune.is_empty() {
        return plan;
    }
    if render.objects.is_empty() && !purged {
        plan.hold = Some(PruneHold::EmptyRender);
    } else if !purged && !allow_mass_prune && guard.trips(prune.len(), scoped_total()) {
        plan.hold = Some(PruneHold::MassPrune {
            count: prune.len(),
            total: scoped_total(),
        });
    } else {
        plan.prune = prune;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Source;
    use serde_json::json;

    fn object(kind: &str, name: &str, data: &str) -> RenderedObject {
        let group = if kind == "Role" {
            "rbac.authorization.k8s.io"
        } else {
            ""
        };
        RenderedObject {
            hash: Default::default(),
            component: "app".into(),
            env: "prod".into(),
            id: ObjectId {
                group: group.into(),
                kind: kind.into(),
                namespace: if kind == "Namespace" {
                    String::new()
                } else {
                    "t-prod".into()
                },
                name: name.into(),
            },
            source: Source {
                file: "x".into(),
                line: 1,
            },
            object: json!({"kind": kind, "metadata": {"name": name}, "data": {"v": data}}),
        }
    }

    fn render(objects: Vec<RenderedObject>) -> TenantRender {
        TenantRender {
            tenant: "t".into(),
            state: Some(TenantState::Active),
            objects,
            ..Default::default()
        }
    }

    /// The inventory after applying `r`, with the live state equal to what was applied.
    fn applied(r: &TenantRender) -> (Inventory, HashMap<ObjectId, String>) {
        let mut inv = Inventory::new("t");
        let mut live = HashMap::new();
        for o in &r.objects {
            let l = live_hash(&o.object, &o.object);
            live.insert(o.id.clone(), l.clone());
            inv.entries.insert(
                o.id.clone(),
                Entry {
                    id: o.id.clone(),
                    component: o.component.clone(),
                    api_version: "v1".into(),
                    hash: o.content_hash().to_string(),
                    live: l,
                    resource_version: String::new(),
                    uid: String::new(),
                    managed: String::new(),
                    created: None,
                },
            );
        }
        (inv, live)
    }

    #[test]
    fn first_sync_applies_everything_in_stage_order() {
        let r = render(vec![
            object("ConfigMap", "c", "1"),
            object("Role", "r", "1"),
            object("Namespace", "t-prod", "1"),
        ]);
        let p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
        assert_eq!(p.stages[0][0].object.id.kind, "Namespace");
        assert_eq!(p.stages[2][0].object.id.kind, "Role");
        assert_eq!(p.stages[3][0].object.id.kind, "ConfigMap");
        assert!(p.stages.iter().flatten().all(|a| !a.existed));
    }

    #[test]
    fn component_service_accounts_come_after_the_baseline_rbac_that_allows_them() {
        let mut binding = object("Role", "fief-deployer", "1");
        binding.component = BASELINE.into();
        let r = render(vec![object("ServiceAccount", "web", "1"), binding]);
        let p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
        assert_eq!(
            p.stages[STAGE_BASELINE_RBAC][0].object.id.name,
            "fief-deployer"
        );
        assert_eq!(p.stages[2][0].object.id.name, "web");
    }

    #[test]
    fn unchanged_tenant_plans_no_request() {
        let r = render(vec![
            object("ConfigMap", "c", "1"),
            object("ConfigMap", "d", "1"),
        ]);
        let (inv, live) = applied(&r);
        let p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
        assert_eq!(p.apply_count(), 0);
        assert_eq!(p.unchanged.len(), 2);
        assert!(p.prune.is_empty());
    }

    #[test]
    fn changed_value_applies_only_that_object() {
        let r = render(vec![
            object("ConfigMap", "c", "1"),
            object("ConfigMap", "d", "1"),
        ]);
        let (inv, live) = applied(&r);
        let r2 = render(vec![
            object("ConfigMap", "c", "2"),
            object("ConfigMap", "d", "1"),
        ]);
        let p = plan(&r2, Some(&inv), &live, &PruneGuard::default(), false);
        assert_eq!(p.apply_count(), 1);
        assert_eq!(p.stages[3][0].object.id.name, "c");
        assert!(p.stages[3][0].existed);
    }

    #[test]
    fn hand_edit_of_an_owned_field_is_reapplied() {
        let r = render(vec![object("ConfigMap", "c", "1")]);
        let (inv, mut live) = applied(&r);
        let edited =
            json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"v": "hacked"}});
        live.insert(
            r.objects[0].id.clone(),
            live_hash(&r.objects[0].object, &edited),
        );
        let p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
        assert_eq!(p.apply_count(), 1);
    }

    #[test]
    fn fields_fief_does_not_set_do_not_count_as_drift() {
        let desired = json!({"spec": {"replicas": 2}});
        let live = json!({"spec": {"replicas": 2, "strategy": {}}, "status": {"ready": 1}});
        assert_eq!(live_hash(&desired, &live), live_hash(&desired, &desired));
    }

    #[test]
    fn object_removed_from_git_is_pruned() {
        let r = render(vec![
            object("ConfigMap", "c", "1"),
            object("ConfigMap", "d", "1"),
        ]);
        let (inv, live) = applied(&r);
        let r2 = render(vec![object("ConfigMap", "c", "1")]);
        let p = plan(&r2, Some(&inv), &live, &PruneGuard::default(), false);
        assert_eq!(p.prune.len(), 1);
        assert_eq!(p.prune[0].id.name, "d");
    }

    #[test]
    fn failed_render_prunes_nothing() {
        let r = render(vec![object("ConfigMap", "c", "1")]);
        let (inv, live) = applied(&r);
        let mut r2 = render(vec![]);
        r2.errors.push(crate::diagnostic::Diagnostic::new(
            "x",
            None,
            crate::diagnostic::Problem::Template {
                detail: "boom".into(),
            },
        ));
        let p = plan(&r2, Some(&inv), &live, &PruneGuard::default(), false);
        assert!(p.prune.is_empty());
        assert_eq!(p.hold, Some(PruneHold::RenderFailed));
        assert_eq!(p.apply_count(), 0);
    }

    #[test]
    fn empty_render_prunes_nothing_unless_purged() {
        let r = render(vec![object("ConfigMap", "c", "1")]);
        let (inv, live) = applied(&r);
        let empty = render(vec![]);
        let p = plan(&empty, Some(&inv), &live, &PruneGuard::default(), false);
        assert_eq!(p.hold, Some(PruneHold::EmptyRender));
        let mut purged = render(vec![]);
        purged.state = Some(TenantState::Purged);
        let p = plan(&purged, Some(&inv), &live, &PruneGuard::default(), false);
        assert_eq!(p.prune.len(), 1);
    }

    #[test]
    fn mass_prune_guard_holds_and_the_override_proceeds() {
        let many: Vec<_> = (0..10)
            .map(|i| object("ConfigMap", &format!("c{i}"), "1"))
            .collect();
        let r = render(many);
        let (inv, live) = applied(&r);
        let r2 = render(vec![object("ConfigMap", "c0", "1")]);
        let guard = PruneGuard::default();
        let p = plan(&r2, Some(&inv), &live, &guard, false);
        assert_eq!(
            p.hold,
            Some(PruneHold::MassPrune {
                count: 9,
                total: 10
            })
        );
        assert!(p.prune.is_empty());
        let p = plan(&r2, Some(&inv), &live, &guard, true);
        assert_eq!(p.prune.len(), 9);
    }

    #[test]
    fn prune_order_is_workloads_first_namespaces_last() {
        let r = render(vec![
            object("Namespace", "t-prod", "1"),
            object("Role", "r", "1"),
            object("ConfigMap", "c", "1"),
        ]);
        let (inv, live) = applied(&r);
        let mut purged = render(vec![]);
        purged.state = Some(TenantState::Purged);
        let p = plan(&purged, Some(&inv), &live, &PruneGuard::default(), false);
        let kinds: Vec<_> = p.prune.iter().map(|e| e.id.kind.as_str()).collect();
        assert_eq!(kinds, ["ConfigMap", "Role", "Namespace"]);
    }

    #[test]
    fn managed_fingerprint_moves_only_with_fiefs_own_apply_entry() {
        let meta = |fief_fields: Value, status_time: &str| {
            serde_json::json!([
                {"manager": "fief", "operation": "Apply", "apiVersion": "apps/v1",
                 "time": "2026-11-23T10:00:00Z", "fieldsV1": fief_fields},
                {"manager": "kube-controller-manager", "operation": "Update",
                 "subresource": "status", "time": status_time, "fieldsV1": {"f:status": {}}},
            ])
        };
        let owned = serde_json::json!({"f:spec": {"f:replicas": {}}});
        let before = managed_fingerprint(&meta(owned.clone(), "2026-11-23T10:00:01Z"), "fief");
        assert_eq!(before.len(), 32);
        // A controller's status write: same fingerprint.
        let status = managed_fingerprint(&meta(owned, "2026-11-23T10:05:00Z"), "fief");
        assert_eq!(before, status);
        // Someone took over (or removed) a field fief set: a different fingerprint.
        let taken = serde_json::json!({"f:spec": {}});
        assert_ne!(
            before,
            managed_fingerprint(&meta(taken, "2026-11-23T10:00:01Z"), "fief")
        );
        // No entry of fief's: empty (the object is then read).
        assert_eq!(managed_fingerprint(&serde_json::json!({}), "fief"), "");
    }
}
