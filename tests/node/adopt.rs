//! Adoption on the real node: a workload Flux's kustomize-controller made (a Deployment whose
//! Pods run, a Service, a ConfigMap, their namespace) is taken by `fief apply --adopt` with
//! the same objects and the same Pods, no delete at the API server; an object that differs
//! leaves its tenant untouched; once taken, a prune removes what leaves git.

use super::*;
use workload::{wait_for_two_ready_web_pods, web_repo};

const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n    - {name: http, port: 80, targetPort: 8080}\n";
const CONFIG: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\ndata:\n  mode: live\n";

/// `fief CMD REPO ARGS` (against the node cluster, but for `render`); its output.
fn fief(cmd: &str, repo: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fief"));
    command.arg(cmd).arg(repo).args(args);
    if cmd != "render" {
        command
            .arg("--kubeconfig")
            .arg(node_cluster().cp().admin_kubeconfig());
    }
    command.output().expect("run fief")
}

/// What Flux would have applied: the component objects fief renders for `tenant` (without
/// fief's labels) and their namespace, server-side applied as `kustomize-controller`.
fn flux_made(repo: &Path, tenant: &str, ns: &str) {
    let out = fief("render", repo, &["-t", tenant, "-o", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let mut items: Vec<Value> = list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o["metadata"]["labels"]["fief.dev/component"] == "web")
        .collect();
    items.insert(
        0,
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    );
    for o in &mut items {
        if let Some(labels) = o["metadata"]["labels"].as_object_mut() {
            labels.retain(|k, _| {
                !k.starts_with("fief.dev/")
                    && !k.starts_with("app.kubernetes.io/managed-by")
                    && !k.starts_with("applyset.")
            });
            labels.insert("kustomize.toolkit.fluxcd.io/name".into(), "tenants".into());
        }
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let out = kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager=kustomize-controller",
            "-f",
            "-",
        ],
        Some(&list.to_string()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The uids of the component's three objects in `ns`.
fn uids(ns: &str) -> Vec<Value> {
    [
        ("deployment", "web"),
        ("service", "web"),
        ("configmap", "web-settings"),
    ]
    .iter()
    .map(|(kind, name)| {
        kubectl_json(&["get", kind, "-n", ns, name]).expect("the object")["metadata"]["uid"].clone()
    })
    .collect()
}

/// Set the ConfigMap's `mode` by hand, as someone editing what Flux made.
fn set_mode(ns: &str, mode: &str) {
    let patch = format!(r#"{{"data":{{"mode":"{mode}"}}}}"#);
    kubectl_ok(&[
        "patch",
        "configmap",
        "web-settings",
        "-n",
        ns,
        "--type",
        "merge",
        "-p",
        &patch,
    ]);
}

/// The names of the two Ready web Pods in `ns`, sorted.
fn ready_pods(ns: &str) -> Vec<String> {
    let (pods, _) = wait_for_two_ready_web_pods(ns);
    let mut names: Vec<String> = pods.iter().map(pod_name).collect();
    names.sort();
    names
}

#[test]
fn a_running_workload_flux_made_is_adopted_with_the_same_pods_and_no_delete() {
    let _cluster = node_cluster();
    let tenant = common::unique("adopt");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-adopt");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = web_repo(&agent_ns, &tenant);
    for (file, text) in [("service.yaml", SERVICE), ("config.yaml", CONFIG)] {
        fs::write(
            repo.path().join("components/web/templates").join(file),
            text,
        )
        .expect("write");
    }
    flux_made(repo.path(), &tenant, &ns);
    let pods = ready_pods(&ns);
    let objects = uids(&ns);
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_micros() as i64;

    // An object that differs: the tenant is left alone, the object named.
    set_mode(&ns, "edited");
    let out = fief("apply", repo.path(), &["--adopt"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("ConfigMap/{ns}/web-settings"))
            && err.contains("differ from the render"),
        "{err}"
    );
    let live = kubectl_json(&["get", "configmap", "-n", &ns, "web-settings"]).expect("configmap");
    assert_eq!(live["data"]["mode"], "edited");
    assert!(
        live["metadata"]["labels"]["fief.dev/tenant"].is_null(),
        "{live}"
    );

    // Put back as Flux had it: everything is taken, in place.
    set_mode(&ns, "live");
    let out = fief("apply", repo.path(), &["--adopt"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(uids(&ns), objects, "the same objects");
    assert_eq!(ready_pods(&ns), pods, "the same Pods, still Ready");
    let deletes: Vec<_> = audit_writes()
        .into_iter()
        .filter(|w| w.verb == "delete" && w.namespace == ns && w.received_us >= since)
        .collect();
    assert!(deletes.is_empty(), "{deletes:?}");

    // Once taken, a prune removes what leaves git.
    fs::remove_file(repo.path().join("components/web/templates/config.yaml")).expect("rm");
    let out = fief("apply", repo.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(kubectl_json(&["get", "configmap", "-n", &ns, "web-settings"]).is_none());
}

/// The node cluster's audit log, every mutating request so far.
fn audit_writes() -> Vec<common::audit::Write> {
    let path = node_cluster()
        .cp()
        .env("FIEF_CP_AUDIT_LOG")
        .expect("an audit log");
    common::audit::writes_in(Path::new(path))
}
