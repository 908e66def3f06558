//! A chart's `crds/` through `fief apply` on the real control plane: the CRD is created when
//! absent before the chart's objects of its kind, never updated when the chart's copy changes,
//! and left in place when the tenant stops using the chart (in no inventory, so never pruned);
//! `crds: Skip` creates nothing.
//!
//! Needs `$FIEF_RENDER_HELPER` (tools/test.sh sets it from tools/build-render-helper.sh).

use crate::common;

use common::cluster_cli::{TestRepo, apply_json, exists, kubectl_json, tenant_report};
use common::offline::render_helper;

/// The CRD of kind Widget in `group`, with `column` as its one printer column's name.
fn crd(group: &str, column: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
         name: widgets.{group}\nspec:\n  group: {group}\n  names:\n    kind: Widget\n    \
         plural: widgets\n    singular: widget\n  scope: Namespaced\n  versions:\n    - name: v1\n      \
         served: true\n      storage: true\n      additionalPrinterColumns:\n        - {{name: {column}, \
         type: string, jsonPath: .spec.size}}\n      schema:\n        openAPIV3Schema:\n          \
         type: object\n          x-kubernetes-preserve-unknown-fields: true\n"
    )
}

/// A repo whose component `w` is a chart with `crds/widgets.yaml` and one Widget.
fn repo(group: &str, component_yaml: &str) -> TestRepo {
    let repo = TestRepo::new(&format!("componentKinds: [{group}/Widget]\n"));
    repo.write("components/w/component.yaml", component_yaml);
    repo.write(
        "components/w/chart/Chart.yaml",
        "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
    );
    repo.write("components/w/chart/crds/widgets.yaml", &crd(group, "Size"));
    repo.write(
        "components/w/chart/templates/widget.yaml",
        &format!(
            "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: one\nspec:\n  size: small\n"
        ),
    );
    repo
}

#[test]
fn a_chart_s_crd_is_created_when_absent_and_never_updated_or_pruned() {
    assert!(render_helper().exists(), "the render helper");
    let group = format!("{}.example.com", common::unique("w"));
    let crd_name = format!("widgets.{group}");
    let repo = repo(&group, "kind: helm\nchart: chart\n");
    let t = common::unique("crds");
    repo.tenant(&t, "  components:\n    - name: w\n");
    let (first, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&first, &t)["outcome"], "applied", "{first}");
    let ns = format!("{t}-prod");
    assert!(exists("customresourcedefinition", "", &crd_name));
    let widget = kubectl_json(&["get", &format!("widgets.{group}"), "-n", &ns, "one"]);
    assert_eq!(widget["spec"]["size"], "small");

    // The chart's copy changes: the live CRD is left as it is (Helm never upgrades crds/).
    repo.write(
        "components/w/chart/crds/widgets.yaml",
        &crd(&group, "Changed"),
    );
    let (second, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&second, &t)["outcome"], "applied", "{second}");
    let live = kubectl_json(&["get", "customresourcedefinition", &crd_name]);
    let column = &live["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"];
    assert_eq!(column, "Size", "the CRD was updated: {live}");

    // The tenant stops using the chart: its Widget is pruned, the CRD stays.
    repo.tenant(&t, "  components:\n    - name: app\n");
    let (third, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&third, &t)["outcome"], "applied", "{third}");
    assert!(exists("customresourcedefinition", "", &crd_name));
}

#[test]
fn crds_skip_creates_no_crd() {
    let group = format!("{}.example.com", common::unique("s"));
    let repo = repo(&group, "kind: helm\nchart: chart\ncrds: Skip\n");
    // Only the chart's CRD is skipped: its Widget would fail without it, so it is left out.
    repo.remove("components/w/chart/templates/widget.yaml");
    repo.write(
        "components/w/chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n",
    );
    let t = common::unique("skip");
    repo.tenant(&t, "  components:\n    - name: w\n");
    let (out, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&out, &t)["outcome"], "applied", "{out}");
    assert!(!exists(
        "customresourcedefinition",
        "",
        &format!("widgets.{group}")
    ));
}
