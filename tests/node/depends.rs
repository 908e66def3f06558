//! `dependsOn` on the real node: web depends on db, both busybox `httpd` Deployments with a
//! readiness probe; `fief apply --wait` creates web only once db's Pod has really turned
//! Ready, and both end Ready.

use super::*;

use super::workload::WEB_TEMPLATE;

/// A repo whose tenant runs `db` and `web`, web depending on db, one replica each.
fn repo(agent_ns: &str, tenant: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("tempdir");
    let varz = format!(
        "replicas: 1\nimage: {}\ngreeting: served-by-busybox\n",
        common::node::BUSYBOX_IMAGE
    );
    let db = WEB_TEMPLATE
        .replace("name: web", "name: db")
        .replace("app: web", "app: db");
    let files = [
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        ("components/db/varz.yaml".to_string(), varz.clone()),
        ("components/db/templates/deployment.yaml".to_string(), db),
        ("components/web/varz.yaml".to_string(), varz),
        (
            "components/web/component.yaml".to_string(),
            "dependsOn: [db]\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.to_string(),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n    - name: db\n"
            ),
        ),
    ];
    for (path, text) in &files {
        let p = repo.path().join(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }
    repo
}

/// When the condition `Ready` of the first Pod labelled `app=<app>` in `ns` last turned.
fn pod_ready_at(ns: &str, app: &str) -> String {
    let pods =
        kubectl_json(&["get", "pods", "-n", ns, "-l", &format!("app={app}")]).expect("list pods");
    pods["items"][0]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn apply_wait_creates_a_dependent_only_once_its_dependencys_pods_are_ready() {
    let cluster = node_cluster();
    let tenant = common::unique("dep");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-dep");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = repo(&agent_ns, &tenant);
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("apply")
        .arg(repo.path())
        .args(["--wait", "--timeout", "180s", "--kubeconfig"])
        .arg(cluster.cp().admin_kubeconfig())
        .output()
        .expect("cannot run fief apply");
    assert!(
        out.status.success(),
        "fief apply --wait failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let db_ready = pod_ready_at(&ns, "db");
    let web = kubectl_json(&["get", "deployment", "-n", &ns, "web"]).expect("web deployment");
    let web_created = web["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!db_ready.is_empty(), "db's Pod is Ready");
    // RFC 3339 times of one clock, to the second: web was created no earlier than db's Pod
    // turned Ready.
    assert!(
        web_created >= db_ready,
        "web created {web_created}, db Ready {db_ready}"
    );
    assert_eq!(web["status"]["readyReplicas"], 1, "{web}");
}
