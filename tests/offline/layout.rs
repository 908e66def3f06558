//! The layout's rules, checked on the workspace: data flows one way between the crates (source
//! → core → kube; the agent and the CLI drive it: a crate can only use what its `Cargo.toml`
//! names, and these tests look at what each pulls in), `fief-core` pulls in no tokio, kube,
//! k8s-openapi or git2, and no source file grows past the size a reader can hold.

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

/// The packages `crate` depends on, directly or not (normal dependencies), by name.
fn tree(package: &str) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--package",
            package,
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
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The packages of `tree` named in `forbidden`.
fn among(tree: &[String], forbidden: &[&str]) -> Vec<String> {
    tree.iter()
        .filter(|name| forbidden.contains(&name.as_str()))
        .cloned()
        .collect()
}

#[test]
fn the_core_crate_depends_on_no_async_runtime_kubernetes_client_or_git_library() {
    // The build keeps the core's own code from naming them (they are not its dependencies);
    // this looks at everything it pulls in.
    let core = tree("fief-core");
    assert!(core.iter().any(|n| n == "minijinja"), "{core:?}");
    let hits = among(
        &core,
        &[
            "tokio",
            "kube",
            "kube-client",
            "k8s-openapi",
            "git2",
            "hyper",
            "fief-source",
            "fief-kube",
            "fief-agent",
        ],
    );
    assert!(hits.is_empty(), "fief-core must stay pure: {hits:?}");
}

#[test]
fn data_flows_one_way_source_and_kube_never_depend_on_each_other_or_on_the_agent() {
    let source = tree("fief-source");
    let hits = among(
        &source,
        &["kube", "k8s-openapi", "tokio", "fief-kube", "fief-agent"],
    );
    assert!(hits.is_empty(), "fief-source reads repos only: {hits:?}");
    let kube = tree("fief-kube");
    let hits = among(&kube, &["git2", "fief-source", "fief-agent"]);
    assert!(
        hits.is_empty(),
        "fief-kube talks to the API server only: {hits:?}"
    );
    let agent = tree("fief-agent");
    assert!(
        among(&agent, &["clap", "fief"]).is_empty(),
        "the agent does not depend on the CLI: {agent:?}"
    );
}

#[test]
fn no_source_file_is_longer_than_500_lines() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let long: Vec<String> = rust_files(&src(""))
        .into_iter()
        .chain(rust_files(&core))
        .filter_map(|f| {
            let n = fs::read_to_string(&f)
                .expect("read source file")
                .lines()
                .count();
            (n > 500).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}
