//! The Helm chart (deploy/chart/fief) on the real node, as tests/node/install.rs does
//! `fief install`: `helm install` with the locally built image and an age key in a namespace of
//! its own takes the agent from nothing to a pushed change live, both replicas Running under
//! the `restricted` Pod Security Standard; `helm upgrade` to a new image tag rolls the
//! Deployment without one write to a tenant's namespace (counted in the API server's audit
//! log); `helm uninstall` removes the agent and leaves the tenant running.
//!
//! Needs the pinned helm CLI in `$FIEF_HELM_BIN` (tools/test.sh sets it).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use super::common;
use super::common::node::{
    FIEF_IMAGE, FIEF_IMAGE_NEXT, GitServer, kubectl, kubectl_json, node_cluster, wait_for,
};
use super::{configmap_value, tenant_file, tenants_repo};

/// Helm's release record lives here; the agent goes in the chart's `namespace`.
const RELEASE_NAMESPACE: &str = "default";

/// `helm ARGS` against the node cluster as admin, Helm's own folders in `home`.
fn helm(home: &Path, args: &[&str]) -> Output {
    let out = Command::new(common::offline::helm_bin())
        .args(args)
        .arg("--kubeconfig")
        .arg(node_cluster().cp().admin_kubeconfig())
        .args(["--namespace", RELEASE_NAMESPACE])
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", common::offline::helm_bin().display()));
    assert!(
        out.status.success(),
        "helm {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn chart() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/chart/fief")
        .display()
        .to_string()
}

/// The images of the agent's Running pods that are not being deleted.
fn running_images(ns: &str) -> Vec<String> {
    common::node::running_agent_pods(ns)
        .iter()
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The node cluster's API server audit log, one JSON event a line.
fn audit_log() -> String {
    let path = node_cluster()
        .cp()
        .env("FIEF_CP_AUDIT_LOG")
        .expect("the control plane's env names FIEF_CP_AUDIT_LOG");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// Mutating requests to objects in `ns` among the audit log's lines after the first `from`:
/// `verb resource/name by user`.
fn writes_in(ns: &str, from: usize) -> Vec<String> {
    audit_log()
        .lines()
        .skip(from)
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["namespace"] == ns)
        .filter(|e| {
            matches!(
                e["verb"].as_str(),
                Some("create" | "update" | "patch" | "delete" | "deletecollection")
            )
        })
        .map(|e| {
            format!(
                "{} {}/{} by {}",
                e["verb"].as_str().unwrap_or_default(),
                e["objectRef"]["resource"].as_str().unwrap_or_default(),
                e["objectRef"]["name"].as_str().unwrap_or_default(),
                e["user"]["username"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn helm_install_goes_live_upgrade_rolls_without_tenant_writes_and_uninstall_keeps_tenants() {
    let cluster = node_cluster();
    let ns = common::unique("helm-gitops");
    let release = common::unique("fief");
    let tenant = common::unique("helm");
    let tenant_ns = format!("{tenant}-prod");
    let mut files = tenants_repo(std::slice::from_ref(&tenant), "hello");
    files.push(("fief.yaml".to_string(), format!("agentNamespace: {ns}\n")));
    let git = GitServer::on(cluster.node_ip(), &files);
    let dir = tempfile::tempdir().expect("tempdir");
    let key = common::sops::age_keygen(dir.path(), "keys.txt");
    let home = dir.path().join("helm");

    // Install: from nothing to both replicas Ready.
    install_the_release(&home, &release, &ns, &git.url(), &key.file);
    the_tenant_and_a_pushed_change_go_live(&git, &tenant, &tenant_ns, &ns);
    // The leader's pass over the pushed change is over before the upgrade is counted.
    std::thread::sleep(Duration::from_secs(5));

    // The log holds the agent's writes to the tenant's namespace, so a count of none after
    // the upgrade means none were sent.
    let before = writes_in(&tenant_ns, 0);
    assert!(
        before
            .iter()
            .any(|w| w.starts_with("patch configmaps/app-config")),
        "the audit log shows no apply of the tenant's ConfigMap: {before:#?}"
    );

    // Upgrade to the same build under another tag: the Deployment rolls, and the new leader
    // finds every tenant as it left it (nothing written to the tenant's namespace).
    let mark = audit_log().lines().count();
    upgrade_to_the_next_tag(&home, &release, &ns);
    std::thread::sleep(Duration::from_secs(5));
    let writes = writes_in(&tenant_ns, mark);
    assert!(
        writes.is_empty(),
        "the upgrade wrote to the tenant's namespace: {writes:#?}"
    );
    assert_eq!(
        configmap_value(&tenant_ns, "app-config", "greeting").as_deref(),
        Some("bonjour")
    );

    uninstall_keeps_the_agent_namespace_and_the_tenant(&home, &release, &ns, &tenant, &tenant_ns);
}

/// `helm install` of the chart as `release` into `ns` (repo `repo_url`, the age key from
/// `age_key_file`), waiting for it: its notes name the agent namespace, both replicas run
/// under `restricted`, the age key is in its Secret.
fn install_the_release(home: &Path, release: &str, ns: &str, repo_url: &str, age_key_file: &Path) {
    let (repository, tag) = FIEF_IMAGE.split_once(':').expect("image tag");
    let chart = chart();
    let (namespace, repo) = (format!("namespace={ns}"), format!("repo.url={repo_url}"));
    let (image, image_tag) = (
        format!("image.repository={repository}"),
        format!("image.tag={tag}"),
    );
    let age_key = format!("ageKey.key={}", age_key_file.display());
    let install = helm(
        home,
        &[
            "install",
            release,
            &chart,
            "--set",
            &namespace,
            "--set",
            &image,
            "--set",
            &image_tag,
            "--set",
            &repo,
            "--set",
            "interval=2s",
            "--set-file",
            &age_key,
            "--wait",
            "--timeout",
            "240s",
        ],
    );
    let notes = String::from_utf8_lossy(&install.stdout);
    assert!(
        notes.contains(&format!("agentNamespace: {ns}")),
        "the notes say what fief.yaml must name:\n{notes}"
    );
    assert_eq!(
        running_images(ns),
        [FIEF_IMAGE, FIEF_IMAGE],
        "both replicas Running; {}",
        common::node::agent_diagnostics(ns)
    );
    let labels =
        kubectl_json(&["get", "namespace", ns]).unwrap_or_default()["metadata"]["labels"].clone();
    assert_eq!(labels["pod-security.kubernetes.io/enforce"], "restricted");
    let secret = kubectl_json(&["get", "secret", "-n", ns, "fief-age-key"]);
    assert!(
        secret.is_some_and(|s| s["data"]["keys.txt"].is_string()),
        "the age key's Secret"
    );
}

/// The agent of the release in `ns` applies the tenant, then a change pushed to `git`.
fn the_tenant_and_a_pushed_change_go_live(
    git: &GitServer,
    tenant: &str,
    tenant_ns: &str,
    ns: &str,
) {
    wait_for(
        "the tenant applied",
        Duration::from_secs(120),
        || match configmap_value(tenant_ns, "app-config", "greeting").as_deref() {
            Some("hello") => Ok(()),
            other => Err(format!(
                "greeting {other:?}; {}",
                common::node::agent_diagnostics(ns)
            )),
        },
    );
    git.commit(&[tenant_file(tenant, "bonjour")], "bonjour");
    wait_for(
        "the pushed change live",
        Duration::from_secs(60),
        || match configmap_value(tenant_ns, "app-config", "greeting").as_deref() {
            Some("bonjour") => Ok(()),
            other => Err(format!(
                "greeting {other:?}; {}",
                common::node::agent_diagnostics(ns)
            )),
        },
    );
}

/// `helm upgrade` of `release` to the same build under another tag: the Deployment rolls,
/// and a new replica takes the Lease.
fn upgrade_to_the_next_tag(home: &Path, release: &str, ns: &str) {
    let (_, next_tag) = FIEF_IMAGE_NEXT.split_once(':').expect("image tag");
    let chart = chart();
    let next = format!("image.tag={next_tag}");
    helm(
        home,
        &[
            "upgrade",
            release,
            &chart,
            "--reuse-values",
            "--set",
            &next,
            "--wait",
            "--timeout",
            "240s",
        ],
    );
    wait_for(
        "both replicas on the new tag",
        Duration::from_secs(120),
        || {
            let images = running_images(ns);
            if images == [FIEF_IMAGE_NEXT, FIEF_IMAGE_NEXT] {
                Ok(())
            } else {
                Err(format!(
                    "images {images:?}; {}",
                    common::node::agent_diagnostics(ns)
                ))
            }
        },
    );
    let deployment =
        kubectl_json(&["get", "deployment", "-n", ns, "fief-agent"]).expect("the Deployment");
    assert_eq!(
        deployment["status"]["updatedReplicas"], 2,
        "rolled: {}",
        deployment["status"]
    );
    // Time for the new leader to take the Lease and pass over every tenant.
    wait_for(
        "the new leader holding the Lease",
        Duration::from_secs(60),
        || {
            let holder = kubectl_json(&["get", "lease", "-n", ns, "fief-agent"])
                .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string))
                .unwrap_or_default();
            let leader = kubectl_json(&["get", "pod", "-n", ns, &holder]).unwrap_or(Value::Null);
            if leader["spec"]["containers"][0]["image"] == FIEF_IMAGE_NEXT {
                Ok(())
            } else {
                Err(format!(
                    "Lease held by {holder:?}; {}",
                    common::node::agent_diagnostics(ns)
                ))
            }
        },
    );
}

/// `helm uninstall`: the agent goes, its namespace (with the inventories) and the tenant
/// stay.
fn uninstall_keeps_the_agent_namespace_and_the_tenant(
    home: &Path,
    release: &str,
    ns: &str,
    tenant: &str,
    tenant_ns: &str,
) {
    // Uninstall: the agent goes, its namespace (with the inventories) and the tenant stay.
    helm(home, &["uninstall", release, "--wait", "--timeout", "120s"]);
    assert!(
        !kubectl(&["get", "deployment", "-n", ns, "fief-agent"], None)
            .status
            .success(),
        "the Deployment is gone"
    );
    assert!(
        !kubectl(&["get", "clusterrole", &format!("fief-agent-{ns}")], None)
            .status
            .success(),
        "the ClusterRole is gone"
    );
    assert!(
        kubectl_json(&["get", "namespace", ns]).is_some(),
        "the agent's namespace is kept"
    );
    assert!(
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            ns,
            &format!("fief-tenant-{tenant}")
        ])
        .is_some(),
        "the tenant's inventory is kept"
    );
    assert_eq!(
        configmap_value(tenant_ns, "app-config", "greeting").as_deref(),
        Some("bonjour"),
        "the tenant goes on running"
    );
}
