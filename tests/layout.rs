//! The layout's rules, checked on the source tree: data flows one way (source → core → kube;
//! the agent and the CLI drive it), nothing in `core/` does I/O through tokio, kube or git2,
//! and no source file grows past the size a reader can hold.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn src(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder)
}

/// Lines of code (not comments) in `folder` that mention any of `forbidden`.
fn mentions(folder: &str, forbidden: &[&str]) -> Vec<String> {
    let mut hits = Vec::new();
    for file in rust_files(&src(folder)) {
        let text = fs::read_to_string(&file).expect("read source file");
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for f in forbidden {
                if code.contains(f) {
                    hits.push(format!("{}:{}: {}", file.display(), i + 1, code));
                }
            }
        }
    }
    hits
}

#[test]
fn core_imports_no_tokio_kube_git2_or_outer_layers() {
    let hits = mentions(
        "core",
        &[
            "tokio",
            "kube::",
            "git2",
            "crate::kube",
            "crate::source",
            "crate::agent",
            "crate::cli",
        ],
    );
    assert!(
        hits.is_empty(),
        "core/ must stay pure:\n{}",
        hits.join("\n")
    );
}

#[test]
fn source_and_kube_never_import_the_agent_or_the_cli() {
    let mut hits = mentions("source", &["crate::kube", "crate::agent", "crate::cli"]);
    hits.extend(mentions(
        "kube",
        &["crate::agent", "crate::cli", "crate::source"],
    ));
    assert!(hits.is_empty(), "data flows one way:\n{}", hits.join("\n"));
}

#[test]
fn no_source_file_is_longer_than_550_lines() {
    let long: Vec<String> = rust_files(&src(""))
        .into_iter()
        .filter_map(|f| {
            let n = fs::read_to_string(&f)
                .expect("read source file")
                .lines()
                .count();
            (n > 550).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}
