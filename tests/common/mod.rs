//! Shared helpers for fief's integration tests.
//!
//! [`control_plane()`] gives every test in a test binary the same real
//! Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager,
//! pinned in `tools/controlplane/go.mod`), started on first use by
//! `tools/start-control-plane.sh`. The binaries are built (once per machine,
//! cached under `.cache/controlplane/`) by `tools/build-control-plane.sh`.
//!
//! Rust never runs destructors of statics, so the control plane is not
//! stopped from here: the start script watches this process' pid and tears
//! everything down (and removes its work folder) within about a second of
//! the test binary exiting, however it exits.
//!
//! [`second_control_plane()`] is another one like it, for tests that need two clusters.
//!
//! A control plane that cannot be built or started is a test failure, never
//! a skip: [`control_plane()`] panics with the tail of the logs.
//!
//! [`node::node_cluster()`] is a second kind of cluster, for `tests/node/main.rs`: a control plane
//! with kube-scheduler and the workload controllers, and a real node (kubelet, containerd,
//! runc) joined to it by `tools/start-node.sh`, with fief's image built from the test binary.
//!
//! Use from an integration test with `mod common;`.

#![allow(dead_code)] // each test binary uses its own subset of the helpers

pub mod agent;
pub mod audit;
pub mod browser;
pub mod chart_repos;
pub mod cluster_cli;
pub mod job;
pub mod kubectl;
pub mod node;
pub mod offline;
pub mod receiver;
pub mod sops;
pub mod synth;
pub mod util;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long to wait for the control plane to become ready once the binaries
/// exist (the first build is not included).
const START_TIMEOUT: Duration = Duration::from_secs(240);

/// A running control plane; see [`control_plane()`].
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    bin_dir: PathBuf,
    kubectl: PathBuf,
    admin_kubeconfig: PathBuf,
    kubeconfig_dir: PathBuf,
    users: Vec<String>,
    apiserver_url: String,
    env: BTreeMap<String, String>,
    /// The start script; kept so the handle is not dropped (it is never
    /// waited on: the script exits by itself when this process is gone).
    script: Mutex<Child>,
}

static CONTROL_PLANE: OnceLock<Result<ControlPlane, String>> = OnceLock::new();

/// The control plane shared by all tests of this test binary, started on the
/// first call. Panics (with the reason and log tails) if it cannot be built or
/// started; every later call panics with the same message.
pub fn control_plane() -> &'static ControlPlane {
    match CONTROL_PLANE.get_or_init(|| ControlPlane::start(&[])) {
        Ok(cp) => cp,
        Err(reason) => panic!("the test control plane is unavailable: {reason}"),
    }
}

static SECOND_CONTROL_PLANE: OnceLock<Result<ControlPlane, String>> = OnceLock::new();

/// A second control plane of this test binary, independent of [`control_plane()`] (its own
/// etcd, kube-apiserver, certificates and kubeconfigs), started the same way on the first
/// call: for tests that need two clusters (a tenant moving between them). Panics as
/// [`control_plane()`] does.
pub fn second_control_plane() -> &'static ControlPlane {
    match SECOND_CONTROL_PLANE.get_or_init(|| ControlPlane::start(&[])) {
        Ok(cp) => cp,
        Err(reason) => panic!("the second test control plane is unavailable: {reason}"),
    }
}

/// A control plane of the caller's own, shared with nothing else in this process; stopped by
/// [`ControlPlane::stop`] (or when this process exits).
pub fn own_control_plane() -> ControlPlane {
    own_control_plane_with(&[])
}

/// [`own_control_plane`] started with `env` for its start script (`FIEF_CP_*` settings, see
/// `tools/start-control-plane.sh`).
pub fn own_control_plane_with(env: &[(&str, &str)]) -> ControlPlane {
    ControlPlane::start(env)
        .unwrap_or_else(|reason| panic!("a test control plane is unavailable: {reason}"))
}

/// The non-admin users that have kubeconfigs (no RBAC bindings; group
/// `fief:users`), unless `FIEF_CP_USERS` overrides them. The tests of one binary share the
/// control plane, so a test that grants a user rights uses a user of its own: `reader` (read
/// everything), `replica-a` and `replica-b` (admins, two agent replicas), `no-leases`
/// (everything but Leases), `operator` (the day-2 Role); `alice`, `bob`, `carol` and `dave`
/// get rights only inside a test's own namespaces.
pub const DEFAULT_USERS: [&str; 10] = [
    "alice",
    "bob",
    "carol",
    "dave",
    "reader",
    "replica-a",
    "replica-b",
    "no-leases",
    "operator",
    "fief-agent",
];

impl ControlPlane {
    /// Stop the control plane: its start script tears it down (every process, then its
    /// folder) on SIGTERM; returns once the script exited.
    pub fn stop(self) {
        let Ok(mut script) = self.script.lock() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &script.id().to_string()])
            .status();
        let _ = script.wait();
    }

    /// Work folder of the control plane (`pki/`, `logs/`, `kubeconfigs/`, `env`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Folder with the pinned `etcd`, `kube-apiserver`,
    /// `kube-controller-manager` and `kubectl` binaries.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The pinned kubectl binary.
    pub fn kubectl_path(&self) -> &Path {
        &self.kubectl
    }

    /// Kubeconfig of a cluster admin (client certificate in `system:masters`).
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.admin_kubeconfig
    }

    /// Kubeconfig of a non-admin user (see [`ControlPlane::users`]). Panics
    /// for an unknown user.
    pub fn kubeconfig_for(&self, user: &str) -> PathBuf {
        assert!(
            self.users.iter().any(|u| u == user),
            "no kubeconfig for user {user:?}; known users: {:?}",
            self.users
        );
        self.kubeconfig_dir.join(format!("{user}.kubeconfig"))
    }

    /// Names of the non-admin users that have kubeconfigs.
    pub fn users(&self) -> &[String] {
        &self.users
    }

    /// `https://127.0.0.1:<port>` of kube-apiserver.
    pub fn apiserver_url(&self) -> &str {
        &self.apiserver_url
    }

    /// A value from the start script's `env` file (`FIEF_CP_ETCD_URL`, ...).
    pub fn env(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    /// A `kubectl --kubeconfig <admin>` command.
    pub fn kubectl_admin(&self) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.admin_kubeconfig);
        cmd
    }

    /// A `kubectl --kubeconfig <user>` command.
    pub fn kubectl_as(&self, user: &str) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(self.kubeconfig_for(user));
        cmd
    }

    /// A kube client authenticated as cluster admin. Make one per test: a
    /// client belongs to the tokio runtime it was made in.
    pub async fn admin_client(&self) -> kube::Client {
        client_from_kubeconfig(&self.admin_kubeconfig).await
    }

    /// A kube client authenticated as a non-admin `user`.
    pub async fn client_for(&self, user: &str) -> kube::Client {
        client_from_kubeconfig(&self.kubeconfig_for(user)).await
    }

    /// Starts a control plane; `extra_env` goes to `tools/start-control-plane.sh`
    /// (`FIEF_CP_SCHEDULER`, `FIEF_CP_EXTRA_CONTROLLERS`, ...).
    fn start(extra_env: &[(&str, &str)]) -> Result<ControlPlane, String> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let bin_dir = match std::env::var_os("FIEF_CP_BIN_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => build_binaries(repo)?,
        };

        let dir = tempfile::Builder::new()
            .prefix("fief-control-plane-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary folder: {e}"))?
            .keep();
        let log_path = dir.join("start.log");
        let log = fs::File::create(&log_path)
            .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("cannot dup {}: {e}", log_path.display()))?;

        let script = repo.join("tools/start-control-plane.sh");
        let mut command = Command::new("bash");
        command
            .arg(&script)
            .arg(&dir)
            .env("FIEF_CP_BIN_DIR", &bin_dir)
            .env("FIEF_CP_WATCH_PID", std::process::id().to_string())
            .env("FIEF_CP_CLEANUP", "1")
            .env("FIEF_CP_START_TIMEOUT", START_TIMEOUT.as_secs().to_string())
            .envs(extra_env.iter().copied())
            .stdin(Stdio::null())
            // Files, not pipes: the script outlives this process by a moment
            // and must not die of SIGPIPE before it has cleaned up.
            .stdout(log)
            .stderr(log_err)
            // Own process group: a Ctrl-C on the terminal reaches the test
            // binary only, and the script then tears down in order.
            .process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;

        wait_ready(&mut child, &dir, &log_path, &script)?;

        let env_path = dir.join("env");
        let env = parse_env(
            &fs::read_to_string(&env_path)
                .map_err(|e| format!("cannot read {}: {e}", env_path.display()))?,
        );
        let get = |key: &str| {
            env.get(key)
                .cloned()
                .ok_or_else(|| format!("{} has no {key}", env_path.display()))
        };
        Ok(ControlPlane {
            admin_kubeconfig: PathBuf::from(get("KUBECONFIG")?),
            kubeconfig_dir: PathBuf::from(get("FIEF_CP_KUBECONFIG_DIR")?),
            users: get("FIEF_CP_USERS")?
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            apiserver_url: get("FIEF_CP_APISERVER_URL")?,
            kubectl: PathBuf::from(get("FIEF_CP_KUBECTL")?),
            bin_dir,
            dir,
            env,
            script: Mutex::new(child),
        })
    }
}

/// Runs `tools/build-control-plane.sh` (a no-op once the binaries are cached;
/// its flock makes concurrent test binaries safe) and returns the bin folder.
/// Its progress is shown on stderr as it comes, since a cold build is long.
pub(crate) fn build_binaries(repo: &Path) -> Result<PathBuf, String> {
    let script = repo.join("tools/build-control-plane.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let stderr = child.stderr.take().expect("piped stderr");
    let relay = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // Straight to the real stderr, past libtest's output capture.
            let _ = writeln!(std::io::stderr(), "{line}");
            lines.push(line);
        }
        lines
    });
    let output = child
        .wait_with_output()
        .map_err(|e| format!("cannot wait for {}: {e}", script.display()))?;
    let lines = relay.join().unwrap_or_default();
    if !output.status.success() {
        let start = lines.len().saturating_sub(60);
        return Err(format!(
            "{} failed with {}:\n{}",
            script.display(),
            output.status,
            lines[start..].join("\n")
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let bin_dir = stdout.lines().last().unwrap_or("").trim();
    if bin_dir.is_empty() {
        return Err(format!("{} printed no bin folder", script.display()));
    }
    Ok(PathBuf::from(bin_dir))
}

async fn client_from_kubeconfig(path: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("cannot read kubeconfig {}: {e}", path.display()));
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("bad kubeconfig {}: {e}", path.display()));
    kube::Client::try_from(config)
        .unwrap_or_else(|e| panic!("cannot make a client from {}: {e}", path.display()))
}

/// Parses the start script's `export KEY='value'` lines.
pub(crate) fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|line| line.strip_prefix("export ").unwrap_or(line))
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| {
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or(v);
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

pub(crate) fn tail(path: &Path, lines: usize) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Wait until the start script marks the control plane ready (its `ready` file), or fail
/// with the end of its log when it exits first or takes too long.
fn wait_ready(child: &mut Child, dir: &Path, log_path: &Path, script: &Path) -> Result<(), String> {
    let ready = dir.join("ready");
    let deadline = Instant::now() + START_TIMEOUT + Duration::from_secs(30);
    loop {
        if ready.exists() {
            return Ok(());
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                return Err(format!(
                    "{} exited with {status} before the control plane was ready; \
                     logs in {}\n{}",
                    script.display(),
                    dir.join("logs").display(),
                    tail(log_path, 120)
                ));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for {}: {e}", script.display())),
        }
        if Instant::now() > deadline {
            terminate(child);
            return Err(format!(
                "the control plane was not ready after {:?}; logs in {}\n{}",
                START_TIMEOUT,
                dir.join("logs").display(),
                tail(log_path, 120)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM (not SIGKILL, which would orphan etcd and kube-apiserver) and reap.
pub(crate) fn terminate(child: &mut Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

/// A name unique within this test run, usable as a namespace or object name
/// (lowercase DNS-1123 label): `<prefix>-<random>-<counter>`. Keep the prefix
/// short (at most 40 characters).
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static SALT: OnceLock<String> = OnceLock::new();
    let salt = SALT.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        base36(mixed % 36u64.pow(6))
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = format!("{prefix}-{salt}-{}", base36(n));
    assert!(
        name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "unique({prefix:?}) made {name:?}, which is not a DNS-1123 label"
    );
    name
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

/// Polls `check` every 200 ms until it returns `Ok`, or panics after
/// `timeout` naming `what` and the last `Err` that `check` gave.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check().await {
            Ok(value) => return value,
            Err(why) => why,
        };
        if Instant::now() > deadline {
            let mut msg = format!("timed out after {timeout:?} waiting for {what}");
            if !last.is_empty() {
                let _ = write!(msg, " (last: {last})");
            }
            panic!("{msg}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
