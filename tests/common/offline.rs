//! Helpers for tests that run `fief` offline on temporary repos: run the binary, read its
//! output, write a repo's files. Used through `common` or on its own with
//! `#[path = "common/offline.rs"] mod offline;` (no control plane is compiled in then).

#![allow(dead_code)] // each test binary uses its own subset of the helpers

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the fief binary with `args`.
pub fn fief(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .output()
        .expect("run fief")
}

/// Run the fief binary with `args`, the render helper (`$FIEF_RENDER_HELPER`) and the chart
/// cache `cache` of its own.
pub fn fief_with_charts(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .env("FIEF_RENDER_HELPER", render_helper())
        .env("FIEF_CHART_CACHE", cache)
        .output()
        .expect("run fief")
}

/// Its stdout, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Write `text` at `path` under `root`, creating folders.
pub fn write_file(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().expect("a file path has a parent")).expect("create dirs");
    std::fs::write(p, text).expect("write file");
}

/// The pinned helm CLI (`FIEF_HELM_BIN`, set by tools/test.sh); a test that needs it fails
/// without it, saying how to get it.
pub fn helm_bin() -> PathBuf {
    match std::env::var_os("FIEF_HELM_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "FIEF_HELM_BIN is not set: this test needs the pinned helm CLI. Run tools/test.sh, \
             or export FIEF_HELM_BIN=\"$(tools/build-helm.sh)\" first"
        ),
    }
}

/// `fief init DIR --tenant TENANT`: a fresh tenants repo; panics if init fails.
pub fn init_repo(dir: &Path, tenant: &str) {
    let out = fief(&[
        "init",
        dir.to_str().expect("a UTF-8 path"),
        "--tenant",
        tenant,
    ]);
    assert!(out.status.success(), "fief init: {}", stderr(&out));
}

/// Replace `from` with `to` in the file at `path` under `root`; panics when `from` is absent.
pub fn edit_file(root: &Path, path: &str, from: &str, to: &str) {
    let p = root.join(path);
    let text = std::fs::read_to_string(&p).expect("read file");
    assert!(text.contains(from), "{path} has no {from:?}");
    std::fs::write(p, text.replace(from, to)).expect("write file");
}

/// The 1-based line of the first line of `path` under `root` containing `needle`.
pub fn line_of(root: &Path, path: &str, needle: &str) -> usize {
    std::fs::read_to_string(root.join(path))
        .expect("read file")
        .lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("{path} has no {needle:?}"))
}

/// The metrics-server release whose module zip carries its chart (`charts/metrics-server`).
pub const METRICS_SERVER: &str = "sigs.k8s.io/metrics-server@v0.8.0";

/// The helper (`$FIEF_RENDER_HELPER`); the test fails without it, saying how to get it.
pub fn render_helper() -> PathBuf {
    match std::env::var_os("FIEF_RENDER_HELPER") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "FIEF_RENDER_HELPER is not set: run tools/test.sh, or export \
             FIEF_RENDER_HELPER=\"$(tools/build-render-helper.sh)\" first"
        ),
    }
}

/// The chart fetcher built beside the helper (`fief-chart-pull` in the folder of
/// `$FIEF_RENDER_HELPER`).
pub fn chart_pull() -> PathBuf {
    render_helper().with_file_name("fief-chart-pull")
}

/// The metrics-server chart's folder in the Go module cache (downloaded, checksum-verified,
/// on first use as the tools download their modules).
pub fn metrics_server_chart() -> PathBuf {
    module_folder(METRICS_SERVER, "charts/metrics-server")
}

/// A folder (`charts/<name>`) of a Go module's zip (`module@version`), in the Go module cache:
/// downloaded and checksum-verified on first use, as the tools download their modules.
pub fn module_folder(module: &str, folder: &str) -> PathBuf {
    let out = Command::new("go")
        .args(["mod", "download", "-json", module])
        .output()
        .expect("run go mod download");
    assert!(out.status.success(), "{module}: {}", stderr(&out));
    let info =
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("go mod download -json");
    let dir = info["Dir"].as_str().expect("the module's folder");
    let path = Path::new(dir).join(folder);
    assert!(path.is_dir(), "{module} has no folder {folder}");
    path
}

/// Every UTF-8 text file under `root`, by its path relative to `root` (a chart's images and
/// other binary files are left out), in path order.
pub fn text_files_under(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                let rel = path.strip_prefix(root).expect("under root");
                out.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    out.sort();
    out
}
