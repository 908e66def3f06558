//! `kind: helm` and `kind: kustomize` components: component.yaml's fields, strict values
//! against the chart's `values.yaml`, and the render path with a fake renderer in place of
//! the helper.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::diagnostic::Problem;
use crate::model::{RenderKind, Repo};
use crate::render::package::{PackageDocument, PackageError, PackageRenderer, PackageRequest};
use crate::render::{Renderer, TenantRender, render_tenant};
use crate::snapshot::Snapshot;

const TENANT: &str = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  environments: [dev]\n  components:\n    - name: app\n";

/// One request as the fake saw it: kind, key, release, namespace, values.
type Asked = (RenderKind, String, String, String, Value);

/// What the fake was asked, and a ConfigMap naming the values it got.
#[derive(Default)]
struct Fake {
    asked: Mutex<Vec<Asked>>,
}

impl PackageRenderer for Fake {
    fn render(&self, r: &PackageRequest<'_>) -> Result<Vec<PackageDocument>, PackageError> {
        let p = r.package;
        let record = (
            p.kind,
            p.key.clone(),
            r.release.into(),
            r.namespace.into(),
            r.values.clone(),
        );
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
        if r.values.get("fail").is_some() {
            return Err(PackageError::Render(
                "template: app/templates/cm.yaml:3: boom".into(),
            ));
        }
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}-cm\ndata:\n  values: '{}'\n",
            r.release, r.values
        );
        Ok(vec![PackageDocument {
            source: "app-chart/templates/cm.yaml".into(),
            text,
            crd: false,
        }])
    }
}

fn repo(component_yaml: &str, tenant_values: &str) -> Repo {
    let tenant = format!("{TENANT}{tenant_values}");
    Repo::load(Arc::new(Snapshot::from_files([
        ("fief.yaml", String::new()),
        ("tenants/acme.yaml", tenant),
        ("components/app/component.yaml", component_yaml.to_string()),
        ("components/app/varz.yaml", "extra: 1\n".to_string()),
        (
            "components/app/chart/Chart.yaml",
            "apiVersion: v2\nname: app-chart\nversion: 0.1.0\n".to_string(),
        ),
        (
            "components/app/chart/values.yaml",
            "replicas: 1\nimage: {tag: v1}\n".to_string(),
        ),
        (
            "components/app/chart/templates/cm.yaml",
            "kind: ConfigMap\n".to_string(),
        ),
        (
            "components/app/base/kustomization.yaml",
            "resources: [cm.yaml]\n".to_string(),
        ),
    ])))
}

fn render(repo: &Repo, fake: Arc<Fake>) -> TenantRender {
    let renderer = Renderer::new(repo.snapshot.clone()).with_packages(fake);
    render_tenant(&renderer, repo, "acme")
}

fn component_errors(component_yaml: &str) -> Vec<String> {
    let r = repo(component_yaml, "");
    match &r.components["app"] {
        Ok(_) => Vec::new(),
        Err(ds) => ds.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn component_yaml_reads_each_kind_and_refuses_what_does_not_fit_it() {
    let r = repo("kind: helm\nchart: chart\n", "");
    let c = r.components["app"].as_ref().expect("a helm component");
    let p = c.package.as_deref().expect("a package");
    assert_eq!(
        (p.kind, p.dir.as_str()),
        (RenderKind::Helm, "components/app/chart")
    );
    assert_eq!(p.defaults, json!({"replicas": 1, "image": {"tag": "v1"}}));
    assert!(p.files.contains_key("templates/cm.yaml") && c.templates.is_empty());
    let r = repo("kind: kustomize\npath: base\n", "");
    let p = r.components["app"]
        .as_ref()
        .ok()
        .and_then(|c| c.package.clone());
    assert_eq!(
        p.map(|p| (p.kind, p.root.clone())),
        Some((RenderKind::Kustomize, "base".into()))
    );
    for (yaml, says) in [
        ("kind: helm\n", "needs `chart`"),
        ("kind: helm\nchart: ../other\n", "inside the component"),
        ("kind: helm\nchart: /etc\n", "inside the component"),
        ("kind: helm\nchart: base\n", "has no Chart.yaml"),
        (
            "kind: helm\nchart: chart\npath: base\n",
            "`path` is for `kind: kustomize`",
        ),
        ("kind: kustomize\n", "needs `path`"),
        (
            "kind: kustomize\npath: chart\n",
            "has no kustomization.yaml",
        ),
        ("chart: chart\n", "needs `kind: helm`"),
        ("kind: jsonnet\n", "jsonnet"),
        ("kind: helm\nchart: chart\nrepo: x\n", "repo"),
    ] {
        let errors = component_errors(yaml);
        assert!(
            errors.iter().any(|e| e.contains(says)),
            "{yaml:?}: {errors:?}"
        );
        assert!(
            errors
                .iter()
                .all(|e| e.starts_with("components/app/component.yaml")),
            "{errors:?}"
        );
    }
}

#[test]
fn a_helm_component_renders_through_the_renderer_labelled_in_the_tenant_namespace() {
    let r = repo(
        "kind: helm\nchart: chart\n",
        "      values: {replicas: 3}\n",
    );
    let fake = Arc::new(Fake::default());
    let out = render(&r, fake.clone());
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let cm = out
        .objects
        .iter()
        .find(|o| o.component == "app")
        .expect("the chart's ConfigMap");
    assert_eq!(cm.id.namespace, "acme-dev");
    assert_eq!(cm.source.file, "components/app/chart/templates/cm.yaml");
    assert_eq!(
        cm.object["metadata"]["labels"]["fief.dev/tenant"], "acme",
        "{}",
        cm.object
    );
    let asked = fake.asked.lock().unwrap_or_else(|e| e.into_inner());
    let (kind, _, release, namespace, values) = &asked[0];
    assert_eq!(
        (kind, release.as_str(), namespace.as_str()),
        (&RenderKind::Helm, "app", "acme-dev")
    );
    // varz.yaml under the tenant's values; the chart's own defaults are Helm's to merge.
    assert_eq!(values, &json!({"extra": 1, "replicas": 3}));
}

#[test]
fn a_key_neither_the_chart_nor_varz_defines_is_an_error_at_the_tenant_line() {
    let r = repo(
        "kind: helm\nchart: chart\n",
        "      values: {image: {tga: v2}, extra: 2}\n",
    );
    let out = render(&r, Arc::new(Fake::default()));
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    let e = &out.errors[0];
    assert_eq!((e.file.as_str(), e.line), ("tenants/acme.yaml", Some(9)));
    assert!(
        matches!(e.problem.as_ref(), Problem::UndefinedValue { path, varz, .. }
        if path == "values.image.tga" && varz.contains("components/app/chart/values.yaml")),
        "{e}"
    );
    assert!(out.objects.iter().all(|o| o.component != "app"));
}

#[test]
fn a_chart_that_fails_names_the_component_the_tenant_and_the_chart() {
    let r = repo(
        "kind: helm\nchart: chart\nstrictValues: false\n",
        "      values: {fail: true}\n",
    );
    let out = render(&r, Arc::new(Fake::default()));
    let text = out
        .errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("components/app/chart/Chart.yaml")
            && text.contains("tenant `acme`")
            && text.contains("helm component `app`")
            && text.contains("boom"),
        "{text}"
    );
}

#[test]
fn without_a_renderer_a_helm_component_says_how_to_get_the_helper() {
    let r = repo("kind: kustomize\npath: base\n", "");
    let out = render_tenant(&Renderer::new(r.snapshot.clone()), &r, "acme");
    let text = out
        .errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("kustomize component `app`")
            && text.contains("tools/build-render-helper.sh")
            && text.contains("FIEF_RENDER_HELPER"),
        "{text}"
    );
}
