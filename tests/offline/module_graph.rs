//! No import circle inside a crate, except the ones named here: each crate's module tree is
//! read (`module_graph/tree.rs`), the paths its code names are resolved through re-exports to
//! the file that defines what they name (`module_graph/graph.rs`), and a circle of files —
//! files that reach each other through their imports — fails the test unless `NAMED` lists
//! it with the module whose doc says why it is one unit.
//!
//! In: the source of `fief-core`, `fief-source`, `fief-kube`, `fief-agent` and the binary's
//! `src/`, as a normal build compiles it (test modules and the `test-kit` feature left out).
//! Out: the circles nobody named, each with the paths that close it.

mod graph;
mod tree;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A circle allowed to stay: the crate (its `src/` folder), its files relative to that
/// folder, and the file whose `//!` doc names the circle and says why it is one unit.
struct Named {
    krate: &'static str,
    files: &'static [&'static str],
    doc: &'static str,
}

/// The circles that stay.
const NAMED: &[Named] = &[];

/// The crate roots whose module trees are read.
const ROOTS: &[&str] = &[
    "crates/fief-core/src/lib.rs",
    "crates/fief-source/src/lib.rs",
    "crates/fief-kube/src/lib.rs",
    "crates/fief-agent/src/lib.rs",
    "src/lib.rs",
    "src/main.rs",
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A circle found: its crate's `src/` folder, its files, and the edges that close it.
struct Circle {
    krate: String,
    files: BTreeSet<String>,
    edges: Vec<String>,
}

/// The circles of the crate whose root file is `root`; names relative to `base`.
fn circles_of(root: &Path, base: &Path) -> Vec<Circle> {
    let krate = tree::read_crate(root);
    let src = root.parent().expect("a crate root has a folder");
    let name = |f: usize| {
        krate.files[f]
            .strip_prefix(src)
            .unwrap_or(&krate.files[f])
            .display()
            .to_string()
    };
    let edges = graph::edges(&krate);
    graph::circles(krate.files.len(), &edges)
        .into_iter()
        .map(|component| {
            let inside = |f: &usize| component.contains(f);
            Circle {
                krate: src.strip_prefix(base).unwrap_or(src).display().to_string(),
                files: component.iter().map(|&f| name(f)).collect(),
                edges: edges
                    .iter()
                    .filter(|((a, b), _)| inside(a) && inside(b))
                    .map(|((a, b), path)| format!("{} → {} ({path})", name(*a), name(*b)))
                    .collect(),
            }
        })
        .collect()
}

fn all_circles() -> Vec<Circle> {
    ROOTS
        .iter()
        .flat_map(|r| circles_of(&workspace().join(r), &workspace()))
        .collect()
}

fn is_named(circle: &Circle) -> bool {
    NAMED.iter().any(|n| {
        n.krate == circle.krate
            && n.files.contains(&n.doc)
            && n.files.iter().copied().collect::<BTreeSet<_>>()
                == circle.files.iter().map(String::as_str).collect()
    })
}

#[test]
fn no_crate_has_an_import_circle_except_the_named_ones() {
    let circles = all_circles();
    let new: Vec<String> = circles
        .iter()
        .filter(|c| !is_named(c))
        .map(|c| {
            format!(
                "{}: {} files\n    {}",
                c.krate,
                c.files.len(),
                c.edges.join("\n    ")
            )
        })
        .collect();
    assert!(
        new.is_empty(),
        "import circles inside a crate (move the shared item down into a module both sides \
         use, or name the circle in NAMED with the module doc that justifies it):\n{}",
        new.join("\n")
    );
    let gone: Vec<String> = NAMED
        .iter()
        .filter(|n| {
            !circles.iter().any(|c| {
                c.krate == n.krate && is_named(c) && n.files.iter().all(|f| c.files.contains(*f))
            })
        })
        .map(|n| format!("{}: {:?}", n.krate, n.files))
        .collect();
    assert!(
        gone.is_empty(),
        "these named circles are gone or changed: take them out of NAMED (and their module \
         doc's paragraph):\n{}",
        gone.join("\n")
    );
}

/// The name a file's module goes by: `tenant` for `render/tenant.rs`, `requests` for
/// `requests/mod.rs`.
fn module_name(file: &str) -> String {
    let path = Path::new(file);
    let stem = path.file_stem().unwrap_or_default();
    let name = if stem == "mod" {
        path.parent().and_then(Path::file_name).unwrap_or(stem)
    } else {
        stem
    };
    name.to_string_lossy().into_owned()
}

#[test]
fn each_named_circle_is_justified_in_the_module_doc_it_names() {
    let unjustified: Vec<String> = NAMED
        .iter()
        .filter(|n| {
            let path = workspace().join(n.krate).join(n.doc);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let doc: String = text
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("//!"))
                .collect::<Vec<_>>()
                .join(" ");
            let names_all = n.files.iter().all(|f| doc.contains(&module_name(f)));
            !(doc.contains("import circle") && names_all)
        })
        .map(|n| format!("{}/{}", n.krate, n.doc))
        .collect();
    assert!(
        unjustified.is_empty(),
        "a named circle's module doc must say `import circle`, name its files and say why they \
         are one unit: {unjustified:?}"
    );
}

#[test]
fn the_graph_follows_re_exports_to_the_defining_file_and_leaves_test_code_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    let files = [
        // `A` is re-exported by the root: `b` depends on `a`, where `A` is defined.
        (
            "lib.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\n#[cfg(test)]\nmod t;\npub use a::A;\n",
        ),
        (
            "a.rs",
            "pub struct A;\npub fn f() -> crate::b::B { crate::c::h(); crate::b::B }\n",
        ),
        (
            "b.rs",
            "pub struct B;\npub fn g() -> crate::A { crate::A }\n",
        ),
        // Test code of `c` reaches back to `a`: no circle.
        (
            "c.rs",
            "pub fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n#[cfg(any(test, feature = \"test-kit\"))]\npub fn kit() { crate::a::f(); }\n",
        ),
        // A child using what its parent defines is the parent's inside: no circle.
        (
            "d/mod.rs",
            "mod e;\npub struct D;\npub fn d() { e::e(); }\n",
        ),
        ("d/e.rs", "pub fn e() -> super::D { super::D }\n"),
        ("t.rs", "use crate::c::h;\nuse crate::a::f;\n"),
    ];
    for (name, text) in files {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    }
    let found: Vec<BTreeSet<String>> = circles_of(&src.join("lib.rs"), dir.path())
        .into_iter()
        .map(|c| c.files)
        .collect();
    let want: BTreeSet<String> = ["a.rs".to_string(), "b.rs".to_string()].into();
    assert_eq!(found, vec![want]);
}
