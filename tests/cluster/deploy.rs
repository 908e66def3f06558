//! The manifests in `deploy/` against the real API server: the namespace applies (and
//! reapplies) for real, the kustomization (`kubectl apply -k deploy/`) passes a server-side dry
//! run, the agent pod is admitted under the `restricted` Pod Security Standard its namespace
//! enforces, and the Deployment's arguments are flags `fief agent` accepts. `tests/node/main.rs`
//! installs it for real, on a node.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use common::kubectl::Kubectl;

const NAMESPACE: &str = "fief-system";

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `kubectl` as cluster admin, with `stdin` piped in when given.
fn kubectl(args: &[&str], stdin: Option<&str>) -> Output {
    match stdin {
        Some(input) => Kubectl::admin().stdin(input),
        None => Kubectl::admin(),
    }
    .output(args)
}

fn kubectl_ok(args: &[&str], stdin: Option<&str>) -> String {
    match stdin {
        Some(input) => Kubectl::admin().stdin(input),
        None => Kubectl::admin(),
    }
    .ok(args)
}

/// Server-side apply of a file in `deploy/` for real. Idempotent: other tests (and earlier
/// calls) may have created the same objects.
fn apply_for_real(file: &str) {
    let path = deploy_dir().join(file);
    kubectl_ok(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=fief-deploy-test",
            "-f",
            path.to_str().expect("UTF-8 path"),
        ],
        None,
    );
}

/// Every object kubectl printed: a `List`, one object, or several objects one after another.
fn objects(json_text: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for value in serde_json::Deserializer::from_str(json_text).into_iter::<Value>() {
        let value = value.unwrap_or_else(|e| panic!("kubectl printed bad JSON: {e}\n{json_text}"));
        match value.get("kind").and_then(Value::as_str) {
            Some("List") => all.extend(value["items"].as_array().cloned().unwrap_or_default()),
            _ => all.push(value),
        }
    }
    all
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} among the objects"))
}

/// The kustomization in `deploy/` through a server-side dry run, after the namespace exists.
fn dry_run_all() -> Vec<Value> {
    apply_for_real("namespace.yaml");
    let dir = deploy_dir();
    objects(&kubectl_ok(
        &[
            "apply",
            "--dry-run=server",
            "-o",
            "json",
            "-k",
            dir.to_str().expect("UTF-8 path"),
        ],
        None,
    ))
}

fn agent_deployment(objects: &[Value]) -> Value {
    find(objects, "Deployment", "fief-agent").clone()
}

#[test]
fn namespace_manifest_applies_and_reapplies_cleanly() {
    apply_for_real("namespace.yaml");
    apply_for_real("namespace.yaml");
    let ns: Value = serde_json::from_str(&kubectl_ok(
        &["get", "namespace", NAMESPACE, "-o", "json"],
        None,
    ))
    .expect("namespace JSON");
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
}

#[test]
fn every_deploy_manifest_passes_a_server_dry_run() {
    let objects = dry_run_all();
    for (kind, name) in [
        ("Namespace", NAMESPACE),
        ("ServiceAccount", "fief-agent"),
        ("ClusterRole", "fief-agent"),
        ("ClusterRoleBinding", "fief-agent"),
        ("Role", "fief-agent"),
        ("RoleBinding", "fief-agent"),
        ("Deployment", "fief-agent"),
        ("Service", "fief-agent"),
        ("ValidatingAdmissionPolicy", "fief-agent-scope"),
        ("ValidatingAdmissionPolicyBinding", "fief-agent-scope"),
    ] {
        find(&objects, kind, name);
    }
    for object in &objects {
        if object["kind"] != "Namespace"
            && object["kind"] != "ClusterRole"
            && object["kind"] != "ClusterRoleBinding"
            && object["kind"] != "ValidatingAdmissionPolicy"
            && object["kind"] != "ValidatingAdmissionPolicyBinding"
        {
            assert_eq!(
                object["metadata"]["namespace"], NAMESPACE,
                "{} {} is outside {NAMESPACE}",
                object["kind"], object["metadata"]["name"]
            );
        }
    }
    // The dry run changed nothing: the Deployment does not exist.
    let out = kubectl(&["get", "deployment", "fief-agent", "-n", NAMESPACE], None);
    assert!(!out.status.success(), "the dry run created the Deployment");
}

#[test]
fn agent_deployment_sets_the_pod_security_fields() {
    let deployment = agent_deployment(&dry_run_all());
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 2);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "fief-agent");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 65532);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );

    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let agent = &containers[0];
    let security = &agent["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(security["runAsUser"], 65532);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
    assert!(security["capabilities"]["add"].is_null());

    assert_eq!(agent["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(agent["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(agent["ports"][0]["containerPort"], 8080);
    assert_eq!(agent["ports"][0]["name"], "http");
    for key in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                agent["resources"][key][resource].is_string(),
                "resources.{key}.{resource} is not set"
            );
        }
    }

    // Writable places are emptyDirs; credentials are read-only Secret mounts.
    let volumes = pod["volumes"].as_array().expect("volumes");
    let volume = |name: &str| {
        volumes
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no volume {name}"))
    };
    let mounts = agent["volumeMounts"].as_array().expect("volumeMounts");
    let mount = |path: &str| {
        mounts
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("nothing mounted at {path}"))
    };
    for path in ["/var/cache/fief", "/tmp"] {
        let name = mount(path)["name"].as_str().expect("mount name");
        assert!(
            volume(name)["emptyDir"].is_object(),
            "{path} is not an emptyDir"
        );
    }
    // Both credentials are optional: a public repo needs no git credentials, and without the
    // webhook secret the webhook is off.
    let git = volume(mount("/etc/fief/git")["name"].as_str().expect("name"));
    assert_eq!(git["secret"]["secretName"], "fief-git");
    assert_eq!(git["secret"]["optional"], true);
    assert_eq!(mount("/etc/fief/git")["readOnly"], true);
    let webhook = volume(mount("/etc/fief/webhook")["name"].as_str().expect("name"));
    assert_eq!(webhook["secret"]["secretName"], "fief-webhook");
    assert_eq!(webhook["secret"]["optional"], true);
    assert_eq!(webhook["secret"]["items"][0]["key"], "secret");
    assert_eq!(mount("/etc/fief/webhook")["readOnly"], true);

    // Every replica is ready when healthy, so updates roll one pod at a time.
    assert_eq!(spec["strategy"]["type"], "RollingUpdate");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
}

#[test]
fn agent_pod_is_admitted_under_restricted_pod_security() {
    // The ServiceAccount must exist for a pod to be admitted.
    apply_for_real("namespace.yaml");
    apply_for_real("rbac.yaml");
    let deployment = agent_deployment(&dry_run_all());
    let template = &deployment["spec"]["template"];
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": common::unique("agent-pod"),
            "namespace": NAMESPACE,
            "labels": template["metadata"]["labels"],
        },
        "spec": template["spec"],
    });
    let out = kubectl(
        &["create", "--dry-run=server", "-o", "json", "-f", "-"],
        Some(&pod.to_string()),
    );
    assert!(
        out.status.success(),
        "the agent pod was refused:\n{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains("violate"),
        "Pod Security warnings: {}",
        text(&out.stderr)
    );

    // The namespace really enforces `restricted`: a pod without the settings is refused.
    let loose = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": common::unique("loose-pod"), "namespace": NAMESPACE },
        "spec": {
            "serviceAccountName": "fief-agent",
            "containers": [{ "name": "c", "image": template["spec"]["containers"][0]["image"] }],
        },
    });
    let out = kubectl(
        &["create", "--dry-run=server", "-f", "-"],
        Some(&loose.to_string()),
    );
    assert!(
        !out.status.success(),
        "a pod without securityContext was admitted into {NAMESPACE}"
    );
    assert!(
        text(&out.stderr).contains("PodSecurity"),
        "refused for another reason: {}",
        text(&out.stderr)
    );
}

#[test]
fn agent_args_are_flags_fief_agent_accepts() {
    let deployment = agent_deployment(&dry_run_all());
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect();
    assert_eq!(args.first().map(String::as_str), Some("agent"));
    // Every $(VAR) an argument uses is set in the container's environment (the kubelet leaves
    // an unknown one as it is): the overlay patches FIEF_REPO and FIEF_BRANCH.
    let env: Vec<&str> = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    for arg in &args {
        let mut rest = arg.as_str();
        while let Some(start) = rest.find("$(") {
            let after = &rest[start + 2..];
            let end = after.find(')').expect("closed $(VAR)");
            assert!(
                env.contains(&&after[..end]),
                "{arg} uses ${}, which the container's env does not set",
                &after[..end]
            );
            rest = &after[end..];
        }
    }
    for var in ["FIEF_REPO", "FIEF_BRANCH"] {
        assert!(
            args.iter().any(|a| a.contains(&format!("$({var})"))),
            "no argument uses $({var})"
        );
    }
    // clap parses every argument before `--help`: an unknown flag or a bad value fails.
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(&args)
        .arg("--help")
        .output()
        .expect("cannot run fief");
    assert!(
        out.status.success(),
        "fief {args:?} --help failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // Every file the agent is told to read is where a volume is mounted.
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .filter_map(|m| m["mountPath"].as_str())
        .collect();
    for arg in &args {
        if let Some((flag, value)) = arg.split_once('=')
            && (flag.ends_with("-file") || flag == "--cache-dir")
        {
            assert!(
                mounts.iter().any(|m| value.starts_with(m)),
                "{flag}={value} is not under a mounted volume ({mounts:?})"
            );
        }
    }
}

#[test]
fn service_selects_the_agent_pods() {
    let objects = dry_run_all();
    let deployment = agent_deployment(&objects);
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let service = find(&objects, "Service", "fief-agent");
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    assert_eq!(service["spec"]["ports"][0]["name"], "http");
    // The Service selects the agent's pods, and of them only the leader: its agent labels its
    // own Pod `fief.dev/leader: "true"` (the template does not carry the label).
    let selector = service["spec"]["selector"].as_object().expect("selector");
    assert_eq!(selector.get("fief.dev/leader"), Some(&json!("true")));
    assert!(labels.get("fief.dev/leader").is_none());
    for (key, value) in selector {
        if key != "fief.dev/leader" {
            assert_eq!(
                &labels[key], value,
                "selector {key} does not match the pods"
            );
        }
    }
    // The agent may label its own pod (Role in its namespace).
    let role = find(&objects, "Role", "fief-agent");
    assert!(
        role["rules"].as_array().expect("rules").iter().any(|r| {
            r["resources"] == json!(["pods"])
                && r["verbs"]
                    .as_array()
                    .is_some_and(|v| v.contains(&json!("patch")))
        }),
        "Role fief-agent cannot patch pods in {NAMESPACE}"
    );
}
