//! The architecture page (`docs/src/architecture.md`) names files of the tree: every one of
//! them must exist, so the page cannot drift from the code unseen.
//!
//! In: the page's text. A name in backticks that looks like a file or folder of the tree
//! (`crates/…`, `src/…`, `tests/…`, `tools/…`, `deploy/…`, `benches/…`, or a file name with an
//! extension) is checked. A full name is resolved from the repository's root; a short one
//! (`verify.rs`, `shards/follow.rs`) against the folders of the full names before it on the
//! page, nearest first, as a reader reads it. Out: the names that resolve nowhere.

use std::path::{Path, PathBuf};

/// The tree's top folders a full name starts with.
const ROOTS: &[&str] = &[
    "crates/",
    "src/",
    "tests/",
    "tools/",
    "deploy/",
    "benches/",
    "docs/",
    "examples/",
    "templates/",
];

/// The extensions of the files the page names.
const EXTENSIONS: &[&str] = &[".rs", ".go", ".sh", ".md", ".yaml", ".toml", ".json", ".py"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The spans in backticks that name a file or folder of the tree.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains(char::is_whitespace) && !s.contains("://") && !s.starts_with('-'))
        .filter(|s| {
            ROOTS.iter().any(|r| s.starts_with(r)) || EXTENSIONS.iter().any(|e| s.ends_with(e))
        })
        .map(|s| s.trim_end_matches('/').to_string())
        .collect()
}

/// The folders a short name may be relative to: for each full name seen, its folder and
/// that folder's parents inside its crate's `src/`.
fn context_of(full: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = Path::new(full).parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() {
            break;
        }
        out.push(d.to_path_buf());
        if d.ends_with("src") {
            break;
        }
        dir = d.parent();
    }
    out
}

#[test]
fn every_file_the_architecture_page_names_exists() {
    let page = root().join("docs/src/architecture.md");
    let text = std::fs::read_to_string(&page).expect("read the architecture page");
    let mut contexts: Vec<PathBuf> = Vec::new();
    let mut missing = Vec::new();
    for name in named_paths(&text) {
        let full = ROOTS.iter().any(|r| name.starts_with(r));
        let found = if full {
            root().join(&name).exists()
        } else {
            contexts
                .iter()
                .rev()
                .any(|dir| root().join(dir).join(&name).exists())
                || root().join(&name).exists()
        };
        if !found {
            missing.push(name.clone());
        }
        if full {
            contexts.extend(context_of(&name));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/architecture.md names files that do not exist (move the page with the code): {missing:?}"
    );
}
