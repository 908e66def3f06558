//! The agent end to end: `fief agent` as a process against the real control plane, the tenants
//! repo served by `git daemon` on loopback.
//!
//! Each test has its own repo, agent, agent namespace and tenants.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

const SECRET: &str = "s3cret-webhook";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=test@fief.dev", "-c", "user.name=test"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A tenants repo in a work tree, served by `git daemon` on loopback.
struct GitServer {
    base: tempfile::TempDir,
    port: u16,
    daemon: Option<Child>,
}

impl GitServer {
    fn new(files: &[(String, String)]) -> GitServer {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        let mut server = GitServer {
            base,
            port: free_port(),
            daemon: None,
        };
        server.commit(files, "initial");
        server.start();
        server
    }

    fn repo(&self) -> PathBuf {
        self.base.path().join("repo")
    }

    fn url(&self) -> String {
        format!("git://127.0.0.1:{}/repo", self.port)
    }

    fn start(&mut self) {
        // Run git-daemon itself, not the `git daemon` wrapper, so killing it stops the server.
        let exec_path = Command::new("git").arg("--exec-path").output().unwrap();
        let exec_path = String::from_utf8_lossy(&exec_path.stdout)
            .trim()
            .to_string();
        let child = Command::new(Path::new(&exec_path).join("git-daemon"))
            .args([
                "--export-all",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={}", self.port),
                &format!("--base-path={}", self.base.path().display()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon");
        self.daemon = Some(child);
        wait_until("git daemon listening", Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        });
    }

    fn stop(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }

    fn commit(&self, files: &[(String, String)], message: &str) {
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
struct Agent {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Agent {
    /// Start an agent; `extra` must include `--interval`.
    fn start(url: &str, extra: &[&str]) -> Agent {
        let cp = common::control_plane();
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("webhook-secret");
        std::fs::write(&secret, SECRET).unwrap();
        let port = free_port();
        let log = dir.path().join("agent.log");
        let child = Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(["agent", "--repo", url, "--no-leader-election"])
            .arg("--kubeconfig")
            .arg(cp.admin_kubeconfig())
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--webhook-secret-file")
            .arg(&secret)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start fief agent");
        let agent = Agent {
            child,
            port,
            log,
            _dir: dir,
        };
        let start = Instant::now();
        while agent.get("/readyz").is_none_or(|(code, _)| code != 200) {
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "agent not ready after 90s; its log:\n{}",
                agent.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        agent
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A raw HTTP/1.1 request; (status, body).
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> Option<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        let code = out.split_whitespace().nth(1)?.parse().ok()?;
        let body = out
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Some((code, body))
    }

    fn get(&self, path: &str) -> Option<(u16, String)> {
        self.request("GET", path, &[], "")
    }

    fn push_webhook(&self, signature: Option<String>) -> u16 {
        let body = r#"{"ref":"refs/heads/main"}"#;
        let mut headers = vec![("Content-Type", "application/json".to_string())];
        if let Some(sig) = signature {
            headers.push(("X-Hub-Signature-256", sig));
        }
        self.request("POST", "/hooks/git", &headers, body)
            .expect("webhook")
            .0
    }

    fn signed_push(&self) -> u16 {
        let body = r#"{"ref":"refs/heads/main"}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(body.as_bytes());
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.push_webhook(Some(format!("sha256={hex}")))
    }

    /// A metric's value (sum over its label sets matching `filter`).
    fn metric(&self, name: &str, filter: &str) -> f64 {
        let (_, text) = self.get("/metrics").unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with(name) && l.contains(filter))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if check() {
            return start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out after {timeout:?} waiting for {what}");
}

fn kubectl_json(args: &[&str]) -> Option<Value> {
    let out = common::control_plane()
        .kubectl_admin()
        .args(args)
        .args(["-o", "json"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn configmap_value(ns: &str, name: &str, key: &str) -> Option<String> {
    let cm = kubectl_json(&["get", "configmap", "-n", ns, name])?;
    cm["data"][key].as_str().map(str::to_string)
}

fn resource_version(ns: &str, kind: &str, name: &str) -> String {
    kubectl_json(&["get", kind, "-n", ns, name])
        .map(|v| v["metadata"]["resourceVersion"].to_string())
        .unwrap_or_default()
}

fn status(agent_ns: &str, tenant: &str) -> Value {
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

fn condition(status: &Value, type_: &str) -> String {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
        .to_string()
}

fn tenant(name: &str, greeting: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n      values: {{greeting: {greeting}}}\n"
        ),
    )
}

const APP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\ndata:\n  k: v\n";

fn small_repo(agent_ns: &str, tenants: &[(&str, &str)]) -> Vec<(String, String)> {
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

#[test]
fn a_pushed_change_to_one_tenant_is_applied_within_seconds_and_touches_only_that_tenant() {
    let agent_ns = common::unique("fief-ag1");
    let (a, b) = (common::unique("push-a"), common::unique("push-b"));
    let server = GitServer::new(&small_repo(&agent_ns, &[(&a, "hi"), (&b, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    assert_eq!(
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref(),
        Some("hi")
    );
    let b_versions = (
        resource_version(&format!("{b}-prod"), "configmap", "app-config"),
        resource_version(&agent_ns, "configmap", &format!("fief-tenant-{b}")),
    );
    let patches_before = agent.metric("fief_api_requests", "PATCH");

    server.commit(&[tenant(&a, "bonjour")], "change a");
    let sent = Instant::now();
    assert_eq!(agent.signed_push(), 202);
    wait_until("the change applied", Duration::from_secs(5), || {
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref()
            == Some("bonjour")
    });
    eprintln!("webhook to applied: {:?}", sent.elapsed());
    // Only tenant A was touched: one object and A's inventory (union, then final).
    wait_until("the sync finished", Duration::from_secs(5), || {
        condition(&status(&agent_ns, &a), "Reconciling") == "False"
    });
    let patches = agent.metric("fief_api_requests", "PATCH") - patches_before;
    assert!(
        patches <= 3.0,
        "{patches} PATCH requests for a one-object change"
    );
    assert_eq!(
        b_versions,
        (
            resource_version(&format!("{b}-prod"), "configmap", "app-config"),
            resource_version(&agent_ns, "configmap", &format!("fief-tenant-{b}")),
        ),
        "tenant B received no write"
    );

    // A hand edit of a field fief owns is reverted within seconds.
    let edit = common::control_plane()
        .kubectl_admin()
        .args([
            "-n",
            &format!("{b}-prod"),
            "patch",
            "configmap",
            "app-config",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"greeting":"hacked"}}"#,
        ])
        .output()
        .unwrap();
    assert!(edit.status.success());
    let took = wait_until("drift reverted", Duration::from_secs(10), || {
        configmap_value(&format!("{b}-prod"), "app-config", "greeting").as_deref() == Some("hi")
    });
    eprintln!("drift reverted in {took:?}");

    // A webhook with a wrong signature, or none, is refused and triggers nothing.
    server.commit(&[tenant(&a, "unsigned")], "change a again");
    let fetches = agent.metric("fief_git_fetches_total", "");
    assert_eq!(agent.push_webhook(Some("sha256=0000".into())), 401);
    assert_eq!(agent.push_webhook(None), 401);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(agent.metric("fief_git_fetches_total", ""), fetches);
    assert_eq!(
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref(),
        Some("bonjour")
    );
    assert!(agent.log().contains("bad or missing signature"));
}

#[test]
fn a_broken_template_stalls_only_that_tenant_and_the_fix_recovers_it() {
    let agent_ns = common::unique("fief-ag2");
    let (good, bad) = (common::unique("good"), common::unique("bad"));
    let server = GitServer::new(&small_repo(&agent_ns, &[(&good, "hi"), (&bad, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);

    // The bad tenant's values now break the template; the repo also drops app-extra.
    let broken = format!(
        "{}{{% if tenant.name == '{bad}' %}}  oops: {{{{ values.missing.field }}}}\n{{% endif %}}",
        APP.replace(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\ndata:\n  k: v\n",
            ""
        )
    );
    server.commit(
        &[
            ("components/app/templates/app.yaml".into(), broken),
            tenant(&good, "hey"),
        ],
        "break",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("bad tenant stalled", Duration::from_secs(10), || {
        condition(&status(&agent_ns, &bad), "Stalled") == "True"
    });
    let st = status(&agent_ns, &bad);
    assert!(
        st["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("components/app/templates/app.yaml"),
        "{st}"
    );
    assert!(
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            &format!("{bad}-prod"),
            "app-extra"
        ])
        .is_some(),
        "nothing of the bad tenant is pruned"
    );
    // The failure is also a Kubernetes Event on the tenant's inventory.
    wait_until("a RenderFailed event", Duration::from_secs(10), || {
        kubectl_json(&["get", "events.events.k8s.io", "-n", &agent_ns])
            .and_then(|v| v["items"].as_array().cloned())
            .is_some_and(|items| {
                items.iter().any(|e| {
                    e["reason"] == "RenderFailed"
                        && e["regarding"]["name"] == format!("fief-tenant-{bad}").as_str()
                })
            })
    });
    wait_until("good tenant applied", Duration::from_secs(10), || {
        configmap_value(&format!("{good}-prod"), "app-config", "greeting").as_deref() == Some("hey")
    });
    assert!(
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            &format!("{good}-prod"),
            "app-extra"
        ])
        .is_none(),
        "the good tenant is pruned as usual"
    );

    // The fix commit recovers it.
    server.commit(
        &[("components/app/templates/app.yaml".into(), APP.to_string())],
        "fix",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("bad tenant recovered", Duration::from_secs(10), || {
        let st = status(&agent_ns, &bad);
        condition(&st, "Ready") == "True" && condition(&st, "Stalled") == "False"
    });
}

#[test]
fn a_stopped_git_server_is_reported_and_the_agent_recovers_when_it_is_back() {
    let agent_ns = common::unique("fief-ag3");
    let t = common::unique("gitdown");
    let mut server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "1s"]);
    server.stop();
    wait_until("a failed fetch reported", Duration::from_secs(15), || {
        agent.metric("fief_git_fetches_total", "failure") >= 1.0
    });
    assert!(
        agent
            .log()
            .contains("git fetch failed; keeping the last good revision")
    );
    assert_eq!(
        agent.get("/readyz").map(|(c, _)| c),
        Some(200),
        "still serving the last good revision"
    );
    assert_eq!(
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref(),
        Some("hi"),
        "nothing pruned"
    );
    server.commit(&[tenant(&t, "back")], "while down");
    server.start();
    wait_until("the agent recovered", Duration::from_secs(15), || {
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref() == Some("back")
    });
}

#[test]
fn an_agent_killed_mid_sync_converges_after_restart_with_nothing_lost_or_orphaned() {
    let agent_ns = common::unique("fief-ag4");
    let mut files = common::synth::repo_files(50);
    files.retain(|(p, _)| p != "fief.yaml");
    files.push((
        "fief.yaml".into(),
        format!("agentNamespace: {agent_ns}\nbaseDomain: bench.example\n"),
    ));
    let server = GitServer::new(&files);
    let cp = common::control_plane();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args([
            "agent",
            "--repo",
            &server.url(),
            "--no-leader-election",
            "--concurrency",
            "4",
        ])
        .arg("--kubeconfig")
        .arg(cp.admin_kubeconfig())
        .arg("--cache-dir")
        .arg(dir.path())
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let inventories = || {
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            &agent_ns,
            "-l",
            "applyset.kubernetes.io/id",
        ])
        .and_then(|v| v["items"].as_array().map(|a| a.len()))
        .unwrap_or(0)
    };
    wait_until("the sync under way", Duration::from_secs(60), || {
        inventories() >= 3
    });
    let at_kill = inventories();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        at_kill < 50,
        "killed after {at_kill} of 50 tenants; the test needs a mid-sync kill"
    );

    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    wait_until("every tenant Ready", Duration::from_secs(120), || {
        (0..50).all(|i| {
            condition(&status(&agent_ns, &common::synth::tenant_name(i)), "Ready") == "True"
        })
    });
    // No object lost: everything rendered exists. None orphaned: everything labelled as a
    // tenant's member is in that tenant's inventory.
    let snapshot = fief::core::snapshot::Snapshot::from_files(files.clone());
    let repo = fief::core::model::Repo::load(std::sync::Arc::new(snapshot));
    let renders = fief::core::pipeline::render_all(&repo, &[]);
    let kinds = "namespaces,roles,rolebindings,resourcequotas,limitranges,networkpolicies,serviceaccounts,configmaps,secrets,services,deployments,statefulsets,persistentvolumeclaims,ingresses";
    let live = kubectl_json(&[
        "get",
        kinds,
        "-A",
        "-l",
        "fief.dev/tenant,fief.dev/component",
    ])
    .unwrap();
    let mut live_ids = std::collections::BTreeSet::new();
    for o in live["items"].as_array().unwrap() {
        let t = o["metadata"]["labels"]["fief.dev/tenant"]
            .as_str()
            .unwrap_or("");
        if !t.starts_with("tenant-000") {
            continue;
        }
        live_ids.insert((
            t.to_string(),
            o["kind"].as_str().unwrap().to_string(),
            o["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            o["metadata"]["name"].as_str().unwrap().to_string(),
        ));
    }
    let mut inventory_ids = std::collections::BTreeSet::new();
    for r in &renders {
        let st = kubectl_json(&[
            "get",
            "configmap",
            "-n",
            &agent_ns,
            &format!("fief-tenant-{}", r.tenant),
        ])
        .unwrap();
        let entries: Vec<Value> =
            serde_json::from_str(st["data"]["entries"].as_str().unwrap()).unwrap();
        for e in entries {
            inventory_ids.insert((
                r.tenant.clone(),
                e["kind"].as_str().unwrap().to_string(),
                e["namespace"].as_str().unwrap().to_string(),
                e["name"].as_str().unwrap().to_string(),
            ));
        }
        for o in &r.objects {
            let id = (
                r.tenant.clone(),
                o.id.kind.clone(),
                o.id.namespace.clone(),
                o.id.name.clone(),
            );
            assert!(live_ids.contains(&id), "lost: {id:?}");
        }
    }
    let orphans: Vec<_> = live_ids.difference(&inventory_ids).collect();
    assert!(orphans.is_empty(), "orphaned: {orphans:?}");
    drop(agent);
}

#[test]
fn two_replicas_share_one_lease_and_only_the_leader_syncs() {
    let agent_ns = common::unique("fief-ag5");
    let lease_ns = agent_ns.clone();
    let t = common::unique("lease");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let _ = common::control_plane()
        .kubectl_admin()
        .args(["create", "namespace", &lease_ns])
        .output();
    let start = |port: u16| {
        let cp = common::control_plane();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_fief"))
            .args([
                "agent",
                "--repo",
                &server.url(),
                "--lease-namespace",
                &lease_ns,
                "--interval",
                "1s",
            ])
            .arg("--kubeconfig")
            .arg(cp.admin_kubeconfig())
            .arg("--cache-dir")
            .arg(dir.path())
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .env("POD_NAME", format!("replica-{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        (child, dir, port)
    };
    let (mut first, _d1, p1) = start(free_port());
    let (mut second, _d2, p2) = start(free_port());
    let ready = |port: u16| Agent::request_raw(port, "/readyz") == Some(200);
    wait_until("one replica ready", Duration::from_secs(60), || {
        ready(p1) || ready(p2)
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !(ready(p1) && ready(p2)),
        "both replicas sync: the lease does not work"
    );
    let lease = kubectl_json(&["get", "lease", "-n", &lease_ns, "fief-agent"]).unwrap();
    let holder = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();
    // The leader goes away; the other replica takes over.
    let (leader, other) = if holder == format!("replica-{p1}") {
        (&mut first, p2)
    } else {
        (&mut second, p1)
    };
    leader.kill().unwrap();
    leader.wait().unwrap();
    wait_until(
        "the other replica took over",
        Duration::from_secs(60),
        || ready(other),
    );
    let _ = first.kill();
    let _ = second.kill();
    let _ = first.wait();
    let _ = second.wait();
}

impl Agent {
    fn request_raw(port: u16, path: &str) -> Option<u16> {
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
