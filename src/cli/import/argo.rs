//! Argo CD `Application`s into releases: a chart from a Helm repository (`repoURL` + `chart` +
//! `targetRevision`) or from a git folder (`path` with `helm:`), or a kustomization in a git
//! folder; its values, parameters, release name, destination and sync wave.
//!
//! In: an Application (as written, or rendered from an ApplicationSet's template). Out:
//! [`Release`]s (one per source) and the findings of what did not map. Pure.

use serde_json::{Value, json};

use super::kustomize;
use super::model::{Finding, Object, Release, Source};
use super::read::{Index, unmapped};
use super::values::{merge, set_path};

/// The sync wave annotation.
const WAVE: &str = "argocd.argoproj.io/sync-wave";

/// The releases of an Application, and what did not map.
pub fn application(o: &Object, index: &Index, findings: &mut Vec<Finding>) -> Vec<Release> {
    let spec = &o.value["spec"];
    let dest = &spec["destination"];
    let Some(namespace) = dest["namespace"].as_str().filter(|n| !n.is_empty()) else {
        findings.push(o.finding(
            "spec.destination",
            "no destination.namespace: not imported; fief puts a tenant's objects into its own namespaces",
        ));
        return Vec::new();
    };
    let cluster = cluster_of(o, dest, index, findings);
    let wave = o.value["metadata"]["annotations"][WAVE]
        .as_str()
        .and_then(|w| w.trim().parse::<i64>().ok());
    let sources: Vec<(String, &Value)> = match spec.get("sources").and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("spec.sources[{i}]"), s))
            .collect(),
        None => vec![("spec.source".to_string(), &spec["source"])],
    };
    let tenant = o.value["metadata"]["annotations"]["fief.dev/import-tenant"]
        .as_str()
        .map(str::to_string);
    let mut out = Vec::new();
    for (at, source) in sources {
        if source.get("ref").is_some()
            && source.get("path").is_none()
            && source.get("chart").is_none()
        {
            findings.push(o.finding(&at, "a source of values files (`ref`): not mapped; merge the values files it names into the tenant's values"));
            continue;
        }
        if let Some(mut r) = release(o, &at, source, namespace, findings) {
            r.cluster.clone_from(&cluster);
            r.wave = wave;
            r.tenant.clone_from(&tenant);
            out.push(r);
        }
    }
    application_fields(o, findings);
    out
}

/// The cluster a destination names, when it is not the one Argo CD runs in: its name, that
/// of the cluster Secret with its server, or one made of the server's host.
fn cluster_of(
    o: &Object,
    dest: &Value,
    index: &Index,
    findings: &mut Vec<Finding>,
) -> Option<String> {
    let name = dest["name"].as_str().filter(|n| *n != "in-cluster");
    let server = dest["server"]
        .as_str()
        .filter(|s| *s != "https://kubernetes.default.svc");
    let known = server.and_then(|s| {
        index
            .clusters
            .iter()
            .find(|c| super::appset::cluster_field(c, "server") == s)
            .map(|c| super::appset::cluster_field(c, "name"))
    });
    let cluster = match (name, known, server) {
        (Some(n), _, _) => super::group::dns_label(n),
        (None, Some(k), _) => super::group::dns_label(&k),
        (None, None, Some(s)) => {
            let host = s
                .split("://")
                .nth(1)
                .unwrap_or(s)
                .split([':', '/'])
                .next()
                .unwrap_or(s);
            super::group::dns_label(host)
        }
        (None, None, None) => return None,
    };
    findings.push(o.finding(
        "spec.destination",
        format!("another cluster: the tenant's `spec.cluster` is `{cluster}`; run that cluster's agent with `--cluster {cluster}`"),
    ));
    Some(cluster)
}

/// The Application's own fields beyond its sources and destination.
fn application_fields(o: &Object, findings: &mut Vec<Finding>) {
    let spec = &o.value["spec"];
    if spec["project"].as_str().is_some_and(|p| p != "default") {
        findings.push(o.finding(
            "spec.project",
            "AppProject not mapped: fief confines each tenant to its own namespaces and kinds; give people access with the tenant's `spec.access`",
        ));
    }
    let known = [
        "CreateNamespace=true",
        "ServerSideApply=true",
        "PruneLast=true",
        "ApplyOutOfSyncOnly=true",
    ];
    for option in spec["syncPolicy"]["syncOptions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !known.contains(&option) {
            findings.push(o.finding(
                "spec.syncPolicy.syncOptions",
                format!("`{option}` not mapped: fief server-side applies and prunes per tenant"),
            ));
        }
    }
    findings.extend(unmapped(
        o,
        &["source", "sources", "destination", "project", "syncPolicy"],
        &["info", "revisionHistoryLimit"],
        &[("ignoreDifferences", "fief applies only the fields it renders (server-side apply); fields others own are left alone")],
    ));
}

/// One source of an Application as a release.
fn release(
    o: &Object,
    at: &str,
    source: &Value,
    namespace: &str,
    findings: &mut Vec<Finding>,
) -> Option<Release> {
    let url = source["repoURL"].as_str().unwrap_or("").to_string();
    let revision = source["targetRevision"].as_str().unwrap_or("HEAD");
    if let Some(chart) = source["chart"].as_str() {
        let repository = if url.contains("://") {
            url
        } else {
            format!("oci://{url}")
        };
        let src = Source::Chart {
            repository,
            name: chart.to_string(),
            version: revision.to_string(),
        };
        return Some(helm_release(o, at, source, src, namespace, findings));
    }
    let Some(path) = source["path"].as_str() else {
        findings.push(o.finding(at, "neither `chart` nor `path`: not imported"));
        return None;
    };
    let path = path
        .trim_start_matches("./")
        .trim_end_matches('/')
        .to_string();
    if source.get("helm").is_some() {
        let src = Source::GitChart { url, path };
        return Some(helm_release(o, at, source, src, namespace, findings));
    }
    if source.get("kustomize").is_none() {
        findings.push(o.finding(
            at,
            "Argo CD chooses the tool from the folder's files; imported as a kustomization: if the folder is a chart, make the component `kind: helm` with `chart: chart`; if it is plain YAML, add a kustomization.yaml listing the files",
        ));
    }
    for field in ["directory", "plugin"] {
        if source.get(field).is_some() {
            findings.push(o.finding(
                &format!("{at}.{field}"),
                "not mapped: fief renders templates, charts and kustomizations",
            ));
        }
    }
    let mut r = kustomize::release(o, Source::Kustomize { url, path }, namespace.to_string());
    kustomize::argo_settings(o, at, &source["kustomize"], &mut r, findings);
    Some(r)
}

/// A helm source: values, valuesObject, parameters, releaseName and skipCrds.
fn helm_release(
    o: &Object,
    at: &str,
    source: &Value,
    src: Source,
    namespace: &str,
    findings: &mut Vec<Finding>,
) -> Release {
    let helm = &source["helm"];
    let chart_name = match &src {
        Source::Chart { name, .. } => name.clone(),
        Source::GitChart { path, .. } | Source::Kustomize { path, .. } => {
            path.rsplit('/').next().unwrap_or(path).to_string()
        }
    };
    let name = helm["releaseName"]
        .as_str()
        .map_or(chart_name, str::to_string);
    let mut r = Release::new(o, src, name, namespace.to_string());
    r.skip_crds = helm["skipCrds"] == true;
    if let Some(text) = helm["values"].as_str() {
        let doc = crate::core::yaml::Document {
            text,
            first_line: 1,
        };
        match crate::core::yaml::parse_value(&doc) {
            Ok(Some(v)) if v.is_object() => merge(&mut r.values, &v),
            Ok(None) => {}
            _ => findings.push(o.finding(
                &format!("{at}.helm.values"),
                "does not parse as a values mapping: not imported",
            )),
        }
    } else if let Some(v) = helm.get("values").filter(|v| v.is_object()) {
        merge(&mut r.values, v);
    }
    if let Some(v) = helm.get("valuesObject").filter(|v| v.is_object()) {
        merge(&mut r.values, v);
    }
    for p in helm["parameters"].as_array().into_iter().flatten() {
        let (Some(name), Some(value)) = (p["name"].as_str(), p["value"].as_str()) else {
            continue;
        };
        let typed = if p["forceString"] == true {
            json!(value)
        } else {
            scalar(value)
        };
        set_path(&mut r.values, name, typed);
    }
    let hints = [
        (
            "valueFiles",
            "merge the values files into the tenant's values (or the component's varz.yaml)",
        ),
        (
            "fileParameters",
            "put the file's content into the tenant's values",
        ),
        ("kubeVersion", "fief.yaml `kubernetesVersion`"),
        ("apiVersions", "fief.yaml `apiVersions`"),
        (
            "namespace",
            "fief renders into the tenant environment's namespace",
        ),
    ];
    for (field, hint) in hints {
        if helm
            .get(field)
            .is_some_and(|v| !super::values::is_empty(v) && v != &json!([]))
        {
            findings.push(o.finding(&format!("{at}.helm.{field}"), format!("not mapped: {hint}")));
        }
    }
    r
}

/// A `--set` value as Helm types it: booleans and integers, else a string.
fn scalar(text: &str) -> Value {
    match text {
        "true" => json!(true),
        "false" => json!(false),
        "null" => Value::Null,
        t => t.parse::<i64>().map_or_else(|_| json!(t), |n| json!(n)),
    }
}
