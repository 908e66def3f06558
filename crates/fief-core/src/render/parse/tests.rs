//! Differential test of the YAML fast path over everything the example and synthetic repos
//! render: the texts templates produce are captured on the rendering thread.

use std::cell::RefCell;
use std::sync::Arc;

use crate::model::Repo;
use crate::render::{Renderer, render_tenant};
use crate::secrets::{Keys, Unlock};
use crate::snapshot::Snapshot;
use crate::yaml;

#[path = "../../../../../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the test binaries; only `repo_files` is used here
mod synth;

thread_local! {
    /// When set, [`super::parse_rendered`] on this thread records each rendered text.
    pub(super) static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Render every tenant of `files` on this thread and return the texts templates produced.
fn rendered_texts(files: Vec<(String, String)>) -> Vec<String> {
    let key = files
        .iter()
        .find(|(path, _)| path == "age-key.TEST-ONLY.txt")
        .map(|(_, text)| Keys::parse(text).expect("the example's test key"));
    let snapshot = Arc::new(Snapshot::from_files(files));
    let mut repo = Repo::load(snapshot.clone());
    if let Some(key) = key {
        repo.secrets.set_unlock(Unlock::Keys(Arc::new(key)));
    }
    let renderer = Renderer::new(snapshot);
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    for name in repo.tenants.keys() {
        let out = render_tenant(&renderer, &repo, name);
        assert!(out.errors.is_empty(), "{name}: {:?}", out.errors);
    }
    CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default()
}

fn files_under(root: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read example dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                let rel = path.strip_prefix(root).expect("under root");
                out.push((rel.to_string_lossy().replace('\\', "/"), text));
            }
        }
    }
    out
}

/// Every rendered document: the fast path's value equals the full parser's; returns
/// (documents, answered by the fast path).
fn differential(texts: &[String]) -> (usize, usize) {
    let (mut docs, mut fast) = (0, 0);
    for text in texts {
        for doc in yaml::split_documents(text) {
            docs += 1;
            if let Some(value) = yaml::fast_parse(doc.text) {
                fast += 1;
                assert_eq!(
                    yaml::parse_value_full(&doc),
                    Ok(Some(value)),
                    "fast path differs on:\n{}",
                    doc.text
                );
            }
        }
    }
    (docs, fast)
}

#[test]
fn rendered_example_and_synthetic_repos_read_the_same_through_the_fast_path() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tenants-repo");
    let texts = rendered_texts(files_under(&example));
    let (docs, fast) = differential(&texts);
    assert!(docs > 20, "the example repo renders objects ({docs})");
    assert_eq!(fast, docs, "every example document takes the fast path");
    let texts = rendered_texts(synth::repo_files(20));
    let (docs, fast) = differential(&texts);
    assert!(docs > 200, "the synthetic repo renders objects ({docs})");
    assert_eq!(fast, docs, "every synthetic document takes the fast path");
}

#[test]
fn a_v1_list_stands_for_its_items_each_checked_as_its_own_document() {
    let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let (objects, errors) = super::parse_rendered(
        "t.yaml",
        text,
        &super::document_starts(text),
        text,
        "app",
        "prod",
        "acme-prod",
    );
    let names: Vec<&str> = objects.iter().map(|o| o.id.name.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(objects[0].id.namespace, "acme-prod");
    assert_eq!(errors.len(), 1, "the item without a name: {errors:?}");
    assert!(errors[0].to_string().contains("t.yaml:1"), "{}", errors[0]);
}
