//! The input's objects: YAML documents with their file and line, and an index of the ones
//! releases refer to (sources, ConfigMaps, Secrets, Argo CD cluster Secrets).
//!
//! In: (file name, text) pairs. Out: [`Object`]s, an [`Index`] over them, and a finding for
//! a document that does not parse; and the findings every mapper reports of an object's spec
//! (fields not mapped, [`unmapped`]; a Flux `suspend`, [`suspended`]). Pure: the caller reads
//! the files.

use std::collections::BTreeMap;

use serde_json::Value;

use super::model::{Finding, Object, Origin};
use crate::core::yaml;

/// The objects of one file's YAML documents (a document without `kind` is left out), and a
/// finding for each document that does not parse.
pub fn objects(file: &str, text: &str) -> (Vec<Object>, Vec<Finding>) {
    let mut out = Vec::new();
    let mut findings = Vec::new();
    for doc in yaml::split_documents(text) {
        match yaml::parse_value(&doc) {
            Ok(Some(value)) if value["kind"] == "List" => {
                list_items(file, doc.text, doc.first_line, value, &mut out);
            }
            Ok(Some(value)) if value.get("kind").is_some_and(|k| k.is_string()) => {
                out.push(Object {
                    file: file.to_string(),
                    line: doc.first_line,
                    text: doc.text.to_string(),
                    value,
                    via: None,
                });
            }
            Ok(_) => {}
            Err(e) => findings.push(Finding {
                at: Origin {
                    file: file.to_string(),
                    line: e.line.unwrap_or(doc.first_line),
                    object: "YAML document".to_string(),
                },
                field: String::new(),
                message: format!("does not parse ({}); left out", e.message),
            }),
        }
    }
    (out, findings)
}

/// The items of a `kind: List` document (`kubectl get -o yaml`), each at the first line
/// after the previous item's naming it (its text from there, to find its fields' lines).
fn list_items(file: &str, text: &str, first_line: usize, list: Value, out: &mut Vec<Object>) {
    let Value::Object(mut list) = list else {
        return;
    };
    let Some(Value::Array(items)) = list.remove("items") else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    for value in items.into_iter().filter(|v| v["kind"].is_string()) {
        let needle = format!("name: {}", value["metadata"]["name"].as_str().unwrap_or(""));
        if let Some(i) = lines
            .iter()
            .skip(at)
            .position(|l| l.trim_start().starts_with(&needle))
        {
            at += i;
        }
        out.push(Object {
            file: file.to_string(),
            line: first_line + at,
            text: lines[at.min(lines.len())..].join("\n"),
            value,
            via: None,
        });
        at += 1;
    }
}

/// The Flux API groups.
pub const FLUX_GROUPS: [&str; 6] = [
    "source.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
    "kustomize.toolkit.fluxcd.io",
    "notification.toolkit.fluxcd.io",
    "image.toolkit.fluxcd.io",
    "fluxcd.controlplane.io",
];

/// The Argo CD API group.
pub const ARGO_GROUP: &str = "argoproj.io";

/// The objects releases refer to, by `namespace/name`.
#[derive(Debug, Default)]
pub struct Index<'a> {
    /// Flux `HelmRepository`s.
    pub helm_repos: BTreeMap<String, &'a Object>,
    /// Flux `GitRepository`s.
    pub git_repos: BTreeMap<String, &'a Object>,
    /// Flux `OCIRepository`s.
    pub oci_repos: BTreeMap<String, &'a Object>,
    /// ConfigMaps (their data is plain values).
    pub config_maps: BTreeMap<String, &'a Object>,
    /// Secrets: only their key names are ever read.
    pub secrets: BTreeMap<String, &'a Object>,
    /// Argo CD cluster Secrets (label `argocd.argoproj.io/secret-type: cluster`).
    pub clusters: Vec<&'a Object>,
}

impl<'a> Index<'a> {
    /// Index `objects`.
    pub fn new(objects: &'a [Object]) -> Index<'a> {
        let mut index = Index::default();
        for o in objects {
            let key = format!("{}/{}", o.namespace(), o.name());
            let flux_source = o.group() == "source.toolkit.fluxcd.io";
            match o.kind() {
                "HelmRepository" if flux_source => index.helm_repos.insert(key, o),
                "GitRepository" if flux_source => index.git_repos.insert(key, o),
                "OCIRepository" if flux_source => index.oci_repos.insert(key, o),
                "ConfigMap" if o.group().is_empty() => index.config_maps.insert(key, o),
                "Secret" if o.group().is_empty() => {
                    let labels = &o.value["metadata"]["labels"];
                    if labels["argocd.argoproj.io/secret-type"] == "cluster" {
                        index.clusters.push(o);
                    }
                    index.secrets.insert(key, o)
                }
                _ => None,
            };
        }
        index
    }
}

/// `namespace/name` of a reference `{name, namespace}` made from an object in `own_ns`.
pub fn ref_key(reference: &Value, own_ns: &str) -> String {
    let ns = reference["namespace"].as_str().unwrap_or(own_ns);
    format!("{ns}/{}", reference["name"].as_str().unwrap_or(""))
}

/// Findings for the fields of `spec` that are neither `handled` nor `silent` (fields with no
/// meaning in fief, such as an interval): "not mapped", with `hint` when one is known.
pub fn unmapped(
    object: &Object,
    handled: &[&str],
    silent: &[&str],
    hints: &[(&str, &str)],
) -> Vec<Finding> {
    let Some(spec) = object.value["spec"].as_object() else {
        return Vec::new();
    };
    spec.keys()
        .filter(|k| !handled.contains(&k.as_str()) && !silent.contains(&k.as_str()))
        .map(|k| {
            let hint = hints.iter().find(|(f, _)| f == k).map_or(
                "fief has no equivalent; check whether you need it",
                |(_, h)| *h,
            );
            object.finding(&format!("spec.{k}"), format!("not mapped: {hint}"))
        })
        .collect()
}

/// A Flux object's `spec.suspend: true`, reported: fief has the same switch per tenant.
pub fn suspended(o: &Object, spec: &Value, findings: &mut Vec<Finding>) {
    if spec["suspend"] == true {
        findings.push(o.finding(
            "spec.suspend",
            "suspended in Flux: run `fief suspend -t <tenant>` after the first apply if it must stay so",
        ));
    }
}
