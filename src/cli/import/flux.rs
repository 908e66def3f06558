//! Flux v2 objects into releases: a `HelmRelease` (its chart from a `HelmRepository`, a
//! `GitRepository` or an `OCIRepository`, its values and `valuesFrom`) and a `Kustomization`
//! (its path in a `GitRepository`, `postBuild` substitution, `images`).
//!
//! In: the input's objects and their [`Index`]. Out: [`Release`]s and the findings of what
//! did not map. Pure.

use serde_json::Value;

use super::model::{Finding, Object, Release, SecretRef, Source};
use super::read::{FLUX_GROUPS, Index, ref_key, suspended, unmapped};
use super::values::{merge, set_path};

/// Every release of the Flux objects of `objects`, and what did not map.
pub fn releases(objects: &[Object], index: &Index) -> (Vec<Release>, Vec<Finding>) {
    let mut out = Vec::new();
    let mut findings = Vec::new();
    let oci_used: Vec<String> = objects
        .iter()
        .filter(|o| o.kind() == "HelmRelease")
        .filter(|o| o.value["spec"]["chartRef"]["kind"] == "OCIRepository")
        .map(|o| ref_key(&o.value["spec"]["chartRef"], o.namespace()))
        .collect();
    for o in objects.iter().filter(|o| FLUX_GROUPS.contains(&o.group())) {
        let key = format!("{}/{}", o.namespace(), o.name());
        match o.kind() {
            "HelmRelease" => {
                if let Some(r) = helm_release(o, index, &mut findings) {
                    out.push(r);
                }
            }
            "Kustomization" => {
                if let Some(r) = kustomization(o, index, &mut findings) {
                    out.push(r);
                }
            }
            "HelmRepository" | "GitRepository" => {}
            "OCIRepository" if oci_used.contains(&key) => {}
            kind => findings.push(o.finding("", other_kind(kind))),
        }
    }
    (out, findings)
}

/// What to do about a Flux kind the importer does not map.
fn other_kind(kind: &str) -> String {
    let hint = match kind {
        "OCIRepository" => {
            "manifests from an OCI artifact: copy them into a `kind: kustomize` component"
        }
        "Alert" | "Provider" => "notifications are fief.yaml `notifications.providers`",
        "Receiver" => "the agent's push webhook (`fief install --webhook-secret`) replaces it",
        "ImageRepository" | "ImagePolicy" | "ImageUpdateAutomation" => {
            "fief does not write to git by itself: `fief bump` sets versions in tenant files"
        }
        _ => "fief has no equivalent",
    };
    format!("a Flux {kind}: not mapped; {hint}")
}

/// The namespace a Flux object deploys into: `targetNamespace`, else its own.
fn target_namespace(o: &Object) -> String {
    o.value["spec"]["targetNamespace"]
        .as_str()
        .unwrap_or(o.namespace())
        .to_string()
}

fn depends_on(o: &Object) -> Vec<String> {
    o.value["spec"]["dependsOn"]
        .as_array()
        .map(|deps| deps.iter().map(|d| ref_key(d, o.namespace())).collect())
        .unwrap_or_default()
}

/// A `HelmRelease` (v2) as a release; `None` (with a finding) when its chart is not found.
fn helm_release(o: &Object, index: &Index, findings: &mut Vec<Finding>) -> Option<Release> {
    let spec = &o.value["spec"];
    let source = chart_source(o, index, findings)?;
    // Flux's default release name: `<targetNamespace>-<name>` with a target namespace.
    let name = match (
        spec["releaseName"].as_str(),
        spec["targetNamespace"].as_str(),
    ) {
        (Some(n), _) => n.to_string(),
        (None, Some(ns)) => format!("{ns}-{}", o.name()),
        (None, None) => o.name().to_string(),
    };
    let mut release = Release {
        skip_crds: spec["install"]["crds"] == "Skip",
        depends_on: depends_on(o),
        ..Release::new(o, source, name, target_namespace(o))
    };
    values_from(o, index, &mut release, findings);
    if let Some(values) = spec.get("values").filter(|v| v.is_object()) {
        merge(&mut release.values, values);
    }
    helm_release_fields(o, findings);
    Some(release)
}

/// A HelmRelease's fields beyond its chart and values: the ones reported.
fn helm_release_fields(o: &Object, findings: &mut Vec<Finding>) {
    let spec = &o.value["spec"];
    install_fields(o, findings);
    if spec["chart"]["spec"]["valuesFiles"]
        .as_array()
        .is_some_and(|f| !f.is_empty())
    {
        findings.push(o.finding(
            "spec.chart.spec.valuesFiles",
            "not mapped: merge those values files of the chart into the component's varz.yaml",
        ));
    }
    suspended(o, spec, findings);
    findings.extend(unmapped(
        o,
        &[
            "chart",
            "chartRef",
            "releaseName",
            "targetNamespace",
            "values",
            "valuesFrom",
            "dependsOn",
            "install",
            "suspend",
        ],
        &[
            "interval",
            "timeout",
            "maxHistory",
            "upgrade",
            "rollback",
            "uninstall",
            "test",
        ],
        &[
            (
                "postRenderers",
                "render the change into the chart's values or templates",
            ),
            (
                "kubeConfig",
                "a tenant's `spec.cluster` names the cluster whose agent applies it",
            ),
            (
                "serviceAccountName",
                "fief applies a tenant's objects as its own `fief-tenant` ServiceAccount",
            ),
            ("driftDetection", "the agent always repairs drift"),
            ("storageNamespace", "fief keeps no Helm release storage"),
        ],
    ));
}

/// `spec.install` beyond `crds: Skip|Create`.
fn install_fields(o: &Object, findings: &mut Vec<Finding>) {
    let crds = &o.value["spec"]["install"]["crds"];
    if crds.is_string() && crds != "Skip" && crds != "Create" {
        findings.push(o.finding(
            "spec.install.crds",
            format!(
                "`{}` not mapped: fief creates a chart's CRDs when absent (`crds: Create`) and never replaces them",
                crds.as_str().unwrap_or("")
            ),
        ));
    }
}

/// Where a HelmRelease's chart is: `spec.chart.spec` with its `sourceRef`, or `spec.chartRef`.
fn chart_source(o: &Object, index: &Index, findings: &mut Vec<Finding>) -> Option<Source> {
    let spec = &o.value["spec"];
    if let Some(chart_ref) = spec.get("chartRef") {
        return chart_ref_source(o, chart_ref, index, findings);
    }
    let chart = &spec["chart"]["spec"];
    let name = chart["chart"].as_str().unwrap_or("").to_string();
    let source_ref = &chart["sourceRef"];
    let key = ref_key(source_ref, o.namespace());
    let kind = source_ref["kind"].as_str().unwrap_or("");
    let found = match kind {
        "HelmRepository" => index.helm_repos.get(&key).map(|repo| Source::Chart {
            repository: repo.value["spec"]["url"].as_str().unwrap_or("").to_string(),
            name: name.clone(),
            version: chart["version"].as_str().unwrap_or("*").to_string(),
        }),
        "GitRepository" => index.git_repos.get(&key).map(|repo| Source::GitChart {
            url: repo.value["spec"]["url"].as_str().unwrap_or("").to_string(),
            path: name.trim_start_matches("./").to_string(),
        }),
        _ => None,
    };
    if found.is_none() {
        findings.push(o.finding(
            "spec.chart.spec.sourceRef",
            format!(
                "{kind} {key} is not in the input: not imported; give the file that holds it to --from"
            ),
        ));
    }
    found
}

/// `spec.chartRef` to an `OCIRepository` holding a chart: `oci://host/path/<chart>` at its tag.
fn chart_ref_source(
    o: &Object,
    chart_ref: &Value,
    index: &Index,
    findings: &mut Vec<Finding>,
) -> Option<Source> {
    let key = ref_key(chart_ref, o.namespace());
    let repo = (chart_ref["kind"] == "OCIRepository")
        .then(|| index.oci_repos.get(&key))
        .flatten();
    let Some(repo) = repo else {
        findings.push(o.finding(
            "spec.chartRef",
            format!("{key} is not an OCIRepository in the input: not imported"),
        ));
        return None;
    };
    let url = repo.value["spec"]["url"].as_str().unwrap_or("");
    let (repository, name) = url.rsplit_once('/').unwrap_or((url, ""));
    let version = repo.value["spec"]["ref"]["tag"].as_str().unwrap_or("*");
    Some(Source::Chart {
        repository: repository.to_string(),
        name: name.to_string(),
        version: version.to_string(),
    })
}

/// `spec.valuesFrom`: a ConfigMap's values merged (found in the input), a Secret's named as a
/// secret value, never read.
fn values_from(o: &Object, index: &Index, release: &mut Release, findings: &mut Vec<Finding>) {
    let Some(list) = o.value["spec"]["valuesFrom"].as_array() else {
        return;
    };
    for from in list {
        let key = ref_key(from, o.namespace());
        let values_key = from["valuesKey"].as_str().unwrap_or("values.yaml");
        let target = from["targetPath"].as_str();
        match from["kind"].as_str().unwrap_or("") {
            "Secret" => match target {
                Some(path) => release.secrets.push(SecretRef {
                    path: path.to_string(),
                    secret: key,
                    secret_key: values_key.to_string(),
                    at: o.origin_of("spec.valuesFrom"),
                }),
                None => findings.push(o.finding(
                    "spec.valuesFrom",
                    format!(
                        "Secret {key} key {values_key} holds a whole values file: not mapped (secret data is never copied); put each secret value into the tenant's SOPS file and name it in the component's `secretValues`"
                    ),
                )),
            },
            _ => match index.config_maps.get(&key).and_then(|cm| cm.value["data"].get(values_key)) {
                Some(Value::String(text)) => config_map_values(o, &key, text, target, release, findings),
                _ => findings.push(o.finding(
                    "spec.valuesFrom",
                    format!("ConfigMap {key} (key {values_key}) is not in the input: its values are not imported; add them to the tenant's values"),
                )),
            },
        }
    }
}

fn config_map_values(
    o: &Object,
    key: &str,
    text: &str,
    target: Option<&str>,
    release: &mut Release,
    findings: &mut Vec<Finding>,
) {
    if let Some(path) = target {
        set_path(&mut release.values, path, Value::String(text.to_string()));
        return;
    }
    let doc = crate::core::yaml::Document {
        text,
        first_line: 1,
    };
    match crate::core::yaml::parse_value(&doc) {
        Ok(Some(v)) if v.is_object() => merge(&mut release.values, &v),
        _ => findings.push(o.finding(
            "spec.valuesFrom",
            format!("ConfigMap {key} does not hold a values mapping: not imported"),
        )),
    }
}

/// A Flux `Kustomization` as a release; `None` (with a finding) when its source is not a
/// GitRepository in the input.
fn kustomization(o: &Object, index: &Index, findings: &mut Vec<Finding>) -> Option<Release> {
    let spec = &o.value["spec"];
    let source_ref = &spec["sourceRef"];
    let key = ref_key(source_ref, o.namespace());
    let repo = (source_ref["kind"] == "GitRepository")
        .then(|| index.git_repos.get(&key))
        .flatten();
    let Some(repo) = repo else {
        findings.push(o.finding(
            "spec.sourceRef",
            format!(
                "{} {key} is not a GitRepository in the input: not imported",
                source_ref["kind"].as_str().unwrap_or("source")
            ),
        ));
        return None;
    };
    let path = spec["path"].as_str().unwrap_or(".");
    let path = path.trim_start_matches("./").trim_end_matches('/');
    let mut release = super::kustomize::release(
        o,
        Source::Kustomize {
            url: repo.value["spec"]["url"].as_str().unwrap_or("").to_string(),
            path: if path.is_empty() { "." } else { path }.to_string(),
        },
        target_namespace(o),
    );
    release.depends_on = depends_on(o);
    if spec.get("targetNamespace").is_none() {
        findings.push(o.finding(
            "metadata.namespace",
            "no targetNamespace: the objects' own namespaces are not kept; fief puts them into the tenant environment's namespace",
        ));
    }
    super::kustomize::flux_settings(o, index, &mut release, findings);
    Some(release)
}
