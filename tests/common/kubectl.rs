//! The tests' one kubectl wrapper. In: who runs it (the test control plane's admin, one of its
//! users, the node cluster's admin, or a kubeconfig file), the arguments, and what goes to its
//! stdin. Out: what the test wants back — kubectl's whole `Output`, its stdout or its stderr
//! as a `Result`, stdout that must be there (else the test fails with kubectl's stderr), or
//! the parsed `-o json`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// One kubectl run, as a builder: pick who runs it, maybe give it stdin, then run it.
pub struct Kubectl {
    cmd: Command,
    stdin: Option<String>,
}

impl Kubectl {
    /// As cluster admin of the test control plane.
    pub fn admin() -> Kubectl {
        Kubectl::with(super::control_plane().kubectl_admin())
    }

    /// As `user` of the test control plane (no RBAC bindings unless the test made them).
    pub fn user(user: &str) -> Kubectl {
        Kubectl::with(super::control_plane().kubectl_as(user))
    }

    /// With the kubeconfig at `path` (the test control plane's kubectl binary).
    pub fn kubeconfig(path: &Path) -> Kubectl {
        let mut cmd = Command::new(super::control_plane().kubectl_path());
        cmd.arg("--kubeconfig").arg(path);
        Kubectl::with(cmd)
    }

    /// A kubectl command a cluster made (`ControlPlane::kubectl_admin` of another cluster).
    pub fn with(cmd: Command) -> Kubectl {
        Kubectl { cmd, stdin: None }
    }

    /// Pipe `input` to kubectl's stdin (`apply -f -`).
    pub fn stdin(mut self, input: &str) -> Kubectl {
        self.stdin = Some(input.to_string());
        self
    }

    /// Run with `args`; kubectl's output, whatever its exit code.
    pub fn output(mut self, args: &[&str]) -> Output {
        self.cmd.args(args);
        super::util::output_with_stdin(self.cmd, self.stdin.as_deref())
    }

    /// Run with `args`; its stdout when it succeeds, its stderr when it does not.
    pub fn run(self, args: &[&str]) -> Result<String, String> {
        let out = self.output(args);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Run with `args`, which must succeed (else the test fails with kubectl's stderr); stdout.
    pub fn ok(self, args: &[&str]) -> String {
        self.run(args)
            .unwrap_or_else(|e| panic!("kubectl {args:?} failed: {e}"))
    }

    /// Run with `args` and `-o json`; the parsed output, or `None` when kubectl fails (not
    /// found, forbidden).
    pub fn json(self, args: &[&str]) -> Option<Value> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let text = self.run(&all).ok()?;
        serde_json::from_str(&text).ok()
    }
}
