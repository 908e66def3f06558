//! `fief install` and `fief uninstall` against the real test control plane: one namespace
//! setting reaches every object and the admission policy, the Secrets come from the credential
//! files and are never printed, `--export` writes the manifests without them, and uninstall
//! keeps the namespace, the inventories and the tenants' objects.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::cluster_cli::{kubectl, kubectl_json, kubectl_ok};
use common::util::text;

const AGE_KEY: &str =
    "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQTESTONLY\n";
const WEBHOOK: &str = "hook-secret-never-printed";

fn fief(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(common::control_plane().admin_kubeconfig())
        .output()
        .expect("run fief")
}

fn credentials(dir: &Path) -> (String, String) {
    let (age, hook) = (dir.join("keys.txt"), dir.join("webhook"));
    std::fs::write(&age, AGE_KEY).unwrap();
    std::fs::write(&hook, WEBHOOK).unwrap();
    (age.display().to_string(), hook.display().to_string())
}

fn install_args<'a>(ns: &'a str, age: &'a str, hook: &'a str) -> Vec<&'a str> {
    vec![
        "install",
        "--namespace",
        ns,
        "--image",
        "fief.test/fief:install",
        "--repo",
        "git://127.0.0.1:9/tenants",
        "--age-key-file",
        age,
        "--webhook-secret-file",
        hook,
    ]
}

#[test]
fn export_writes_the_manifests_for_the_namespace_and_never_a_secret_value() {
    let dir = tempfile::tempdir().unwrap();
    let (age, hook) = credentials(dir.path());
    let mut args = install_args("platform-gitops", &age, &hook);
    args.push("--export");
    let out = fief(&args);
    let yaml = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!yaml.contains("fief-system"), "{yaml}");
    assert!(
        !yaml.contains("TESTONLY") && !yaml.contains(WEBHOOK),
        "a secret value printed"
    );
    assert!(
        yaml.contains("create secret generic fief-age-key --from-file=keys.txt=FILE"),
        "{yaml}"
    );
    for expected in [
        "kind: Namespace",
        "name: platform-gitops",
        "system:serviceaccount:platform-gitops:fief-agent",
        "image: fief.test/fief:install",
        "--age-key-file=/etc/fief/age/keys.txt",
        "--lease-namespace=platform-gitops",
    ] {
        assert!(yaml.contains(expected), "{expected} missing:\n{yaml}");
    }
}

#[test]
fn install_in_a_namespace_of_its_own_puts_the_policy_in_force_and_uninstall_keeps_the_tenants() {
    let ns = common::unique("platform");
    let dir = tempfile::tempdir().unwrap();
    let (age, hook) = credentials(dir.path());
    let mut args = install_args(&ns, &age, &hook);
    args.push("--no-wait");
    let out = fief(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}{stdout}", text(&out.stderr));
    assert!(!stdout.contains("TESTONLY") && !stdout.contains(WEBHOOK));

    let namespace = kubectl_json(&["get", "namespace", &ns]);
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    let secret = kubectl_json(&["get", "secret", "-n", &ns, "fief-age-key"]);
    assert!(secret["data"]["keys.txt"].is_string(), "{secret}");
    let deployment = kubectl_json(&["get", "deployment", "-n", &ns, "fief-agent"]);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "fief.test/fief:install");
    let binding = kubectl_json(&["get", "clusterrolebinding", &format!("fief-agent-{ns}")]);
    assert_eq!(binding["subjects"][0]["namespace"], ns.as_str());

    // The policy holds the agent's own identity out of reserved namespaces.
    let agent = format!("--as=system:serviceaccount:{ns}:fief-agent");
    let mut refused = String::new();
    for _ in 0..60 {
        let out = kubectl(&[&agent, "label", "namespace", "kube-system", "fief-probe=1"]);
        refused = text(&out.stderr);
        if !out.status.success() && refused.contains("the fief agent may") {
            break;
        }
        let _ = kubectl(&["label", "namespace", "kube-system", "fief-probe-"]);
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(refused.contains("the fief agent may"), "{refused}");

    // An inventory and a tenant object stand in for a fleet the agent managed.
    kubectl_ok(&[
        "create",
        "configmap",
        "-n",
        &ns,
        "fief-tenant-acme",
        "--from-literal=k=v",
    ]);
    let tenant_ns = common::unique("acme-prod");
    kubectl_ok(&["create", "namespace", &tenant_ns]);
    kubectl_ok(&[
        "create",
        "configmap",
        "-n",
        &tenant_ns,
        "app-config",
        "--from-literal=k=v",
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["uninstall", "--namespace", &ns, "--kubeconfig"])
        .arg(common::control_plane().admin_kubeconfig())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Kept:"), "{}", text(&out.stdout));
    for gone in [
        vec!["get", "deployment", "-n", &ns, "fief-agent"],
        vec!["get", "secret", "-n", &ns, "fief-age-key"],
        vec![
            "get",
            "validatingadmissionpolicy",
            &format!("fief-agent-scope-{ns}"),
        ],
    ] {
        assert!(!kubectl(&gone).status.success(), "{gone:?} still there");
    }
    kubectl_ok(&["get", "namespace", &ns]);
    kubectl_ok(&["get", "configmap", "-n", &ns, "fief-tenant-acme"]);
    kubectl_ok(&["get", "configmap", "-n", &tenant_ns, "app-config"]);
}

#[test]
fn a_rollout_that_does_not_finish_in_time_exits_5_naming_the_deployment() {
    let ns = common::unique("slow");
    let out = fief(&[
        "install",
        "--namespace",
        &ns,
        "--image",
        "fief.test/fief:install",
        "--repo",
        "git://127.0.0.1:9/tenants",
        "--timeout",
        "3s",
    ]);
    // No node runs the Pods here: the rollout never finishes.
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("fief-agent") && stderr.contains("did not roll out"),
        "{stderr}"
    );
    let _ = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["uninstall", "--namespace", &ns, "--kubeconfig"])
        .arg(common::control_plane().admin_kubeconfig())
        .output();
}

#[test]
fn check_passes_for_a_cluster_admin_and_names_each_missing_right_for_a_user_without_any() {
    let out = fief(&["check", "--namespace", "platform-gitops"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ok   Kubernetes v1."), "{stdout}");
    assert!(stdout.contains("admission policies: served"), "{stdout}");
    assert!(
        stdout.contains("may create and patch deployments.apps in platform-gitops"),
        "{stdout}"
    );
    let bob = common::control_plane().kubeconfig_for("bob");
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["check", "--kubeconfig"])
        .arg(&bob)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("FAIL may not create or patch namespaces: `fief install` needs it"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL may not create or patch clusterroles.rbac.authorization.k8s.io"),
        "{stdout}"
    );
}
