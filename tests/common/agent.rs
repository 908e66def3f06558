//! The agent harness: a tenants repo served by `git daemon` on loopback, `fief agent` as a
//! child process, HTTP helpers for its endpoints, and cluster reads for assertions.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

#[allow(unused_imports)] // for the agent tests, beside the harness
pub use super::util::wait_until;
pub use super::util::{free_port, git};

pub const SECRET: &str = "s3cret-webhook";

/// The tests' one git server: a tenants repo in a work tree (branch `main`), served by
/// `git daemon` on one address only. Stopped on drop.
#[derive(Debug)]
pub struct GitServer {
    pub base: tempfile::TempDir,
    pub port: u16,
    ip: String,
    pub daemon: Option<super::util::Daemon>,
}

impl GitServer {
    /// `files` committed and served on loopback.
    pub fn new(files: &[(String, String)]) -> GitServer {
        GitServer::on("127.0.0.1", files)
    }

    /// `files` committed and served on `ip` only (the node's bridge address: its pods reach
    /// it, nothing outside the machine can).
    pub fn on(ip: &str, files: &[(String, String)]) -> GitServer {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        let mut server = GitServer {
            base,
            port: super::util::free_port_on(ip),
            ip: ip.to_string(),
            daemon: None,
        };
        server.commit(files, "initial");
        server.start();
        server
    }

    pub fn repo(&self) -> PathBuf {
        self.base.path().join("repo")
    }

    pub fn url(&self) -> String {
        format!("git://{}:{}/repo", self.ip, self.port)
    }

    /// Serve the repo (a daemon already running is stopped first, never left behind).
    pub fn start(&mut self) {
        self.stop();
        self.daemon = Some(super::util::git_daemon_on(
            self.base.path(),
            &self.ip,
            self.port,
        ));
    }

    pub fn stop(&mut self) {
        self.daemon = None;
    }

    pub fn commit(&self, files: &[(String, String)], message: &str) {
        for (path, text) in files {
            let p = self.repo().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        git(&self.repo(), &["add", "-A"]);
        git(
            &self.repo(),
            &["commit", "-q", "--allow-empty", "-m", message],
        );
    }
}

impl Drop for GitServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `fief agent` as a child process; killed on drop.
pub struct Agent {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Agent {
    /// Start an agent and wait until it is ready; `extra` must include `--interval`.
    pub fn start(url: &str, extra: &[&str]) -> Agent {
        let agent = Agent::spawn(url, extra, &[]);
        agent.wait_ready(Duration::from_secs(90));
        agent
    }

    /// Start an agent without waiting (`--no-leader-election` unless `extra` names
    /// `--lease-namespace`); `env` is added to its environment.
    pub fn spawn(url: &str, extra: &[&str], env: &[(&str, String)]) -> Agent {
        let cp = super::control_plane();
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("webhook-secret");
        std::fs::write(&secret, SECRET).unwrap();
        let port = free_port();
        let log = dir.path().join("agent.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fief"));
        cmd.args(["agent", "--repo", url]);
        if !extra.contains(&"--lease-namespace") {
            cmd.arg("--no-leader-election");
        }
        if !extra.contains(&"--kubeconfig") {
            cmd.arg("--kubeconfig").arg(cp.admin_kubeconfig());
        }
        cmd.arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--webhook-secret-file")
            .arg(&secret)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start fief agent");
        Agent {
            child,
            port,
            log,
            dir,
        }
    }

    /// Wait until `/readyz` answers 200.
    pub fn wait_ready(&self, timeout: Duration) {
        let start = Instant::now();
        while self.get("/readyz").is_none_or(|(code, _)| code != 200) {
            assert!(
                start.elapsed() < timeout,
                "agent not ready after {timeout:?}; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Send SIGTERM; wait for the exit (at most `timeout`), returning how long it took.
    pub fn terminate(&mut self, timeout: Duration) -> Duration {
        let start = Instant::now();
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        while start.elapsed() < timeout {
            if let Ok(Some(_)) = self.child.try_wait() {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "agent did not exit within {timeout:?} of SIGTERM; its log:\n{}",
            self.log()
        );
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of its log, oldest first.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// A raw HTTP/1.1 request; (status, body).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> Option<(u16, String)> {
        super::util::http_request(("127.0.0.1", self.port), method, path, headers, body)
    }

    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        self.request("GET", path, &[], "")
    }

    pub fn push_webhook(&self, signature: Option<String>) -> u16 {
        let body = r#"{"ref":"refs/heads/main"}"#;
        let mut headers = vec![("Content-Type", "application/json".to_string())];
        if let Some(sig) = signature {
            headers.push(("X-Hub-Signature-256", sig));
        }
        self.request("POST", "/hooks/git", &headers, body)
            .expect("webhook")
            .0
    }

    pub fn signed_push(&self) -> u16 {
        let body = r#"{"ref":"refs/heads/main"}"#;
        self.push_webhook(Some(hub_signature(SECRET, body)))
    }

    /// A metric's value (sum over its label sets matching `filter`).
    pub fn metric(&self, name: &str, filter: &str) -> f64 {
        let (_, text) = self.get("/metrics").unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with(name) && l.contains(filter))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `fief apply REPO` as cluster admin (the cluster the agent starts on), asserting success.
pub fn fief_apply(repo: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("apply")
        .arg(repo)
        .arg("--kubeconfig")
        .arg(super::control_plane().admin_kubeconfig())
        .output()
        .expect("run fief apply");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn kubectl_json(args: &[&str]) -> Option<Value> {
    super::kubectl::Kubectl::admin().json(args)
}

/// The agent's rollout record (ConfigMap `fief-rollout` in `agent_ns`), or null.
pub fn rollout_record(agent_ns: &str) -> Value {
    super::util::rollout_record(kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        "fief-rollout",
    ]))
}

pub fn configmap_value(ns: &str, name: &str, key: &str) -> Option<String> {
    let cm = kubectl_json(&["get", "configmap", "-n", ns, name])?;
    cm["data"][key].as_str().map(str::to_string)
}

pub fn resource_version(ns: &str, kind: &str, name: &str) -> String {
    kubectl_json(&["get", kind, "-n", ns, name])
        .map(|v| v["metadata"]["resourceVersion"].to_string())
        .unwrap_or_default()
}

pub fn status(agent_ns: &str, tenant: &str) -> Value {
    let cm = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        &format!("fief-tenant-{tenant}"),
    ])
    .unwrap_or(Value::Null);
    cm["data"]["status"]
        .as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null)
}

pub fn condition(status: &Value, type_: &str) -> String {
    condition_of(status, type_)["status"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The whole condition of a type in a tenant's status (`Null` when it has none).
pub fn condition_of(status: &Value, type_: &str) -> Value {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or(Value::Null)
}

pub fn tenant(name: &str, greeting: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n      values: {{greeting: {greeting}}}\n"
        ),
    )
}

pub const APP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\ndata:\n  k: v\n";

pub fn small_repo(agent_ns: &str, tenants: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/app/varz.yaml".to_string(),
            "greeting: hello\n".to_string(),
        ),
        (
            "components/app/templates/app.yaml".to_string(),
            APP.to_string(),
        ),
    ];
    for (t, g) in tenants {
        files.push(tenant(t, g));
    }
    files
}

impl Agent {
    pub fn request_raw(port: u16, path: &str) -> Option<u16> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        out.split_whitespace().nth(1)?.parse().ok()
    }
}

/// fief.yaml with waves canary and early (the rest last), and component `app` of `template`
/// with greeting g1.
pub fn waves(agent_ns: &str, template: &str) -> Vec<(String, String)> {
    vec![
        (
            "fief.yaml".to_string(),
            format!(
                "agentNamespace: {agent_ns}\nrollout:\n  waves:\n    - {{name: canary, selector: {{ring: canary}}}}\n    - {{name: early, selector: {{ring: early}}}}\n"
            ),
        ),
        (
            "components/app/varz.yaml".to_string(),
            "greeting: g1\n".to_string(),
        ),
        // `extra` is defined by no layer on purpose: the shared change needs it, and the
        // tenants without it halt the rollout.
        (
            "components/app/component.yaml".to_string(),
            "strictValues: false\n".to_string(),
        ),
        (
            "components/app/templates/app.yaml".to_string(),
            template.to_string(),
        ),
    ]
}

/// The `X-Hub-Signature-256` header value of `body` signed with `secret`, as a git host sends
/// it with a push webhook.
pub fn hub_signature(secret: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}
