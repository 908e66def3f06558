//! On a real node (kubelet, containerd, runc; `tools/start-node.sh`): the agent installed as
//! the install guide (docs/src/operations/install.md) says, step by step, with fief's image
//! built from this test binary, and the tenants repo on a `git daemon` that only the pod
//! network reaches; rollouts, the webhook
//! through the Service, the loss of the leader's Pod; and a tenant component whose Pods
//! really run and become Ready after `fief apply`; and `fief install` from nothing to a pushed
//! change live in a namespace of its own.
//!
//! All tests share one cluster with one node (`common::node::node_cluster()`); the tests that
//! change the installed agent hold [`AGENT`] so they run one at a time. A node that cannot
//! start fails every test here with the reason.

mod common;
#[path = "node/helm.rs"]
mod helm;
#[path = "node/install.rs"]
mod install;
#[path = "node/rollout.rs"]
mod rollout;
#[path = "node/spares.rs"]
mod spares;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use common::node::{
    ApiProxy, FIEF_IMAGE, FIEF_IMAGE_NEXT, GitDaemon, NODE_NAME, NodeCluster, http_request,
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
    git: GitDaemon,
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
    let git = GitDaemon::start(cluster.node_ip(), &tenants_repo(&tenants, "hello"));

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
fn write_the_overlay(git: &GitDaemon) -> (tempfile::TempDir, PathBuf) {
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
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("hmac key");
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

// --- the tests ----------------------------------------------------------------------------------

#[test]
fn install_guide_runs_both_replicas_under_restricted_with_only_their_service_account() {
    let _guard = agent_lock();
    let install = installed();
    let cluster = node_cluster();
    let times = cluster.start_times();
    eprintln!(
        "node cluster: images {:.1}s, control plane {:.1}s, node {:.1}s (Ready {:.2}s after \
         kubelet started); install guide {:.1}s",
        times.images.as_secs_f64(),
        times.control_plane.as_secs_f64(),
        times.node.as_secs_f64(),
        times.node_ready.as_secs_f64(),
        install.took.as_secs_f64()
    );

    let (pods, _) = wait_for("two agent pods Running", Duration::from_secs(120), || {
        let pods = running_agent_pods();
        (pods.len() == 2)
            .then_some(pods)
            .ok_or_else(agent_diagnostics)
    });
    the_agent_namespace_enforces_restricted_and_its_pods_pass();
    each_pod_runs_on_the_node_with_only_its_service_account(&pods);
    // The Lease is held by one of the pods: the in-cluster identity may write it (rbac.yaml).
    let (holder, _) = wait_for("a leader", Duration::from_secs(60), || {
        leader().ok_or_else(agent_diagnostics)
    });
    assert!(
        pods.iter().any(|p| pod_name(p) == holder),
        "the Lease holder {holder} is none of the running pods"
    );
    the_tenants_are_applied_and_ready_in_their_inventories(&install.tenants);
}

/// The agent namespace enforces `restricted`, and the running agent Pods pass it (a new
/// enforce version makes the API server check them again and warn of any violation).
fn the_agent_namespace_enforces_restricted_and_its_pods_pass() {
    let ns = kubectl_json(&["get", "namespace", NS]).expect("namespace fief-system");
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted",
        "{NS} does not enforce restricted"
    );
    // A new enforce version makes the API server check the running pods against
    // `restricted` again: it warns about every pod that violates it.
    let out = kubectl(
        &[
            "label",
            "--dry-run=server",
            "--overwrite",
            "namespace",
            NS,
            "pod-security.kubernetes.io/enforce-version=v1.36",
        ],
        None,
    );
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl label failed: {warnings}");
    assert!(
        !warnings.contains("violate"),
        "running agent pods violate restricted: {warnings}"
    );
}

/// Each agent Pod runs on the node, unrestarted, and its only credentials are the
/// ServiceAccount token the kubelet mounts: no kubeconfig flag, variable or file.
fn each_pod_runs_on_the_node_with_only_its_service_account(pods: &[Value]) {
    for pod in pods {
        let name = pod_name(pod);
        assert_eq!(
            pod["spec"]["nodeName"], NODE_NAME,
            "{name} is not on the node"
        );
        let container = &pod["spec"]["containers"][0];
        // The only credentials are the ServiceAccount token the kubelet mounts: no kubeconfig
        // flag, variable or file.
        assert_eq!(pod["spec"]["serviceAccountName"], "fief-agent");
        let args: Vec<&str> = container["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !args
                .iter()
                .any(|a| a.contains("kubeconfig") || a.contains("--context")),
            "{name} runs with {args:?}"
        );
        let env = container["env"].as_array().cloned().unwrap_or_default();
        assert!(
            !env.iter().any(|e| e["name"] == "KUBECONFIG"),
            "{name} has KUBECONFIG set"
        );
        let token_mount = container["volumeMounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .any(|m| m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount");
        assert!(token_mount, "{name} has no ServiceAccount token mounted");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["restartCount"],
            0,
            "{name} restarted: {}",
            agent_diagnostics()
        );
    }
}

/// The tenants are applied, and recorded as Ready in their inventories in fief-system. (The
/// webhook test changes the second tenant, the failover tests delete and repair the first
/// one's ConfigMap.)
fn the_tenants_are_applied_and_ready_in_their_inventories(tenants: &[String]) {
    // Applied, and recorded as Ready in the tenants' inventories in fief-system. (The
    // webhook test changes the second tenant, the failover tests delete and repair the
    // first one's ConfigMap.)
    wait_for(
        "the first tenant's ConfigMap as the repo says",
        Duration::from_secs(60),
        || {
            let t = &tenants[0];
            let greeting = configmap_value(&format!("{t}-prod"), "app-config", "greeting");
            (greeting.as_deref() == Some("hello"))
                .then_some(())
                .ok_or_else(|| format!("{t}: greeting {greeting:?}"))
        },
    );
    for t in tenants {
        let (_, _) = wait_for(
            &format!("tenant {t} Ready in its inventory"),
            Duration::from_secs(60),
            || {
                let status = configmap_value(NS, &format!("fief-tenant-{t}"), "status")
                    .ok_or("no inventory")?;
                let status: Value = serde_json::from_str(&status).map_err(|e| e.to_string())?;
                let ready = status["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                ready.then_some(()).ok_or_else(|| status.to_string())
            },
        );
    }
}

#[test]
fn rollout_status_succeeds_and_an_image_update_rolls_through() {
    let _guard = agent_lock();
    let install = installed();

    // Section 3's last line, as written (bounded here so a stuck rollout fails).
    let rollout = guide_install_lines()
        .into_iter()
        .find(|l| l.contains("rollout status"))
        .expect("rollout status in the guide");
    let bounded = format!("{rollout} --timeout=120s");
    let out = run_guide_line(install.base.path(), &bounded);
    assert!(
        out.status.success(),
        "`{rollout}` did not succeed ({NEEDS_READY_REPLICAS}):\n{}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        agent_diagnostics()
    );

    // An upgrade as the guide says: a new tag in the overlay, apply again.
    let kustomization_path = install.overlay().join("kustomization.yaml");
    let kustomization = fs::read_to_string(&kustomization_path).expect("overlay");
    let (_, old_tag) = FIEF_IMAGE.split_once(':').expect("tag");
    let (_, new_tag) = FIEF_IMAGE_NEXT.split_once(':').expect("tag");
    fs::write(
        &kustomization_path,
        substitute(
            &kustomization,
            &format!("newTag: {old_tag}"),
            &format!("newTag: {new_tag}"),
        ),
    )
    .expect("write overlay");
    let started = Instant::now();
    let apply = run_guide_line(install.base.path(), "kubectl apply -k fief-install/");
    assert!(
        apply.status.success(),
        "apply -k failed: {}",
        String::from_utf8_lossy(&apply.stderr)
    );
    let out = run_guide_line(install.base.path(), &bounded);
    let took = started.elapsed();
    // Put the overlay back for the other tests, whatever happened; a stuck update is rolled
    // back, so the other tests find two pods of one ReplicaSet.
    fs::write(&kustomization_path, &kustomization).expect("restore overlay");
    if !out.status.success() {
        let _ = run_guide_line(install.base.path(), "kubectl apply -k fief-install/");
    }
    assert!(
        out.status.success(),
        "the rolling update to {FIEF_IMAGE_NEXT} did not complete ({NEEDS_READY_REPLICAS}):\n{}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        agent_diagnostics()
    );
    eprintln!(
        "rolling update to {FIEF_IMAGE_NEXT}: complete in {:.1}s",
        took.as_secs_f64()
    );
    the_updated_pods_lead_and_repair_drift(&install.tenants[0]);
}

/// Both agent Pods run the new image and are Ready; one of them leads, and repairs a
/// hand-deleted object of tenant `t` (drift repair).
fn the_updated_pods_lead_and_repair_drift(t: &str) {
    let pods = running_agent_pods();
    assert_eq!(pods.len(), 2, "{}", agent_diagnostics());
    for pod in &pods {
        assert_eq!(pod["spec"]["containers"][0]["image"], FIEF_IMAGE_NEXT);
        assert!(is_ready(pod), "{} is not Ready", pod_name(pod));
    }
    let (holder, _) = wait_for(
        "a leader among the new pods",
        Duration::from_secs(60),
        || {
            leader()
                .filter(|h| pods.iter().any(|p| &pod_name(p) == h))
                .ok_or_else(agent_diagnostics)
        },
    );
    // The new leader reconciles: a hand-deleted object comes back (drift repair).
    kubectl_ok(&[
        "delete",
        "configmap",
        "-n",
        &format!("{t}-prod"),
        "app-config",
    ]);
    wait_for(
        &format!("the new leader {holder} to repair {t}'s ConfigMap"),
        Duration::from_secs(60),
        || {
            configmap_value(&format!("{t}-prod"), "app-config", "greeting")
                .map(|_| ())
                .ok_or_else(agent_diagnostics)
        },
    );
}

#[test]
fn a_signed_push_webhook_sent_to_the_service_is_applied() {
    let _guard = agent_lock();
    let install = installed();
    let t = &install.tenants[1];
    install.git.commit(
        &[tenant_file(t, "pushed")],
        "a change the webhook announces",
    );

    let proxy = ApiProxy::start();
    // The Service through the API server's service proxy: its endpoints are the Pods its
    // selector picks, the leader alone.
    let path = format!("/api/v1/namespaces/{NS}/services/fief-agent:http/proxy/hooks/git");
    the_service_selects_the_leader_alone();
    let body = r#"{"ref":"refs/heads/main"}"#;
    let json = ("Content-Type", "application/json".to_string());
    let unsigned = proxy.request("POST", &path, std::slice::from_ref(&json), body);
    assert_eq!(
        unsigned.as_ref().map(|(code, _)| *code),
        Some(401),
        "an unsigned webhook through the Service: {unsigned:?}"
    );
    let started = Instant::now();
    let signed = proxy.request(
        "POST",
        &path,
        &[
            json,
            (
                "X-Hub-Signature-256",
                signature(&install.webhook_secret, body),
            ),
        ],
        body,
    );
    assert_eq!(
        signed.as_ref().map(|(code, _)| *code),
        Some(202),
        "a signed webhook through the Service: {signed:?}"
    );
    let (_, _) = wait_for("the pushed change applied", Duration::from_secs(20), || {
        let greeting = configmap_value(&format!("{t}-prod"), "app-config", "greeting");
        (greeting.as_deref() == Some("pushed"))
            .then_some(())
            .ok_or_else(|| format!("greeting {greeting:?}"))
    });
    eprintln!(
        "webhook through the Service: change applied {:.1}s after the push",
        started.elapsed().as_secs_f64()
    );
}

/// Service fief-agent has an endpoint, and it is the leader's Pod alone.
fn the_service_selects_the_leader_alone() {
    let (endpoints, _) = wait_for(
        &format!("an endpoint of Service fief-agent ({NEEDS_LEADER_LABEL})"),
        Duration::from_secs(45),
        || {
            let ep = kubectl_json(&["get", "endpoints", "-n", NS, "fief-agent"])
                .ok_or("no Endpoints object")?;
            let ips: Vec<String> = ep["subsets"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
                .filter_map(|a| a["ip"].as_str().map(str::to_string))
                .collect();
            if ips.is_empty() {
                Err(format!("no ready address; {}", agent_diagnostics()))
            } else {
                Ok(ips)
            }
        },
    );
    // The endpoint is the leader's pod.
    let holder = leader().expect("a leader");
    let leader_pod = kubectl_json(&["get", "pod", "-n", NS, &holder]).expect("leader pod");
    assert_eq!(
        endpoints,
        vec![
            leader_pod["status"]["podIP"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        ],
        "Service fief-agent does not select the leader {holder} alone"
    );
}

#[test]
fn a_deleted_leader_pod_is_replaced_and_the_other_replica_takes_over() {
    let _guard = agent_lock();
    let install = installed();
    let (pods, _) = wait_for("two agent pods Running", Duration::from_secs(120), || {
        let pods = running_agent_pods();
        (pods.len() >= 2)
            .then_some(pods)
            .ok_or_else(agent_diagnostics)
    });
    let (old_leader, _) = wait_for("a leader", Duration::from_secs(60), || {
        leader()
            .filter(|h| pods.iter().any(|p| &pod_name(p) == h))
            .ok_or_else(agent_diagnostics)
    });
    let standby = pods
        .iter()
        .map(pod_name)
        .find(|n| n != &old_leader)
        .expect("a second pod");

    let started = Instant::now();
    kubectl_ok(&["delete", "pod", "-n", NS, &old_leader, "--wait=false"]);
    // Another replica takes the Lease over: the standby, or the replacement pod when it
    // starts before the old Lease has expired and wins the race for it.
    let (new_leader, takeover) = wait_for(
        &format!("another replica to take the Lease over from {old_leader}"),
        Duration::from_secs(90),
        || match leader() {
            Some(h) if h != old_leader => Ok(h),
            other => Err(format!("holder {other:?}")),
        },
    );
    let which = if new_leader == standby {
        "the standby"
    } else {
        "the replacement pod"
    };
    eprintln!(
        "leader failover: {which} {new_leader} holds the Lease {:.1}s after {old_leader} was \
         deleted",
        takeover.as_secs_f64()
    );

    the_new_leader_repairs_a_deleted_object(&new_leader, &install.tenants[0]);
    // The ReplicaSet replaces the deleted pod.
    wait_for(
        "a replacement pod Running",
        Duration::from_secs(120),
        || {
            let names: Vec<String> = running_agent_pods().iter().map(pod_name).collect();
            (names.len() == 2 && !names.contains(&old_leader))
                .then_some(())
                .ok_or_else(|| format!("running {names:?}"))
        },
    );
    eprintln!(
        "leader failover: a replacement pod Running {:.1}s after the delete",
        started.elapsed().as_secs_f64()
    );

    only_the_new_leader_carries_the_leader_label(&new_leader);
}

/// The new leader reconciles: tenant `t`'s hand-deleted ConfigMap comes back.
fn the_new_leader_repairs_a_deleted_object(new_leader: &str, t: &str) {
    // The new leader reconciles: a hand-deleted object comes back.
    kubectl_ok(&[
        "delete",
        "configmap",
        "-n",
        &format!("{t}-prod"),
        "app-config",
    ]);
    let (_, repaired) = wait_for(
        &format!("the new leader {new_leader} to repair {t}'s ConfigMap"),
        Duration::from_secs(60),
        || {
            configmap_value(&format!("{t}-prod"), "app-config", "greeting")
                .map(|_| ())
                .ok_or_else(agent_diagnostics)
        },
    );
    eprintln!(
        "leader failover: the new leader repaired a deleted object in {:.1}s",
        repaired.as_secs_f64()
    );
}

/// The Service follows the leader: only the new leader's Pod carries the label.
fn only_the_new_leader_carries_the_leader_label(new_leader: &str) {
    // The Service follows the leader: only the new leader's Pod carries the label.
    wait_for(
        &format!(
            "{new_leader} labelled fief.dev/leader=true, and no other pod ({NEEDS_LEADER_LABEL})"
        ),
        Duration::from_secs(30),
        || {
            let labelled: Vec<String> = agent_pods()
                .iter()
                .filter(|p| p["metadata"]["labels"]["fief.dev/leader"] == "true")
                .map(pod_name)
                .collect();
            (labelled == vec![new_leader.to_string()])
                .then_some(())
                .ok_or_else(|| format!("labelled: {labelled:?}"))
        },
    );
}

/// A component whose Deployment runs busybox `httpd` with an HTTP readiness probe.
const WEB_TEMPLATE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534
        runAsGroup: 65534
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: httpd
          image: {{ values.image }}
          command: ["sh", "-c", "mkdir -p /tmp/www && echo {{ values.greeting }} > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
          ports:
            - {name: http, containerPort: 8080}
          readinessProbe:
            httpGet: {path: /index.html, port: http}
            periodSeconds: 1
          resources:
            requests: {cpu: 10m, memory: 16Mi}
            limits: {cpu: 100m, memory: 32Mi}
          securityContext:
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
"#;

#[test]
fn a_tenant_component_whose_pods_run_becomes_ready_after_fief_apply() {
    let cluster = node_cluster();
    let tenant = common::unique("web");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-web");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = web_repo(&agent_ns, &tenant);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("apply")
        .arg(repo.path())
        .arg("--kubeconfig")
        .arg(cluster.cp().admin_kubeconfig())
        .output()
        .expect("cannot run fief apply");
    assert!(
        out.status.success(),
        "fief apply failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (pods, ready_after) = wait_for_two_ready_web_pods(&ns);
    eprintln!(
        "tenant component: 2 busybox httpd pods Ready {:.1}s after fief apply started \
         ({:.1}s after it returned)",
        started.elapsed().as_secs_f64(),
        ready_after.as_secs_f64()
    );
    let deployment = kubectl_json(&["get", "deployment", "-n", &ns, "web"]).expect("deployment");
    assert_eq!(deployment["status"]["readyReplicas"], 2);
    assert_eq!(
        deployment["metadata"]["labels"]["fief.dev/tenant"],
        tenant.as_str()
    );

    the_pods_serve_over_the_bridge(cluster, &pods);
    no_pod_traffic_leaves_the_machine(cluster, &ns, &pods);
}

/// A tenants repo (agent namespace `agent_ns`) whose tenant `tenant` runs the busybox
/// `web` component, two replicas, under a quota.
fn web_repo(agent_ns: &str, tenant: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("tempdir");
    let files = [
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            format!(
                "replicas: 2\nimage: {}\ngreeting: served-by-busybox\n",
                common::node::BUSYBOX_IMAGE
            ),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.to_string(),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n"
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

/// Wait until both `web` Pods in `ns` are Ready (else say where they are, with the
/// namespace's Events); the Pods and how long that took.
fn wait_for_two_ready_web_pods(ns: &str) -> (Vec<Value>, Duration) {
    let (pods, ready_after) = wait_for("both web pods Ready", Duration::from_secs(120), || {
        let list =
            kubectl_json(&["get", "pods", "-n", ns, "-l", "app=web"]).ok_or("cannot list pods")?;
        let pods = list["items"].as_array().cloned().unwrap_or_default();
        let ready = pods.iter().filter(|p| is_ready(p)).count();
        if ready == 2 {
            Ok(pods)
        } else {
            let states: Vec<String> = pods
                .iter()
                .map(|p| {
                    format!(
                        "{} {} {}",
                        pod_name(p),
                        p["status"]["phase"],
                        p["status"]["containerStatuses"][0]["state"]
                    )
                })
                .collect();
            let events = kubectl(
                &["get", "events", "-n", ns, "--sort-by=.lastTimestamp"],
                None,
            );
            Err(format!(
                "{ready} of 2 Ready: {states:?}\n{}",
                String::from_utf8_lossy(&events.stdout)
            ))
        }
    });
    (pods, ready_after)
}

/// The Pods really serve: from the host, over the bridge, to each Pod's IP.
fn the_pods_serve_over_the_bridge(cluster: &NodeCluster, pods: &[Value]) {
    // The pods really serve: from the host, over the bridge, to each pod's IP.
    let subnet_prefix = cluster
        .subnet()
        .rsplit_once('.')
        .map(|(p, _)| format!("{p}."))
        .expect("subnet");
    for pod in pods {
        let ip = pod["status"]["podIP"].as_str().expect("pod IP");
        assert!(
            ip.starts_with(&subnet_prefix),
            "pod IP {ip} is outside the node's subnet {}",
            cluster.subnet()
        );
        let got = http_request((ip, 8080), "GET", "/index.html", &[], "");
        assert_eq!(
            got.as_ref()
                .map(|(code, body)| (*code, body.trim().to_string())),
            Some((200, "served-by-busybox".to_string())),
            "GET http://{ip}:8080/index.html"
        );
    }
}

/// No Pod traffic can leave the machine: no default route in the Pod (kubectl exec goes
/// API server -> kubelet -> containerd), IP forwarding off on the host; the node is the
/// one expected.
fn no_pod_traffic_leaves_the_machine(cluster: &NodeCluster, ns: &str, pods: &[Value]) {
    // No pod traffic can leave the machine: no default route in the pod (kubectl exec goes
    // API server -> kubelet -> containerd), IP forwarding off on the host.
    let name = pod_name(&pods[0]);
    let routes = kubectl_ok(&["exec", "-n", ns, &name, "--", "ip", "route"]);
    assert!(
        !routes.contains("default"),
        "the pod has a default route:\n{routes}"
    );
    assert!(
        routes.contains(&format!("10.0.0.1 via {}", cluster.node_ip())),
        "the pod has no route to the API server's Service IP:\n{routes}"
    );
    let forwarding = fs::read_to_string("/proc/sys/net/ipv4/ip_forward").expect("ip_forward");
    assert_eq!(forwarding.trim(), "0", "IP forwarding is on");
    let node = kubectl_json(&["get", "node", NODE_NAME]).expect("node");
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.36.3");
    let internal: Vec<&Value> = node["status"]["addresses"]
        .as_array()
        .expect("addresses")
        .iter()
        .filter(|a| a["type"] == "InternalIP")
        .collect();
    assert_eq!(internal.len(), 1);
    assert_eq!(internal[0]["address"], cluster.node_ip());
}

#[test]
fn apply_wait_reports_a_deployment_that_never_becomes_ready_and_passes_once_fixed() {
    let cluster = node_cluster();
    let tenant = common::unique("sick");
    let agent_ns = common::unique("fief-sick");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = tempfile::tempdir().expect("tempdir");
    let varz = |probe: &str| {
        format!(
            "replicas: 1\nimage: {}\ngreeting: hi\nprobePath: {probe}\n",
            common::node::BUSYBOX_IMAGE
        )
    };
    let files = [
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            varz("/missing.html"),
        ),
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 20s}\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.replace("path: /index.html", "path: {{ values.probePath }}"),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n"
            ),
        ),
    ];
    for (path, text) in &files {
        let p = repo.path().join(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }
    let apply = || {
        Command::new(env!("CARGO_BIN_EXE_fief"))
            .arg("apply")
            .arg(repo.path())
            .arg("--wait")
            .arg("--kubeconfig")
            .arg(cluster.cp().admin_kubeconfig())
            .output()
            .expect("cannot run fief apply")
    };
    let out = apply();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(5),
        "a probe that never passes: {stderr}"
    );
    assert!(
        stderr.contains(&format!("tenant `{tenant}`: not healthy"))
            && stderr.contains("Deployment")
            && stderr.contains("/web")
            && stderr.contains("after 20s"),
        "{stderr}"
    );
    fs::write(
        repo.path().join("components/web/varz.yaml"),
        varz("/index.html"),
    )
    .expect("fix");
    let out = apply();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{tenant}: healthy")));
}

/// The agent (a process on this machine, against the node cluster) gates a tenant on the
/// health of what it applied: a readiness probe that never passes keeps it `Reconciling`,
/// then `Stalled` naming the Deployment after its 20s `health.timeout`; the fix commit makes
/// it `Ready` once the new Pods really pass their probe.
#[test]
fn the_agent_holds_a_tenant_reconciling_then_stalled_on_a_failing_probe_and_ready_after_the_fix() {
    let cluster = node_cluster();
    let tenant = common::unique("agsick");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-agsick");
    let server = probed_repo(&agent_ns, &tenant);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("agent.log");
    let mut agent = spawn_agent(cluster, &server.url(), dir.path(), &log);
    let agent_log = || fs::read_to_string(&log).unwrap_or_default();
    let condition = |type_: &str| tenant_condition(&agent_ns, &tenant, type_);
    let wait = |what: &str, type_: &str, reason: &str, timeout: Duration| -> String {
        let (message, _) = wait_for(what, timeout, || {
            let c = condition(type_);
            if c.0 == "True" && c.1 == reason {
                Ok(c.2)
            } else {
                Err(format!("{type_}: {c:?}\nagent log:\n{}", agent_log()))
            }
        });
        message
    };
    let message = wait(
        "Reconciling while the probe fails",
        "Reconciling",
        "WaitingForHealth",
        Duration::from_secs(60),
    );
    assert!(
        message.contains(&format!("Deployment.apps/{ns}/web")),
        "{message}"
    );
    let message = wait(
        "Stalled after the 20s timeout",
        "Stalled",
        "Unhealthy",
        Duration::from_secs(60),
    );
    assert!(
        message.contains(&format!("Deployment.apps/{ns}/web")) && message.contains("timed out"),
        "{message}"
    );
    assert_eq!(condition("Ready").0, "False");

    server.commit(
        &[(
            "components/web/varz.yaml".to_string(),
            web_varz("/index.html"),
        )],
        "fix the probe",
    );
    wait(
        "Ready after the fix",
        "Ready",
        "Healthy",
        Duration::from_secs(180),
    );
    assert_eq!(condition("Stalled").0, "False");
    let _ = agent.kill();
    let _ = agent.wait();
}

/// The `web` component's values: one busybox replica probed at `probe`.
fn web_varz(probe: &str) -> String {
    format!(
        "replicas: 1\nimage: {}\ngreeting: hi\nprobePath: {probe}\n",
        common::node::BUSYBOX_IMAGE
    )
}

/// A repo served by `git daemon` whose tenant `tenant` runs `web` probed at a page that does
/// not exist, with a 20s health timeout.
fn probed_repo(agent_ns: &str, tenant: &str) -> common::agent::GitServer {
    common::agent::GitServer::new(&[
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            web_varz("/missing.html"),
        ),
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 20s}\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.replace("path: /index.html", "path: {{ values.probePath }}"),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n"
            ),
        ),
    ])
}

/// `fief agent` on `repo` (no leader election, a 2s interval), its log in `log`.
fn spawn_agent(cluster: &NodeCluster, repo: &str, dir: &Path, log: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["agent", "--repo", repo, "--no-leader-election"])
        .arg("--kubeconfig")
        .arg(cluster.cp().admin_kubeconfig())
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args([
            "--listen",
            &format!("127.0.0.1:{}", common::util::free_port()),
        ])
        .args(["--interval", "2s"])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(log).expect("log"))
        .spawn()
        .expect("start fief agent")
}

/// Status, reason and message of the condition `type_` in `tenant`'s inventory (empty when
/// there is none).
fn tenant_condition(agent_ns: &str, tenant: &str, type_: &str) -> (String, String, String) {
    let cm = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    let status: Value = cm
        .and_then(|cm| {
            cm["data"]["status"]
                .as_str()
                .and_then(|s| serde_json::from_str(s).ok())
        })
        .unwrap_or(Value::Null);
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("status"), s("reason"), s("message"))
        })
        .unwrap_or_default()
}
