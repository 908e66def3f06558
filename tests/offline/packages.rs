//! `kind: helm` and `kind: kustomize` components rendered exactly as their own tools render
//! them: the metrics-server chart (from the `sigs.k8s.io/metrics-server` Go module zip, in the
//! Go module cache) with several value sets against the pinned `helm template`; a chart with a
//! subchart switched on and off from one loaded chart; a kustomize base and overlay against the
//! objects kustomize's rules give; and the CLI's answers without the helper.
//!
//! Needs `$FIEF_RENDER_HELPER` (tools/build-render-helper.sh) and `$FIEF_HELM_BIN`
//! (tools/build-helm.sh), both set by tools/test.sh, and `go` for the module download.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use fief_core::model::Repo;
use fief_core::plan::phase::{Phase, placement_of};
use fief_core::render::{Renderer, render_tenant};
use fief_core::snapshot::Snapshot;
use fief_source::render_helper::HelperRenderer;
use serde_json::{Value, json};

use crate::common::offline::{
    self, metrics_server_chart, render_helper, stderr, text_files_under, write_file,
};

/// The labels fief adds to every object.
const FIEF_LABELS: [&str; 4] = [
    "app.kubernetes.io/managed-by",
    "fief.dev/tenant",
    "fief.dev/component",
    "applyset.kubernetes.io/part-of",
];

/// A repo with tenant `acme` (environment dev, namespace acme-dev) using component `c`,
/// whose files are `component` (paths relative to components/c/); `values` is the tenant's.
pub(crate) fn repo(component: &[(String, String)], values: &Value) -> Repo {
    let tenant = format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
         environments: [dev]\n  components:\n    - name: c\n      values: {values}\n"
    );
    let mut files = vec![
        ("fief.yaml".to_string(), String::new()),
        ("tenants/acme.yaml".to_string(), tenant),
    ];
    files.extend(
        component
            .iter()
            .map(|(p, t)| (format!("components/c/{p}"), t.clone())),
    );
    Repo::load(Arc::new(Snapshot::from_files(files)))
}

/// The component's objects as fief renders them, without the labels fief adds.
pub(super) fn fief_objects(repo: &Repo, renderer: &Renderer) -> Vec<Value> {
    let out = render_tenant(renderer, repo, "acme");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let mut objects: Vec<Value> = out
        .objects
        .into_iter()
        .filter(|o| o.component == "c")
        .map(|o| {
            let mut v = o.object;
            let labels = v
                .get_mut("metadata")
                .and_then(|m| m.get_mut("labels"))
                .and_then(Value::as_object_mut);
            if let Some(map) = labels {
                FIEF_LABELS.iter().for_each(|l| drop(map.remove(*l)));
                if map.is_empty() {
                    v["metadata"].as_object_mut().map(|m| m.remove("labels"));
                }
            }
            v
        })
        .collect();
    objects.sort_by_key(identity);
    objects
}

fn identity(o: &Value) -> String {
    format!(
        "{}/{}/{}/{}",
        o["apiVersion"], o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]
    )
}

/// `helm template c CHART --namespace acme-dev -f values.json --skip-tests`, as objects.
pub(super) fn helm_template(chart: &Path, values: &Value) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("values.json");
    std::fs::write(&file, values.to_string()).expect("write values");
    let out = Command::new(offline::helm_bin())
        .args(["template", "c"])
        .arg(chart)
        .args(["--namespace", "acme-dev", "--skip-tests", "-f"])
        .arg(&file)
        .output()
        .expect("run helm template");
    assert!(out.status.success(), "helm template: {}", stderr(&out));
    let mut objects: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .map(|d| serde_saphyr::from_str::<Value>(d).expect("a YAML document"))
        .filter(|d| !d.is_null())
        .collect();
    objects.sort_by_key(identity);
    objects
}

/// fief's objects equal helm's, where fief defaults the namespace of an object Helm left
/// without one (a kind fief does not know as cluster-scoped) to the tenant's.
pub(super) fn assert_same(fief: &[Value], helm: &[Value], what: &str) {
    let ids = |v: &[Value]| v.iter().map(identity).collect::<Vec<_>>();
    // fief's `app.kubernetes.io/managed-by: fief` replaces a chart's `Helm`: one of the
    // labels fief adds, taken off both sides.
    let helm: Vec<Value> = helm
        .iter()
        .cloned()
        .map(|mut h| {
            let labels = h
                .get_mut("metadata")
                .and_then(|m| m.get_mut("labels"))
                .and_then(Value::as_object_mut);
            if let Some(map) = labels {
                map.remove(FIEF_LABELS[0]);
                if map.is_empty() {
                    h["metadata"].as_object_mut().map(|m| m.remove("labels"));
                }
            }
            h
        })
        .collect();
    let helm = helm.as_slice();
    let mut fief = fief.to_vec();
    for o in &mut fief {
        let helm_has = helm.iter().any(|h| identity(h) == identity(o));
        if !helm_has && o["metadata"]["namespace"] == "acme-dev" {
            o["metadata"].as_object_mut().map(|m| m.remove("namespace"));
        }
    }
    fief.sort_by_key(identity);
    assert_eq!(ids(&fief), ids(helm), "{what}: the objects differ");
    for (f, h) in fief.iter().zip(helm) {
        assert_eq!(f, h, "{what}: {} differs", identity(h));
    }
}

fn chart_component(chart: &Path, component_yaml: &str) -> Vec<(String, String)> {
    let mut files = vec![("component.yaml".to_string(), component_yaml.to_string())];
    files.extend(
        text_files_under(chart)
            .into_iter()
            .map(|(p, t)| (format!("chart/{p}"), t)),
    );
    files
}

#[test]
fn the_metrics_server_chart_renders_as_helm_template_renders_it_with_every_value_set() {
    let chart = metrics_server_chart();
    let component = chart_component(&chart, "kind: helm\nchart: chart\n");
    let value_sets = [
        json!({}),
        json!({"rbac": {"create": false}, "apiService": {"create": false}, "replicas": 3,
               "args": ["--kubelet-insecure-tls"], "image": {"tag": "v0.7.1"}}),
        json!({"serviceMonitor": {"enabled": true}, "podDisruptionBudget": {"enabled": true,
               "minAvailable": 1}, "addonResizer": {"enabled": true},
               "podAnnotations": {"a.example.com/x": "y"}, "hostNetwork": {"enabled": true}}),
        json!({"metrics": {"enabled": true}, "service": {"port": 8443, "labels": {"x": "y"}},
               "resources": {"requests": {"cpu": "50m"}}, "nameOverride": "ms"}),
    ];
    // One renderer (one helper process, the chart loaded once) for every value set.
    let first = repo(&component, &value_sets[0]);
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(first.snapshot.clone()).with_packages(helper.clone());
    for values in &value_sets {
        let r = repo(&component, values);
        let ours = fief_objects(&r, &renderer);
        assert!(ours.len() >= 3, "{values}: {} objects", ours.len());
        assert_same(&ours, &helm_template(&chart, values), &values.to_string());
    }
}

/// A parent chart whose subchart is switched by a condition and fed values from the parent.
fn chart_with_subchart() -> Vec<(String, String)> {
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-{name}\n  \
             namespace: {{{{ .Release.Namespace }}}}\ndata:\n  greeting: {{{{ .Values.greeting | quote }}}}\n  \
             global: {{{{ .Values.global.colour | quote }}}}\n  chart: {{{{ .Chart.Name }}}}\n  \
             kube: {{{{ .Capabilities.KubeVersion.Minor | quote }}}}\n"
        )
    };
    [
        ("component.yaml", "kind: helm\nchart: app\n".to_string()),
        ("app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: cache\n    version: 0.1.0\n    condition: cache.enabled\n".to_string()),
        ("app/values.yaml", "greeting: hello\nglobal: {colour: blue}\ncache: {enabled: false, greeting: from-parent}\n".to_string()),
        ("app/templates/cm.yaml", cm("app")),
        ("app/templates/NOTES.txt", "installed {{ .Release.Name }}\n".to_string()),
        ("app/charts/cache/Chart.yaml", "apiVersion: v2\nname: cache\nversion: 0.1.0\n".to_string()),
        ("app/charts/cache/values.yaml", "greeting: cache-default\n".to_string()),
        ("app/charts/cache/templates/cm.yaml", cm("cache")),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_string(), t))
    .collect()
}

#[test]
fn a_subchart_switched_on_and_off_renders_as_helm_template_from_one_loaded_chart() {
    let component = chart_with_subchart();
    let dir = tempfile::tempdir().expect("tempdir");
    for (p, t) in &component {
        write_file(dir.path(), p, t);
    }
    let chart = dir.path().join("app");
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let first = repo(&component, &json!({}));
    let renderer = Renderer::new(first.snapshot.clone()).with_packages(helper);
    // On, off, on again: a render must not change the loaded chart for the next one.
    for values in [
        json!({"cache": {"enabled": true}}),
        json!({"greeting": "hi"}),
        json!({"cache": {"enabled": true, "greeting": "set"}, "global": {"colour": "red"}}),
    ] {
        let ours = fief_objects(&repo(&component, &values), &renderer);
        let want = helm_template(&chart, &values);
        let on = values["cache"]["enabled"] == true;
        assert_eq!(want.len(), if on { 2 } else { 1 }, "{values}");
        assert_same(&ours, &want, &values.to_string());
    }
}

/// A base (Deployment, Service, ConfigMap generator) and an overlay that patches it.
fn kustomization() -> Vec<(String, String)> {
    [
        ("component.yaml", "kind: kustomize\npath: overlays/prod\n"),
        ("base/kustomization.yaml", "resources: [deployment.yaml, service.yaml]\nlabels:\n  - pairs: {app: web}\n    includeSelectors: true\nconfigMapGenerator:\n  - name: web-config\n    literals: [MODE=base]\n"),
        ("base/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n          envFrom:\n            - configMapRef: {name: web-config}\n"),
        ("base/service.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n"),
        ("overlays/prod/kustomization.yaml", "resources: [../../base]\nnamePrefix: prod-\nimages:\n  - name: nginx\n    newTag: \"1.28\"\npatches:\n  - patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: web}\n      spec: {replicas: 3}\n"),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect()
}

#[test]
fn a_kustomize_overlay_renders_as_kustomize_builds_it_in_the_tenant_namespace() {
    let component = kustomization();
    let r = repo(&component, &json!({}));
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(r.snapshot.clone()).with_packages(helper);
    let objects = fief_objects(&r, &renderer);
    let by_kind: BTreeMap<String, &Value> = objects
        .iter()
        .map(|o| (o["kind"].as_str().unwrap_or("").to_string(), o))
        .collect();
    assert_eq!(objects.len(), 3, "{objects:#?}");
    let cm = by_kind["ConfigMap"];
    let cm_name = cm["metadata"]["name"].as_str().expect("a name");
    // The generator's hash suffix, the prefix and the namespace, as kustomize gives them.
    assert!(
        cm_name.starts_with("prod-web-config-") && cm_name.len() > 17,
        "{cm_name}"
    );
    assert_eq!(cm["data"], json!({"MODE": "base"}));
    let deploy = by_kind["Deployment"];
    assert_eq!(deploy["metadata"]["name"], "prod-web");
    assert_eq!(deploy["metadata"]["namespace"], "acme-dev");
    assert_eq!(deploy["spec"]["replicas"], 3);
    assert_eq!(
        deploy["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.28");
    assert_eq!(container["envFrom"][0]["configMapRef"]["name"], cm_name);
    assert_eq!(
        by_kind["Service"]["spec"]["selector"],
        json!({"app": "web"})
    );
    assert!(
        objects
            .iter()
            .all(|o| o["metadata"]["namespace"] == "acme-dev")
    );
}

#[test]
fn a_remote_kustomize_base_is_refused_and_helm_hooks_render_in_their_phase_or_not_at_all() {
    let mut component = kustomization();
    component.push((
        "overlays/prod/kustomization.yaml".into(),
        "resources: [\"https://github.com/example/repo//base?ref=v1\"]\n".into(),
    ));
    let r = repo(&component, &json!({}));
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(r.snapshot.clone()).with_packages(helper.clone());
    let text = errors_of(&r, &renderer);
    assert!(
        text.contains("remote base") && text.contains("kustomize component `c`"),
        "{text}"
    );
    // A pre-install hook is rendered with its annotations (placed in the pre phase); test and
    // delete hooks are not rendered: fief never runs them.
    let hook = |name: &str, hook: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    helm.sh/hook: {hook}\nspec: {{}}\n"
        )
    };
    let mut chart = chart_with_subchart();
    chart.push((
        "app/templates/job.yaml".into(),
        hook("migrate", "pre-install"),
    ));
    chart.push((
        "app/templates/del.yaml".into(),
        hook("cleanup", "pre-delete"),
    ));
    chart.push(("app/templates/test.yaml".into(), hook("check", "test")));
    let r = repo(&chart, &json!({}));
    let renderer = Renderer::new(r.snapshot.clone()).with_packages(helper);
    let out = render_tenant(&renderer, &r, "acme");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let jobs: Vec<&Value> = out
        .objects
        .iter()
        .filter(|o| o.id.kind == "Job")
        .map(|o| &o.object)
        .collect();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["metadata"]["name"], "migrate");
    assert_eq!(
        jobs[0]["metadata"]["annotations"]["helm.sh/hook"],
        "pre-install"
    );
    let job = out.objects.iter().find(|o| o.id.kind == "Job");
    assert_eq!(job.map(|o| placement_of(o).phase), Some(Phase::Pre));
}

fn errors_of(r: &Repo, renderer: &Renderer) -> String {
    let out = render_tenant(renderer, r, "acme");
    out.errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_cli_renders_a_chart_with_the_helper_and_says_how_to_get_it_without() {
    let dir = tempfile::tempdir().expect("tempdir");
    offline::init_repo(dir.path(), "acme");
    for (p, t) in chart_with_subchart() {
        write_file(dir.path(), &format!("components/app/{p}"), &t);
    }
    offline::edit_file(
        dir.path(),
        "tenants/acme.yaml",
        "    - name: hello\n",
        "    - name: app\n      values: {greeting: bonjour}\n    - name: hello\n",
    );
    let root = dir.path().to_str().expect("utf-8");
    let with = |helper: &Path| {
        Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(["render", root, "-o", "json"])
            .env("FIEF_RENDER_HELPER", helper)
            .output()
            .expect("run fief")
    };
    let out = with(&render_helper());
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let greetings: Vec<&Value> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["metadata"]["name"] == "app-app")
        .map(|o| &o["data"]["greeting"])
        .collect();
    assert_eq!(greetings, [&json!("bonjour"), &json!("bonjour")]);
    let out = with(Path::new("/nonexistent/fief-render-helper"));
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains("helm component `app`") && text.contains("tools/build-render-helper.sh"),
        "{text}"
    );
}
