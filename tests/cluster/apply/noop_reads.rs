//! A no-op apply reads only the objects whose resourceVersion moved: a controller's status
//! writes do not make it read an object, hand edits do.

use super::*;

#[test]
fn a_no_op_apply_reads_only_objects_whose_resource_version_moved() {
    let repo = TestRepo::new("");
    let t = common::unique("rv");
    let ns = format!("{t}-prod");
    repo.tenant(&t, BOTH);
    apply_json(repo.path(), &["--tenant", &t], 0);
    // Every applied entry records the live object's resourceVersion and uid.
    let live = kubectl_json(&["get", "configmap", "-n", &ns, "app-config"]);
    let entries = inventory_entries(&repo.agent_ns, &t);
    let entry = entries
        .iter()
        .find(|e| e["kind"] == "ConfigMap" && e["name"] == "app-config")
        .expect("app-config recorded");
    assert_eq!(
        entry["resourceVersion"], live["metadata"]["resourceVersion"],
        "{entry}"
    );
    assert_eq!(entry["uid"], live["metadata"]["uid"], "{entry}");
    assert!(
        entries.iter().all(|e| e["resourceVersion"].is_string()),
        "{entries:?}"
    );

    // A wrong recorded live hash is trusted while the object's resourceVersion is the
    // recorded one: the object's body is not read, so nothing is applied.
    edit_inventory_entry(&repo.agent_ns, &t, "app-config", |e| {
        e["live"] = "recorded-by-hand".into();
    });
    let trusted = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(trusted["requests"]["patch"], 0, "{trusted}");

    // An entry without a resourceVersion (an older fief's inventory) is read in full once:
    // the real live hash differs from the recorded one, so the object is applied again and
    // the entry gets its resourceVersion back.
    edit_inventory_entry(&repo.agent_ns, &t, "app-config", |e| {
        e.as_object_mut().unwrap().remove("resourceVersion");
    });
    let old = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(tenant_report(&old, &t)["counts"]["configured"], 1, "{old}");
    let entries = inventory_entries(&repo.agent_ns, &t);
    assert!(
        entries.iter().all(|e| e["resourceVersion"].is_string()),
        "{entries:?}"
    );

    // A moved resourceVersion (any write to the object) with fief's field-manager entry
    // not as recorded makes the object read again.
    edit_inventory_entry(&repo.agent_ns, &t, "app-config", |e| {
        e["live"] = "recorded-by-hand".into();
        e["resourceVersion"] = "1".into();
        e["managed"] = "0".into();
    });
    let moved = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(
        tenant_report(&moved, &t)["counts"]["configured"],
        1,
        "{moved}"
    );
    let steady = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(steady["requests"]["patch"], 0, "{steady}");
}

#[test]
fn a_controllers_status_writes_do_not_make_a_no_op_apply_read_the_object_but_hand_edits_do() {
    let repo = TestRepo::new("");
    let t = common::unique("fp");
    let ns = format!("{t}-prod");
    repo.tenant(&t, &format!("  quota: {{pods: \"10\"}}\n{BOTH}"));
    apply_json(repo.path(), &["--tenant", &t], 0);
    let entry = || {
        inventory_entries(&repo.agent_ns, &t)
            .into_iter()
            .find(|e| e["kind"] == "ResourceQuota")
            .expect("quota recorded")
    };
    let recorded = entry();
    assert!(recorded["managed"].is_string(), "{recorded}");
    // The controller-manager writes the quota's status: its resourceVersion moves.
    let quota = || kubectl_json(&["get", "resourcequota", "-n", &ns, "fief-quota"]);
    common::util::wait_until(
        "the ResourceQuota's status written",
        std::time::Duration::from_secs(60),
        || {
            let live = quota();
            live["metadata"]["resourceVersion"] != recorded["resourceVersion"]
                && live["status"]["used"].is_object()
        },
    );
    // A wrong recorded live hash is still trusted: fief's own managedFields entry is as
    // recorded, so the body is not read and nothing is applied.
    edit_entry_of(&repo.agent_ns, &t, "ResourceQuota", "fief-quota", |e| {
        e["live"] = "recorded-by-hand".into();
    });
    let trusted = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(trusted["requests"]["patch"], 0, "{trusted}");
    edit_entry_of(&repo.agent_ns, &t, "ResourceQuota", "fief-quota", |e| {
        e["live"] = recorded["live"].clone();
    });
    let steady = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(steady["requests"]["patch"], 0, "{steady}");

    // A hand edit of a field fief sets is seen and repaired.
    let out = kubectl(&[
        "-n",
        &ns,
        "patch",
        "resourcequota",
        "fief-quota",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"hard":{"pods":"99"}}}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fixed = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(
        tenant_report(&fixed, &t)["counts"]["configured"],
        1,
        "{fixed}"
    );
    assert_eq!(quota()["spec"]["hard"]["pods"], "10");

    // So is a label fief set that was removed by hand.
    let label = "fief.dev/component";
    let out = kubectl(&[
        "-n",
        &ns,
        "label",
        "resourcequota",
        "fief-quota",
        &format!("{label}-"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fixed = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(
        tenant_report(&fixed, &t)["counts"]["configured"],
        1,
        "{fixed}"
    );
    assert_eq!(quota()["metadata"]["labels"][label], "baseline");
    let steady = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(steady["requests"]["patch"], 0, "{steady}");
}
