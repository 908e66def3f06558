//! `kind: helm` and `kind: kustomize` components through `fief apply` on the real control
//! plane: the metrics-server chart (from its Go module zip) applied into the tenant's
//! namespace, a one-value change writes one object; a kustomize overlay applied, and an object
//! it no longer builds pruned.
//!
//! Needs `$FIEF_RENDER_HELPER` (tools/test.sh sets it from tools/build-render-helper.sh).

use std::path::Path;

use crate::common;

use common::cluster_cli::{TestRepo, apply_json, exists, kubectl_json, tenant_report};
use common::offline::{metrics_server_chart, render_helper, text_files_under};

/// Copy the chart's files under `components/<component>/chart/` of the repo.
fn copy_chart(repo: &TestRepo, component: &str, chart: &Path) {
    for (rel, text) in text_files_under(chart) {
        repo.write(&format!("components/{component}/chart/{rel}"), &text);
    }
}

fn counts(summary: &serde_json::Value, tenant: &str) -> (u64, u64, u64) {
    let c = &tenant_report(summary, tenant)["counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    (n("created"), n("configured"), n("unchanged"))
}

/// The chart's namespaced objects only: its cluster-scoped ones (RBAC, APIService) are
/// refused by validation, as any component's are.
const MS_VALUES: &str = "rbac: {create: false}\napiService: {create: false}\nreplicas: 1\n";

#[test]
fn a_helm_tenant_is_applied_and_a_one_value_change_writes_one_object() {
    assert!(render_helper().exists(), "the render helper");
    let repo = TestRepo::new("");
    copy_chart(&repo, "metrics", &metrics_server_chart());
    repo.write(
        "components/metrics/component.yaml",
        "kind: helm\nchart: chart\n",
    );
    repo.write("components/metrics/varz.yaml", MS_VALUES);
    let t = common::unique("chart");
    repo.tenant(&t, "  components:\n    - name: metrics\n");
    let (first, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&first, &t)["outcome"], "applied", "{first}");
    let ns = format!("{t}-prod");
    let deploy = kubectl_json(&["get", "deployment", "-n", &ns, "metrics-metrics-server"]);
    assert_eq!(deploy["spec"]["replicas"], 1);
    assert_eq!(
        deploy["metadata"]["labels"]["fief.dev/component"],
        "metrics"
    );
    assert!(exists("service", &ns, "metrics-metrics-server"));
    assert!(exists("serviceaccount", &ns, "metrics-metrics-server"));

    // One value of the tenant changes one object.
    repo.tenant(
        &t,
        "  components:\n    - name: metrics\n      values: {replicas: 2}\n",
    );
    let (second, _) = apply_json(repo.path(), &[], 0);
    let (created, configured, unchanged) = counts(&second, &t);
    assert_eq!((created, configured), (0, 1), "{second}");
    assert!(unchanged >= 2, "{second}");
    let deploy = kubectl_json(&["get", "deployment", "-n", &ns, "metrics-metrics-server"]);
    assert_eq!(deploy["spec"]["replicas"], 2);
}

#[test]
fn a_kustomize_tenant_is_applied_and_what_it_no_longer_builds_is_pruned() {
    let repo = TestRepo::new("");
    let c = "components/web";
    repo.write(
        &format!("{c}/component.yaml"),
        "kind: kustomize\npath: overlay\n",
    );
    repo.write(
        &format!("{c}/base/kustomization.yaml"),
        "resources: [cm.yaml, extra.yaml]\n",
    );
    repo.write(
        &format!("{c}/base/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: base\n",
    );
    repo.write(
        &format!("{c}/base/extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n",
    );
    repo.write(
        &format!("{c}/overlay/kustomization.yaml"),
        "resources: [../base]\nnamePrefix: web-\npatches:\n  - patch: |-\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: settings}\n      data: {mode: overlay}\n",
    );
    let t = common::unique("kust");
    repo.tenant(&t, "  components:\n    - name: web\n");
    let (first, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&first, &t)["outcome"], "applied", "{first}");
    let ns = format!("{t}-prod");
    let settings = kubectl_json(&["get", "configmap", "-n", &ns, "web-settings"]);
    assert_eq!(settings["data"]["mode"], "overlay");
    assert!(exists("configmap", &ns, "web-extra"));

    repo.write(
        &format!("{c}/base/kustomization.yaml"),
        "resources: [cm.yaml]\n",
    );
    let (second, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(tenant_report(&second, &t)["outcome"], "applied", "{second}");
    assert!(!exists("configmap", &ns, "web-extra"), "{second}");
    assert!(exists("configmap", &ns, "web-settings"));
}
