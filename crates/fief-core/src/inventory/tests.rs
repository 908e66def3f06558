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
        done: None,
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

#[test]
fn a_done_entry_is_written_in_a_word_and_entries_without_it_are_not_done() {
    let mut inv = Inventory::new("acme");
    let mut ok = entry("ConfigMap", "acme-prod", "account");
    ok.done = Some(Done::Succeeded);
    let mut failed = entry("ConfigMap", "acme-prod", "migrate");
    failed.done = Some(Done::Failed("job failed: BackoffLimitExceeded".into()));
    let plain = entry("ConfigMap", "acme-prod", "site");
    for e in [ok, failed, plain] {
        inv.entries.insert(e.id.clone(), e);
    }
    let cm = inv.to_configmap("fief-system");
    let text = cm["data"][DATA_ENTRIES].as_str().unwrap_or_default();
    assert!(text.contains(r#""done":"succeeded""#), "{text}");
    assert!(
        text.contains(r#""done":{"failed":"job failed: BackoffLimitExceeded"}"#),
        "{text}"
    );
    assert_eq!(
        text.matches("done").count(),
        2,
        "absent when not done: {text}"
    );
    assert_eq!(Inventory::from_configmap(&cm).unwrap(), inv);
    // An entry written by a version without the field reads as not done.
    let old = r#"[{"kind":"Job","namespace":"a","name":"m","group":"batch","apiVersion":"batch/v1","hash":"h","live":"l"}]"#;
    let cm = json!({"metadata": {"name": "x", "namespace": "fief-system",
        "labels": {"fief.dev/tenant": "acme"}}, "data": {"entries": old}});
    let read = Inventory::from_configmap(&cm).unwrap();
    assert!(read.entries.values().all(|e| e.done.is_none()));
}

#[test]
fn a_done_entry_needs_no_live_version_for_the_inventory_to_stand_for_a_render() {
    let mut inv = Inventory::new("acme");
    let mut e = entry("ConfigMap", "acme-prod", "cfg");
    e.resource_version = "5".into();
    e.uid = "u".into();
    inv.entries.insert(e.id.clone(), e);
    let mut gone = entry("ConfigMap", "acme-prod", "hook");
    gone.done = Some(Done::Succeeded);
    inv.entries.insert(gone.id.clone(), gone);
    inv.status.inputs = "h1".into();
    inv.status
        .set_condition(ConditionType::Ready, true, Reason::Applied, "", "t");
    assert!(inv.stands_for("h1"));
}
