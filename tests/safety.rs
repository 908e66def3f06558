//! The cluster-side safety promises of `fief apply` and `fief diff` (issue 11), against the
//! real test control plane: never adopting a namespace, purging only what fief created,
//! holding prunes after a failed apply, the inventory recorded before any apply (crash at
//! every stage boundary), RBAC ordered before the ServiceAccounts it allows, one bad tenant
//! file staying its own error, exit codes of held prunes, one-line API errors, honest diff.
//!
//! Every test uses its own tenants and agent namespace; this binary has its own control
//! plane, so the RBAC granted here to the test users is seen by these tests only.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::util::text;
use serde_json::Value;

struct TestRepo {
    dir: tempfile::TempDir,
    agent_ns: String,
}

const CONFIG: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  k: v\n";

impl TestRepo {
    /// A repo with component `app` (one ConfigMap) and the given extra fief.yaml lines.
    fn new(fief_yaml: &str) -> TestRepo {
        let repo = TestRepo {
            dir: tempfile::tempdir().unwrap(),
            agent_ns: common::unique("fief-sys"),
        };
        repo.write(
            "fief.yaml",
            &format!("agentNamespace: {}\n{fief_yaml}", repo.agent_ns),
        );
        repo.write("components/app/templates/config.yaml", CONFIG);
        repo
    }

    fn write(&self, path: &str, body: &str) {
        let p = self.dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.path().join(path)).unwrap();
    }

    fn tenant(&self, name: &str, spec: &str) {
        self.write(
            &format!("tenants/{name}.yaml"),
            &format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}"),
        );
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

const APP: &str = "  components:\n    - name: app\n";

/// Run `fief <cmd> <repo> --kubeconfig <kubeconfig> [args]` with extra environment.
fn fief_with(
    cmd: &str,
    repo: &Path,
    kubeconfig: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg(cmd)
        .arg(repo)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run fief")
}

/// Run `fief <cmd> <repo>` as cluster admin.
fn fief(cmd: &str, repo: &Path, args: &[&str]) -> Output {
    fief_with(
        cmd,
        repo,
        common::control_plane().admin_kubeconfig(),
        args,
        &[],
    )
}

/// `fief apply --output json` as admin, asserting the exit code; returns the summary and
/// stderr.
fn apply_json(repo: &Path, args: &[&str], code: i32) -> (Value, String) {
    let mut all = vec!["--output", "json"];
    all.extend_from_slice(args);
    let out = fief("apply", repo, &all);
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).expect("json summary"),
        text(&out.stderr),
    )
}

fn tenant_report<'a>(summary: &'a Value, tenant: &str) -> &'a Value {
    summary["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tenant"] == tenant)
        .unwrap_or_else(|| panic!("no report for {tenant} in {summary}"))
}

fn kubectl(args: &[&str]) -> Output {
    common::control_plane()
        .kubectl_admin()
        .args(args)
        .output()
        .expect("run kubectl")
}

fn kubectl_ok(args: &[&str]) {
    let out = kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        text(&out.stderr)
    );
}

fn kubectl_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = kubectl(&all);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn exists(kind: &str, ns: &str, name: &str) -> bool {
    let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
    if !ns.is_empty() {
        args.extend(["-n", ns]);
    }
    !text(&kubectl(&args).stdout).trim().is_empty()
}

fn count(kind: &str, ns: &str) -> usize {
    kubectl_json(&["get", kind, "-n", ns])["items"]
        .as_array()
        .unwrap()
        .len()
}

fn wait_gone(kind: &str, name: &str) {
    for _ in 0..240 {
        if !exists(kind, "", name) {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("{kind}/{name} still exists after 120s");
}

fn inventory_status(repo: &TestRepo, tenant: &str) -> Value {
    let inv = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    serde_json::from_str(inv["data"]["status"].as_str().unwrap()).unwrap()
}

// ---- hole 1: never adopt, purge only what fief created ----

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

// ---- hole 4: a failed apply holds the prune ----

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

// ---- hole 5: the inventory is recorded before any apply ----

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

// ---- hole 6: a real app applies cold in one run ----

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

// ---- hole 10: one bad tenant file is its own error ----

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

// ---- hole 12: a held prune exits non-zero ----

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

// ---- hole 14: errors in one line that tell the truth ----

fn assert_one_line_error(stderr: &str) {
    for bad in [
        "Status {",
        "ErrorResponse",
        "ServiceError",
        "cannot reach the cluster",
    ] {
        assert!(!stderr.contains(bad), "{bad:?} in: {stderr}");
    }
}

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

// ---- hole 8: diff is honest ----

#[test]
fn diff_shows_the_prune_of_a_kind_the_render_no_longer_has() {
    let repo = TestRepo::new("");
    repo.write(
        "components/app/templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  token: s3cret\n",
    );
    let tenant = common::unique("dsec");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    repo.remove("components/app/templates/secret.yaml");
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    let shown = text(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{shown}{}", text(&diff.stderr));
    assert!(
        shown.contains(&format!(
            "# tenant {tenant}: delete Secret/{tenant}-prod/token"
        )),
        "{shown}"
    );
    assert!(
        !shown.contains("s3cret"),
        "secrets are never printed: {shown}"
    );
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert_eq!(tenant_report(&out, &tenant)["counts"]["pruned"], 1, "{out}");
}

/// Give `user` read-only rights (get, list, watch) on every resource of the cluster.
fn grant_read_only(user: &str) {
    let role = format!("fief-test-read-{user}");
    let _ = kubectl(&[
        "create",
        "clusterrole",
        &role,
        "--verb=get,list,watch",
        "--resource=*.*",
    ]);
    let _ = kubectl(&[
        "create",
        "clusterrolebinding",
        &role,
        &format!("--clusterrole={role}"),
        &format!("--user={user}"),
    ]);
}

#[test]
fn diff_as_a_read_only_user_compares_client_side_with_a_note() {
    let repo = TestRepo::new("");
    let tenant = common::unique("dro");
    let ns = format!("{tenant}-prod");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    grant_read_only("dave");
    let dave = common::control_plane().kubeconfig_for("dave");

    // Nothing changed: the read-only diff says so.
    let clean = fief_with("diff", repo.path(), &dave, &["--tenant", &tenant], &[]);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}{}",
        text(&clean.stdout),
        text(&clean.stderr)
    );

    // A hand edit of a field fief sets is shown, with the fallback note.
    kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "app-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"k":"hacked"}}"#,
    ]);
    let diff = fief_with("diff", repo.path(), &dave, &["--tenant", &tenant], &[]);
    let (shown, stderr) = (text(&diff.stdout), text(&diff.stderr));
    assert_eq!(diff.status.code(), Some(1), "{shown}{stderr}");
    assert!(
        shown.contains("-  k: hacked") && shown.contains("+  k: v"),
        "{shown}"
    );
    let note = stderr
        .lines()
        .find(|l| l.starts_with("note: ") && l.contains("compared client-side"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(note.contains("may not impersonate"), "{note}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn diff_dry_runs_as_the_tenant_identity_and_predicts_the_403_apply_hits() {
    let repo = TestRepo::new("");
    // The repo's own baseline: fief's built-in one, copied.
    let builtin = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    for f in std::fs::read_dir(&builtin).unwrap() {
        let f = f.unwrap();
        let body = std::fs::read_to_string(f.path()).unwrap();
        repo.write(
            &format!("baseline/{}", f.file_name().to_string_lossy()),
            &body,
        );
    }
    let tenant = common::unique("d403");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    // The baseline no longer lets the tenant identity write ConfigMaps.
    let deployer = std::fs::read_to_string(builtin.join("deployer.yaml")).unwrap();
    let narrowed = deployer.replace("\"configmaps\", ", "");
    assert_ne!(narrowed, deployer, "deployer.yaml lists configmaps");
    repo.write("baseline/deployer.yaml", &narrowed);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    // Now a changed ConfigMap: diff must predict the refusal, as the tenant identity.
    repo.write(
        "components/app/templates/config.yaml",
        &CONFIG.replace("k: v", "k: changed"),
    );
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    let stderr = text(&diff.stderr);
    assert_eq!(
        diff.status.code(),
        Some(3),
        "{}{stderr}",
        text(&diff.stdout)
    );
    assert!(
        stderr.contains(&format!(
            "dry-run apply ConfigMap/{tenant}-prod/app-config (as system:serviceaccount:{tenant}-prod:fief-tenant)"
        )) && stderr.contains("403 Forbidden"),
        "{stderr}"
    );
    let (_, applied) = apply_json(repo.path(), &["--tenant", &tenant], 3);
    assert!(applied.contains("403 Forbidden"), "{applied}");
}

#[test]
fn diff_skips_tenants_of_another_cluster_as_apply_does() {
    let repo = TestRepo::new("");
    let tenant = common::unique("dcl");
    repo.tenant(&tenant, &format!("  cluster: elsewhere\n{APP}"));
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    let (shown, stderr) = (text(&diff.stdout), text(&diff.stderr));
    assert_eq!(diff.status.code(), Some(0), "{shown}{stderr}");
    assert!(shown.is_empty(), "{shown}");
    assert!(
        stderr.contains("skipped") && stderr.contains(&tenant),
        "{stderr}"
    );
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert_eq!(tenant_report(&out, &tenant)["outcome"], "skipped", "{out}");
}

#[test]
fn diff_with_the_builtin_view_role_shows_what_it_can_read_and_names_what_it_cannot() {
    let repo = TestRepo::new("");
    let tenant = common::unique("dview");
    let ns = format!("{tenant}-prod");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    let _ = kubectl(&[
        "create",
        "clusterrolebinding",
        "fief-test-view-bob",
        "--clusterrole=view",
        "--user=bob",
    ]);
    kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "app-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"k":"hacked"}}"#,
    ]);
    let bob = common::control_plane().kubeconfig_for("bob");
    let diff = fief_with("diff", repo.path(), &bob, &["--tenant", &tenant], &[]);
    let (shown, stderr) = (text(&diff.stdout), text(&diff.stderr));
    // `view` may not list Roles or RoleBindings: named, and the exit code says incomplete.
    assert_eq!(diff.status.code(), Some(3), "{shown}{stderr}");
    assert!(shown.contains("-  k: hacked"), "{shown}");
    assert!(
        stderr.contains("error: cannot compare Role objects: list Role")
            && stderr.contains("403 Forbidden"),
        "{stderr}"
    );
    assert!(stderr.contains("compared client-side"), "{stderr}");
    assert_one_line_error(&stderr);
}
