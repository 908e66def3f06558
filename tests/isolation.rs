//! Tenant isolation on the real API server: render-time checks, impersonated apply, the
//! baseline roles, quota, and the agent's own ClusterRole from `deploy/`.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use fief::core::objects::ObjectId;
use fief::core::render::{RenderedObject, Source};
use fief::core::status::Outcome;
use fief::kube::Resources;
use fief::kube::sync::{SyncOptions, sync};
use serde_json::json;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(root: &Path, path: &str, body: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn tenant_file(name: &str, spec: &str) -> String {
    format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

/// A repo with component `app` (a ConfigMap and a Secret) in its own agent namespace.
fn repo(agent_ns: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "fief.yaml",
        &format!("agentNamespace: {agent_ns}\n"),
    );
    write(
        dir.path(),
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  owner: {{ tenant.name }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secret\nstringData:\n  token: t0ken\n",
    );
    dir
}

fn fief_as(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap()
}

fn apply_admin(repo: &Path, tenants: &[&str]) {
    let mut args = vec!["apply", repo.to_str().unwrap()];
    for t in tenants {
        args.extend(["--tenant", t]);
    }
    let out = fief_as(common::control_plane().admin_kubeconfig(), &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Run kubectl as `user` (or the admin); Ok(stdout) or Err(stderr).
fn kubectl(user: Option<&str>, args: &[&str]) -> Result<String, String> {
    let cp = common::control_plane();
    let mut cmd = match user {
        Some(u) => cp.kubectl_as(u),
        None => cp.kubectl_admin(),
    };
    let out = cmd.args(args).output().unwrap();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn allowed(user: &str, args: &[&str]) {
    if let Err(e) = kubectl(Some(user), args) {
        panic!("{user} should be allowed to {args:?}: {e}");
    }
}

fn forbidden(user: &str, args: &[&str]) {
    match kubectl(Some(user), args) {
        Ok(out) => panic!("{user} must not be allowed to {args:?}, but got: {out}"),
        Err(e) => assert!(
            e.contains("Forbidden") || e.contains("forbidden"),
            "{user} {args:?}: {e}"
        ),
    }
}

#[test]
fn cross_tenant_and_cluster_scoped_component_objects_are_refused_by_validate() {
    let dir = repo("unused");
    let a = common::unique("ta");
    let b = common::unique("tb");
    write(
        dir.path(),
        &format!("tenants/{a}.yaml"),
        &tenant_file(&a, "  components:\n    - name: app\n    - name: sneaky\n"),
    );
    write(
        dir.path(),
        &format!("tenants/{b}.yaml"),
        &tenant_file(&b, "  components:\n    - name: app\n"),
    );
    write(
        dir.path(),
        "components/sneaky/templates/x.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\n  namespace: {b}-prod\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {a}-god\nrules: []\n"
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["validate", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("components/sneaky/templates/x.yaml:1"),
        "{err}"
    );
    assert!(
        err.contains(&format!("targets namespace `{b}-prod`")),
        "{err}"
    );
    assert!(
        err.contains("components/sneaky/templates/x.yaml:7"),
        "{err}"
    );
    assert!(err.contains("ClusterRole"), "{err}");
    assert!(text(&out.stdout).contains(&format!("{b}: ok")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_render_check_bypassed_the_api_server_refuses_the_impersonated_apply() {
    let cp = common::control_plane();
    let agent_ns = common::unique("fief-iso");
    let dir = repo(&agent_ns);
    let a = common::unique("ia");
    let b = common::unique("ib");
    for t in [&a, &b] {
        write(
            dir.path(),
            &format!("tenants/{t}.yaml"),
            &tenant_file(t, "  components:\n    - name: app\n"),
        );
    }
    let root = dir.path().to_path_buf();
    let (a2, b2) = (a.clone(), b.clone());
    tokio::task::spawn_blocking(move || apply_admin(&root, &[&a2, &b2]))
        .await
        .unwrap();
    let before = kubectl(
        None,
        &["get", "configmap", "-n", &format!("{b}-prod"), "-o", "json"],
    )
    .unwrap();

    // Render tenant A, then smuggle objects past the render check (test-only: there is no
    // switch for this in fief), and sync it with admin credentials.
    let snapshot = fief::source::fs::read_dir(dir.path()).unwrap();
    let model = fief::core::model::Repo::load(Arc::new(snapshot));
    let mut renders = fief::core::pipeline::render_all(&model, std::slice::from_ref(&a));
    let applyset = fief::core::objects::tenant_applyset_id(&a, &agent_ns);
    let smuggler = Smuggler {
        tenant: &a,
        applyset,
    };
    renders[0]
        .objects
        .push(smuggler.object("ConfigMap", "v1", "", &format!("{b}-prod"), "stolen"));
    renders[0].objects.push(smuggler.object(
        "ConfigMap",
        "v1",
        "",
        &format!("{b}-prod"),
        "app-config",
    ));
    let client = cp.admin_client().await;
    let resources = Resources::discover(client).await.unwrap();
    let options = admin_sync_options(&agent_ns);
    let known: BTreeSet<String> = model.tenants.keys().cloned().collect();
    let reports = sync(&resources, &renders, &known, false, &options)
        .await
        .unwrap();
    let report = &reports[0];
    assert_eq!(report.outcome, Outcome::Failed, "{report:?}");
    assert_eq!(report.counts.failed, 2, "{report:?}");
    for e in &report.errors {
        assert!(e.contains("403") || e.contains("forbidden"), "{e}");
        assert!(
            e.contains(&format!("system:serviceaccount:{a}-prod:fief-tenant")),
            "{e}"
        );
    }
    // Tenant B is unchanged.
    let after = kubectl(
        None,
        &["get", "configmap", "-n", &format!("{b}-prod"), "-o", "json"],
    )
    .unwrap();
    assert_eq!(configmap_versions(&before), configmap_versions(&after));

    a_cluster_scoped_kind_never_leaves_fief(&model, &a, &smuggler, &resources, &known, &options)
        .await;
}

/// A cluster-scoped kind smuggled into tenant `a`'s render never leaves fief (discovery
/// knows its scope), and the identity it would be sent as cannot create one either.
async fn a_cluster_scoped_kind_never_leaves_fief(
    model: &fief::core::model::Repo,
    a: &str,
    smuggler: &Smuggler<'_>,
    resources: &Resources,
    known: &BTreeSet<String>,
    options: &SyncOptions,
) {
    // A cluster-scoped kind from a component never leaves fief (discovery knows its scope)...
    let mut renders = fief::core::pipeline::render_all(model, &[a.to_string()]);
    renders[0].objects.push(smuggler.object(
        "ClusterRole",
        "rbac.authorization.k8s.io/v1",
        "rbac.authorization.k8s.io",
        "",
        &format!("{a}-god"),
    ));
    let reports = sync(resources, &renders, known, false, options)
        .await
        .unwrap();
    assert!(
        reports[0].errors[0].contains("cluster-scoped"),
        "{:?}",
        reports[0]
    );
    // ...and the identity it would be sent as cannot create one either.
    let out = kubectl(
        None,
        &[
            "create",
            "clusterrole",
            &format!("{a}-god"),
            "--verb=get",
            "--resource=pods",
            &format!("--as=system:serviceaccount:{a}-prod:fief-tenant"),
        ],
    );
    assert!(out.unwrap_err().contains("forbidden"));
    assert!(kubectl(None, &["get", "clusterrole", &format!("{a}-god")]).is_err());
}

/// Objects of `tenant` made to look rendered, past the render check (test-only: there is no
/// switch for this in fief).
struct Smuggler<'a> {
    tenant: &'a str,
    applyset: String,
}

impl Smuggler<'_> {
    /// A labelled object of the tenant's `app` component: a ConfigMap with data, or a
    /// ClusterRole with no rules.
    fn object(
        &self,
        kind: &str,
        api_version: &str,
        group: &str,
        namespace: &str,
        name: &str,
    ) -> RenderedObject {
        let mut object = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name}, "data": {"stolen": "yes"}, "rules": []});
        if !namespace.is_empty() {
            object["metadata"]["namespace"] = json!(namespace);
        }
        if kind == "ClusterRole" {
            object.as_object_mut().unwrap().remove("data");
        } else {
            object.as_object_mut().unwrap().remove("rules");
        }
        fief::core::objects::add_labels(&mut object, self.tenant, "app", &self.applyset);
        RenderedObject {
            hash: Default::default(),
            component: "app".into(),
            env: "prod".into(),
            id: ObjectId {
                group: group.into(),
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
            },
            source: Source {
                file: "smuggled".into(),
                line: 1,
            },
            object,
        }
    }
}

/// The settings of a sync with admin credentials into `agent_ns`.
fn admin_sync_options(agent_ns: &str) -> SyncOptions {
    SyncOptions {
        agent_namespace: agent_ns.to_string(),
        concurrency: 2,
        object_concurrency: 4,
        allow_mass_prune: false,
        guard: Default::default(),
        cluster: "default".into(),
        commit: None,
        progress: None,
    }
}

/// The (name, resourceVersion) of each ConfigMap of a `kubectl get -o json` list.
fn configmap_versions(list: &str) -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(list).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].to_string(),
                i["metadata"]["resourceVersion"].to_string(),
            )
        })
        .collect()
}

#[test]
fn baseline_roles_give_admins_operators_and_viewers_exactly_their_rights() {
    let agent_ns = common::unique("fief-roles");
    let dir = repo(&agent_ns);
    let t = common::unique("roles");
    let other = common::unique("other");
    write(
        dir.path(),
        &format!("tenants/{t}.yaml"),
        &tenant_file(
            &t,
            "  access: {admins: [alice], operators: [bob], viewers: [carol]}\n  components:\n    - name: app\n",
        ),
    );
    write(
        dir.path(),
        &format!("tenants/{other}.yaml"),
        &tenant_file(
            &other,
            "  access: {admins: [dave]}\n  components:\n    - name: app\n",
        ),
    );
    apply_admin(dir.path(), &[&t, &other]);
    let ns = format!("{t}-prod");
    let n = ns.as_str();

    admins_manage_the_tenant_but_not_its_guardrails(n, &other);
    operators_manage_workloads_and_config_only(n);
    // Viewer: read-only, no secrets.
    allowed("carol", &["get", "deployments", "-n", n]);
    allowed("carol", &["get", "configmap", "app-config", "-n", n]);
    let d = create_deployment(n, "by-carol");
    forbidden("carol", &strs(&d));
    forbidden("carol", &["get", "secret", "app-secret", "-n", n]);
    forbidden(
        "carol",
        &["delete", "networkpolicy", "fief-default-deny", "-n", n],
    );

    // Another tenant's admin: nothing here.
    forbidden("dave", &["get", "pods", "-n", n]);
    let d = create_deployment(n, "by-dave");
    forbidden("dave", &strs(&d));
}

/// Admin (`alice`): workloads, config, secrets and RBAC of the tenant in `n`; not its
/// guardrails, nor another tenant's namespaces.
fn admins_manage_the_tenant_but_not_its_guardrails(n: &str, other: &str) {
    // Admin: workloads, config, secrets and RBAC of the tenant; not its guardrails.
    let d = create_deployment(n, "by-alice");
    allowed("alice", &strs(&d));
    allowed("alice", &["get", "secret", "app-secret", "-n", n]);
    allowed(
        "alice",
        &[
            "label",
            "rolebinding",
            "fief-viewer",
            "-n",
            n,
            "edited=yes",
            "--overwrite",
        ],
    );
    forbidden(
        "alice",
        &["delete", "networkpolicy", "fief-default-deny", "-n", n],
    );
    forbidden(
        "alice",
        &[
            "delete",
            "resourcequota",
            "fief-quota",
            "-n",
            n,
            "--ignore-not-found=false",
        ],
    );
    forbidden("alice", &["delete", "limitrange", "fief-limits", "-n", n]);
    forbidden(
        "alice",
        &[
            "label",
            "namespace",
            n,
            "pod-security.kubernetes.io/enforce=privileged",
            "--overwrite",
        ],
    );
    forbidden(
        "alice",
        &["get", "configmaps", "-n", &format!("{other}-prod")],
    );
}

/// Operator (`bob`): workloads and config in `n`; no secrets, no RBAC, no guardrails.
fn operators_manage_workloads_and_config_only(n: &str) {
    // Operator: workloads and config; no secrets, no RBAC, no guardrails.
    let d = create_deployment(n, "by-bob");
    allowed("bob", &strs(&d));
    allowed("bob", &["get", "configmap", "app-config", "-n", n]);
    forbidden("bob", &["get", "secret", "app-secret", "-n", n]);
    forbidden(
        "bob",
        &[
            "label",
            "rolebinding",
            "fief-viewer",
            "-n",
            n,
            "edited=bob",
            "--overwrite",
        ],
    );
    forbidden(
        "bob",
        &["delete", "networkpolicy", "fief-default-deny", "-n", n],
    );
}

/// `kubectl create deployment NAME` in `ns`, as arguments.
fn create_deployment(ns: &str, name: &str) -> Vec<String> {
    vec![
        "create".to_string(),
        "deployment".into(),
        name.into(),
        "--image=registry.example.com/web:1".into(),
        "-n".into(),
        ns.to_string(),
    ]
}

#[test]
fn resource_quota_from_the_tenant_spec_is_enforced() {
    let agent_ns = common::unique("fief-quota");
    let dir = repo(&agent_ns);
    let t = common::unique("quota");
    write(
        dir.path(),
        &format!("tenants/{t}.yaml"),
        &tenant_file(
            &t,
            "  quota: {pods: \"1\", cpu: \"1\", memory: 1Gi}\n  components: []\n",
        ),
    );
    apply_admin(dir.path(), &[&t]);
    let ns = format!("{t}-prod");
    let pod = |name: &str| {
        kubectl(
            None,
            &[
                "run",
                name,
                "-n",
                &ns,
                "--image=registry.example.com/app:1",
                "--restart=Never",
            ],
        )
    };
    // The first pod fits once the quota controller has counted usage and the namespace's
    // default ServiceAccount exists; retry until then.
    let mut first = Err(String::new());
    for _ in 0..60 {
        first = pod("first");
        if first.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(first.is_ok(), "first pod: {first:?}");
    let second = pod("second").unwrap_err();
    assert!(
        second.contains("exceeded quota") && second.contains("fief-quota"),
        "{second}"
    );
}

const AGENT_SA: &str = "system:serviceaccount:fief-system:fief-agent";

/// `deploy/rbac.yaml` and `deploy/admission-policy.yaml` applied for real (idempotent), and a
/// kubeconfig holding a token of the agent's own ServiceAccount `fief-system/fief-agent`.
fn agent_credentials() -> std::path::PathBuf {
    let cp = common::control_plane();
    let _ = kubectl(None, &["create", "namespace", "fief-system"]);
    for file in ["deploy/rbac.yaml", "deploy/admission-policy.yaml"] {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        kubectl(
            None,
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                manifest.to_str().unwrap(),
            ],
        )
        .unwrap();
    }
    let token = kubectl(
        None,
        &[
            "create",
            "token",
            "fief-agent",
            "-n",
            "fief-system",
            "--duration=2h",
        ],
    )
    .unwrap();
    let ca = kubectl(
        None,
        &[
            "config",
            "view",
            "--raw",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ],
    )
    .unwrap();
    let path = cp
        .dir()
        .join(format!("{}.kubeconfig", common::unique("agent-sa")));
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: fief-agent\n  user:\n    token: {}\ncontexts:\n- name: test\n  context: {{cluster: test, user: fief-agent}}\ncurrent-context: test\n",
        cp.apiserver_url(),
        ca.trim(),
        token.trim()
    );
    std::fs::write(&path, config).unwrap();
    path
}

/// kubectl with the agent ServiceAccount's kubeconfig; Ok(stdout) or Err(stderr).
fn kubectl_agent(kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
    let cp = common::control_plane();
    let out = Command::new(cp.kubectl_path())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

/// The agent's request is refused by the admission policy (not only by RBAC).
fn refused_by_policy(kubeconfig: &Path, args: &[&str]) {
    match kubectl_agent(kubeconfig, args) {
        Ok(out) => panic!("the agent must not be allowed to {args:?}, but got: {out}"),
        Err(e) => assert!(
            e.contains("fief-agent-scope") || e.contains("the fief agent may"),
            "{args:?} should be refused by the admission policy: {e}"
        ),
    }
}

#[test]
fn the_agent_service_account_cannot_touch_reserved_or_unlabelled_namespaces() {
    let kubeconfig = agent_credentials();
    let plain = common::unique("plain");
    kubectl(None, &["create", "namespace", &plain]).unwrap();
    let whoami = kubectl_agent(
        &kubeconfig,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(whoami.as_deref(), Ok(AGENT_SA));
    wait_for_the_agent_scope_policy(&kubeconfig);
    the_agent_cannot_take_or_arm_namespaces(
        &kubeconfig,
        &["kube-system", "default", plain.as_str()],
    );
    refused_by_policy(
        &kubeconfig,
        &["delete", "namespace", &plain, "--wait=false"],
    );
    // A reserved name is refused even when labelled as a tenant's.
    let reserved = common::unique("kube-fief");
    kubectl(None, &["create", "namespace", &reserved]).unwrap();
    kubectl(
        None,
        &[
            "label",
            "namespace",
            &reserved,
            "app.kubernetes.io/managed-by=fief",
            "fief.dev/tenant=kube",
        ],
    )
    .unwrap();
    refused_by_policy(
        &kubeconfig,
        &["delete", "namespace", &reserved, "--wait=false"],
    );
    refused_by_policy(
        &kubeconfig,
        &["create", "serviceaccount", "fief-tenant", "-n", &reserved],
    );
    refused_by_policy(
        &kubeconfig,
        &["create", "namespace", &common::unique("unlabelled")],
    );
    assert!(kubectl(None, &["get", "namespace", &plain]).is_ok());
    // RBAC alone (no policy needed): no impersonation beyond fief-tenant, no binding of
    // other roles.
    forbidden_agent(
        &kubeconfig,
        &[
            "get",
            "pods",
            "-n",
            "kube-system",
            "--as=system:serviceaccount:kube-system:default",
        ],
    );
    forbidden_agent(
        &kubeconfig,
        &["get", "secrets", "-n", "kube-system", "--as=admin"],
    );
}

/// Wait until the admission policy scoping the agent is in effect (it takes effect a
/// moment after it is created).
fn wait_for_the_agent_scope_policy(kubeconfig: &Path) {
    // The policy takes effect a moment after it is created.
    let probe = [
        "label",
        "namespace",
        "kube-system",
        "fief-probe=1",
        "--overwrite",
    ];
    for _ in 0..60 {
        match kubectl_agent(kubeconfig, &probe) {
            Err(e) if e.contains("fief-agent-scope") || e.contains("the fief agent may") => break,
            _ => std::thread::sleep(Duration::from_millis(500)),
        }
    }
    let _ = kubectl(None, &["label", "namespace", "kube-system", "fief-probe-"]);
}

/// In each of `namespaces`, the policy refuses what RBAC lets the agent do: label the
/// namespace (as a tenant's too), write fief's Roles, RoleBindings and ServiceAccount.
fn the_agent_cannot_take_or_arm_namespaces(kubeconfig: &Path, namespaces: &[&str]) {
    for &ns in namespaces {
        // RBAC lets the agent patch namespaces and write Roles; the policy does not.
        refused_by_policy(kubeconfig, &["label", "namespace", ns, "x=y"]);
        refused_by_policy(
            kubeconfig,
            &[
                "label",
                "namespace",
                ns,
                "app.kubernetes.io/managed-by=fief",
                "fief.dev/tenant=evil",
            ],
        );
        refused_by_policy(
            kubeconfig,
            &[
                "create",
                "rolebinding",
                "fief-admin",
                "-n",
                ns,
                "--role=fief-admin",
                "--user=mallory",
            ],
        );
        refused_by_policy(
            kubeconfig,
            &[
                "create",
                "role",
                "fief-admin",
                "-n",
                ns,
                "--verb=get",
                "--resource=pods",
            ],
        );
        refused_by_policy(
            kubeconfig,
            &["create", "serviceaccount", "fief-tenant", "-n", ns],
        );
    }
}

fn forbidden_agent(kubeconfig: &Path, args: &[&str]) {
    match kubectl_agent(kubeconfig, args) {
        Ok(out) => panic!("the agent must not be allowed to {args:?}, but got: {out}"),
        Err(e) => assert!(e.contains("orbidden"), "{args:?}: {e}"),
    }
}

#[test]
fn the_agent_rbac_and_admission_policy_in_deploy_are_enough_to_apply() {
    let kubeconfig = agent_credentials();
    let dir = repo("fief-system");
    // A component with its own leader-election Role and RoleBinding, applied as the tenant.
    write(
        dir.path(),
        "components/app/templates/leader.yaml",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: app-leader-election\nrules:\n  - apiGroups: [coordination.k8s.io]\n    resources: [leases]\n    verbs: [get, list, watch, create, update, patch]\n  - apiGroups: [\"\"]\n    resources: [configmaps]\n    verbs: [get, list, watch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: app-leader-election\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: app-leader-election}\nsubjects: [{kind: ServiceAccount, name: app}]\n",
    );
    let t = common::unique("agentrbac");
    write(
        dir.path(),
        &format!("tenants/{t}.yaml"),
        &tenant_file(
            &t,
            "  quota: {cpu: \"1\"}\n  access: {admins: [alice], viewers: [carol]}\n  components:\n    - name: app\n",
        ),
    );
    let args = [
        "apply",
        dir.path().to_str().unwrap(),
        "--tenant",
        &t,
        "--output",
        "json",
    ];
    let mut out = fief_as(&kubeconfig, &args);
    // RBAC bindings and the policy made a moment ago may take a moment to be seen.
    for _ in 0..20 {
        if out.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        out = fief_as(&kubeconfig, &args);
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let ns = format!("{t}-prod");
    assert!(kubectl(None, &["get", "secret", "app-secret", "-n", &ns]).is_ok());
    assert!(kubectl(None, &["get", "role", "app-leader-election", "-n", &ns]).is_ok());
    // The component's own ServiceAccount holds what its Role grants, nothing more.
    let sa = format!("--as=system:serviceaccount:{ns}:app");
    allowed_admin(&["auth", "can-i", "create", "leases", "-n", &ns, &sa]);
    assert!(kubectl(None, &["auth", "can-i", "get", "secrets", "-n", &ns, &sa]).is_err());
    let again = fief_as(&kubeconfig, &args);
    let summary: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(summary["requests"]["patch"], 0, "{summary}");

    // The API server's escalation check keeps component Roles within the tenant's rights:
    // as the tenant identity, a Role granting what fief-deployer does not is refused.
    let tenant = format!("--as=system:serviceaccount:{ns}:fief-tenant");
    let greedy = kubectl(
        None,
        &[
            "create",
            "role",
            "greedy",
            "-n",
            &ns,
            "--verb=create",
            "--resource=pods/exec",
            &tenant,
        ],
    );
    let err = greedy.expect_err("a Role beyond the tenant's rights must be refused");
    assert!(err.contains("escalat") || err.contains("orbidden"), "{err}");
    let bind = kubectl(
        None,
        &[
            "create",
            "rolebinding",
            "take-admin",
            "-n",
            &ns,
            "--role=fief-admin",
            "--user=mallory",
            &tenant,
        ],
    );
    let err = bind.expect_err("binding a Role beyond the tenant's rights must be refused");
    assert!(err.contains("orbidden"), "{err}");
}

fn allowed_admin(args: &[&str]) {
    if let Err(e) = kubectl(None, args) {
        panic!("expected yes for {args:?}: {e}");
    }
}
