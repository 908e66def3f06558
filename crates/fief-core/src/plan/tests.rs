//! Unit tests of the plan: what is applied, skipped, pruned or held.

use super::*;
use crate::render::Source;
use serde_json::json;

pub(super) fn object(kind: &str, name: &str, data: &str) -> RenderedObject {
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

pub(super) fn render(objects: Vec<RenderedObject>) -> TenantRender {
    TenantRender {
        tenant: "t".into(),
        state: Some(TenantState::Active),
        objects,
        ..Default::default()
    }
}

/// The inventory after applying `r`, with the live state equal to what was applied.
pub(super) fn applied(r: &TenantRender) -> (Inventory, HashMap<ObjectId, String>) {
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
                pending: false,
                done: None,
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
    let edited = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"v": "hacked"}});
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

/// The inventory a sync leaves when its prune is held: union(old, desired), the objects it
/// added recorded as pending.
fn held_union(inv: &Inventory, r: &TenantRender) -> Inventory {
    let (added, _) = applied(r);
    let mut union = inv.clone();
    for (id, mut e) in added.entries {
        union.entries.entry(id).or_insert_with(|| {
            e.pending = true;
            e
        });
    }
    union
}

/// Eight ConfigMaps named with `prefix`: a rename of every object is a change of prefix.
fn eight(prefix: &str) -> TenantRender {
    render(
        (0..8)
            .map(|i| object("ConfigMap", &format!("{prefix}{i}"), "1"))
            .collect(),
    )
}

#[test]
fn a_held_rename_stays_held_on_every_later_sync_until_released() {
    let (old, _) = applied(&eight("old"));
    let renamed = eight("new");
    let guard = PruneGuard::default();
    let first = plan(&renamed, Some(&old), &HashMap::new(), &guard, false);
    assert_eq!(
        first.hold,
        Some(PruneHold::MassPrune { count: 8, total: 8 })
    );
    assert_eq!(first.held.len(), 8);
    // The next sync sees the union (16 objects, 8 of them added while held): still 8 of 8.
    let union = held_union(&old, &renamed);
    let (_, live) = applied(&renamed);
    let again = plan(&renamed, Some(&union), &live, &guard, false);
    assert_eq!(
        again.hold,
        Some(PruneHold::MassPrune { count: 8, total: 8 })
    );
    assert!(again.prune.is_empty() && !again.released);
    let released = plan(&renamed, Some(&union), &live, &guard, true);
    assert!(released.hold.is_none() && released.released);
    assert_eq!(released.prune.len(), 8);
    assert!(released.prune.iter().all(|e| e.id.name.starts_with("old")));
}

#[test]
fn a_revert_of_a_held_rename_prunes_only_what_the_held_change_added() {
    let before = eight("old");
    let (old, _) = applied(&before);
    let union = held_union(&old, &eight("new"));
    let p = plan(
        &before,
        Some(&union),
        &HashMap::new(),
        &PruneGuard::default(),
        false,
    );
    assert!(p.hold.is_none() && !p.released);
    assert_eq!(p.prune.len(), 8);
    assert!(p.prune.iter().all(|e| e.id.name.starts_with("new")));
}

#[test]
fn a_further_commit_during_a_hold_is_measured_against_what_ran_before_it() {
    let (old, _) = applied(&eight("old"));
    let union = held_union(&old, &eight("new"));
    // Two of the old objects come back: six of eight would still go, past the 50 % rule.
    let mut partial = eight("new");
    partial
        .objects
        .extend((0..2).map(|i| object("ConfigMap", &format!("old{i}"), "1")));
    let p = plan(
        &partial,
        Some(&union),
        &HashMap::new(),
        &PruneGuard::default(),
        false,
    );
    assert_eq!(p.hold, Some(PruneHold::MassPrune { count: 6, total: 8 }));
}
