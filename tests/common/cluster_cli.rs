//! A throw-away tenants repo and `fief` / `kubectl` runners for the cluster-side tests
//! (`tests/cluster/apply_safety.rs`, `tests/cluster/diff.rs`): each repo has its own agent namespace, so tests
//! share one control plane without seeing each other's inventories.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::kubectl::Kubectl;
use super::util::text;

/// A tenants repo in a temporary folder.
pub struct TestRepo {
    /// The repo folder.
    pub dir: tempfile::TempDir,
    /// Its agent namespace (fief.yaml `agentNamespace`).
    pub agent_ns: String,
}

/// Component `app`'s one template: ConfigMap `app-config` with `k: v`.
pub const CONFIG: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  k: v\n";

impl TestRepo {
    /// A repo with component `app` (one ConfigMap) and the given extra fief.yaml lines.
    pub fn new(fief_yaml: &str) -> TestRepo {
        let repo = TestRepo {
            dir: tempfile::tempdir().unwrap(),
            agent_ns: super::unique("fief-sys"),
        };
        repo.write(
            "fief.yaml",
            &format!("agentNamespace: {}\n{fief_yaml}", repo.agent_ns),
        );
        repo.write("components/app/templates/config.yaml", CONFIG);
        repo
    }

    pub fn write(&self, path: &str, body: &str) {
        let p = self.dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.path().join(path)).unwrap();
    }

    pub fn tenant(&self, name: &str, spec: &str) {
        self.write(
            &format!("tenants/{name}.yaml"),
            &format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}"),
        );
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A tenant spec running component `app`.
pub const APP: &str = "  components:\n    - name: app\n";

/// Run `fief <cmd> <repo> --kubeconfig <kubeconfig> [args]` with extra environment.
pub fn fief_with(
    cmd: &str,
    repo: &Path,
    kubeconfig: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg(cmd)
        .arg(repo)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run fief")
}

/// Run `fief <cmd> <repo>` as cluster admin.
pub fn fief(cmd: &str, repo: &Path, args: &[&str]) -> Output {
    fief_with(
        cmd,
        repo,
        super::control_plane().admin_kubeconfig(),
        args,
        &[],
    )
}

/// Assert that `out` exited with `code`, showing its stdout and stderr when not.
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// `fief apply --output json` as admin, asserting the exit code; returns the summary and
/// stderr.
pub fn apply_json(repo: &Path, args: &[&str], code: i32) -> (Value, String) {
    let mut all = vec!["--output", "json"];
    all.extend_from_slice(args);
    let out = fief("apply", repo, &all);
    assert_exit(&out, code);
    (
        serde_json::from_slice(&out.stdout).expect("json summary"),
        text(&out.stderr),
    )
}

pub fn tenant_report<'a>(summary: &'a Value, tenant: &str) -> &'a Value {
    summary["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tenant"] == tenant)
        .unwrap_or_else(|| panic!("no report for {tenant} in {summary}"))
}

/// kubectl as admin of the test control plane; its output.
pub fn kubectl(args: &[&str]) -> Output {
    Kubectl::admin().output(args)
}

/// kubectl as admin, which must succeed.
pub fn kubectl_ok(args: &[&str]) {
    Kubectl::admin().ok(args);
}

/// `kubectl ... -o json` as admin, which must succeed.
pub fn kubectl_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&Kubectl::admin().ok(&all)).expect("kubectl printed JSON")
}

pub fn exists(kind: &str, ns: &str, name: &str) -> bool {
    let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
    if !ns.is_empty() {
        args.extend(["-n", ns]);
    }
    !text(&kubectl(&args).stdout).trim().is_empty()
}

pub fn count(kind: &str, ns: &str) -> usize {
    kubectl_json(&["get", kind, "-n", ns])["items"]
        .as_array()
        .unwrap()
        .len()
}

pub fn wait_gone(kind: &str, name: &str) {
    for _ in 0..240 {
        if !exists(kind, "", name) {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("{kind}/{name} still exists after 120s");
}

pub fn inventory_status(repo: &TestRepo, tenant: &str) -> Value {
    let inv = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    serde_json::from_str(inv["data"]["status"].as_str().unwrap()).unwrap()
}

/// No Rust debug dumps, repeated client error chains, or "cannot reach" for an answer.
pub fn assert_one_line_error(stderr: &str) {
    for bad in [
        "Status {",
        "ErrorResponse",
        "ServiceError",
        "cannot reach the cluster",
    ] {
        assert!(!stderr.contains(bad), "{bad:?} in: {stderr}");
    }
}

/// Run `fief <args> --kubeconfig admin` (for commands whose first argument is not a repo).
pub fn fief_cmd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(super::control_plane().admin_kubeconfig())
        .stdin(Stdio::null())
        .output()
        .expect("run fief")
}

/// Assert exit 0 and return stdout (both streams in the failure message).
pub fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        super::util::text(&out.stdout),
        super::util::text(&out.stderr)
    );
    super::util::text(&out.stdout)
}

/// Now, in microseconds since the Unix epoch (the clock of the audit log's times).
pub fn now_us() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// Mark one-replica workload `kind/name` (`deployment` or `statefulset`) in `ns` Ready, as its
/// controller would (the test control plane runs none); returns when, as [`now_us`].
pub fn mark_ready(kind: &str, name: &str, ns: &str) -> i64 {
    let live = kubectl_json(&["get", kind, name, "-n", ns]);
    let generation = live["metadata"]["generation"].as_i64().unwrap_or(1);
    let mut status = serde_json::json!({
        "observedGeneration": generation, "replicas": 1, "readyReplicas": 1,
        "updatedReplicas": 1, "availableReplicas": 1});
    if kind == "statefulset" {
        status["currentReplicas"] = 1.into();
        status["currentRevision"] = format!("{name}-1").into();
        status["updateRevision"] = format!("{name}-1").into();
    }
    patch_status(kind, name, ns, &status)
}

/// Merge `status` into the status subresource of `kind/name` in `ns` (what a controller
/// would write); when it was sent, in microseconds.
pub fn patch_status(kind: &str, name: &str, ns: &str, status: &serde_json::Value) -> i64 {
    let at = now_us();
    let patch = serde_json::json!({ "status": status }).to_string();
    kubectl_ok(&[
        "patch",
        kind,
        name,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
    at
}
