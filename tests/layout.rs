//! The layout's rules, checked on the source tree: data flows one way (source → core → kube;
//! the agent and the CLI drive it), the `fief-core` crate pulls in no tokio, kube, k8s-openapi
//! or git2, and no source file grows past the size a reader can hold.

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
fn the_core_crate_depends_on_no_async_runtime_kubernetes_client_or_git_library() {
    // The build keeps the core's own code from naming them (they are not its dependencies);
    // this looks at everything it pulls in.
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--package",
            "fief-core",
            "--edges",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let forbidden: Vec<&str> = tree
        .lines()
        .filter(|l| {
            let name = l.split_whitespace().next().unwrap_or("");
            ["tokio", "kube", "k8s-openapi", "git2", "hyper", "reqwest"]
                .iter()
                .any(|f| name == *f || name.starts_with(&format!("{f}-")))
        })
        .collect();
    assert!(
        forbidden.is_empty(),
        "fief-core must stay pure:\n{}",
        forbidden.join("\n")
    );
    assert!(tree.contains("minijinja"), "not the core's tree:\n{tree}");
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
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let long: Vec<String> = rust_files(&src(""))
        .into_iter()
        .chain(rust_files(&core))
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
