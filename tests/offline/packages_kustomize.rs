//! `kind: kustomize` components against the pinned `kustomize build` (the CLI whose api is the
//! helper's): a base and an overlay (patches, images, a configMapGenerator, namePrefix,
//! commonLabels) equal `kustomize build` of a kustomization that wraps it with the tenant's
//! namespace, as the helper wraps it; the images and replicas set from values equal what
//! `kustomize edit set image` / `set replicas` give; Flux's `${var}` substitution from values.
//!
//! Compared: fief's validated objects, without the labels fief adds. Needs
//! `$FIEF_RENDER_HELPER` and `$FIEF_KUSTOMIZE_BIN` (tools/test.sh sets both).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use fief_core::model::Repo;
use fief_core::render::{Renderer, render_tenant};
use fief_core::snapshot::Snapshot;
use fief_source::render_helper::HelperRenderer;
use serde_json::{Value, json};

use crate::common::offline::{render_helper, stderr, write_file};

/// The labels fief adds to every object.
const FIEF_LABELS: [&str; 4] = [
    "app.kubernetes.io/managed-by",
    "fief.dev/tenant",
    "fief.dev/component",
    "applyset.kubernetes.io/part-of",
];

/// The pinned kustomize CLI (`FIEF_KUSTOMIZE_BIN`); the test fails without it, saying how.
fn kustomize_bin() -> PathBuf {
    match std::env::var_os("FIEF_KUSTOMIZE_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "FIEF_KUSTOMIZE_BIN is not set: run tools/test.sh, or export \
             FIEF_KUSTOMIZE_BIN=\"$(tools/build-kustomize.sh)\" first"
        ),
    }
}

/// The component's files: a base and an overlay using most of kustomize's transformers.
const FILES: [(&str, &str); 7] = [
    (
        "base/kustomization.yaml",
        "resources: [deployment.yaml, service.yaml]\ncommonLabels:\n  app: web\n",
    ),
    (
        "base/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    \
         greeting: ${greeting:=hello}\n    escaped: $${kept}\n    region: r-${region}\n\
         spec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    \
         metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          \
         image: nginx:1.25\n          envFrom:\n            - configMapRef: {name: settings}\n        \
         - name: side\n          image: busybox:1.36\n",
    ),
    (
        "base/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n    \
         kustomize.toolkit.fluxcd.io/substitute: disabled\n    note: ${untouched}\nspec:\n  \
         ports: [{port: 80}]\n",
    ),
    (
        "overlays/prod/kustomization.yaml",
        "resources: [../../base]\nnamePrefix: prod-\ncommonLabels:\n  tier: front\n\
         images:\n  - {name: busybox, newTag: '1.37'}\nconfigMapGenerator:\n  - name: settings\n    \
         literals: [MODE=prod, LEVEL=info]\npatches:\n  - path: replicas.yaml\n  - target: {kind: Service}\n    \
         patch: |-\n      - op: add\n        path: /spec/ports/0/name\n        value: http\n",
    ),
    (
        "overlays/prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n",
    ),
    (
        "component.yaml",
        "kind: kustomize\npath: overlays/prod\nkustomize:\n  images:\n    - {name: nginx, newTag: image.tag}\n  \
         replicas:\n    - {name: prod-web, count: replicas}\n  substitute:\n    greeting: greeting\n    region: region\n",
    ),
    (
        "varz.yaml",
        "image: {tag: null}\nreplicas: null\ngreeting: null\nregion: null\n",
    ),
];

/// A repo with tenant `acme` (environment dev, namespace acme-dev) using component `c`.
fn repo(values: &Value) -> Repo {
    let files: Vec<(String, String)> = FILES
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    crate::packages::repo(&files, values)
}

fn identity(o: &Value) -> String {
    format!(
        "{}/{}/{}",
        o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]
    )
}

/// The component's objects as fief renders them, without the labels fief adds.
fn fief_objects(values: &Value) -> Vec<Value> {
    let r = repo(values);
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(r.snapshot.clone()).with_packages(helper);
    let out = render_tenant(&renderer, &r, "acme");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let mut objects: Vec<Value> = out
        .objects
        .into_iter()
        .filter(|o| o.component == "c")
        .map(|o| {
            let mut v = o.object;
            if let Some(map) = v["metadata"]["labels"].as_object_mut() {
                FIEF_LABELS.iter().for_each(|l| drop(map.remove(*l)));
            }
            v
        })
        .collect();
    objects.sort_by_key(identity);
    objects
}

/// `kustomize build` of a kustomization in `dir/fief` naming `dir/src/overlays/prod` with the
/// namespace (the wrapping the helper does); `edit` runs first in the overlay.
fn kustomize_build(edit: &[&[&str]]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in FILES {
        write_file(dir.path(), &format!("src/{path}"), text);
    }
    write_file(
        dir.path(),
        "fief/kustomization.yaml",
        "resources: [../src/overlays/prod]\nnamespace: acme-dev\n",
    );
    let overlay = dir.path().join("src/overlays/prod");
    for args in edit {
        run(&overlay, args);
    }
    let out = run(&dir.path().join("fief"), &["build", "."]);
    let mut objects: Vec<Value> = out
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str::<Value>(d).expect("a YAML document"))
        .filter(|d| !d.is_null())
        .collect();
    objects.sort_by_key(identity);
    objects
}

fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(kustomize_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run kustomize");
    assert!(out.status.success(), "kustomize {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The Deployment's annotations are the ones substitution touches: compared on their own.
fn without_substituted(mut objects: Vec<Value>) -> Vec<Value> {
    for o in &mut objects {
        if o["kind"] == "Deployment" {
            o["metadata"]
                .as_object_mut()
                .map(|m| m.remove("annotations"));
        }
    }
    objects
}

#[test]
fn a_base_and_overlay_build_as_kustomize_build_builds_them_in_the_tenant_namespace() {
    let ours = fief_objects(&json!({}));
    let theirs = kustomize_build(&[]);
    assert_eq!(ours.len(), 3, "{ours:#?}");
    assert_eq!(without_substituted(ours), without_substituted(theirs));
}

#[test]
fn images_and_replicas_from_values_equal_kustomize_edit_set_image_and_replicas() {
    let ours = fief_objects(&json!({"image": {"tag": "1.27"}, "replicas": 4}));
    let theirs = kustomize_build(&[
        &["edit", "set", "image", "nginx:1.27"],
        &["edit", "set", "replicas", "prod-web=4"],
    ]);
    assert_eq!(
        without_substituted(ours.clone()),
        without_substituted(theirs)
    );
    let deployment = ours
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the Deployment");
    assert_eq!(deployment["spec"]["replicas"], 4);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][1]["image"],
        "busybox:1.37"
    );
}

#[test]
fn variables_are_substituted_from_values_as_flux_substitutes_them() {
    let annotations = |values: Value| {
        let objects = fief_objects(&values);
        let find = |kind: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind)
                .expect("the object")["metadata"]["annotations"]
                .clone()
        };
        (find("Deployment"), find("Service"))
    };
    let (deployment, service) = annotations(json!({"greeting": "hi", "region": "eu-1"}));
    assert_eq!(deployment["greeting"], "hi");
    assert_eq!(deployment["region"], "r-eu-1");
    // `$${x}` is the escape for a literal `${x}`.
    assert_eq!(deployment["escaped"], "${kept}");
    // An object marked `kustomize.toolkit.fluxcd.io/substitute: disabled` is left alone.
    assert_eq!(service["note"], "${untouched}");
    // Unset: the default after `:=`, else empty (Flux's behaviour when not strict).
    let (deployment, _) = annotations(json!({}));
    assert_eq!(deployment["greeting"], "hello");
    assert_eq!(deployment["region"], "r-");
}

#[test]
fn a_kustomize_value_naming_no_varz_key_or_a_crds_policy_is_refused_at_component_yaml() {
    let r = Repo::load(Arc::new(Snapshot::from_files([
        ("fief.yaml".to_string(), String::new()),
        (
            "components/c/component.yaml".to_string(),
            "kind: kustomize\npath: .\ncrds: Skip\nkustomize:\n  substitute:\n    bad-name: x\n  \
             images:\n    - {name: nginx, newTag: image.tag}\n"
                .to_string(),
        ),
        (
            "components/c/kustomization.yaml".to_string(),
            "resources: []\n".to_string(),
        ),
    ])));
    let errors = format!("{:?}", r.components.get("c").expect("component c"));
    assert!(
        errors.contains("bad-name") && errors.contains("image.tag"),
        "{errors}"
    );
    assert!(errors.contains("varz.yaml"), "{errors}");
    // `crds:` is about a chart's crds/ folder: only with `kind: helm`.
    assert!(
        errors.contains("`crds`") && errors.contains("kind: helm"),
        "{errors}"
    );
}
