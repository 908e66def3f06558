//! A chart's `crds/` through `fief apply` on the real control plane: the CRD is created when
//! absent before the chart's objects of its kind, never updated when the chart's copy changes,
//! and left in place when the tenant stops using the chart (in no inventory, so never pruned);
//! `crds: Skip` creates nothing. The agent's ClusterRole (deploy/rbac.yaml) may create CRDs
//! and neither change nor delete one.
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

/// `kubectl auth can-i VERB customresourcedefinitions --as USER`: the answer's first word.
fn can_i(verb: &str, user: &str) -> String {
    let out = common::kubectl::Kubectl::admin().output(&[
        "auth",
        "can-i",
        verb,
        "customresourcedefinitions.apiextensions.k8s.io",
        "--as",
        user,
    ]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_agent_s_cluster_role_creates_crds_and_can_neither_change_nor_delete_one() {
    // deploy/rbac.yaml's ClusterRole, under a name of its own, bound to a user of the test.
    let rbac = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml"),
    )
    .expect("deploy/rbac.yaml");
    let role = rbac
        .split("\n---\n")
        .find(|d| d.contains("kind: ClusterRole\nmetadata:\n  name: fief-agent\n"))
        .expect("the agent's ClusterRole");
    let name = common::unique("agent-crds");
    let role = role.replace("name: fief-agent\n", &format!("name: {name}\n"));
    let binding = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  \
         name: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  \
         name: {name}\nsubjects:\n  - apiGroup: rbac.authorization.k8s.io\n    kind: User\n    \
         name: {name}\n"
    );
    common::kubectl::Kubectl::admin()
        .stdin(&format!("{role}\n---\n{binding}"))
        .ok(&["apply", "-f", "-"]);
    for verb in ["get", "list", "watch", "create"] {
        assert_eq!(can_i(verb, &name), "yes", "{verb}");
    }
    for verb in ["update", "patch", "delete", "deletecollection"] {
        assert_eq!(can_i(verb, &name), "no", "{verb}");
    }
}
