//! `fief import --from-cluster` against the real control plane, with the Flux and Argo CD
//! CRDs (their schemas left open): the HelmRelease, its HelmRepository and the ConfigMap it
//! takes values from, an Application on another cluster and that cluster's Argo CD Secret
//! are read with list and get, saved under `import-source/`, and become tenants; no Secret
//! value but a cluster's `name` and `server` reaches a written file.

use crate::common;

use common::cluster_cli::fief_cmd;
use common::kubectl::Kubectl;
use common::offline::{stderr, stdout, text_files_under};

/// A CRD for `kind` in `group` at `version` whose objects may hold anything.
fn crd(group: &str, version: &str, kind: &str) -> String {
    let plural = format!("{}s", kind.to_ascii_lowercase());
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
         name: {plural}.{group}\nspec:\n  group: {group}\n  names:\n    kind: {kind}\n    \
         plural: {plural}\n  scope: Namespaced\n  versions:\n    - name: {version}\n      \
         served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          \
         type: object\n          x-kubernetes-preserve-unknown-fields: true\n"
    )
}

/// The Flux and Argo CD CRDs the test's objects need, Established.
fn install_crds() {
    for (group, version, kind) in [
        ("helm.toolkit.fluxcd.io", "v2", "HelmRelease"),
        ("source.toolkit.fluxcd.io", "v1", "HelmRepository"),
        ("argoproj.io", "v1alpha1", "Application"),
    ] {
        Kubectl::admin()
            .stdin(&crd(group, version, kind))
            .ok(&["apply", "-f", "-"]);
        let name = format!("crd/{}s.{group}", kind.to_ascii_lowercase());
        Kubectl::admin().ok(&[
            "wait",
            "--for=condition=established",
            &name,
            "--timeout=60s",
        ]);
    }
}

/// The objects: tenant `t` runs podinfo from Flux, tenant `t2` from Argo CD on cluster `eu`.
fn objects(t: &str, t2: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {t}-prod}}\n---\n\
         apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\n\
         metadata: {{name: podinfo, namespace: {t}-prod}}\nspec: {{url: https://charts.example.com/podinfo}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: podinfo-values, namespace: {t}-prod}}\n\
         data:\n  values.yaml: \"ui: {{message: from-configmap}}\"\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: podinfo-redis, namespace: {t}-prod}}\n\
         stringData: {{password: redis-secret-value}}\n---\n\
         apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: podinfo, namespace: {t}-prod}}\n\
         spec:\n  chart:\n    spec:\n      chart: podinfo\n      version: 6.7.1\n      \
         sourceRef: {{kind: HelmRepository, name: podinfo}}\n  valuesFrom:\n    \
         - {{kind: ConfigMap, name: podinfo-values}}\n    \
         - {{kind: Secret, name: podinfo-redis, valuesKey: password, targetPath: redis.password}}\n  \
         values: {{replicaCount: 2}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: {t}-cluster-eu\n  namespace: {t}-prod\n  \
         labels: {{argocd.argoproj.io/secret-type: cluster}}\n\
         stringData: {{name: {t}-eu, server: \"https://{t}.eu.example.com\", config: '{{\"bearerToken\": \"cluster-token-value\"}}'}}\n---\n\
         apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {t2}-podinfo, namespace: {t}-prod}}\n\
         spec:\n  source: {{repoURL: https://charts.example.com/podinfo, chart: podinfo, targetRevision: 6.7.1, \
         helm: {{releaseName: podinfo}}}}\n  destination: {{server: \"https://{t}.eu.example.com\", namespace: {t2}-prod}}\n"
    )
}

#[test]
fn import_from_a_cluster_reads_flux_and_argo_cd_objects_and_keeps_no_secret_value() {
    install_crds();
    let t = common::unique("imp");
    let t2 = format!("{t}-argo");
    Kubectl::admin()
        .stdin(&objects(&t, &t2))
        .ok(&["apply", "-f", "-"]);
    let work = tempfile::tempdir().expect("tempdir");
    let out = work.path().join("repo");
    let o = fief_cmd(&[
        "import",
        "--from-cluster",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let tenant = std::fs::read_to_string(out.join(format!("tenants/{t}.yaml"))).expect("tenant");
    for want in ["replicaCount: 2", "message: from-configmap"] {
        assert!(tenant.contains(want), "no {want:?} in:\n{tenant}");
    }
    let argo = std::fs::read_to_string(out.join(format!("tenants/{t2}.yaml"))).expect("tenant");
    assert!(argo.contains(&format!("cluster: {t}-eu")), "{argo}");
    let source = out.join("import-source/helmrelease.yaml");
    assert!(source.is_file(), "the objects read are kept");
    assert!(
        stdout(&o).contains(&format!("{}:", source.display())),
        "the report points into import-source/: {}",
        stdout(&o)
    );
    for (path, text) in text_files_under(&out) {
        for secret in ["redis-secret-value", "cluster-token-value"] {
            assert!(
                !text.contains(secret),
                "{path} holds the Secret value {secret:?}"
            );
        }
    }
}
