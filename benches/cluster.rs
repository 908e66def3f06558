//! Cluster benchmark: fief against the real test control plane, side by side with kubectl.
//!
//! `cargo bench --bench cluster -- [TENANTS] [RUNS] [KUBECTL_TENANTS]` (defaults 1000 3 100).
//! Prints a table: render, cold apply, no-op pass (with the API server's own request counts),
//! a one-tenant change through the webhook, a shared-component change, the agent's peak RSS,
//! and the same manifests applied by `kubectl apply --server-side --prune --applyset` for the
//! cold, no-op and shared-change passes (ratios measured in the same run), plus the API
//! server's raw write rate from a plain parallel client.
//!
//! `FIEF_BENCH_AGENT_ONLY=1 cargo bench --bench cluster -- 1000 3 100` runs only the agent's
//! phases (benches/cluster_agent/phases.rs) on repos it applies first with `fief apply`.
//! `FIEF_BENCH_ONLY=cli` runs only the CLI phases at TENANTS (render, raw rate, cold and
//! no-op `fief apply` with their peak RSS); with `FIEF_BENCH_ALT_ARGS="..."` (or
//! `FIEF_BENCH_ALT_QPS=N`: `--api-qps N`) also a cold apply with those arguments in each run,
//! and with `FIEF_BENCH_RAW_SAME=1` the same objects applied by a plain parallel SSA client
//! (the API server's own rate for fief's objects).

#[path = "cluster_agent/phases.rs"]
mod agent_phases;
#[path = "../tests/common/mod.rs"]
mod common;

use common::synth;
use common::util::{Daemon, git_daemon};

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use hmac::{Hmac, Mac};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use sha2::Sha256;

const CONCURRENCY: &str = "8";
const SECRET: &str = "bench-secret";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn fief() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fief"))
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.email=b@fief.dev", "-c", "user.name=bench"])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "git {args:?}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sum of the API server's `apiserver_request_total` by verb (leases and events excluded:
/// the controller-manager's own background traffic).
async fn apiserver_requests(client: &kube::Client) -> BTreeMap<String, f64> {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(req).await.unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        if line.contains("resource=\"leases\"") || line.contains("resource=\"events\"") {
            continue;
        }
        let Some(verb) = line
            .split("verb=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
        else {
            continue;
        };
        let Some(n) = line.rsplit(' ').next().and_then(|n| n.parse::<f64>().ok()) else {
            continue;
        };
        *out.entry(verb.to_string()).or_insert(0.0) += n;
    }
    out
}

fn delta(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

fn mutating(d: &BTreeMap<String, f64>) -> f64 {
    [
        "POST",
        "PUT",
        "PATCH",
        "APPLY",
        "DELETE",
        "DELETECOLLECTION",
        "CREATE",
        "UPDATE",
    ]
    .iter()
    .map(|v| d.get(*v).copied().unwrap_or(0.0))
    .sum()
}

/// `fief apply` on a repo; (seconds, objects created+configured, mutating requests fief sent).
fn fief_apply(repo: &Path, kubeconfig: &Path) -> (f64, u64, u64) {
    let (secs, objects, sent, _) = fief_apply_rss(repo, kubeconfig);
    (secs, objects, sent)
}

/// [`fief_apply`] under `/usr/bin/time`, also returning fief's peak RSS in MiB (0 when
/// `/usr/bin/time` is missing).
fn fief_apply_rss(repo: &Path, kubeconfig: &Path) -> (f64, u64, u64, f64) {
    fief_apply_rss_with(repo, kubeconfig, &[])
}

/// [`fief_apply_rss`] with extra `fief apply` arguments.
fn fief_apply_rss_with(repo: &Path, kubeconfig: &Path, extra: &[&str]) -> (f64, u64, u64, f64) {
    let rss_file = tempfile::NamedTempFile::new().unwrap();
    let timed = Path::new("/usr/bin/time").exists();
    let mut cmd = if timed {
        let mut c = Command::new("/usr/bin/time");
        c.args(["-f", "%M", "-o"])
            .arg(rss_file.path())
            .arg(env!("CARGO_BIN_EXE_fief"));
        c
    } else {
        fief()
    };
    let start = Instant::now();
    // fief apply's own defaults (--concurrency, --api-qps), as a user runs it.
    cmd.args(["apply", repo.to_str().unwrap(), "--output", "json"]);
    let out = cmd
        .args(extra)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "fief apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let objects = v["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["counts"]["created"].as_u64().unwrap_or(0)
                + t["counts"]["configured"].as_u64().unwrap_or(0)
        })
        .sum();
    let r = &v["requests"];
    let sent = ["post", "put", "patch", "delete"]
        .iter()
        .map(|k| r[*k].as_u64().unwrap_or(0))
        .sum();
    let rss_kib: f64 = std::fs::read_to_string(rss_file.path())
        .ok()
        .and_then(|t| t.trim().lines().last()?.trim().parse().ok())
        .unwrap_or(0.0);
    (secs, objects, sent, rss_kib / 1024.0)
}

/// The same manifests through kubectl, as a kubectl pipeline would run them: per tenant, the
/// cluster-scoped objects (its Namespaces) with `apply --server-side`, then per namespace
/// `apply --server-side --prune --applyset=configmaps/kubectl-set -n <ns>`; CONCURRENCY
/// tenants at a time. Returns seconds.
fn kubectl_apply(rendered: &Path, tenants: &[String], kubectl: &Path, kubeconfig: &Path) -> f64 {
    let start = Instant::now();
    let parallel: usize = CONCURRENCY.parse().unwrap();
    let run = |args: Vec<String>| {
        let out = Command::new(kubectl)
            .env("KUBECTL_APPLYSET", "true")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let run = &run;
    std::thread::scope(|s| {
        for chunk in tenants.chunks(tenants.len().div_ceil(parallel).max(1)) {
            s.spawn(move || {
                for t in chunk {
                    let dir = rendered.join(t);
                    let cluster = dir.join("_cluster");
                    if cluster.exists() {
                        run(vec![
                            "apply".into(),
                            "--server-side".into(),
                            "--force-conflicts".into(),
                            "-f".into(),
                            cluster.display().to_string(),
                        ]);
                    }
                    let mut namespaces: Vec<PathBuf> = std::fs::read_dir(&dir)
                        .unwrap()
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| !p.ends_with("_cluster"))
                        .collect();
                    namespaces.sort();
                    for ns_dir in namespaces {
                        let ns = ns_dir.file_name().unwrap().to_string_lossy().to_string();
                        run(vec![
                            "apply".into(),
                            "--server-side".into(),
                            "--force-conflicts".into(),
                            "--prune".into(),
                            "--applyset=configmaps/kubectl-set".into(),
                            "-n".into(),
                            ns,
                            "-f".into(),
                            ns_dir.display().to_string(),
                        ]);
                    }
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

/// `--show-secrets` needs an age key; the synth repos have no SOPS files, so the example's
/// test-only key serves (their plain Secrets are then rendered with their values).
fn age_key() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tenants-repo/age-key.TEST-ONLY.txt")
}

fn render_out(repo: &Path, out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    let ok = fief()
        .args([
            "render",
            repo.to_str().unwrap(),
            "--show-secrets",
            "--out",
            out.to_str().unwrap(),
        ])
        .arg("--age-key-file")
        .arg(age_key())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    // kubectl sets the ApplySet member label itself and refuses input that has one.
    strip_part_of(out);
}

fn strip_part_of(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            strip_part_of(&path);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            let kept: String = text
                .lines()
                .filter(|l| !l.contains("applyset.kubernetes.io/part-of:"))
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(&path, kept).unwrap();
        }
    }
}

struct AgentProc {
    child: Child,
    port: u16,
}
impl Drop for AgentProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    if s.write_all(req.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        code,
        out.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default(),
    )
}

impl AgentProc {
    fn start(url: &str, kubeconfig: &Path, cache: &Path, secret: &Path) -> AgentProc {
        let port = free_port();
        let child = fief()
            .args([
                "agent",
                "--repo",
                url,
                "--no-leader-election",
                "--interval",
                "600s",
                "--concurrency",
                CONCURRENCY,
            ])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--webhook-secret-file")
            .arg(secret)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let agent = AgentProc { child, port };
        let start = Instant::now();
        while http(port, "GET", "/readyz", &[], "").0 != 200 {
            assert!(
                start.elapsed() < Duration::from_secs(900),
                "agent not ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        agent
    }

    fn metric(&self, name: &str) -> f64 {
        let (_, text) = http(self.port, "GET", "/metrics", &[], "");
        text.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    fn requests(&self) -> BTreeMap<String, f64> {
        let (_, text) = http(self.port, "GET", "/metrics", &[], "");
        text.lines()
            .filter(|l| l.starts_with("fief_api_requests_total{"))
            .filter_map(|l| {
                let verb = l.split("verb=\"").nth(1)?.split('"').next()?.to_string();
                Some((verb, l.rsplit(' ').next()?.parse().ok()?))
            })
            .collect()
    }

    fn push(&self) {
        let body = r#"{"ref":"refs/heads/main"}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(body.as_bytes());
        let sig: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let (code, _) = http(
            self.port,
            "POST",
            "/hooks/git",
            &[("X-Hub-Signature-256", format!("sha256={sig}"))],
            body,
        );
        assert_eq!(code, 202);
    }

    /// A field of /proc/<pid>/status given in kB, in MiB.
    fn status_mib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    }

    /// Peak resident set size (VmHWM), MiB.
    fn peak_rss_mib(&self) -> f64 {
        self.status_mib("VmHWM:")
    }

    /// The peak RSS with what is resident now, split: anonymous (the heap, stacks) and
    /// file-backed (the mapped binary and shared libraries), MiB.
    fn rss_report(&self) -> String {
        format!(
            "{:.0} MiB (now: {:.0} MiB anonymous + {:.0} MiB file-backed)",
            self.peak_rss_mib(),
            self.status_mib("RssAnon:"),
            self.status_mib("RssFile:")
        )
    }
}

async fn wait_value(
    api: &Api<k8s_openapi::api::core::v1::ConfigMap>,
    name: &str,
    key: &str,
    want: &str,
) {
    loop {
        if let Ok(cm) = api.get(name).await
            && cm
                .data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(String::as_str)
                == Some(want)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A plain parallel client: server-side apply `n` ConfigMaps, 32 at a time. Objects/s.
async fn raw_write_rate(client: &kube::Client, n: usize, ns: &str) -> f64 {
    let nsapi: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let _ = nsapi
        .patch(
            ns,
            &PatchParams::apply("bench").force(),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            ),
        )
        .await;
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("raw-{i}");
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"bench": "raw"}}, "data": {"k": "v", "i": i.to_string()}});
                let _ = api.patch(&name, &PatchParams::apply("bench").force(), &Patch::Apply(cm)).await;
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    n as f64 / start.elapsed().as_secs_f64()
}

/// The API server's SSA rate for the very objects `fief apply` writes for `repo` (its render,
/// as admin: no inventory, no impersonation, no Events; Namespaces first, then the rest, 64
/// in flight). Objects per second of those accepted, and how many were refused.
async fn raw_same_objects_rate(client: &kube::Client, repo: &Path) -> (f64, usize) {
    use kube::discovery::{ApiCapabilities, ApiResource, Scope, pinned_kind};
    let out = fief()
        .args([
            "render",
            repo.to_str().unwrap(),
            "-o",
            "json",
            "--show-secrets",
        ])
        .arg("--age-key-file")
        .arg(age_key())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let mut kinds: BTreeMap<(String, String), (ApiResource, ApiCapabilities)> = BTreeMap::new();
    for o in &items {
        let key = (
            o["apiVersion"].as_str().unwrap_or_default().to_string(),
            o["kind"].as_str().unwrap_or_default().to_string(),
        );
        if !kinds.contains_key(&key) {
            let (group, version) = key.0.rsplit_once('/').unwrap_or(("", &key.0));
            let gvk = kube::api::GroupVersionKind::gvk(group, version, &key.1);
            kinds.insert(key.clone(), pinned_kind(client, &gvk).await.unwrap());
        }
    }
    let (namespaces, rest): (Vec<Value>, Vec<Value>) =
        items.into_iter().partition(|o| o["kind"] == "Namespace");
    let kinds = &kinds;
    let start = Instant::now();
    let mut ok = 0;
    let mut refused = 0;
    for stage in [namespaces, rest] {
        let results: Vec<bool> = futures::stream::iter(stage)
            .map(|o| async move {
                let key = (
                    o["apiVersion"].as_str().unwrap_or_default().to_string(),
                    o["kind"].as_str().unwrap_or_default().to_string(),
                );
                let (ar, caps) = &kinds[&key];
                let name = o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let api: Api<kube::api::DynamicObject> = match caps.scope {
                    Scope::Namespaced => Api::namespaced_with(
                        client.clone(),
                        o["metadata"]["namespace"].as_str().unwrap_or_default(),
                        ar,
                    ),
                    Scope::Cluster => Api::all_with(client.clone(), ar),
                };
                api.patch(
                    &name,
                    &PatchParams::apply("bench-raw").force(),
                    &Patch::Apply(&o),
                )
                .await
                .is_ok()
            })
            .buffer_unordered(64)
            .collect()
            .await;
        ok += results.iter().filter(|r| **r).count();
        refused += results.iter().filter(|r| !**r).count();
    }
    (ok as f64 / start.elapsed().as_secs_f64(), refused)
}

/// One line of the benchmark's table.
fn row(k: &str, v: String) {
    println!("{k:<58} {v}");
}

/// What every phase of the benchmark shares.
struct Bench {
    /// Tenants of the large repo.
    tenants: usize,
    /// Runs of each measurement (the median is reported).
    runs: usize,
    /// Tenants of the kubectl comparison.
    small: usize,
    /// `FIEF_BENCH_ONLY=cli`: only the CLI phases at `tenants`.
    cli_only: bool,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
    work: tempfile::TempDir,
}

fn main() {
    // `cargo test --all-targets` builds and runs bench targets too; only `cargo bench` (which
    // passes --bench) measures.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark compiled; run it with `cargo bench`");
        return;
    }
    let bench = Bench::start();
    println!(
        "cluster benchmark: {} tenants (kubectl comparison at {}), {} runs, fief apply with its defaults, agent --concurrency {CONCURRENCY}",
        bench.tenants, bench.small, bench.runs
    );
    if std::env::var_os("FIEF_BENCH_AGENT_ONLY").is_some() {
        bench.agent_only();
        return;
    }
    bench.render();
    let raw = bench.raw_rate();
    let mut m = Measured::default();
    for r in 0..bench.runs {
        m.big_run(&bench, r);
        if !bench.cli_only {
            m.side_by_side(&bench, r);
        }
    }
    m.report_big(&bench, raw);
    if bench.cli_only {
        return;
    }
    m.report_side_by_side(bench.small);
    // 4-7, 12: the agent on the last N-tenant repo and on the small one.
    bench.agent(&m.last_big);
}

impl Bench {
    /// The arguments (`[TENANTS] [RUNS] [KUBECTL_TENANTS]`), the control plane, a runtime
    /// and an admin client, and a work folder.
    fn start() -> Bench {
        let args: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with("--"))
            .collect();
        let cp = common::control_plane();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(cp.admin_client());
        let _ = cp
            .kubectl_admin()
            .args(["create", "namespace", "kubectl-sets"])
            .output();
        Bench {
            tenants: args.first().and_then(|a| a.parse().ok()).unwrap_or(1000),
            runs: args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3),
            small: args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100),
            // No kubectl side by side, no agent.
            cli_only: std::env::var("FIEF_BENCH_ONLY").is_ok_and(|v| v == "cli"),
            kubeconfig: cp.admin_kubeconfig().to_path_buf(),
            kubectl: cp.kubectl_path().to_path_buf(),
            rt,
            client,
            work: tempfile::tempdir().unwrap(),
        }
    }

    /// `FIEF_BENCH_AGENT_ONLY`: apply the large and the small repo with `fief apply`, then
    /// only the agent's phases (or, with `FIEF_BENCH_AGENT_HOLD`, hold them for a person).
    fn agent_only(&self) {
        let (tenants, kubeconfig) = (self.tenants, &self.kubeconfig);
        let big = self.work.path().join("big0");
        synth::write_files(&big, &synth::repo_files_named(tenants, "big0")).unwrap();
        let (secs, objects, _) = fief_apply(&big, kubeconfig);
        row(
            &format!("2. cold apply, {tenants} tenants (fief apply)"),
            format!("{secs:.1} s, {:.0} objects/s", objects as f64 / secs),
        );
        // Its own agent namespace, so neither agent sees the other's inventories (as orphans).
        let fs0 = self.work.path().join("fs0");
        let mut files = synth::repo_files_named(self.small, "fs0");
        files.push((
            "fief.yaml".into(),
            "baseDomain: bench.example\nagentNamespace: fief-bench-small\n".into(),
        ));
        synth::write_files(&fs0, &files).unwrap();
        fief_apply(&fs0, kubeconfig);
        if let Some(file) = std::env::var_os("FIEF_BENCH_AGENT_HOLD") {
            agent_phases::hold(Path::new(&file), kubeconfig, self.work.path(), &big, &fs0);
            return;
        }
        self.agent(&big);
    }

    /// The agent's phases on `big` (the N-tenant repo) and on the small one.
    fn agent(&self, big: &Path) {
        agent_phases::run(
            &self.rt,
            &self.client,
            &self.kubeconfig,
            self.work.path(),
            big,
            &self.work.path().join("fs0"),
            self.tenants,
            self.small,
            self.runs,
            &mut row,
        );
    }

    /// 1. Render + validate.
    fn render(&self) {
        let files = synth::repo_files_named(self.tenants, "big0");
        let mut t = Vec::new();
        for _ in 0..self.runs {
            let repo = fief::core::model::Repo::load(Arc::new(
                fief::core::snapshot::Snapshot::from_files(files.clone()),
            ));
            let start = Instant::now();
            let renders = fief::core::pipeline::render_all(&repo, &[]);
            t.push(start.elapsed().as_secs_f64());
            assert!(renders.iter().all(|r| r.is_ok()));
        }
        row(
            &format!("1. render + validate, {} tenants", self.tenants),
            format!("{:.0} ms", median(t) * 1000.0),
        );
    }

    /// The raw API server write rate, for reference.
    fn raw_rate(&self) -> f64 {
        let mut raw = Vec::new();
        for r in 0..self.runs {
            raw.push(self.rt.block_on(raw_write_rate(
                &self.client,
                2000,
                &format!("bench-raw-{r}"),
            )));
        }
        let raw = median(raw);
        row(
            "   API server raw SSA write rate (32 parallel ConfigMaps)",
            format!("{raw:.0} objects/s"),
        );
        raw
    }
}

/// `FIEF_BENCH_ALT_ARGS="--api-qps 1000 --concurrency 16"`: extra `fief apply` arguments for
/// the alternative cold apply (`FIEF_BENCH_ALT_QPS=N` is `--api-qps N`).
fn alt_args() -> Option<String> {
    std::env::var("FIEF_BENCH_ALT_ARGS").ok().or_else(|| {
        std::env::var("FIEF_BENCH_ALT_QPS")
            .ok()
            .map(|q| format!("--api-qps {q}"))
    })
}

/// `FIEF_BENCH_RAW_SAME=1`: the same objects (another tenant prefix) applied by a plain
/// parallel SSA client, in the same run: the API server's own rate for them.
fn raw_same_on() -> bool {
    std::env::var_os("FIEF_BENCH_RAW_SAME").is_some()
}

/// 2 + 3. Every run's measurements: cold apply and no-op pass, fief at N; fief and kubectl
/// at the small size.
#[derive(Default)]
struct Measured {
    cold: Vec<f64>,
    cold_rate: Vec<f64>,
    noop: Vec<f64>,
    noop_mut: Vec<f64>,
    noop_reads: Vec<f64>,
    fs_cold: Vec<f64>,
    fs_noop: Vec<f64>,
    k_cold: Vec<f64>,
    k_noop: Vec<f64>,
    fs_change: Vec<f64>,
    k_change: Vec<f64>,
    raw_same: Vec<f64>,
    alt_rate: Vec<f64>,
    fief_sent: Vec<f64>,
    cold_rss: Vec<f64>,
    noop_rss: Vec<f64>,
    /// The N-tenant repo of the last run.
    last_big: PathBuf,
}

impl Measured {
    /// Run `r` at N tenants: cold apply and no-op pass (with the API server's own request
    /// counts), and the alternative and plain-client applies when asked for.
    fn big_run(&mut self, b: &Bench, r: usize) {
        let (tenants, kubeconfig) = (b.tenants, &b.kubeconfig);
        let dir = b.work.path().join(format!("big{r}"));
        // Each run's tenants in their own agent namespace: a run does not see the earlier
        // runs' 1,000s of inventories (as orphans), as one repo's apply would not.
        let mut files = synth::repo_files_named(tenants, &format!("big{r}"));
        files.push((
            "fief.yaml".into(),
            format!("baseDomain: bench.example\nagentNamespace: fief-bench-big{r}\n"),
        ));
        synth::write_files(&dir, &files).unwrap();
        let (secs, objects, _, rss) = fief_apply_rss(&dir, kubeconfig);
        self.cold.push(secs);
        self.cold_rate.push(objects as f64 / secs);
        self.cold_rss.push(rss);
        // The no-op pass is the steady state: the controller-manager's work on the objects
        // just created (quotas, tokens) is let finish first.
        std::thread::sleep(Duration::from_secs(10));
        let before = b.rt.block_on(apiserver_requests(&b.client));
        let (secs, objects, sent, rss) = fief_apply_rss(&dir, kubeconfig);
        self.noop_rss.push(rss);
        self.fief_sent.push(sent as f64);
        let d = delta(&before, &b.rt.block_on(apiserver_requests(&b.client)));
        assert_eq!(objects, 0);
        self.noop.push(secs);
        self.noop_mut.push(mutating(&d));
        self.noop_reads
            .push(d.get("LIST").copied().unwrap_or(0.0) + d.get("GET").copied().unwrap_or(0.0));
        self.last_big = dir;
        if raw_same_on() {
            let dir = b.work.path().join(format!("rawsame{r}"));
            synth::write_files(&dir, &synth::repo_files_named(tenants, &format!("rs{r}"))).unwrap();
            let (rate, refused) = b.rt.block_on(raw_same_objects_rate(&b.client, &dir));
            assert_eq!(refused, 0, "the plain client was refused objects");
            self.raw_same.push(rate);
        }
        // `FIEF_BENCH_ALT_QPS=N`: the same cold apply with `--api-qps N`, on its own tenants,
        // in the same run (the client-side limit against the default).
        if let Some(args) = alt_args() {
            let dir = b.work.path().join(format!("alt{r}"));
            let mut files = synth::repo_files_named(tenants, &format!("alt{r}"));
            files.push((
                "fief.yaml".into(),
                format!("baseDomain: bench.example\nagentNamespace: fief-bench-alt{r}\n"),
            ));
            synth::write_files(&dir, &files).unwrap();
            let args: Vec<&str> = args.split_whitespace().collect();
            let (secs, objects, _, _) = fief_apply_rss_with(&dir, kubeconfig, &args);
            self.alt_rate.push(objects as f64 / secs);
        }
    }

    /// Run `r` side by side at the small size: fief apply vs kubectl, same manifests; cold,
    /// no-op, and (5) a shared component change for every tenant.
    fn side_by_side(&mut self, b: &Bench, r: usize) {
        let (small, kubeconfig, kubectl) = (b.small, &b.kubeconfig, &b.kubectl);
        let fdir = b.work.path().join(format!("fs{r}"));
        let kfiles = synth::repo_files_named(small, &format!("fs{r}"));
        synth::write_files(&fdir, &kfiles).unwrap();
        self.fs_cold.push(fief_apply(&fdir, kubeconfig).0);
        self.fs_noop.push(fief_apply(&fdir, kubeconfig).0);
        let kdir = b.work.path().join(format!("ks{r}"));
        let kfiles = synth::repo_files_named(small, &format!("ks{r}"));
        synth::write_files(&kdir, &kfiles).unwrap();
        let out = b.work.path().join(format!("ks{r}-out"));
        render_out(&kdir, &out);
        let names: Vec<String> = (0..small).map(|i| format!("ks{r}-{i:05}")).collect();
        self.k_cold
            .push(kubectl_apply(&out, &names, kubectl, kubeconfig));
        self.k_noop
            .push(kubectl_apply(&out, &names, kubectl, kubeconfig));
        let change = (
            "components/worker/varz.yaml".to_string(),
            format!("image: registry.example/worker\nqueues: [default, mail, run{r}]\n"),
        );
        synth::write_files(&fdir, std::slice::from_ref(&change)).unwrap();
        self.fs_change.push(fief_apply(&fdir, kubeconfig).0);
        synth::write_files(&kdir, std::slice::from_ref(&change)).unwrap();
        render_out(&kdir, &out);
        self.k_change
            .push(kubectl_apply(&out, &names, kubectl, kubeconfig));
    }

    /// The rows of 2 and 3 at N tenants (`raw`: the API server's raw write rate).
    fn report_big(&self, b: &Bench, raw: f64) {
        let tenants = b.tenants;
        let cold_rate = median(self.cold_rate.clone());
        row(
            &format!("2. cold apply, {tenants} tenants (fief apply)"),
            format!(
                "{:.1} s, {cold_rate:.0} objects/s",
                median(self.cold.clone())
            ),
        );
        row(
            "   fief cold-apply rate / API server raw rate",
            format!("{:.0} %", 100.0 * cold_rate / raw),
        );
        self.report_alternatives(cold_rate, raw);
        row(
            &format!("3. no-op pass, {tenants} unchanged tenants"),
            format!("{:.0} ms", median(self.noop.clone()) * 1000.0),
        );
        row(
            "   mutating requests fief sent in the no-op pass",
            format!("{:.0}", median(self.fief_sent.clone())),
        );
        row(
            "   all API requests meanwhile (apiserver_request_total)",
            format!(
                "{:.0} mutating, {:.0} reads (controller-manager included)",
                median(self.noop_mut.clone()),
                median(self.noop_reads.clone())
            ),
        );
        row(
            &format!("   fief apply peak RSS, {tenants} tenants: cold / no-op"),
            format!(
                "{:.0} MiB / {:.0} MiB",
                median(self.cold_rss.clone()),
                median(self.noop_rss.clone())
            ),
        );
    }

    /// The rows of the plain client on the same objects and of the alternative cold apply,
    /// when measured.
    fn report_alternatives(&self, cold_rate: f64, raw: f64) {
        let raw_same_on = raw_same_on();
        if raw_same_on {
            row(
                "   plain parallel SSA of the same objects (64 in flight, admin)",
                format!(
                    "{:.0} objects/s; fief cold apply is {:.0} % of it",
                    median(self.raw_same.clone()),
                    100.0 * cold_rate / median(self.raw_same.clone())
                ),
            );
        }
        if let Some(args) = alt_args() {
            let same = if raw_same_on {
                format!(
                    "; {:.0} % of the plain client on the same objects",
                    100.0 * median(self.alt_rate.clone()) / median(self.raw_same.clone())
                )
            } else {
                String::new()
            };
            row(
                &format!("   cold apply rate with {args} / API server raw rate"),
                format!(
                    "{:.0} objects/s, {:.0} %{same}",
                    median(self.alt_rate.clone()),
                    100.0 * median(self.alt_rate.clone()) / raw
                ),
            );
        }
    }

    /// The rows 2', 3' and 5': fief against kubectl at `small` tenants.
    fn report_side_by_side(&self, small: usize) {
        let objects_per_tenant = 26.4;
        let ratio = |f: &Vec<f64>, k: &Vec<f64>| median(k.clone()) / median(f.clone());
        row(
            &format!("2'. cold apply, {small} tenants: fief / kubectl"),
            format!(
                "{:.1} s / {:.1} s = {:.1}x faster ({:.0} vs {:.0} objects/s)",
                median(self.fs_cold.clone()),
                median(self.k_cold.clone()),
                ratio(&self.fs_cold, &self.k_cold),
                small as f64 * objects_per_tenant / median(self.fs_cold.clone()),
                small as f64 * objects_per_tenant / median(self.k_cold.clone())
            ),
        );
        row(
            &format!("3'. no-op pass, {small} tenants: fief / kubectl"),
            format!(
                "{:.2} s / {:.1} s = {:.0}x faster",
                median(self.fs_noop.clone()),
                median(self.k_noop.clone()),
                ratio(&self.fs_noop, &self.k_noop)
            ),
        );
        row(
            &format!("5'. shared component change, {small} tenants: fief / kubectl"),
            format!(
                "{:.2} s / {:.1} s = {:.1}x faster",
                median(self.fs_change.clone()),
                median(self.k_change.clone()),
                ratio(&self.fs_change, &self.k_change)
            ),
        );
    }
}
