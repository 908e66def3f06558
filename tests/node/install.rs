//! `fief install` on the real node: from nothing to a pushed change live, in a namespace of
//! its own, with the locally built image and an age key; both replicas Running under the
//! `restricted` Pod Security Standard; `fief uninstall` leaves the tenants running.

use std::process::Command;
use std::time::Duration;

use super::common;
use super::common::node::{FIEF_IMAGE, GitServer, kubectl, kubectl_json, node_cluster, wait_for};
use super::{configmap_value, tenant_file, tenants_repo};

fn fief(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(node_cluster().cp().admin_kubeconfig())
        .output()
        .expect("run fief")
}

/// Wait until the tenant's ConfigMap in `tenant_ns` greets with `greeting` (else show the
/// logs of the agent in `ns`).
fn wait_for_greeting(what: &str, tenant_ns: &str, ns: &str, greeting: &str, timeout: Duration) {
    wait_for(what, timeout, || {
        match configmap_value(tenant_ns, "app-config", "greeting").as_deref() {
            Some(g) if g == greeting => Ok(()),
            other => Err(format!(
                "greeting {other:?}; agent logs:\n{}",
                common::node::agent_diagnostics(ns)
            )),
        }
    });
}

#[test]
fn fief_install_takes_a_namespace_from_nothing_to_a_pushed_change_live_and_uninstall_keeps_tenants()
{
    let cluster = node_cluster();
    let ns = common::unique("platform-gitops");
    let tenant = common::unique("inst");
    // The repo names the namespace its inventories live in: the one the agent is installed in.
    let mut files = tenants_repo(std::slice::from_ref(&tenant), "hello");
    files.push(("fief.yaml".to_string(), format!("agentNamespace: {ns}\n")));
    let git = GitServer::on(cluster.node_ip(), &files);
    let dir = tempfile::tempdir().expect("tempdir");
    let key = common::sops::age_keygen(dir.path(), "keys.txt");
    let key = key.file.display().to_string();
    let out = fief(&[
        "install",
        "--namespace",
        &ns,
        "--image",
        FIEF_IMAGE,
        "--repo",
        &git.url(),
        "--interval",
        "2s",
        "--age-key-file",
        &key,
        "--timeout",
        "240s",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        common::node::running_agent_pods(&ns).len(),
        2,
        "both replicas Running under restricted"
    );
    let enforce = kubectl_json(&["get", "namespace", &ns]).unwrap_or_default()["metadata"]
        ["labels"]["pod-security.kubernetes.io/enforce"]
        .clone();
    assert_eq!(enforce, "restricted");
    let tenant_ns = format!("{tenant}-prod");
    wait_for_greeting(
        "the tenant applied",
        &tenant_ns,
        &ns,
        "hello",
        Duration::from_secs(120),
    );

    git.commit(&[tenant_file(&tenant, "bonjour")], "bonjour");
    wait_for_greeting(
        "the pushed change live",
        &tenant_ns,
        &ns,
        "bonjour",
        Duration::from_secs(60),
    );

    let out = fief(&["uninstall", "--namespace", &ns]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !kubectl(&["get", "deployment", "-n", &ns, "fief-agent"], None)
            .status
            .success()
    );
    assert_eq!(
        configmap_value(&tenant_ns, "app-config", "greeting").as_deref(),
        Some("bonjour"),
        "the tenant goes on running"
    );
}
