//! The baseline roles give admins, operators and viewers exactly their rights, and the
//! quota from a tenant spec is enforced.

use super::*;

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
