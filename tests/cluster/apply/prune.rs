//! Prune and failure: more tenants than one batch each synced once, a template error that
//! leaves its tenant untouched, the mass-prune guard, orphaned and purged tenants, and an
//! unreachable cluster.

use super::*;

#[test]
fn more_tenants_than_one_batch_are_each_synced_once_and_an_orphan_reported_once() {
    // `fief apply` renders and syncs tenants in batches (50 at a time); 101 tenants span several.
    let repo = TestRepo::new("");
    let prefix = common::unique("batch");
    let names: Vec<String> = (0..101).map(|i| format!("{prefix}-{i:03}")).collect();
    for name in &names {
        repo.tenant(name, "  components: []\n");
    }
    let first = apply_json(repo.path(), &[], 0);
    let reports = first["tenants"].as_array().unwrap();
    assert_eq!(reports.len(), names.len(), "{first}");
    assert!(reports.iter().all(|r| r["outcome"] == "applied"), "{first}");
    let tenants: BTreeSet<&str> = reports
        .iter()
        .filter_map(|r| r["tenant"].as_str())
        .collect();
    assert_eq!(tenants.len(), names.len(), "each tenant reported once");

    repo.remove(&format!("tenants/{}.yaml", names[0]));
    let second = apply_json(repo.path(), &[], 0);
    let reports = second["tenants"].as_array().unwrap();
    assert_eq!(reports.len(), names.len(), "{second}");
    let orphaned: Vec<&Value> = reports
        .iter()
        .filter(|r| r["outcome"] == "orphaned")
        .collect();
    assert_eq!(orphaned.len(), 1, "{second}");
    assert_eq!(orphaned[0]["tenant"], names[0].as_str());
    // Only the orphan's inventory is marked; the others send nothing.
    assert_eq!(second["requests"]["patch"], 1, "{second}");
    let third = apply_json(repo.path(), &[], 0);
    assert_eq!(third["requests"]["patch"], 0, "{third}");
}

#[test]
fn a_template_error_leaves_that_tenant_untouched_and_others_applied() {
    let repo = TestRepo::new("");
    let good = common::unique("good");
    let bad = common::unique("bad");
    repo.tenant(&good, BOTH);
    repo.tenant(&bad, BOTH);
    apply_json(repo.path(), &["--tenant", &good, "--tenant", &bad], 0);

    // The bad tenant's values now break the template, and the repo drops app-extra.
    repo.remove("components/app/templates/extra.yaml");
    repo.write(
        "components/app/templates/config.yaml",
        &format!("{APP_CONFIG}{{% if tenant.name == '{bad}' %}}  oops: {{{{ values.broken.field }}}}{{% endif %}}\n"),
    );
    let out = apply_json(repo.path(), &["--tenant", &good, "--tenant", &bad], 1);
    let b = tenant_report(&out, &bad);
    assert_eq!(b["outcome"], "invalid", "{out}");
    assert!(
        b["errors"][0]
            .as_str()
            .unwrap()
            .contains("components/app/templates/config.yaml:7"),
        "{out}"
    );
    assert!(
        exists("configmap", &format!("{bad}-prod"), "app-extra"),
        "nothing of the bad tenant is pruned"
    );
    let g = tenant_report(&out, &good);
    assert_eq!(g["outcome"], "applied", "{out}");
    assert_eq!(g["counts"]["pruned"], 1, "{out}");
    assert!(!exists("configmap", &format!("{good}-prod"), "app-extra"));

    let inv = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{bad}"),
    ]);
    let status: Value = serde_json::from_str(inv["data"]["status"].as_str().unwrap()).unwrap();
    let stalled = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Stalled")
        .unwrap();
    assert_eq!(stalled["status"], "True", "{status}");
    assert!(
        status["lastError"]
            .as_str()
            .unwrap()
            .contains("config.yaml"),
        "{status}"
    );
}

#[test]
fn mass_prune_guard_refuses_and_the_override_proceeds() {
    let repo = TestRepo::new("pruneGuard: {maxObjects: 1}\n");
    let t = common::unique("mass");
    let ns = format!("{t}-prod");
    repo.tenant(&t, "  components:\n    - name: app\n");
    apply_json(repo.path(), &["--tenant", &t], 0);
    repo.tenant(&t, "  components: []\n");
    // A held prune exits 4 (the exit codes of `fief --help`).
    let held = apply_json(repo.path(), &["--tenant", &t], 4);
    let r = tenant_report(&held, &t);
    assert!(
        r["pruneHeld"]
            .as_str()
            .unwrap()
            .contains("--allow-mass-prune"),
        "{held}"
    );
    assert_eq!(r["counts"]["pruned"], 0);
    assert!(exists("configmap", &ns, "app-config"));
    let forced = apply_json(repo.path(), &["--tenant", &t, "--allow-mass-prune"], 0);
    assert_eq!(
        tenant_report(&forced, &t)["counts"]["pruned"],
        3,
        "{forced}"
    );
    assert!(!exists("configmap", &ns, "app-config"));
}

#[test]
fn removed_tenant_file_is_orphaned_and_purged_tenant_is_deleted() {
    let repo = TestRepo::new("");
    let kept = common::unique("orph");
    let purged = common::unique("purge");
    repo.tenant(&kept, BOTH);
    repo.tenant(&purged, BOTH);
    apply_json(repo.path(), &[], 0);

    repo.remove(&format!("tenants/{kept}.yaml"));
    repo.tenant(&purged, &format!("  state: purged\n{BOTH}"));
    // A purge keeps `fief.dev/prune: disabled` objects, and so their namespace.
    let out = apply_json(repo.path(), &["--tenant", &purged], 0);
    let kept_list = tenant_report(&out, &purged)["kept"].to_string();
    assert!(kept_list.contains("prune: disabled"), "{out}");
    assert!(kept_list.contains("holds objects that are kept"), "{out}");
    assert!(exists(
        "persistentvolumeclaim",
        &format!("{purged}-prod"),
        "data"
    ));
    assert!(
        tenant_report(&out, &purged)["pruneHeld"]
            .as_str()
            .unwrap()
            .contains("purge incomplete"),
        "{out}"
    );
    // A later sync still holds the namespace; once the object is deleted by hand, the purge
    // completes.
    apply_json(repo.path(), &["--tenant", &purged], 0);
    assert!(exists(
        "persistentvolumeclaim",
        &format!("{purged}-prod"),
        "data"
    ));
    let out = kubectl(&[
        "-n",
        &format!("{purged}-prod"),
        "delete",
        "pvc",
        "data",
        "--wait=true",
        "--timeout=60s",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&out, &kept)["outcome"], "orphaned", "{out}");
    assert!(
        exists("configmap", &format!("{kept}-prod"), "app-config"),
        "orphans are left running"
    );
    let p = tenant_report(&out, &purged);
    assert_eq!(p["outcome"], "purged", "{out}");
    wait_gone("namespace", &format!("{purged}-prod"));
    let inv = kubectl(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{purged}"),
        "--ignore-not-found",
        "-o",
        "name",
    ]);
    assert!(
        text(&inv.stdout).trim().is_empty(),
        "the purged tenant's inventory is removed"
    );
    let plain = fief("apply", repo.path(), &[]);
    assert!(
        text(&plain.stdout).contains(&format!("{kept}: orphaned: tenant file removed from git")),
        "{}",
        text(&plain.stdout)
    );
}

#[test]
fn unreachable_cluster_exits_3_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .unwrap();
    let out = Command::new(fief_bin())
        .args(["apply"])
        .arg(example())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot reach the API server https://127.0.0.1:1"),
        "{}",
        text(&out.stderr)
    );
}
