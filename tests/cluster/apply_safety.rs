//! The cluster-side safety promises of `fief apply`, against the real test control
//! plane: never adopting a namespace, purging only what fief created, holding prunes after a
//! failed apply, the inventory recorded before any apply (crash at every stage boundary),
//! RBAC ordered before the ServiceAccounts it allows, one bad tenant file staying its own
//! error, exit codes of held prunes, one-line API errors. `fief diff`: tests/cluster/diff.rs.
//!
//! Every test uses its own tenants and agent namespace (see `common::cluster_cli`).

use crate::common;

use common::cluster_cli::*;
use common::util::text;
use serde_json::Value;

// ---- never adopt, purge only what fief created ----

#[test]
fn an_existing_namespace_fief_did_not_create_is_never_adopted() {
    let repo = TestRepo::new("");
    let tenant = common::unique("cert");
    let ns = format!("{tenant}-manager");
    kubectl_ok(&["create", "namespace", &ns]);
    let other = common::unique("ok");
    repo.tenant(&tenant, &format!("  environments: [manager]\n{APP}"));
    repo.tenant(&other, APP);

    let (out, stderr) = apply_json(repo.path(), &[], 3);
    let r = tenant_report(&out, &tenant);
    assert_eq!(r["outcome"], "failed", "{out}");
    let errors = r["errors"].to_string();
    assert!(
        errors.contains(&format!("namespace {ns} already exists"))
            && errors.contains("refusing to adopt"),
        "{out}"
    );
    let line = stderr
        .lines()
        .find(|l| l.contains("refusing to adopt"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.starts_with(&format!("error: tenant `{tenant}`: ")),
        "{line}"
    );
    // The namespace is untouched: no labels, no RoleBindings, no NetworkPolicies, no objects.
    let live = kubectl_json(&["get", "namespace", &ns]);
    assert!(
        live["metadata"]["labels"]["fief.dev/tenant"].is_null(),
        "{live}"
    );
    assert_eq!(count("rolebindings", &ns), 0);
    assert_eq!(count("networkpolicies", &ns), 0);
    assert!(!exists("configmap", &ns, "app-config"));
    // The other tenant is applied.
    assert_eq!(tenant_report(&out, &other)["outcome"], "applied", "{out}");
    // And a purge of the refused tenant deletes nothing.
    repo.tenant(
        &tenant,
        &format!("  state: purged\n  environments: [manager]\n{APP}"),
    );
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert!(exists("namespace", "", &ns));
}

#[test]
fn purge_deletes_only_the_namespaces_fief_created_for_the_tenant() {
    let repo = TestRepo::new("");
    let tenant = common::unique("pur");
    let created = format!("{tenant}-prod");
    let handed = format!("{tenant}-dev");
    // A namespace made by someone else and handed over to the tenant by labelling it.
    kubectl_ok(&["create", "namespace", &handed]);
    kubectl_ok(&[
        "label",
        "namespace",
        &handed,
        &format!("fief.dev/tenant={tenant}"),
        "app.kubernetes.io/managed-by=fief",
    ]);
    repo.tenant(&tenant, &format!("  environments: [prod, dev]\n{APP}"));
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert!(exists("configmap", &handed, "app-config"));
    assert!(exists("configmap", &created, "app-config"));
    let inv = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    let entries: Value = serde_json::from_str(inv["data"]["entries"].as_str().unwrap()).unwrap();
    let flag = |name: &str| {
        entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "Namespace" && e["name"] == name)
            .map(|e| e["created"].clone())
            .unwrap_or_else(|| panic!("no entry for {name}: {entries}"))
    };
    assert_eq!(flag(&created), Value::Bool(true), "{entries}");
    assert_eq!(flag(&handed), Value::Bool(false), "{entries}");

    repo.tenant(
        &tenant,
        &format!("  state: purged\n  environments: [prod, dev]\n{APP}"),
    );
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    let r = tenant_report(&out, &tenant);
    assert_eq!(r["outcome"], "purged", "{out}");
    assert!(
        r["kept"].to_string().contains("not created by fief"),
        "{out}"
    );
    wait_gone("namespace", &created);
    assert!(
        exists("namespace", "", &handed),
        "the handed-over namespace stays"
    );
    assert!(
        !exists("configmap", &handed, "app-config"),
        "its objects are pruned"
    );
}

// ---- a failed apply holds the prune ----

#[test]
fn a_rename_whose_new_object_is_refused_keeps_the_old_object() {
    let repo = TestRepo::new("");
    let tenant = common::unique("ren");
    let ns = format!("{tenant}-prod");
    repo.write(
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old-name\ndata:\n  k: v\n",
    );
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert!(exists("configmap", &ns, "old-name"));

    // The new object is refused by the API server (a data key may not contain a space).
    repo.write(
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new-name\ndata:\n  bad key: v\n",
    );
    let (out, stderr) = apply_json(repo.path(), &["--tenant", &tenant], 3);
    assert!(
        exists("configmap", &ns, "old-name"),
        "old-name must survive"
    );
    assert!(!exists("configmap", &ns, "new-name"));
    let r = tenant_report(&out, &tenant);
    assert_eq!(r["counts"]["pruned"], 0, "{out}");
    assert!(
        r["pruneHeld"].as_str().unwrap().contains("apply(s) failed"),
        "{out}"
    );
    assert!(stderr.contains("prune held"), "{stderr}");
    let status = inventory_status(&repo, &tenant);
    assert!(
        status["lastError"].as_str().unwrap().contains("prune held"),
        "{status}"
    );

    // Once the new object applies, the old one is pruned.
    repo.write(
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new-name\ndata:\n  good-key: v\n",
    );
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert!(!exists("configmap", &ns, "old-name"));
    assert!(exists("configmap", &ns, "new-name"));
}

// ---- the inventory is recorded before any apply ----

#[test]
fn a_crash_at_any_stage_boundary_leaks_nothing_and_the_next_run_prunes_what_git_dropped() {
    let repo = TestRepo::new("");
    let tenant = common::unique("crash");
    let ns = format!("{tenant}-prod");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    let admin = common::control_plane().admin_kubeconfig();
    for stage in ["after-union", "after-apply", "after-prune"] {
        let file = format!("components/app/templates/{stage}.yaml");
        let name = format!("new-{stage}");
        repo.write(
            &file,
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"),
        );
        let crashed = fief_with(
            "apply",
            repo.path(),
            admin,
            &["--tenant", &tenant],
            &[("FIEF_TEST_CRASH_AT", stage)],
        );
        assert!(
            !crashed.status.success() && text(&crashed.stderr).contains("FIEF_TEST_CRASH_AT"),
            "{stage}: the process must crash: {}",
            text(&crashed.stderr)
        );
        // git drops the object again; the next run must prune it if the crashed run made it.
        repo.remove(&file);
        let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
        assert!(
            !exists("configmap", &ns, &name),
            "{stage}: {name} leaked: {out}"
        );
        assert!(exists("configmap", &ns, "app-config"));
    }
}

// ---- a real app applies cold in one run ----

/// A microservice app as public demos ship it (e.g. Google's microservices-demo): a
/// ServiceAccount, a Deployment and a Service per service.
fn microservices() -> String {
    let mut out = String::new();
    for svc in ["frontend", "cart", "checkout", "payment", "shipping"] {
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {svc}\n\
             ---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {svc}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {svc}}}\n  template:\n    metadata:\n      labels: {{app: {svc}}}\n    spec:\n      serviceAccountName: {svc}\n      containers:\n        - name: server\n          image: registry.example/{svc}:v0.10.0\n          ports: [{{containerPort: 8080}}]\n          resources: {{requests: {{cpu: 10m, memory: 16Mi}}, limits: {{cpu: 100m, memory: 64Mi}}}}\n\
             ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {svc}\nspec:\n  selector: {{app: {svc}}}\n  ports: [{{port: 80, targetPort: 8080}}]\n"
        ));
    }
    out
}

#[test]
fn a_cold_apply_of_a_microservice_app_with_service_accounts_succeeds_in_one_run() {
    let repo = TestRepo::new("");
    repo.write("components/shop/templates/all.yaml", &microservices());
    let tenant = common::unique("shop");
    let ns = format!("{tenant}-prod");
    repo.tenant(&tenant, "  components:\n    - name: shop\n");
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert_eq!(tenant_report(&out, &tenant)["counts"]["failed"], 0, "{out}");
    for svc in ["frontend", "cart", "checkout", "payment", "shipping"] {
        assert!(exists("serviceaccount", &ns, svc));
        assert!(exists("deployment", &ns, svc));
        assert!(exists("service", &ns, svc));
    }
}

// ---- one bad tenant file is its own error ----

#[test]
fn a_tenant_file_with_an_invalid_name_fails_alone() {
    let repo = TestRepo::new("");
    let good = common::unique("good");
    repo.tenant(&good, APP);
    repo.write(
        "tenants/bad name.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: bad name\nspec:\n  components: []\n",
    );
    let (out, stderr) = apply_json(repo.path(), &[], 1);
    assert_eq!(tenant_report(&out, &good)["outcome"], "applied", "{out}");
    assert_eq!(
        tenant_report(&out, "bad name")["outcome"],
        "invalid",
        "{out}"
    );
    assert!(exists("configmap", &format!("{good}-prod"), "app-config"));
    assert!(!stderr.contains("cannot reach"), "{stderr}");
    let diff = fief("diff", repo.path(), &[]);
    assert!(
        !text(&diff.stderr).contains("cannot reach"),
        "{}",
        text(&diff.stderr)
    );
}

// ---- a held prune exits non-zero ----

#[test]
fn a_prune_held_by_the_mass_prune_guard_exits_4_and_says_why_on_stderr() {
    let repo = TestRepo::new("pruneGuard: {maxObjects: 1}\n");
    repo.write(
        "components/app/templates/more.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: most\n",
    );
    let tenant = common::unique("held");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    repo.tenant(&tenant, "  components: []\n");
    let (out, stderr) = apply_json(repo.path(), &["--tenant", &tenant], 4);
    assert!(
        tenant_report(&out, &tenant)["pruneHeld"]
            .as_str()
            .unwrap()
            .contains("mass-prune guard"),
        "{out}"
    );
    assert!(
        stderr.contains(&format!(
            "error: tenant `{tenant}`: prune held: refusing to prune 3"
        )),
        "{stderr}"
    );
    assert!(exists("configmap", &format!("{tenant}-prod"), "app-config"));
    // diff shows the prunes and says that apply would hold them.
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    assert_eq!(diff.status.code(), Some(1));
    assert!(
        text(&diff.stderr).contains("apply would hold the prunes shown: refusing to prune 3"),
        "{}",
        text(&diff.stderr)
    );
}

// ---- errors in one line that tell the truth ----

#[test]
fn a_403_is_reported_as_forbidden_naming_the_request_not_as_unreachable() {
    let repo = TestRepo::new("");
    let tenant = common::unique("forb");
    repo.tenant(&tenant, APP);
    let cp = common::control_plane();
    let out = fief_with("apply", repo.path(), &cp.kubeconfig_for("carol"), &[], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_one_line_error(&stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the API server answered 403 Forbidden")
            && stderr.contains("carol")
            && stderr.contains("RBAC"),
        "{stderr}"
    );
}

#[test]
fn a_400_names_the_object_and_the_servers_message_in_one_line() {
    let repo = TestRepo::new("");
    let tenant = common::unique("bad400");
    // Only the server may set managedFields: the API server answers 400 Bad Request.
    repo.write(
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typed\n  managedFields: [{manager: me}]\ndata:\n  k: v\n",
    );
    repo.tenant(&tenant, APP);
    let (_, stderr) = apply_json(repo.path(), &["--tenant", &tenant], 3);
    assert_one_line_error(&stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("ConfigMap/"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains(&format!("apply ConfigMap/{tenant}-prod/typed"))
            && line.contains("the API server answered 400 BadRequest")
            && line.contains("managedFields must be nil")
            && line.contains("fix it in the tenants repo"),
        "{line}"
    );
}

#[test]
fn an_unreachable_server_is_named_with_the_connection_failure() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .unwrap();
    let repo = TestRepo::new("");
    repo.tenant(&common::unique("unr"), APP);
    let out = fief_with("apply", repo.path(), &kubeconfig, &[], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot reach the API server https://127.0.0.1:1")
            && stderr.contains("Connection refused"),
        "{stderr}"
    );
    assert!(!stderr.contains("ServiceError"), "{stderr}");
}

#[test]
fn tenants_of_another_repo_in_the_cluster_are_summarised_in_one_line() {
    let repo = TestRepo::new("");
    let names: Vec<String> = (0..7).map(|_| common::unique("other")).collect();
    for n in &names {
        repo.tenant(n, "  components: [{name: app}]\n");
    }
    apply_json(repo.path(), &[], 0);
    // The same agent namespace, a repo that knows none of them: seven orphans.
    for n in &names {
        repo.remove(&format!("tenants/{n}.yaml"));
    }
    let mine = common::unique("mine");
    repo.tenant(&mine, "  components: [{name: app}]\n");
    let out = fief("apply", repo.path(), &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("7 tenants in the cluster have no tenant file in this repo"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches(": orphaned:").count(),
        0,
        "one line, not seven: {stdout}"
    );
    assert!(stdout.contains(&format!("{mine}: applied")), "{stdout}");
}

#[test]
fn apply_on_a_terminal_shows_progress_and_each_tenant_as_it_finishes() {
    let repo = TestRepo::new("");
    let (a, b) = (common::unique("tty"), common::unique("tty"));
    for n in [&a, &b] {
        repo.tenant(n, "  components: [{name: app}]\n");
    }
    let kubeconfig = common::control_plane().admin_kubeconfig();
    // `script` gives fief a pseudo-terminal, as a person at a shell would have.
    let cmd = format!(
        "{} apply {} --kubeconfig {}",
        env!("CARGO_BIN_EXE_fief"),
        repo.path().display(),
        kubeconfig.display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("run script(1)");
    let seen = text(&out.stdout);
    assert!(out.status.success(), "{seen}");
    assert!(
        seen.contains("[1/2]") && seen.contains("[2/2]"),
        "progress: {seen}"
    );
    for n in [&a, &b] {
        assert_eq!(seen.matches(&format!("{n}: applied")).count(), 1, "{seen}");
    }
    let summary = seen.find("2 tenants: 2 ok").expect("summary");
    assert!(
        seen.find(&format!("{a}: applied"))
            .is_some_and(|i| i < summary)
    );
}
