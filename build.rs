//! Build script: records the git commit the binary is built from, for `fief --version`.
//! Outside a git checkout (e.g. a source tarball) the commit is `unknown`, or whatever
//! `FIEF_GIT_COMMIT` says.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=FIEF_GIT_COMMIT");
    // Every commit and checkout writes these, so the recorded commit follows HEAD.
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let commit = std::env::var("FIEF_GIT_COMMIT")
        .ok()
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .map(|s| if s.is_empty() { "" } else { "-dirty" })
        .unwrap_or("");
    println!("cargo:rustc-env=FIEF_GIT_COMMIT={commit}{dirty}");
}
