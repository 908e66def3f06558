//! `fief import --from-cluster`: the Flux and Argo CD objects a cluster holds, read with list
//! and get only, as input files.
//!
//! In: the kubeconfig's cluster. Out: multi-document YAML files, by their path under the
//! output folder (`import-source/<kind>.yaml`): the objects of each Flux and Argo CD kind the
//! cluster serves, the ConfigMaps releases take values from, the Secrets a Kustomization
//! substitutes from with their key names only, and the Argo CD cluster Secrets with only their
//! `name` and `server`. Secret values other than those two are never kept.

use serde_json::{Map, Value, json};

use crate::cli::{CliError, ClusterArgs};
use crate::kube::{ClusterError, Resources};

/// The folder under `--out` the objects read are written to.
pub const SOURCE_DIR: &str = "import-source";

/// The kinds read, each with the API versions tried in order.
const KINDS: [(&str, &[&str], &str); 7] = [
    (
        "helm.toolkit.fluxcd.io",
        &["v2", "v2beta2", "v2beta1"],
        "HelmRelease",
    ),
    (
        "kustomize.toolkit.fluxcd.io",
        &["v1", "v1beta2"],
        "Kustomization",
    ),
    (
        "source.toolkit.fluxcd.io",
        &["v1", "v1beta2"],
        "HelmRepository",
    ),
    (
        "source.toolkit.fluxcd.io",
        &["v1", "v1beta2"],
        "GitRepository",
    ),
    (
        "source.toolkit.fluxcd.io",
        &["v1", "v1beta2"],
        "OCIRepository",
    ),
    ("argoproj.io", &["v1alpha1"], "Application"),
    ("argoproj.io", &["v1alpha1"], "ApplicationSet"),
];

/// The label of Argo CD's cluster Secrets.
const CLUSTER_SECRETS: &str = "argocd.argoproj.io/secret-type=cluster";

/// Read the cluster's objects: (path under `--out`, text) per file.
pub fn read(args: &ClusterArgs) -> Result<Vec<(String, String)>, CliError> {
    super::super::runtime()?.block_on(read_async(args))
}

async fn read_async(args: &ClusterArgs) -> Result<Vec<(String, String)>, CliError> {
    let (resources, _) = super::super::resources(args).await?;
    let mut files = Vec::new();
    let mut all: Vec<Value> = Vec::new();
    for (group, versions, kind) in KINDS {
        let mut found = None;
        for version in versions {
            if let Some(r) = resources.resolve(&format!("{group}/{version}"), kind).await {
                found = Some(r);
                break;
            }
        }
        let Some(resource) = found else { continue };
        let items = crate::kube::list_all(&resources, &resource, "")
            .await
            .map_err(|e| ClusterError::request(format!("list {kind}"), e))?;
        let items: Vec<Value> = items.into_iter().map(clean).collect();
        if !items.is_empty() {
            files.push((
                format!("{SOURCE_DIR}/{}.yaml", kind.to_ascii_lowercase()),
                stream(&items),
            ));
            all.extend(items);
        }
    }
    let (config_maps, secrets) = referenced(&resources, &all).await?;
    for (name, items) in [("configmaps", config_maps), ("secrets", secrets)] {
        if !items.is_empty() {
            files.push((format!("{SOURCE_DIR}/{name}.yaml"), stream(&items)));
        }
    }
    if let Some(secret) = resources.resolve("v1", "Secret").await {
        let clusters = crate::kube::list_all(&resources, &secret, CLUSTER_SECRETS)
            .await
            .map_err(|e| ClusterError::request("list Argo CD cluster Secrets", e))?;
        let clusters: Vec<Value> = clusters.into_iter().map(|s| secret_keys(s, true)).collect();
        if !clusters.is_empty() {
            files.push((
                format!("{SOURCE_DIR}/argocd-clusters.yaml"),
                stream(&clusters),
            ));
        }
    }
    Ok(files)
}

/// The ConfigMaps (whole) and Secrets (key names only) the releases of `objects` read.
async fn referenced(
    resources: &Resources,
    objects: &[Value],
) -> Result<(Vec<Value>, Vec<Value>), CliError> {
    let mut config_maps = Vec::new();
    let mut secrets = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for o in objects {
        let own_ns = o["metadata"]["namespace"].as_str().unwrap_or("");
        let refs = o["spec"]["valuesFrom"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| (r, "ConfigMap"));
        let subst = o["spec"]["postBuild"]["substituteFrom"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| (r, "ConfigMap"));
        for (r, default_kind) in refs.chain(subst) {
            let kind = r["kind"].as_str().unwrap_or(default_kind);
            // A HelmRelease's Secret values are never read: only their names are needed.
            let from_kustomization = o["kind"] == "Kustomization";
            if kind == "Secret" && !from_kustomization {
                continue;
            }
            let ns = r["namespace"].as_str().unwrap_or(own_ns);
            let name = r["name"].as_str().unwrap_or("");
            if !seen.insert((kind.to_string(), ns.to_string(), name.to_string())) {
                continue;
            }
            let Some(resource) = resources.resolve("v1", kind).await else {
                continue;
            };
            let got = resources
                .api(&resource, ns)
                .get_opt(name)
                .await
                .map_err(|e| ClusterError::request(format!("get {kind}/{ns}/{name}"), e))?;
            let Some(got) = got.and_then(|g| serde_json::to_value(g).ok()) else {
                continue;
            };
            let got = with_kind(clean(got), kind);
            if kind == "Secret" {
                secrets.push(secret_keys(got, false));
            } else {
                config_maps.push(got);
            }
        }
    }
    Ok((config_maps, secrets))
}

/// `object` with its `apiVersion` and `kind` (a get of a core object may leave them out).
fn with_kind(mut object: Value, kind: &str) -> Value {
    object["apiVersion"] = json!("v1");
    object["kind"] = json!(kind);
    object
}

/// A Secret with its key names and no values; an Argo CD cluster Secret (`cluster`) keeps the
/// values of `name` and `server` only.
fn secret_keys(secret: Value, cluster: bool) -> Value {
    let mut data = Map::new();
    for field in ["data", "stringData"] {
        for (k, v) in secret[field].as_object().into_iter().flatten() {
            let keep = cluster && (k == "name" || k == "server");
            let value = if keep { v.clone() } else { json!("") };
            data.insert(k.clone(), value);
        }
    }
    if cluster {
        data.retain(|k, _| k == "name" || k == "server");
    }
    // Only these: the last-applied annotation would carry the values themselves.
    let secret = clean(secret);
    let meta = &secret["metadata"];
    let metadata = json!({
        "name": meta["name"],
        "namespace": meta["namespace"],
        "labels": meta["labels"],
        "annotations": meta["annotations"],
    });
    let mut out = with_kind(json!({ "metadata": metadata }), "Secret");
    out["data"] = Value::Object(data);
    out
}

/// `object` without what the cluster adds (status, managed fields, uid, versions, the
/// last-applied annotation).
fn clean(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = object["metadata"].as_object_mut() {
        for key in [
            "managedFields",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
        ] {
            meta.remove(key);
        }
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    object
}

/// Objects as one multi-document YAML stream.
fn stream(objects: &[Value]) -> String {
    let docs: Vec<String> = objects
        .iter()
        .map(|o| crate::core::yaml::value_to_string(o).unwrap_or_else(|_| format!("{o}\n")))
        .collect();
    docs.join("---\n")
}
