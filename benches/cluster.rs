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
//! phases (benches/cluster/phases.rs) on repos it applies first with `fief apply`.
//! `FIEF_BENCH_ONLY=cli` runs only the CLI phases at TENANTS (render, raw rate, cold and
//! no-op `fief apply` with their peak RSS); with `FIEF_BENCH_ALT_ARGS="..."` (or
//! `FIEF_BENCH_ALT_QPS=N`: `--api-qps N`) also a cold apply with those arguments in each run,
//! and with `FIEF_BENCH_RAW_SAME=1` the same objects applied by a plain parallel SSA client
//! (the API server's own rate for fief's objects).
//! `FIEF_BENCH_SCALE=1 cargo bench --bench cluster -- 1000,10000 3` runs the CLI and the
//! agent at each size in one sitting (benches/cluster/scale.rs).
//! `FIEF_BENCH_CHARTS=1 cargo bench --bench cluster -- 1000 7` compares the agent with a
//! fleet of chart tenants and one of templates tenants (benches/cluster/charts_agent.rs).

#[path = "cluster/agent_proc.rs"]
mod agent_proc;
#[path = "shared/chart_fleet.rs"]
mod chart_fleet;
#[path = "cluster/charts_agent.rs"]
mod charts_agent;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "cluster/measured.rs"]
mod measured;
#[path = "cluster/phases.rs"]
mod phases;
#[path = "cluster/raw.rs"]
mod raw;
#[path = "cluster/scale.rs"]
mod scale;

use agent_proc::*;
use common::util::{Daemon, git_daemon};
use common::{offline, synth};
use measured::Measured;
use raw::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const CONCURRENCY: &str = "8";
const SECRET: &str = "bench-secret";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The fief binary the benchmark runs: this build's, unless `FIEF_BENCH_BINS` set another.
static FIEF_BIN: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn fief_bin() -> PathBuf {
    FIEF_BIN
        .lock()
        .ok()
        .and_then(|b| b.clone())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_fief")))
}

fn set_fief_bin(path: &Path) {
    if let Ok(mut b) = FIEF_BIN.lock() {
        *b = Some(path.to_path_buf());
    }
}

fn fief() -> Command {
    Command::new(fief_bin())
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
        c.args(["-f", "%M %U %S", "-o"])
            .arg(rss_file.path())
            .arg(fief_bin());
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
    // `/usr/bin/time`'s last line: peak RSS in KiB, user and system CPU seconds.
    let timing = std::fs::read_to_string(rss_file.path()).unwrap_or_default();
    let fields: Vec<f64> = timing
        .trim()
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    if let (Some(user), Some(sys), Ok(mut cpu)) =
        (fields.get(1), fields.get(2), LAST_APPLY_CPU.lock())
    {
        *cpu = user + sys;
    }
    (
        secs,
        objects,
        sent,
        fields.first().copied().unwrap_or(0.0) / 1024.0,
    )
}

/// The CPU seconds (user + system) of the last `fief apply` run under `/usr/bin/time`.
static LAST_APPLY_CPU: std::sync::Mutex<f64> = std::sync::Mutex::new(0.0);

fn last_apply_cpu() -> f64 {
    LAST_APPLY_CPU.lock().map(|c| *c).unwrap_or(0.0)
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

/// One line of the benchmark's table.
fn row(k: &str, v: String) {
    println!("{k:<58} {v}");
}

/// What every phase of the benchmark shares.
struct Bench {
    /// `FIEF_BENCH_SCALE`: the fleet sizes, smallest first.
    sizes: Vec<usize>,
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
    if std::env::var_os("FIEF_BENCH_SCALE").is_some()
        && std::env::var_os("FIEF_BENCH_BINS").is_none()
    {
        scale::run_fresh();
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
    if std::env::var_os("FIEF_BENCH_CHARTS").is_some() {
        charts_agent::run(&bench);
        return;
    }
    if std::env::var_os("FIEF_BENCH_SCALE").is_some() {
        scale::run(&bench, &bench.sizes, bench.runs);
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
    /// The arguments (`[TENANTS] [RUNS] [KUBECTL_TENANTS]`), the shared control plane, a
    /// runtime and an admin client, and a work folder.
    fn start() -> Bench {
        Bench::with(common::control_plane())
    }

    /// [`Bench::start`] on the control plane `cp`.
    fn with(cp: &common::ControlPlane) -> Bench {
        let args: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with("--"))
            .collect();
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
            // `FIEF_BENCH_SCALE`: TENANTS is a comma-separated list of sizes.
            sizes: args
                .first()
                .map(|a| a.split(',').filter_map(|n| n.parse().ok()).collect())
                .unwrap_or_default(),
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
        // The tenant files in folders of 100, as the scale benchmark and the docs have them
        // for thousands of tenants.
        let files = synth::in_folders(synth::repo_files_named(tenants, "big0"), 100);
        synth::write_files(&big, &files).unwrap();
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
            phases::hold(Path::new(&file), kubeconfig, self.work.path(), &big, &fs0);
            return;
        }
        self.agent(&big);
    }

    /// The agent's phases on `big` (the N-tenant repo) and on the small one.
    fn agent(&self, big: &Path) {
        phases::run(
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
