//! A chart folder holding files that are not UTF-8 text: they load as bytes (a packed
//! subchart's too) and the package's key covers them; one Helm parses as YAML is refused at
//! the file; a kustomization's still must be text.

use std::sync::Arc;

use super::super::archive::tests::tgz;
use crate::diagnostic::Problem;
use crate::model::Repo;
use crate::render::package::Package;
use crate::snapshot::Snapshot;

/// A PNG signature, a NUL and bytes no UTF-8 text holds.
const ICON: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe,
];

/// A repo with component `app` (`component`), its chart folder `chart/` holding a Chart.yaml,
/// a template and `binary` (paths under the component's folder).
fn repo(component: &str, binary: &[(&str, &[u8])]) -> Repo {
    let mut snapshot = Snapshot::from_files([
        ("fief.yaml", ""),
        ("components/app/component.yaml", component),
        (
            "components/app/chart/Chart.yaml",
            "apiVersion: v2\nname: app\nversion: 0.1.0\n",
        ),
        (
            "components/app/chart/templates/cm.yaml",
            "kind: ConfigMap\n",
        ),
        ("components/app/base/kustomization.yaml", "resources: []\n"),
    ]);
    for (path, bytes) in binary {
        let bytes = Arc::from(*bytes);
        snapshot.insert(
            format!("components/app/{path}"),
            Err(Problem::Binary { bytes }),
        );
    }
    Repo::load(Arc::new(snapshot))
}

fn package(repo: &Repo) -> Arc<Package> {
    match &repo.components["app"] {
        Ok(c) => c.package.clone().expect("a package"),
        Err(ds) => panic!("{ds:?}"),
    }
}

fn errors(repo: &Repo) -> Vec<String> {
    match &repo.components["app"] {
        Ok(_) => Vec::new(),
        Err(ds) => ds.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn a_chart_folder_with_binary_files_loads_them_as_bytes_keyed_by_their_content() {
    let sub = tgz(&[
        (
            "sub/Chart.yaml",
            b"apiVersion: v2\nname: sub\nversion: 1.0.0\n",
        ),
        ("sub/files/k.jks", ICON),
    ]);
    let helm = "kind: helm\nchart: chart\n";
    let r = repo(
        helm,
        &[
            ("chart/files/icon.png", ICON),
            ("chart/charts/sub-1.0.0.tgz", &sub),
        ],
    );
    let p = package(&r);
    let binary: Vec<(&str, &[u8])> = p.binary.iter().map(|(k, v)| (k.as_str(), &**v)).collect();
    assert_eq!(
        binary,
        [
            ("charts/sub-1.0.0/files/k.jks", ICON),
            ("files/icon.png", ICON)
        ]
    );
    assert!(p.files.contains_key("templates/cm.yaml"));
    assert!(p.files.contains_key("charts/sub-1.0.0/Chart.yaml"));
    // One byte of the icon changed: another key, so the helper loads the chart again.
    let changed = [&ICON[..ICON.len() - 1], b"!"].concat();
    let other = repo(
        helm,
        &[
            ("chart/files/icon.png", &changed),
            ("chart/charts/sub-1.0.0.tgz", &sub),
        ],
    );
    assert_ne!(package(&other).key, p.key);
    // Without binary files the key is the text files' alone, as before any was carried.
    let text_only = package(&repo(helm, &[]));
    assert!(text_only.binary.is_empty());
    assert_ne!(text_only.key, p.key);
}

#[test]
fn a_chart_file_helm_parses_as_yaml_that_is_not_utf8_is_refused_at_the_file() {
    let r = repo(
        "kind: helm\nchart: chart\n",
        &[("chart/values.yaml", b"a: caf\xe9\n")],
    );
    let errs = errors(&r);
    assert!(
        errs.iter()
            .any(|e| e.contains("components/app/chart/values.yaml")
                && e.contains("`values.yaml` is not UTF-8 text")),
        "{errs:?}"
    );
    let sub = tgz(&[("sub/Chart.yaml", b"name: caf\xe9\n")]);
    let r = repo(
        "kind: helm\nchart: chart\n",
        &[("chart/charts/sub.tgz", &sub)],
    );
    let errs = errors(&r);
    assert!(
        errs.iter()
            .any(|e| e.contains("charts/sub.tgz: `Chart.yaml` is not UTF-8 text")),
        "{errs:?}"
    );
}

#[test]
fn a_kustomization_file_that_is_not_utf8_is_still_refused() {
    let r = repo("kind: kustomize\npath: base\n", &[("base/logo.png", ICON)]);
    let errs = errors(&r);
    assert!(
        errs.iter()
            .any(|e| e.contains("components/app/base/logo.png") && e.contains("not UTF-8")),
        "{errs:?}"
    );
}
