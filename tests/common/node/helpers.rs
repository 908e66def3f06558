//! Helpers on the node cluster: git and its daemon on the node's bridge, an API proxy, the
//! agent's Pods and their diagnostics, an inventory's status, and an agent run as a local
//! process against the node cluster.

use super::*;

// --- git daemon on the bridge -----------------------------------------------------------------
/// Runs `git` in `dir`; panics with its stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=test@fief.dev", "-c", "user.name=test"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cannot run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The test kit's git server, served on the node's bridge address (`GitServer::on`).
#[allow(unused_imports)] // each test binary uses its own subset of the helpers
pub use super::super::agent::GitServer;

// --- HTTP through the API server ---------------------------------------------------------------

/// `kubectl proxy` on a loopback port: plain HTTP to the API server, used to reach a Service
/// through the API server's service proxy (no kube-proxy runs on the node). Stopped on drop.
#[derive(Debug)]
pub struct ApiProxy {
    child: Child,
    port: u16,
}

impl ApiProxy {
    pub fn start() -> ApiProxy {
        let mut child = node_cluster()
            .cp()
            .kubectl_admin()
            .args(["proxy", "--port=0", "--address=127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot run kubectl proxy");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("kubectl proxy output");
        // "Starting to serve on 127.0.0.1:41234"
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("kubectl proxy said {line:?}"));
        ApiProxy { child, port }
    }

    /// A raw HTTP/1.1 request to the proxy; (status, body), or `None` when it fails.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> Option<(u16, String)> {
        http_request(("127.0.0.1", self.port), method, path, headers, body)
    }
}

impl Drop for ApiProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub use super::super::util::http_request;

/// The fief agent's pods in `ns` that are Running and not being deleted.
pub fn running_agent_pods(ns: &str) -> Vec<Value> {
    kubectl_json(&[
        "get",
        "pods",
        "-n",
        ns,
        "-l",
        "app.kubernetes.io/name=fief-agent",
    ])
    .and_then(|l| l["items"].as_array().cloned())
    .unwrap_or_default()
    .into_iter()
    .filter(|p| p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null())
    .collect()
}

/// The fief agent's pods in `ns` and their last log lines, for failure messages.
pub fn agent_diagnostics(ns: &str) -> String {
    let pods = kubectl(&["get", "pods", "-n", ns, "-o", "wide"], None);
    let logs = kubectl(
        &[
            "logs",
            "-n",
            ns,
            "-l",
            "app.kubernetes.io/name=fief-agent",
            "--tail=15",
            "--prefix",
        ],
        None,
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&pods.stdout),
        String::from_utf8_lossy(&logs.stdout)
    )
}

/// A tenant's status as its inventory ConfigMap in `agent_ns` holds it (`Null`: none).
pub fn inventory_status(agent_ns: &str, tenant: &str) -> Value {
    kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        &format!("fief-tenant-{tenant}"),
    ])
    .and_then(|cm| {
        cm["data"]["status"]
            .as_str()
            .and_then(|s| serde_json::from_str(s).ok())
    })
    .unwrap_or(Value::Null)
}

/// A fief agent run as a process of this test against the node cluster (no leader election,
/// `--interval` as given), its log in a temporary folder; killed when dropped.
pub struct LocalAgent {
    child: Child,
    /// Its HTTP port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LocalAgent {
    /// Start it on the tenants repo at `url`.
    pub fn start(url: &str, interval: &str) -> LocalAgent {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("agent.log");
        let port = super::super::util::free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(["agent", "--repo", url, "--no-leader-election"])
            .arg("--kubeconfig")
            .arg(node_cluster().cp().admin_kubeconfig())
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--interval", interval])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start fief agent");
        LocalAgent {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    /// The last `lines` lines of its log, newest first.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(lines).collect();
        tail.join("\n")
    }
}

impl Drop for LocalAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
