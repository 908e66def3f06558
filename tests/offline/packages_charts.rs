//! Real charts, taken from the Go module zips of their projects, rendered by fief-render-helper
//! and compared document by document with the pinned `helm template` given the same flags
//! (`--kube-version`, `--api-versions`, `--include-crds`, `--skip-tests`), each with several
//! value sets: the descheduler (a CronJob or a Deployment, RBAC on or off), Gatekeeper (a
//! `crds/` folder and pre/post-install hooks) and Kyverno (local subcharts switched by
//! conditions, `.Capabilities` gates).
//!
//! What is compared: the helper's documents (through `HelperRenderer`, as fief sends them),
//! each with the chart file it came from, not fief's validated objects: these charts make
//! cluster-scoped objects (ClusterRoles, webhook configurations, CRDs), which fief refuses from
//! a component by design. tests/offline/packages.rs compares fief's validated objects for the
//! metrics-server chart.
//!
//! Needs `$FIEF_RENDER_HELPER`, `$FIEF_HELM_BIN` (tools/test.sh sets both) and `go`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use fief_core::model::RenderKind;
use fief_core::render::package::{Capabilities, Package, PackageRenderer, PackageRequest};
use fief_source::render_helper::HelperRenderer;
use serde_json::{Value, json};

use crate::common::offline::{self, module_folder, render_helper, stderr};

const DESCHEDULER: &str = "sigs.k8s.io/descheduler@v0.36.0";
const GATEKEEPER: &str = "github.com/open-policy-agent/gatekeeper/v3@v3.23.1";
const KYVERNO: &str = "github.com/kyverno/kyverno@v1.19.1";

/// The `helm template` flags a render is compared under.
#[derive(Default)]
struct Flags {
    kube_version: Option<&'static str>,
    api_versions: Vec<String>,
    include_crds: bool,
}

/// Every UTF-8 file under `root`, relative to it (a chart's images are not sent).
fn text_files(root: &Path) -> BTreeMap<String, Arc<str>> {
    crate::common::offline::text_files_under(root)
        .into_iter()
        .map(|(rel, text)| (rel, Arc::from(text)))
        .collect()
}

/// The YAML documents of `text`, empty ones left out.
fn yaml_docs(text: &str) -> Vec<Value> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(std::iter::once("---")) {
        if line.trim_end() == "---" {
            let doc: Value = serde_saphyr::from_str(&current).expect("a YAML document");
            if !doc.is_null() {
                docs.push(doc);
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    docs
}

/// What a chart renders to: (source file, object), sorted.
type Rendered = Vec<(String, Value)>;

fn sorted(mut docs: Rendered) -> Rendered {
    docs.sort_by_key(|(s, v)| format!("{s} {v}"));
    docs
}

/// The helper's documents for one value set.
fn helper_render(
    helper: &HelperRenderer,
    package: &Package,
    values: &Value,
    f: &Flags,
) -> Rendered {
    let request = PackageRequest {
        package,
        values,
        release: "c",
        namespace: "acme-dev",
        capabilities: Capabilities {
            kube_version: f.kube_version,
            api_versions: &f.api_versions,
        },
        include_crds: f.include_crds,
        kustomize: None,
    };
    let docs = helper
        .render(&request)
        .unwrap_or_else(|e| panic!("{}: {values}: {e}", package.dir));
    sorted(
        docs.into_iter()
            .flat_map(|d| {
                yaml_docs(&d.text)
                    .into_iter()
                    .map(move |v| (d.source.clone(), v))
            })
            .collect(),
    )
}

/// `helm template c CHART --namespace acme-dev --skip-tests -f values.json` with the flags.
fn helm_render(chart: &Path, values: &Value, f: &Flags) -> Rendered {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("values.json");
    std::fs::write(&file, values.to_string()).expect("write values");
    let mut cmd = Command::new(offline::helm_bin());
    cmd.args(["template", "c"])
        .arg(chart)
        .args(["--namespace", "acme-dev", "--skip-tests", "-f"])
        .arg(&file);
    if let Some(v) = f.kube_version {
        cmd.args(["--kube-version", v]);
    }
    for a in &f.api_versions {
        cmd.args(["--api-versions", a]);
    }
    if f.include_crds {
        cmd.arg("--include-crds");
    }
    let out = cmd.output().expect("run helm template");
    assert!(out.status.success(), "helm template: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut docs = Vec::new();
    for chunk in text.split("---\n# Source: ").skip(1) {
        let (source, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        docs.extend(yaml_docs(body).into_iter().map(|v| (source.to_string(), v)));
    }
    sorted(docs)
}

/// The chart as fief sends it.
fn package(chart: &Path) -> Package {
    Package {
        kind: RenderKind::Helm,
        dir: chart.to_string_lossy().into_owned(),
        root: String::new(),
        files: Arc::new(text_files(chart)),
        binary: Arc::default(),
        key: format!("parity:{}", chart.display()),
        defaults: json!({}),
    }
}

/// The helper and `helm template` give the same documents from the same files.
fn assert_parity(chart: &Path, value_sets: &[(Value, Flags)], at_least: usize) {
    let helper = HelperRenderer::at(render_helper());
    let package = package(chart);
    for (values, flags) in value_sets {
        let ours = helper_render(&helper, &package, values, flags);
        let helm = helm_render(chart, values, flags);
        assert!(ours.len() >= at_least, "{values}: {} documents", ours.len());
        let sources = |r: &Rendered| r.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>();
        assert_eq!(
            sources(&ours),
            sources(&helm),
            "{values}: the documents differ"
        );
        for ((s, o), (_, h)) in ours.iter().zip(&helm) {
            assert_eq!(o, h, "{values}: {s} differs");
        }
    }
}

/// A copy of `chart` in `into` (the module cache is read-only).
fn copy_chart(chart: &Path, into: &Path) -> PathBuf {
    for (rel, text) in text_files(chart) {
        offline::write_file(into, &rel, &text);
    }
    into.to_path_buf()
}

#[test]
fn the_descheduler_chart_renders_as_helm_template_renders_it() {
    let chart = module_folder(DESCHEDULER, "charts/descheduler");
    let value_sets = [
        (json!({}), Flags::default()),
        (
            json!({"kind": "Deployment", "replicas": 2, "leaderElection": {"enabled": true},
                   "service": {"enabled": true}, "serviceMonitor": {"enabled": true}}),
            Flags::default(),
        ),
        (
            json!({"rbac": {"create": false}, "serviceAccount": {"create": false,
                   "name": "sched"}, "schedule": "*/5 * * * *", "cmdOptions": {"v": 4}}),
            Flags {
                kube_version: Some("1.31.2"),
                ..Flags::default()
            },
        ),
    ];
    assert_parity(&chart, &value_sets, 2);
}

#[test]
fn the_gatekeeper_chart_renders_its_crds_and_hooks_as_helm_template_renders_them() {
    let chart = module_folder(GATEKEEPER, "charts/gatekeeper");
    let crds = Flags {
        include_crds: true,
        ..Flags::default()
    };
    let value_sets = [
        (json!({}), crds),
        (json!({}), Flags::default()),
        (
            json!({"replicas": 1, "auditInterval": 120, "postInstall": {"labelNamespace":
                   {"enabled": false}}, "upgradeCRDs": {"enabled": false}}),
            Flags {
                include_crds: true,
                kube_version: Some("1.27.0"),
                api_versions: vec!["flowcontrol.apiserver.k8s.io/v1beta3".into()],
            },
        ),
    ];
    assert_parity(&chart, &value_sets, 10);
    // The crds/ files come out only when asked, and each is a CRD.
    let helper = HelperRenderer::at(render_helper());
    let with = helper_render(&helper, &package(&chart), &json!({}), &value_sets[0].1);
    let crd_docs: Vec<_> = with.iter().filter(|(s, _)| s.contains("/crds/")).collect();
    assert!(crd_docs.len() > 5, "{} CRDs", crd_docs.len());
    assert!(
        crd_docs
            .iter()
            .all(|(_, v)| v["kind"] == "CustomResourceDefinition")
    );
    let hooks = with
        .iter()
        .filter(|(_, v)| v["metadata"]["annotations"]["helm.sh/hook"].is_string())
        .count();
    assert!(hooks > 0, "gatekeeper's hooks come out");
}

/// Kyverno's chart names three subcharts only in a Helm repository besides its two local ones
/// (`crds`, `grafana`); they are left out of the copy's Chart.yaml, so both renders read the
/// same files with no network.
#[test]
fn the_kyverno_chart_and_its_subcharts_render_as_helm_template_renders_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chart = copy_chart(&module_folder(KYVERNO, "charts/kyverno"), dir.path());
    let meta_path = chart.join("Chart.yaml");
    let meta = std::fs::read_to_string(&meta_path).expect("Chart.yaml");
    let cut = meta
        .find("  - name: kyverno-api")
        .expect("the remote dependencies");
    std::fs::write(&meta_path, &meta[..cut]).expect("write Chart.yaml");
    let _ = std::fs::remove_file(chart.join("Chart.lock"));
    let value_sets = [
        (json!({}), Flags::default()),
        (
            json!({"crds": {"install": false}, "grafana": {"enabled": true}}),
            Flags {
                kube_version: Some("1.29.4"),
                api_versions: vec!["policy/v1beta1/PodDisruptionBudget".into()],
                ..Flags::default()
            },
        ),
        (
            json!({"admissionController": {"replicas": 3, "podDisruptionBudget":
                   {"enabled": true}}, "backgroundController": {"enabled": false},
                   "cleanupController": {"enabled": false}}),
            Flags {
                api_versions: vec!["monitoring.coreos.com/v1".into()],
                ..Flags::default()
            },
        ),
    ];
    assert_parity(&chart, &value_sets, 10);
    // The subcharts are switched by their conditions.
    let helper = HelperRenderer::at(render_helper());
    let render = |v: Value| helper_render(&helper, &package(&chart), &v, &Flags::default());
    let in_sub = |r: &Rendered, sub: &str| r.iter().any(|(s, _)| s.contains(sub));
    let on = render(json!({"grafana": {"enabled": true}}));
    assert!(in_sub(&on, "/charts/grafana/") && in_sub(&on, "/charts/crds/"));
    let off = render(json!({"crds": {"install": false}}));
    assert!(!in_sub(&off, "/charts/crds/") && !in_sub(&off, "/charts/grafana/"));
}

/// A chart reading `.Capabilities`, gating a ServiceMonitor on its API version.
const CAPS_CHART: [(&str, &str); 3] = [
    (
        "Chart.yaml",
        "apiVersion: v2\nname: caps\nversion: 0.1.0\nkubeVersion: \">=1.30.0-0\"\n",
    ),
    (
        "templates/caps.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n  version: \
         {{ .Capabilities.KubeVersion.Version | quote }}\n  minor: {{ .Capabilities.KubeVersion.Minor \
         | quote }}\n  apps: {{ .Capabilities.APIVersions.Has \"apps/v1\" | quote }}\n\
         {{- if .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1\" }}\n---\n\
         apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: caps\n\
         spec:\n  endpoints: [{port: http}]\n{{- end }}\n",
    ),
    ("values.yaml", "{}\n"),
];

/// fief's objects for tenant `acme` (namespace acme-dev) with the chart above and `fief_yaml`.
fn caps_render(fief_yaml: &str) -> fief_core::render::TenantRender {
    use fief_core::model::Repo;
    use fief_core::snapshot::Snapshot;
    let tenant = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
                  environments: [dev]\n  components:\n    - name: c\n";
    let mut files = vec![
        ("fief.yaml".to_string(), fief_yaml.to_string()),
        ("tenants/acme.yaml".to_string(), tenant.to_string()),
        (
            "components/c/component.yaml".to_string(),
            "kind: helm\nchart: chart\n".to_string(),
        ),
    ];
    files.extend(
        CAPS_CHART
            .iter()
            .map(|(p, t)| (format!("components/c/chart/{p}"), t.to_string())),
    );
    let repo = Repo::load(Arc::new(Snapshot::from_files(files)));
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = fief_core::render::Renderer::new(repo.snapshot.clone()).with_packages(helper);
    fief_core::render::render_tenant(&renderer, &repo, "acme")
}

/// The objects of component `c` (the baseline's left out).
fn component_objects(out: &fief_core::render::TenantRender) -> Vec<&Value> {
    out.objects
        .iter()
        .filter(|o| o.component == "c")
        .map(|o| &o.object)
        .collect()
}

#[test]
fn fief_yaml_sets_the_capabilities_a_chart_sees_as_helm_template_flags_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in CAPS_CHART {
        offline::write_file(dir.path(), path, text);
    }
    let flags = Flags {
        kube_version: Some("1.31.2"),
        api_versions: vec!["monitoring.coreos.com/v1".into()],
        ..Flags::default()
    };
    let helm = helm_render(dir.path(), &json!({}), &flags);
    let out = caps_render(
        "kubernetesVersion: 1.31.2\napiVersions: [monitoring.coreos.com/v1]\n\
         componentKinds: [monitoring.coreos.com/ServiceMonitor]\n",
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let ours: Vec<&Value> = component_objects(&out);
    assert_eq!(ours.len(), 2, "the ConfigMap and the gated ServiceMonitor");
    for (_, h) in &helm {
        let o = ours
            .iter()
            .find(|o| o["kind"] == h["kind"])
            .expect("the same kinds");
        assert_eq!(o["data"], h["data"]);
        assert_eq!(o["spec"], h["spec"]);
    }
    let cm = ours
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the ConfigMap");
    assert_eq!(cm["data"]["version"], "v1.31.2");
    // Without the settings: Helm's built-in version, no ServiceMonitor.
    let out = caps_render("");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let ours = component_objects(&out);
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0]["data"]["version"], "v1.34.0");
    // A version the chart's kubeVersion refuses fails the component, naming the constraint.
    let out = caps_render("kubernetesVersion: \"1.29\"\n");
    let errors = format!("{:?}", out.errors);
    assert!(
        errors.contains(">=1.30.0-0") && errors.contains("1.29"),
        "{errors}"
    );
    // A version that is no version fails at fief.yaml.
    let out = caps_render("kubernetesVersion: latest\n");
    let errors = format!("{:?}", out.errors);
    assert!(
        errors.contains("kubernetesVersion") && errors.contains("fief.yaml"),
        "{errors}"
    );
}

/// A chart with a `crds/` folder and a template making one object of that kind.
fn crd_chart(crds_policy: &str, crd_file: &str) -> fief_core::render::TenantRender {
    use fief_core::model::Repo;
    use fief_core::snapshot::Snapshot;
    let files = crd_files(crds_policy, crd_file).map(|(p, t)| (p.to_string(), t));
    let repo = Repo::load(Arc::new(Snapshot::from_files(files)));
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = fief_core::render::Renderer::new(repo.snapshot.clone()).with_packages(helper);
    fief_core::render::render_tenant(&renderer, &repo, "acme")
}

/// The repo of [`crd_chart`].
fn crd_files(crds_policy: &str, crd_file: &str) -> [(&'static str, String); 6] {
    let tenant = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
                  environments: [dev, prod]\n  components:\n    - name: c\n";
    [
        (
            "fief.yaml",
            "componentKinds: [example.com/Widget]\n".to_string(),
        ),
        ("tenants/acme.yaml", tenant.to_string()),
        (
            "components/c/component.yaml",
            format!("kind: helm\nchart: chart\n{crds_policy}"),
        ),
        (
            "components/c/chart/Chart.yaml",
            "apiVersion: v2\nname: w\nversion: 0.1.0\n".to_string(),
        ),
        ("components/c/chart/crds/widgets.yaml", crd_file.to_string()),
        (
            "components/c/chart/templates/widget.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {size: 1}\n"
                .to_string(),
        ),
    ]
}

const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
    metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names:\n    \
    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n    - name: v1\n      \
    served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          \
    type: object\n          x-kubernetes-preserve-unknown-fields: true\n";

#[test]
fn a_chart_s_crds_come_out_apart_from_its_objects_once_and_only_as_its_policy_says() {
    let out = crd_chart("", WIDGET_CRD);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    // Two environments render the chart twice; the CRD is listed once, cluster-scoped.
    assert_eq!(out.chart_crds.len(), 1, "{:?}", out.chart_crds);
    let crd = &out.chart_crds[0];
    assert_eq!(crd.id.name, "widgets.example.com");
    assert_eq!(crd.id.namespace, "");
    assert_eq!(crd.source.file, "components/c/chart/crds/widgets.yaml");
    // The CRD is not among the objects a tenant's inventory records and prunes.
    assert!(
        out.objects
            .iter()
            .all(|o| o.id.kind != "CustomResourceDefinition")
    );
    assert_eq!(
        component_objects(&out).len(),
        2,
        "one Widget per environment"
    );
    // `fief render` prints it first, once per tenant, as `helm template --include-crds`.
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in crd_files("", WIDGET_CRD) {
        offline::write_file(dir.path(), path, &text);
    }
    let printed = offline::fief(&["render", dir.path().to_str().expect("UTF-8")]);
    let text = offline::stdout(&printed);
    assert_eq!(
        text.matches("kind: CustomResourceDefinition").count(),
        1,
        "{text}"
    );
    assert!(
        text.find("CustomResourceDefinition") < text.find("kind: Widget"),
        "{text}"
    );
    // `crds: Skip` leaves them out.
    let out = crd_chart("crds: Skip\n", WIDGET_CRD);
    assert!(
        out.errors.is_empty() && out.chart_crds.is_empty(),
        "{:?}",
        out.errors
    );
    // A crds/ file holding anything else is refused, naming the file.
    let out = crd_chart(
        "",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let errors = format!("{:?}", out.errors);
    assert!(
        errors.contains("crds/widgets.yaml") && errors.contains("ConfigMap"),
        "{errors}"
    );
}
