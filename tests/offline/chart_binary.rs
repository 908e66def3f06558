//! Charts holding files that are not UTF-8 text (an icon, a compressed dashboard, a keystore
//! in a packed subchart) render exactly as the pinned `helm template` renders them: read with
//! `.Files.Get | b64enc`, `.Files.GetBytes`, `sha256sum` and `.Files.Glob ... AsSecrets`, a
//! `.helmignore`d binary file left out as Helm leaves it out. Once as a chart folder in the
//! repo (the subchart packed as `charts/*.tgz`), once as an archive from a Helm HTTP
//! repository locked in fief.lock. A values.yaml that is not UTF-8 is refused naming it.
//!
//! Needs `$FIEF_RENDER_HELPER` and `$FIEF_HELM_BIN` (tools/test.sh sets them).

use std::path::Path;
use std::sync::Arc;

use fief_core::model::Repo;
use fief_core::render::Renderer;
use fief_source::charts::ChartCache;
use fief_source::render_helper::HelperRenderer;
use serde_json::{Value, json};

use crate::common::chart_repos::{HttpRepo, package};
use crate::common::offline::{chart_pull, fief_with_charts, render_helper, stderr, write_file};
use crate::packages::{assert_same, fief_objects, helm_template};

/// A PNG signature, a NUL and bytes no UTF-8 text holds.
const ICON: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0xff, 0xfe, 0x80,
];

/// `{"title":"fief","panels":[]}`, gzipped.
const DASHBOARD: &[u8] = &[
    31, 139, 8, 0, 0, 0, 0, 0, 2, 255, 171, 86, 42, 201, 44, 201, 73, 85, 178, 82, 74, 203, 76, 77,
    83, 210, 81, 42, 72, 204, 75, 205, 41, 86, 178, 138, 142, 173, 5, 0, 234, 44, 237, 234, 28, 0,
    0, 0,
];

/// The parent chart's ConfigMap: the icon through `.Files.Get | b64enc`, the dashboard through
/// `.Files.GetBytes`, the files `.Files.Glob` sees (not the `.helmignore`d one).
const ASSETS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-assets
  annotations:
    checksum/icon: {{ .Files.Get "files/icon.png" | sha256sum }}
binaryData:
  icon.png: {{ .Files.Get "files/icon.png" | b64enc }}
  dashboard.json.gz: {{ .Files.GetBytes "files/dashboard.json.gz" | toString | b64enc }}
data:
  sizes: "{{ len (.Files.GetBytes "files/icon.png") }}/{{ len (.Files.GetBytes "files/dashboard.json.gz") }}"
  files: "{{ range $path, $_ := .Files.Glob "files/**" }}{{ $path }} {{ end }}"
  ignored: {{ .Files.Get "files/old.bak" | b64enc | quote }}
"#;

/// The parent chart's Secret: every PNG of `files/`, base64 by Helm's `AsSecrets`.
const ICONS: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-icons
data:
{{ (.Files.Glob "files/*.png").AsSecrets | indent 2 }}
"#;

/// The subchart's Secret: its keystore.
const KEYSTORE: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-keystore
data:
  keystore.jks: {{ .Files.Get "files/keystore.jks" | b64enc }}
"#;

/// Write `bytes` at `path` under `root`, creating folders.
fn write_bytes(root: &Path, path: &str, bytes: &[u8]) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().expect("a file path has a parent")).expect("create dirs");
    std::fs::write(p, bytes).expect("write file");
}

/// The chart `bin` at `dir`: binary files beside its templates, a `.helmignore`d binary file
/// (and a binary file in `templates/` it names), and the subchart `keys` with a keystore,
/// packed by `helm package` into `charts/`.
fn binary_chart(home: &Path, dir: &Path) {
    write_file(
        dir,
        "Chart.yaml",
        "apiVersion: v2\nname: bin\nversion: 0.1.0\ndependencies:\n  - name: keys\n    version: 0.1.0\n",
    );
    write_file(dir, "values.yaml", "greeting: hi\n");
    write_file(dir, ".helmignore", "*.bak\ntemplates/*.png\n");
    write_bytes(dir, "files/icon.png", ICON);
    write_bytes(dir, "files/dashboard.json.gz", DASHBOARD);
    write_bytes(dir, "files/old.bak", &[0xde, 0xad, 0xbe, 0xef, 0xff]);
    write_bytes(dir, "templates/preview.png", ICON);
    write_file(dir, "templates/assets.yaml", ASSETS);
    write_file(dir, "templates/icons.yaml", ICONS);
    let keys = home.join("keys");
    write_file(
        &keys,
        "Chart.yaml",
        "apiVersion: v2\nname: keys\nversion: 0.1.0\n",
    );
    write_bytes(
        &keys,
        "files/keystore.jks",
        &[0xfe, 0xed, 0xfe, 0xed, 0x00, 0x02, 0xff],
    );
    write_file(&keys, "templates/keystore.yaml", KEYSTORE);
    package(home, &keys, "0.1.0", &dir.join("charts"));
}

/// A repo with tenant `acme` (environment dev) running component `c`, whose component.yaml
/// is `component`.
fn tenants_repo(dir: &Path, component: &str) {
    write_file(dir, "fief.yaml", "");
    write_file(
        dir,
        "tenants/acme.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
         environments: [dev]\n  components:\n    - name: c\n",
    );
    write_file(dir, "components/c/component.yaml", component);
}

/// The repo at `dir` as fief reads it (its locked charts from `cache`), rendered by the helper.
fn fief_render(dir: &Path, cache: &Path) -> Vec<Value> {
    let mut snapshot = fief_source::fs::read_dir(dir).expect("read the repo");
    ChartCache::new(cache.to_path_buf())
        .with_puller(chart_pull())
        .resolve(&mut snapshot);
    let repo = Repo::load(Arc::new(snapshot));
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(repo.snapshot.clone()).with_packages(helper);
    fief_objects(&repo, &renderer)
}

/// Helm's objects carry the binary files as they are and leave the ignored one out.
fn assert_binary_data(helm: &[Value]) {
    let engine = &base64::engine::general_purpose::STANDARD;
    let encode = |b: &[u8]| Value::from(base64::Engine::encode(engine, b));
    let assets = helm
        .iter()
        .find(|o| o["metadata"]["name"] == "c-assets")
        .expect("the assets ConfigMap");
    assert_eq!(assets["binaryData"]["icon.png"], encode(ICON));
    assert_eq!(assets["binaryData"]["dashboard.json.gz"], encode(DASHBOARD));
    assert_eq!(
        assets["data"],
        json!({"sizes": format!("{}/{}", ICON.len(), DASHBOARD.len()),
               "files": "files/dashboard.json.gz files/icon.png ", "ignored": ""})
    );
    let kinds: Vec<&str> = helm.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
}

#[test]
fn a_chart_folder_with_binary_files_and_a_packed_subchart_renders_as_helm_template() {
    let work = tempfile::tempdir().expect("tempdir");
    let repo = work.path().join("repo");
    tenants_repo(&repo, "kind: helm\nchart: chart\n");
    let chart = repo.join("components/c/chart");
    binary_chart(work.path(), &chart);
    let helm = helm_template(&chart, &json!({}));
    assert_binary_data(&helm);
    let ours = fief_render(&repo, &work.path().join("cache"));
    assert_same(&ours, &helm, "chart folder");
}

#[test]
fn a_chart_archive_with_binary_files_from_a_repository_renders_as_helm_template() {
    let work = tempfile::tempdir().expect("tempdir");
    let home = work.path().join("home");
    let folder = home.join("bin");
    binary_chart(&home, &folder);
    let served = home.join("served");
    let archive = package(&home, &folder, "0.1.0", &served);
    let http = HttpRepo::serve(&served);
    http.index(&home);
    let repo = work.path().join("repo");
    let cache = work.path().join("cache");
    tenants_repo(
        &repo,
        &format!(
            "kind: helm\nchart:\n  repository: {}\n  name: bin\n  version: \"0.1.0\"\n",
            http.url
        ),
    );
    let update = fief_with_charts(&cache, &["chart", "update", repo.to_str().expect("utf-8")]);
    assert!(update.status.success(), "{}", stderr(&update));
    let helm = helm_template(&archive, &json!({}));
    assert_binary_data(&helm);
    let ours = fief_render(&repo, &cache);
    assert_same(&ours, &helm, "repository archive");
}

#[test]
fn a_chart_values_yaml_that_is_not_utf8_is_refused_naming_the_file() {
    let work = tempfile::tempdir().expect("tempdir");
    let repo = work.path().join("repo");
    tenants_repo(&repo, "kind: helm\nchart: chart\n");
    let chart = repo.join("components/c/chart");
    write_file(
        &chart,
        "Chart.yaml",
        "apiVersion: v2\nname: bin\nversion: 0.1.0\n",
    );
    write_bytes(&chart, "values.yaml", b"greeting: caf\xe9\n");
    write_file(
        &chart,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let out = fief_with_charts(
        &work.path().join("cache"),
        &["validate", repo.to_str().expect("utf-8")],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("components/c/chart/values.yaml") && err.contains("is not UTF-8 text"),
        "{err}"
    );
}
