//! On a real node (kubelet, containerd, runc; `tools/start-node.sh`): the agent installed as
//! the install guide (docs/src/operations/install.md) says, step by step, with fief's image
//! built from this test binary, and the tenants repo on a `git daemon` that only the pod
//! network reaches; rollouts, the webhook
//! through the Service, the loss of the leader's Pod; and a tenant component whose Pods
//! really run and become Ready after `fief apply`; a chart whose migration hook runs before its
//! Deployment; and `fief install` from nothing to a pushed
//! change live in a namespace of its own.
//!
//! All tests share one cluster with one node (`common::node::node_cluster()`); the tests that
//! change the installed agent hold [`AGENT`] so they run one at a time. A node that cannot
//! start fails every test here with the reason.

mod adopt;
mod chart;
#[path = "../common/mod.rs"]
mod common;
mod depends;
mod helm;
mod install;
mod installed_agent;
mod rollout;
mod spares;
mod workload;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::node::{
    ApiProxy, FIEF_IMAGE, FIEF_IMAGE_NEXT, GitServer, NODE_NAME, NodeCluster, http_request,
    kubectl, kubectl_json, kubectl_ok, node_cluster, wait_for,
};

const NS: &str = "fief-system";
const AGENT_SELECTOR: &str = "app.kubernetes.io/name=fief-agent";
/// What a test waiting on the agent change says when it fails (see the report in tools/README).
const NEEDS_READY_REPLICAS: &str = "needs the agent change: every healthy replica is Ready \
     (today /readyz is true on the leader only, so the standby is never Ready)";
const NEEDS_LEADER_LABEL: &str = "needs the agent change: the leader labels its own Pod \
     fief.dev/leader=true (the Service selects that label)";

/// The tests that change the installed agent run one at a time.
static AGENT: Mutex<()> = Mutex::new(());

fn agent_lock() -> MutexGuard<'static, ()> {
    AGENT.lock().unwrap_or_else(|e| e.into_inner())
}

// --- the install guide ------------------------------------------------------------------------

/// The agent as installed by [`install`].
struct Install {
    git: GitServer,
    tenants: Vec<String>,
    webhook_secret: String,
    /// Holds `fief` (a link to this checkout) and `fief-install/` (the overlay).
    base: tempfile::TempDir,
    took: Duration,
}

impl Install {
    fn overlay(&self) -> PathBuf {
        self.base.path().join("fief-install")
    }
}

static INSTALL: OnceLock<Result<Install, String>> = OnceLock::new();

/// The install guide, done once per test binary; panics (in every test that needs it) when
/// it failed.
fn installed() -> &'static Install {
    let result = INSTALL.get_or_init(|| {
        std::panic::catch_unwind(install).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "install panicked".to_string())
        })
    });
    match result {
        Ok(install) => install,
        Err(reason) => panic!("installing the agent as the install guide says failed: {reason}"),
    }
}

/// The install guide, kustomize section included.
const GUIDE: &str = "docs/src/operations/install.md";

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GUIDE);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The fenced code block of the install guide whose first line is `first_line`.
fn readme_block(first_line: &str) -> String {
    let text = readme();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("```") {
            let block: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            if block.first().map(|l| l.trim()) == Some(first_line) {
                return block.join("\n") + "\n";
            }
        }
    }
    panic!("{GUIDE} has no code block starting with {first_line:?}");
}

/// `text` with `from` replaced by `to`; panics when the guide no longer holds `from`.
fn substitute(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "the install guide no longer holds {from:?}:\n{text}"
    );
    text.replace(from, to)
}

/// Runs a shell line of the guide in the folder around the overlay, with the test cluster's
/// kubectl first on PATH and its admin kubeconfig.
fn run_guide_line(base: &Path, line: &str) -> std::process::Output {
    let cp = node_cluster().cp();
    let path = format!(
        "{}:{}",
        cp.bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-euo", "pipefail", "-c", line])
        .current_dir(base)
        .env("PATH", path)
        .env("KUBECONFIG", cp.admin_kubeconfig())
        .output()
        .expect("cannot run bash")
}

/// The guide's install commands (section 3), one line at a time.
fn guide_install_lines() -> Vec<String> {
    readme_block(
        "openssl rand -hex 32 > fief-install/webhook-secret.txt   # the webhook secret (step 4)",
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .map(str::to_string)
    .collect()
}

fn install() -> Install {
    let started = Instant::now();
    let cluster = node_cluster();
    let tenants = vec![common::unique("node-a"), common::unique("node-b")];
    let git = GitServer::on(cluster.node_ip(), &tenants_repo(&tenants, "hello"));

    let (base, overlay_dir) = write_the_overlay(&git);
    // Section 3, except `rollout status` (asserted by its own test).
    let lines = guide_install_lines();
    assert!(
        lines.iter().any(|l| l.contains("rollout status")),
        "section 3 of the guide no longer ends with rollout status: {lines:?}"
    );
    for line in lines.iter().filter(|l| !l.contains("rollout status")) {
        let out = run_guide_line(base.path(), line);
        assert!(
            out.status.success(),
            "the guide's `{line}` failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let webhook_secret = fs::read_to_string(overlay_dir.join("webhook-secret.txt"))
        .expect("the guide wrote webhook-secret.txt")
        .trim()
        .to_string();

    let pods = wait_for_the_agent_and_its_tenants(&tenants);
    let took = started.elapsed();
    eprintln!(
        "install guide: agent pods {:?} Running and {} tenants applied {:.1}s after the first \
         step",
        pods.iter().map(pod_name).collect::<Vec<_>>(),
        tenants.len(),
        took.as_secs_f64()
    );
    Install {
        git,
        tenants,
        webhook_secret,
        base,
        took,
    }
}

/// Section 2 of the install guide: the overlay next to a checkout of fief (a link to this
/// one), its image and repo URL set to the test's; the folder both are in.
fn write_the_overlay(git: &GitServer) -> (tempfile::TempDir, PathBuf) {
    // Section 2: the overlay next to a checkout of fief (a link to this one).
    let base = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(env!("CARGO_MANIFEST_DIR"), base.path().join("fief"))
        .expect("link to the checkout");
    let overlay_dir = base.path().join("fief-install");
    fs::create_dir_all(&overlay_dir).expect("mkdir overlay");
    let mut kustomization = readme_block("# fief-install/kustomization.yaml");
    kustomization = substitute(
        &kustomization,
        "newName: registry.example.com/fief     # the image you pushed",
        "newName: fief.test/fief",
    );
    let (_, tag) = FIEF_IMAGE.split_once(':').expect("tag");
    kustomization = substitute(&kustomization, "newTag: 0.1.0", &format!("newTag: {tag}"));
    kustomization = substitute(
        &kustomization,
        "https://git.example.com/org/tenants.git",
        &git.url(),
    );
    fs::write(overlay_dir.join("kustomization.yaml"), &kustomization).expect("write overlay");
    (base, overlay_dir)
}

/// Wait until both agent replicas run and the agent in its Pod applied `tenants`; the
/// agent Pods.
fn wait_for_the_agent_and_its_tenants(tenants: &[String]) -> Vec<Value> {
    let (pods, _) = wait_for(
        "both agent replicas Running",
        Duration::from_secs(180),
        || {
            let pods = running_agent_pods();
            if pods.len() == 2 {
                Ok(pods)
            } else {
                Err(format!("{} Running; {}", pods.len(), agent_diagnostics()))
            }
        },
    );
    let (_, _) = wait_for(
        "the tenants applied by the agent in its Pod",
        Duration::from_secs(120),
        || {
            for t in tenants {
                let greeting = configmap_value(&format!("{t}-prod"), "app-config", "greeting");
                if greeting.as_deref() != Some("hello") {
                    return Err(format!(
                        "{t}: greeting {greeting:?}; {}",
                        agent_diagnostics()
                    ));
                }
            }
            Ok(())
        },
    );
    pods
}

fn tenants_repo(tenants: &[String], greeting: &str) -> Vec<(String, String)> {
    let mut files = vec![
        (
            "components/app/varz.yaml".to_string(),
            "greeting: hello\n".to_string(),
        ),
        (
            "components/app/templates/app.yaml".to_string(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n".to_string(),
        ),
    ];
    for t in tenants {
        files.push(tenant_file(t, greeting));
    }
    files
}

fn tenant_file(name: &str, greeting: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n      values: {{greeting: {greeting}}}\n"
        ),
    )
}

// --- reading the cluster ------------------------------------------------------------------------

fn configmap_value(ns: &str, name: &str, key: &str) -> Option<String> {
    let cm = kubectl_json(&["get", "configmap", "-n", ns, name])?;
    cm["data"][key].as_str().map(str::to_string)
}

fn pod_name(pod: &Value) -> String {
    pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn agent_pods() -> Vec<Value> {
    kubectl_json(&["get", "pods", "-n", NS, "-l", AGENT_SELECTOR])
        .and_then(|list| list["items"].as_array().cloned())
        .unwrap_or_default()
}

/// Agent pods that run (phase Running, container started) and are not being deleted.
fn running_agent_pods() -> Vec<Value> {
    agent_pods()
        .into_iter()
        .filter(|p| {
            p["metadata"]["deletionTimestamp"].is_null()
                && p["status"]["phase"] == "Running"
                && p["status"]["containerStatuses"][0]["state"]["running"].is_object()
        })
        .collect()
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The Lease holder: the leader's pod name.
fn leader() -> Option<String> {
    let lease = kubectl_json(&["get", "lease", "-n", NS, "fief-agent"])?;
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Pods, their state and the last lines of their logs: for failure messages.
fn agent_diagnostics() -> String {
    let mut out = String::from("agent pods:");
    for pod in agent_pods() {
        let name = pod_name(&pod);
        out.push_str(&format!(
            "\n  {name}: phase {} ready {} node {} image {} state {}",
            pod["status"]["phase"],
            is_ready(&pod),
            pod["spec"]["nodeName"],
            pod["spec"]["containers"][0]["image"],
            pod["status"]["containerStatuses"][0]["state"]
        ));
        let logs = kubectl(&["logs", "-n", NS, &name, "--tail=8"], None);
        for line in String::from_utf8_lossy(&logs.stdout).lines() {
            out.push_str(&format!("\n    | {line}"));
        }
        // A restarted container says why it ended, and what it logged before it did.
        let status = &pod["status"]["containerStatuses"][0];
        if status["restartCount"].as_u64().unwrap_or(0) > 0 {
            out.push_str(&format!(
                "\n  restarts {}, last state {}",
                status["restartCount"], status["lastState"]
            ));
            let previous = kubectl(&["logs", "-n", NS, &name, "--previous", "--tail=20"], None);
            for line in String::from_utf8_lossy(&previous.stdout).lines() {
                out.push_str(&format!("\n    previous | {line}"));
            }
        }
    }
    out
}

fn signature(secret: &str, body: &str) -> String {
    common::agent::hub_signature(secret, body)
}

// --- the tests ----------------------------------------------------------------------------------
