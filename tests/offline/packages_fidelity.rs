//! Where a chart folder loads as `helm template <folder>` loads it: the files its
//! `.helmignore` (and Helm's default rule, dotfiles in `templates/`) names never reach a
//! template, a subchart folder following the top chart's rules as Helm's folder loader does;
//! and a chart whose Chart.yaml lists a dependency missing from `charts/` is refused in
//! Helm's words, naming the tenant and the component.
//!
//! Needs `$FIEF_RENDER_HELPER` and `$FIEF_HELM_BIN` (tools/test.sh sets both).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use fief_core::model::Repo;
use fief_core::render::Renderer;
use fief_core::snapshot::Snapshot;
use fief_source::render_helper::HelperRenderer;
use serde_json::{Value, json};

use crate::common::offline::{self, render_helper, stderr, write_file};
use crate::packages::{assert_same, fief_objects, helm_template};

/// A chart (under `chart/`) whose templates list and read files its `.helmignore` names, and
/// a subchart folder with its own `.helmignore` (which Helm reads as a plain file).
fn chart_with_helmignore() -> Vec<(&'static str, &'static str)> {
    vec![
        ("component.yaml", "kind: helm\nchart: chart\n"),
        (
            "chart/Chart.yaml",
            "apiVersion: v2\nname: app\nversion: 0.1.0\n",
        ),
        (
            "chart/.helmignore",
            "# editor leftovers, local secrets, the root's notes only\n*.bak\nsecret/\n/notes.txt\n",
        ),
        ("chart/files/a.conf", "a = 1\n"),
        ("chart/files/b.conf", "b = 2\n"),
        ("chart/files/a.conf.bak", "a = old\n"),
        ("chart/secret/key.txt", "hunter2\n"),
        ("chart/notes.txt", "root notes\n"),
        ("chart/docs/notes.txt", "doc notes\n"),
        // Helm's default rule: a dotfile in templates/ is not a template.
        (
            "chart/templates/.draft.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: draft\n",
        ),
        (
            "chart/templates/files.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-files\n\
             data:\n  all: \"{{ range $p, $_ := .Files }}{{ $p }},{{ end }}\"\n  \
             glob: \"{{ range $p, $_ := .Files.Glob \"**\" }}{{ $p }},{{ end }}\"\n  \
             notes: {{ .Files.Get \"notes.txt\" | quote }}\n  \
             docnotes: {{ .Files.Get \"docs/notes.txt\" | quote }}\n  \
             key: {{ .Files.Get \"secret/key.txt\" | quote }}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-conf\n\
             data:\n{{ (.Files.Glob \"files/*\").AsConfig | indent 2 }}\n",
        ),
        (
            "chart/charts/sub/Chart.yaml",
            "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        ),
        ("chart/charts/sub/.helmignore", "local.txt\n"),
        (
            "chart/charts/sub/local.txt",
            "kept: only the top .helmignore counts\n",
        ),
        (
            "chart/charts/sub/old.bak",
            "ignored by the top .helmignore\n",
        ),
        (
            "chart/charts/sub/templates/files.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-files\n\
             data:\n  all: \"{{ range $p, $_ := .Files }}{{ $p }},{{ end }}\"\n",
        ),
    ]
}

/// A repo with tenant `acme` (environment dev, namespace acme-dev) using component `c`, whose
/// files are `component` (paths relative to components/c/).
fn repo(component: &[(&str, &str)]) -> Repo {
    let tenant = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
                  environments: [dev]\n  components:\n    - name: c\n";
    let mut files = vec![
        ("fief.yaml".to_string(), String::new()),
        ("tenants/acme.yaml".to_string(), tenant.to_string()),
    ];
    files.extend(
        component
            .iter()
            .map(|(p, t)| (format!("components/c/{p}"), t.to_string())),
    );
    Repo::load(Arc::new(Snapshot::from_files(files)))
}

#[test]
fn files_the_helmignore_names_are_unseen_by_templates_as_in_helm_template() {
    let component = chart_with_helmignore();
    let dir = tempfile::tempdir().expect("tempdir");
    for (p, t) in &component {
        write_file(dir.path(), p, t);
    }
    let helm = helm_template(&dir.path().join("chart"), &json!({}));
    let r = repo(&component);
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(r.snapshot.clone()).with_packages(helper);
    let ours = fief_objects(&r, &renderer);
    assert_same(&ours, &helm, "a chart with a .helmignore");
    // What both agree on is Helm's loader: the ignored files are nowhere, the others are.
    let data = |name: &str| -> &Value {
        &ours
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {ours:#?}"))["data"]
    };
    let files = data("c-files");
    assert_eq!(
        files["all"],
        ".helmignore,docs/notes.txt,files/a.conf,files/b.conf,"
    );
    assert_eq!(files["glob"], files["all"]);
    assert_eq!(files["notes"], "");
    assert_eq!(files["key"], "");
    assert_eq!(files["docnotes"], "doc notes\n");
    assert_eq!(
        data("c-conf"),
        &json!({"a.conf": "a = 1\n", "b.conf": "b = 2\n"})
    );
    assert_eq!(data("sub-files")["all"], ".helmignore,local.txt,");
    assert!(
        ours.iter().all(|o| o["metadata"]["name"] != "draft"),
        "a dotfile in templates/ is not rendered"
    );
}

/// `helm template`'s error for `chart`, without its `Error: ` prefix.
fn helm_error(chart: &Path) -> String {
    let out = Command::new(offline::helm_bin())
        .args(["template", "app"])
        .arg(chart)
        .output()
        .expect("run helm template");
    assert!(!out.status.success(), "helm template rendered the chart");
    let text = stderr(&out);
    text.trim()
        .strip_prefix("Error: ")
        .unwrap_or_else(|| panic!("helm's error: {text}"))
        .to_string()
}

#[test]
fn a_dependency_missing_from_charts_is_refused_in_helm_template_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    offline::init_repo(dir.path(), "acme");
    let chart = "components/app/chart";
    write_file(
        dir.path(),
        "components/app/component.yaml",
        "kind: helm\nchart: chart\n",
    );
    // `sub` is in charts/; `cache` (switched off: Helm checks it all the same) and `db` are
    // not.
    write_file(
        dir.path(),
        &format!("{chart}/Chart.yaml"),
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: sub\n    \
         version: 0.1.0\n  - name: cache\n    version: 1.0.0\n    repository: \
         https://charts.example.com\n    condition: cache.enabled\n  - name: db\n    \
         version: 2.0.0\n    repository: https://charts.example.com\n    alias: database\n",
    );
    write_file(
        dir.path(),
        &format!("{chart}/values.yaml"),
        "cache:\n  enabled: false\n",
    );
    write_file(
        dir.path(),
        &format!("{chart}/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
    );
    write_file(
        dir.path(),
        &format!("{chart}/charts/sub/Chart.yaml"),
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    );
    offline::edit_file(
        dir.path(),
        "tenants/acme.yaml",
        "    - name: hello\n",
        "    - name: app\n    - name: hello\n",
    );
    let helm = helm_error(&dir.path().join(chart));
    assert!(
        helm.ends_with("found in Chart.yaml, but missing in charts/ directory: cache, db"),
        "{helm}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["render", dir.path().to_str().expect("utf-8")])
        .env("FIEF_RENDER_HELPER", render_helper())
        .output()
        .expect("run fief");
    assert!(!out.status.success(), "fief rendered the chart");
    let text = stderr(&out);
    assert!(text.contains(&helm), "helm: {helm}\nfief: {text}");
    assert!(
        text.contains("tenant `acme`") && text.contains("helm component `app`"),
        "{text}"
    );
}
