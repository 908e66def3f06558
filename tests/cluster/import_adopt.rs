//! From a Flux fleet to fief with no change: a HelmRelease (values, and `valuesFrom` a
//! ConfigMap) is imported; what helm-controller would have made of it — the chart rendered by
//! the pinned helm with the ConfigMap's values then the release's own, applied with the
//! controller's field manager and labels — is on the control plane; `fief diff --adopt` on the
//! imported repo finds every object equal to the render.

use std::path::Path;

use crate::common;

use common::chart_repos::{HttpRepo, helm, package};
use common::kubectl::Kubectl;
use common::offline::{fief_with_charts, stderr, stdout};

/// The HelmRelease's values, from its ConfigMap and its own `values`.
const CONFIGMAP_VALUES: &str = "resources:\n  requests:\n    cpu: 100m\n";
const RELEASE_VALUES: &str =
    "replicaCount: 3\nlogLevel: warn\nui:\n  color: \"#ff0000\"\n  message: Acme\n";

/// The Flux objects of one customer, `ns` its namespace, charts from `url`.
fn flux_objects(ns: &str, url: &str) -> String {
    let indent =
        |text: &str, by: &str| -> String { text.lines().map(|l| format!("{by}{l}\n")).collect() };
    format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: podinfo\n  namespace: flux-system\nspec:\n  url: {url}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-values\n  namespace: {ns}\ndata:\n  values.yaml: |\n{}---\n\
         apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: {ns}\nspec:\n  chart:\n    spec:\n      chart: podinfo\n      version: 6.7.1\n      sourceRef: {{kind: HelmRepository, name: podinfo, namespace: flux-system}}\n  valuesFrom:\n    - {{kind: ConfigMap, name: podinfo-values}}\n  values:\n{}",
        indent(CONFIGMAP_VALUES, "    "),
        indent(RELEASE_VALUES, "    ")
    )
}

/// What helm-controller makes of the release: `helm template` with the ConfigMap's values
/// then the release's, applied server-side as `helm-controller` with Flux's labels.
fn helm_controller_made(home: &Path, archive: &Path, ns: &str) {
    let (from_cm, from_release) = (home.join("cm-values.yaml"), home.join("values.yaml"));
    std::fs::write(&from_cm, CONFIGMAP_VALUES).expect("write");
    std::fs::write(&from_release, RELEASE_VALUES).expect("write");
    let p = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    let out = helm(
        home,
        &[
            "template",
            "podinfo",
            &p(archive),
            "--namespace",
            ns,
            "-f",
            &p(&from_cm),
            "-f",
            &p(&from_release),
        ],
    );
    let manifests = String::from_utf8_lossy(&out.stdout).into_owned();
    Kubectl::admin().ok(&["create", "namespace", ns]);
    Kubectl::admin().stdin(&manifests).ok(&[
        "apply",
        "--server-side",
        "--field-manager=helm-controller",
        "-n",
        ns,
        "-f",
        "-",
    ]);
    // helm-controller's post-renderer labels every object with its release.
    Kubectl::admin().ok(&[
        "label",
        "deployments,services",
        "--all",
        "-n",
        ns,
        "helm.toolkit.fluxcd.io/name=podinfo",
        "helm.toolkit.fluxcd.io/namespace=flux",
        "--field-manager=helm-controller",
    ]);
}

#[test]
fn an_imported_flux_helmrelease_renders_what_helm_controller_made() {
    let tenant = common::unique("fluxhr");
    let ns = format!("{tenant}-prod");
    let home = tempfile::tempdir().expect("tempdir");
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/charts/podinfo");
    let served = home.path().join("served");
    let archive = package(home.path(), &chart, "6.7.1", &served);
    let http = HttpRepo::serve(&served);
    http.index(home.path());
    let from = home.path().join("flux");
    std::fs::create_dir_all(&from).expect("mkdir");
    std::fs::write(from.join("fleet.yaml"), flux_objects(&ns, &http.url)).expect("write");
    let repo = home.path().join("repo");
    let cache = home.path().join("cache");
    let p = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    let out = fief_with_charts(&cache, &["import", "--from", &p(&from), "--out", &p(&repo)]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    // Its own agent namespace, as every cluster test has.
    let config = std::fs::read_to_string(repo.join("fief.yaml")).expect("fief.yaml");
    let agent_ns = common::unique("fief-imp");
    let config: String = config
        .lines()
        .filter(|l| !l.starts_with("agentNamespace:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        repo.join("fief.yaml"),
        format!("{config}agentNamespace: {agent_ns}\n"),
    )
    .expect("write");
    let out = fief_with_charts(&cache, &["chart", "update", &p(&repo)]);
    assert!(out.status.success(), "{}", stderr(&out));

    helm_controller_made(home.path(), &archive, &ns);
    let out = fief_with_charts(
        &cache,
        &[
            "diff",
            &p(&repo),
            "-t",
            &tenant,
            "--adopt",
            "--kubeconfig",
            &p(common::control_plane().admin_kubeconfig()),
        ],
    );
    let (shown, notes) = (stdout(&out), stderr(&out));
    assert!(
        !shown.contains("--adopt does not take it"),
        "{shown}\n{notes}"
    );
    assert!(
        notes.contains("`fief apply --adopt` takes 2 existing objects with no change")
            && notes.contains(&format!(
                "Deployment.apps/{ns}/podinfo (from helm-controller)"
            ))
            && notes.contains(&format!("Service/{ns}/podinfo (from helm-controller)")),
        "{shown}\n{notes}"
    );
}
