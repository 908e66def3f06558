//! Build script: records the git commit fief is built from (`FIEF_GIT_COMMIT`, for
//! `fief --version` and the input hashes). Outside a git checkout (e.g. a source tarball) the
//! commit is `unknown`, or whatever `FIEF_GIT_COMMIT` says. Also a hash of the sources that
//! decide what fief renders and applies (`FIEF_SOURCE_HASH`: every crate under `crates/`, the
//! `fief` crate's `src/`, the baseline `templates/` and `Cargo.lock`, those that exist), which salts
//! the input hashes a sync records, so no two different builds share one (a dirty tree, a
//! tarball).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file under `dir`, sorted.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// A hash of the sources' paths and contents (std's SipHash with its fixed keys:
/// the same sources give the same value on every machine).
fn source_hash() -> String {
    let mut paths = vec![PathBuf::from("../../Cargo.lock")];
    for dir in ["..", "../../src", "../../templates"] {
        println!("cargo:rerun-if-changed={dir}");
        files(Path::new(dir), &mut paths);
    }
    println!("cargo:rerun-if-changed=../../Cargo.lock");
    paths.sort();
    let mut h = std::hash::DefaultHasher::new();
    for p in paths {
        p.hash(&mut h);
        std::fs::read(&p).unwrap_or_default().hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

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
    println!("cargo:rustc-env=FIEF_SOURCE_HASH={}", source_hash());
}
