//! A real node for integration tests: [`node_cluster()`] starts a control plane with
//! kube-scheduler and the workload controllers (`tools/start-control-plane.sh` with
//! `FIEF_CP_SCHEDULER=1`), builds the images (`tools/build-image.sh`: fief from this test
//! binary's `fief`, busybox, pause) and joins a node to it with `tools/start-node.sh`
//! (containerd, runc, kubelet, a bridge with a private /24).
//!
//! One per test binary, started on first use; like the control plane, the node's script
//! watches this process and tears everything down (processes, mounts, bridge, iptables rule,
//! sysctls, host paths) within a few seconds of its exit. A node that cannot start (not root,
//! packages missing, another node holding the machine's lock for too long, kubelet failing)
//! fails the test with the reason and the script's log; it never skips.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ControlPlane;

mod helpers;
#[allow(unused_imports)] // each test binary uses its own subset of the helpers
pub use helpers::*;

/// The node's name (`kubectl get node fief-node`).
pub const NODE_NAME: &str = "fief-node";
/// fief's image, built from the test binary `fief` and imported on the node.
pub const FIEF_IMAGE: &str = "fief.test/fief:test-1";
/// The same image under a second tag, for rolling updates.
pub const FIEF_IMAGE_NEXT: &str = "fief.test/fief:test-2";
/// busybox-static as an image (`httpd`, `sh`, `ip`, `wget`) for test workloads.
pub const BUSYBOX_IMAGE: &str = "fief.test/busybox:1";
/// The same image under the name the component of `fief init` runs (`docs/src/getting-started.md`).
pub const BUSYBOX_TUTORIAL_IMAGE: &str = "docker.io/library/busybox:1.37";
/// The pod sandbox image (containerd's `sandbox_image` in tools/start-node.sh).
pub const PAUSE_IMAGE: &str = "fief.test/pause:1";

/// Controllers added to the control plane's default set for a node: Deployments and their
/// ReplicaSets, Jobs (migration hooks), the node-lifecycle controller (lifts the not-ready taint of a new node) and
/// the endpoints controllers (Services: the API server's service proxy reads them).
pub const NODE_CONTROLLERS: &str = "deployment-controller,replicaset-controller,job-controller,\
node-lifecycle-controller,endpoints-controller,endpointslice-controller,pod-garbage-collector-controller";

/// How long the node may take once its binaries exist: waiting for another node on this
/// machine to go (the lock in tools/start-node.sh), then containerd, kubelet, Ready.
const NODE_START_TIMEOUT: Duration = Duration::from_secs(300);

/// Seconds between the steps of the startup, printed by the tests (CI cost).
#[derive(Debug, Clone, Copy)]
pub struct StartTimes {
    /// Building the three image archives.
    pub images: Duration,
    /// Starting the control plane (with scheduler).
    pub control_plane: Duration,
    /// tools/start-node.sh until `ready` (lock, containerd, image imports, kubelet, Ready).
    pub node: Duration,
    /// kubelet start to node Ready, as the script measured it.
    pub node_ready: Duration,
}

/// A control plane with a node; see [`node_cluster()`].
#[derive(Debug)]
pub struct NodeCluster {
    cp: ControlPlane,
    dir: PathBuf,
    env: BTreeMap<String, String>,
    times: StartTimes,
    _script: Mutex<Child>,
}

static NODE_CLUSTER: OnceLock<Result<NodeCluster, String>> = OnceLock::new();

/// The cluster with a node shared by all tests of this test binary, started on the first call.
/// Panics with the reason if it cannot start; every later call panics with the same message.
pub fn node_cluster() -> &'static NodeCluster {
    match NODE_CLUSTER.get_or_init(NodeCluster::start) {
        Ok(cluster) => cluster,
        Err(reason) => panic!("the test node is unavailable: {reason}"),
    }
}

impl NodeCluster {
    /// The control plane the node is joined to.
    pub fn cp(&self) -> &ControlPlane {
        &self.cp
    }

    /// The node's work folder (`logs/`, `env`, kubelet and containerd configuration).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A value of the node's `env` file (`FIEF_NODE_IP`, `FIEF_NODE_SUBNET`, ...).
    pub fn env(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    /// The node's InternalIP: the bridge's address on the host, reachable from every pod.
    pub fn node_ip(&self) -> &str {
        self.env("FIEF_NODE_IP").unwrap_or_default()
    }

    /// The pods' subnet, `a.b.c.0/24`.
    pub fn subnet(&self) -> &str {
        self.env("FIEF_NODE_SUBNET").unwrap_or_default()
    }

    /// How long each start-up step took.
    pub fn start_times(&self) -> StartTimes {
        self.times
    }

    /// The last lines of the node's component logs (kubelet, containerd), for failure messages.
    pub fn log_tails(&self) -> String {
        let mut out = String::new();
        for name in ["kubelet", "containerd"] {
            let path = self.dir.join("logs").join(format!("{name}.log"));
            out.push_str(&format!("===== {} =====\n", path.display()));
            out.push_str(&super::tail(&path, 30));
            out.push('\n');
        }
        out
    }

    fn start() -> Result<NodeCluster, String> {
        require_root()?;
        lock_the_node()?;
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = tempfile::Builder::new()
            .prefix("fief-node-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary folder: {e}"))?
            .keep();

        let t0 = Instant::now();
        let archives = build_images(repo, &dir.join("images"))?;
        let images_time = t0.elapsed();

        let t1 = Instant::now();
        let cp = ControlPlane::start(&[
            ("FIEF_CP_SCHEDULER", "1"),
            ("FIEF_CP_EXTRA_CONTROLLERS", NODE_CONTROLLERS),
        ])?;
        let cp_time = t1.elapsed();

        let t2 = Instant::now();
        // The script's work folder is this one, so its teardown also removes the images
        // and its own log.
        let node_dir = dir.clone();
        let child = start_node(repo, &cp, &node_dir, &archives)?;
        let node_time = t2.elapsed();
        let env_path = node_dir.join("env");
        let env = super::parse_env(
            &fs::read_to_string(&env_path)
                .map_err(|e| format!("cannot read {}: {e}", env_path.display()))?,
        );
        let node_ready = env
            .get("FIEF_NODE_READY_SECONDS")
            .and_then(|s| s.parse().ok())
            .and_then(|s: f64| Duration::try_from_secs_f64(s).ok())
            .unwrap_or_default();
        let times = StartTimes {
            images: images_time,
            control_plane: cp_time,
            node: node_time,
            node_ready,
        };
        eprintln!(
            "node cluster: images built in {:.1}s, control plane in {:.1}s, node in {:.1}s \
             (Ready {:.2}s after kubelet started)",
            times.images.as_secs_f64(),
            times.control_plane.as_secs_f64(),
            times.node.as_secs_f64(),
            times.node_ready.as_secs_f64()
        );
        Ok(NodeCluster {
            cp,
            dir: node_dir,
            env,
            times,
            _script: Mutex::new(child),
        })
    }
}

/// A node needs root (containerd, kubelet, a bridge, an iptables rule).
fn require_root() -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("cannot run id: {e}"))?;
    let uid = String::from_utf8_lossy(&uid.stdout).trim().to_string();
    if uid != "0" {
        return Err(format!(
            "a node needs root (containerd, kubelet, a bridge, an iptables rule); \
             these tests run as uid {uid}"
        ));
    }
    Ok(())
}

/// One node per machine: its bridge, iptables chains and containerd paths have fixed names,
/// so a second test process waits here until the first one exits (the lock goes with the
/// process).
fn lock_the_node() -> Result<(), String> {
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/fief-node.lock")
        .map_err(|e| format!("cannot open /tmp/fief-node.lock: {e}"))?;
    lock.lock()
        .map_err(|e| format!("cannot lock /tmp/fief-node.lock: {e}"))?;
    std::mem::forget(lock);
    Ok(())
}

/// Build the fief, busybox and pause images into archives under `images`; their paths.
fn build_images(repo: &Path, images: &Path) -> Result<Vec<String>, String> {
    let fief_refs = format!("{FIEF_IMAGE},{FIEF_IMAGE_NEXT}");
    let busybox_refs = format!("{BUSYBOX_IMAGE},{BUSYBOX_TUTORIAL_IMAGE}");
    let builds: [(&str, &str, Option<&str>); 3] = [
        ("fief", &fief_refs, Some(env!("CARGO_BIN_EXE_fief"))),
        ("busybox", &busybox_refs, None),
        ("pause", PAUSE_IMAGE, None),
    ];
    let mut archives = Vec::new();
    for (kind, refs, binary) in builds {
        let archive = images.join(format!("{kind}.tar"));
        let mut cmd = Command::new("bash");
        cmd.arg(repo.join("tools/build-image.sh"))
            .arg(kind)
            .arg(&archive)
            .arg(refs);
        if let Some(binary) = binary {
            cmd.arg(binary);
        }
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run tools/build-image.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tools/build-image.sh {kind} failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        archives.push(archive.display().to_string());
    }
    Ok(archives)
}

/// Start the node (`tools/start-node.sh`) against the control plane `cp`, its images loaded
/// from `archives`, and wait until it is ready; the script keeps running (and tears the node
/// down when this process exits).
fn start_node(
    repo: &Path,
    cp: &ControlPlane,
    node_dir: &Path,
    archives: &[String],
) -> Result<Child, String> {
    let log_path = node_dir.join("start-node.log");
    let log = fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("cannot dup {}: {e}", log_path.display()))?;
    let script = repo.join("tools/start-node.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .arg(cp.dir())
        .arg(node_dir)
        .env("FIEF_NODE_NAME", NODE_NAME)
        .env("FIEF_NODE_IMAGES", archives.join(" "))
        .env("FIEF_NODE_BIN_DIR", cp.bin_dir())
        .env("FIEF_NODE_WATCH_PID", std::process::id().to_string())
        .env("FIEF_NODE_CLEANUP", "1")
        .env(
            "FIEF_NODE_LOCK_TIMEOUT",
            (NODE_START_TIMEOUT.as_secs() - 60).to_string(),
        )
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let ready = node_dir.join("ready");
    let deadline = Instant::now() + NODE_START_TIMEOUT;
    while !ready.exists() {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Err(format!(
                    "{} exited with {status} before the node was ready:\n{}",
                    script.display(),
                    super::tail(&log_path, 80)
                ));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for {}: {e}", script.display())),
        }
        if Instant::now() > deadline {
            super::terminate(&mut child);
            return Err(format!(
                "the node was not ready after {NODE_START_TIMEOUT:?}:\n{}",
                super::tail(&log_path, 80)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(child)
}

// --- kubectl --------------------------------------------------------------------------------

/// `kubectl` as cluster admin on the node cluster, with `stdin` piped in when given.
pub fn kubectl(args: &[&str], stdin: Option<&str>) -> Output {
    match stdin {
        Some(input) => admin().stdin(input),
        None => admin(),
    }
    .output(args)
}

/// `kubectl` that must succeed; its stdout.
pub fn kubectl_ok(args: &[&str]) -> String {
    admin().ok(args)
}

/// `kubectl ... -o json`, or `None` when kubectl fails (e.g. not found).
pub fn kubectl_json(args: &[&str]) -> Option<Value> {
    admin().json(args)
}

/// The one kubectl wrapper, as admin of the node cluster.
fn admin() -> super::kubectl::Kubectl {
    super::kubectl::Kubectl::with(node_cluster().cp().kubectl_admin())
}

/// Polls `check` every 250 ms until it returns `Ok`; panics after `timeout` with `what`, the
/// last `Err` and the node's log tails. Returns the value and the time it took.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> (T, Duration) {
    let start = Instant::now();
    loop {
        match check() {
            Ok(value) => return (value, start.elapsed()),
            Err(last) if start.elapsed() > timeout => panic!(
                "timed out after {timeout:?} waiting for {what} (last: {last})\n{}",
                node_cluster().log_tails()
            ),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}
