//! Unit tests of the inventory: its ConfigMap, conditions and applied versions.

use super::*;

fn entry(kind: &str, ns: &str, name: &str) -> Entry {
    Entry {
        id: ObjectId {
            group: if kind == "Deployment" {
                "apps".into()
            } else {
                String::new()
            },
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
        },
        component: "app".into(),
        api_version: if kind == "Deployment" {
            "apps/v1".into()
        } else {
            "v1".into()
        },
        hash: "h".into(),
        live: "l".into(),
        resource_version: String::new(),
        uid: String::new(),
        managed: String::new(),
        created: None,
        pending: false,
    }
}

#[test]
fn configmap_round_trips_and_carries_applyset_metadata() {
    let mut inv = Inventory::new("acme");
    for e in [
        entry("Namespace", "", "acme-prod"),
        entry("Deployment", "acme-prod", "web"),
        entry("ConfigMap", "acme-dev", "cfg"),
    ] {
        inv.entries.insert(e.id.clone(), e);
    }
    inv.status.set_condition(
        ConditionType::Ready,
        true,
        Reason::Applied,
        "ok",
        "2026-01-01T00:00:00Z",
    );
    let cm = inv.to_configmap("fief-system");
    let ann = &cm["metadata"]["annotations"];
    assert_eq!(
        ann[ANNOTATION_GROUP_KINDS],
        "ConfigMap,Deployment.apps,Namespace"
    );
    assert_eq!(ann[ANNOTATION_NAMESPACES], "acme-dev,acme-prod");
    assert!(
        cm["metadata"]["labels"][LABEL_APPLYSET_ID]
            .as_str()
            .unwrap()
            .starts_with("applyset-")
    );
    assert_eq!(Inventory::from_configmap(&cm).unwrap(), inv);
}

#[test]
fn condition_transition_time_changes_only_on_flip() {
    let mut s = Status::default();
    let ready = ConditionType::Ready;
    s.set_condition(ready, true, Reason::Applied, "m", "t1");
    s.set_condition(ready, true, Reason::Healthy, "m2", "t2");
    assert_eq!(s.condition(ready).unwrap().last_transition_time, "t1");
    s.set_condition(ready, false, Reason::ApplyFailed, "m3", "t3");
    assert_eq!(s.condition(ready).unwrap().last_transition_time, "t3");
}

#[test]
fn an_applied_version_stands_while_the_uid_and_the_resource_version_or_fiefs_entry_do() {
    let recorded = AppliedVersion {
        uid: "u1".into(),
        resource_version: "10".into(),
        managed: "m1".into(),
    };
    let live = |uid: &str, rv: &str, managed: &str| AppliedVersion {
        uid: uid.into(),
        resource_version: rv.into(),
        managed: managed.into(),
    };
    assert!(recorded.still(&live("u1", "10", "")));
    assert!(recorded.still(&live("u1", "11", "m1")), "a status write");
    assert!(
        !recorded.still(&live("u1", "11", "m2")),
        "fief's fields moved"
    );
    assert!(!recorded.still(&live("u2", "10", "m1")), "recreated");
    let no_managed = AppliedVersion {
        managed: String::new(),
        ..recorded.clone()
    };
    assert!(!no_managed.still(&live("u1", "11", "")));
    assert!(!AppliedVersion::default().still(&AppliedVersion::default()));
}

#[test]
fn an_inventory_stands_for_a_render_only_settled_at_the_same_inputs_with_versions() {
    let mut inv = Inventory::new("acme");
    let mut e = entry("ConfigMap", "acme-prod", "cfg");
    e.resource_version = "5".into();
    e.uid = "u".into();
    inv.entries.insert(e.id.clone(), e);
    inv.status.inputs = "h1".into();
    let (ready, stalled) = (ConditionType::Ready, ConditionType::Stalled);
    inv.status
        .set_condition(ready, true, Reason::Applied, "", "t");
    inv.status
        .set_condition(stalled, false, Reason::Applied, "", "t");
    assert!(inv.stands_for("h1"));
    assert!(!inv.stands_for("h2"), "other inputs");
    assert!(!inv.stands_for(""));
    let mut reconciling = inv.clone();
    reconciling.status.set_condition(
        ConditionType::Reconciling,
        true,
        Reason::Progressing,
        "",
        "t",
    );
    assert!(!reconciling.stands_for("h1"));
    let mut failed = inv.clone();
    failed.status.last_error = Some("boom".into());
    assert!(!failed.stands_for("h1"));
    let mut old = inv.clone();
    for e in old.entries.values_mut() {
        e.resource_version.clear();
    }
    assert!(!old.stands_for("h1"), "an entry without a version");
}

#[test]
fn unreadable_inventory_is_an_error_not_an_empty_inventory() {
    let cm = json!({"metadata": {"name": "x", "namespace": "fief-system",
        "labels": {"fief.dev/tenant": "acme"}}, "data": {"entries": "not json"}});
    assert!(Inventory::from_configmap(&cm).is_err());
}
