//! The agent's own rights from deploy/: its ServiceAccount cannot touch reserved or
//! unlabelled namespaces, and its RBAC and admission policy are enough to apply.

use super::*;

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
    Kubectl::kubeconfig(kubeconfig).run(args)
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
