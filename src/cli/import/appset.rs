//! Argo CD `ApplicationSet`s into Applications, one per generator element: the `list`,
//! `clusters` (the cluster Secrets in the input) and `git` (directories and files of a
//! checkout given with `--checkout`) generators, with `{{param}}` and goTemplate
//! `{{.param}}` substitution in the template. Other generators are reported.
//!
//! In: the ApplicationSet, the input's [`Index`] and the checkouts ([`GitFiles`], the git
//! generator's). Out:
//! rendered Application objects (each names the ApplicationSet it came from) and findings.
//! Pure: the checkouts are read through the trait.

use serde_json::{Value, json};

pub use super::appset_git::GitFiles;
use super::model::{Finding, Object};
use super::read::{Index, unmapped};
use super::values::params;

/// The Applications an ApplicationSet generates, and what did not map.
pub fn applications(
    o: &Object,
    index: &Index,
    git: &dyn GitFiles,
    findings: &mut Vec<Finding>,
) -> Vec<Object> {
    let spec = &o.value["spec"];
    let go = spec["goTemplate"] == true;
    let mut elements: Vec<Value> = Vec::new();
    for (i, generator) in spec["generators"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec.generators[{i}]");
        elements.extend(generate(o, &at, generator, index, git, go, findings));
    }
    if spec.get("strategy").is_some() {
        findings.push(o.finding("spec.strategy", "progressive sync not mapped: fief.yaml `rollout.waves` rolls a change out over tenants in waves"));
    }
    findings.extend(unmapped(
        o,
        &["generators", "template", "goTemplate", "strategy"],
        &[
            "goTemplateOptions",
            "syncPolicy",
            "preservedFields",
            "ignoreApplicationDifferences",
        ],
        &[(
            "templatePatch",
            "apply the patch to the generated tenants' values by hand",
        )],
    ));
    let template = &spec["template"];
    let fixed_namespace = !template["spec"]["destination"]["namespace"]
        .as_str()
        .unwrap_or("")
        .contains("{{");
    elements
        .iter()
        .enumerate()
        .map(|(i, params)| {
            let rendered = render(template, params, go);
            let name = rendered["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let mut value = json!({
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Application",
                "metadata": rendered["metadata"].clone(),
                "spec": rendered["spec"].clone(),
            });
            value["metadata"]["namespace"] = json!(o.namespace());
            if fixed_namespace && elements.len() > 1 {
                value["metadata"]["annotations"]["fief.dev/import-tenant"] = json!(name);
            }
            Object {
                value,
                via: Some(format!("{}/{} element {}", o.namespace(), o.name(), i + 1)),
                ..o.clone()
            }
        })
        .collect()
}

/// The parameter sets of one generator.
fn generate(
    o: &Object,
    at: &str,
    generator: &Value,
    index: &Index,
    git: &dyn GitFiles,
    go: bool,
    findings: &mut Vec<Finding>,
) -> Vec<Value> {
    let Some((kind, body)) = generator.as_object().and_then(|m| m.iter().next()) else {
        return Vec::new();
    };
    match kind.as_str() {
        "list" => {
            if body.get("elementsYaml").is_some() {
                findings.push(o.finding(
                    &format!("{at}.list.elementsYaml"),
                    "not mapped: write the elements as `elements`",
                ));
            }
            body["elements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| params(e, go))
                .collect()
        }
        "clusters" => clusters(o, at, body, index, go, findings),
        "git" => super::appset_git::elements(o, at, body, git, go, findings),
        other => {
            findings.push(o.finding(
                &format!("{at}.{other}"),
                format!("the {other} generator is not mapped: write one tenant file per element it would generate"),
            ));
            Vec::new()
        }
    }
}

/// The clusters generator: one element per Argo CD cluster Secret in the input that its
/// `selector.matchLabels` selects.
fn clusters(
    o: &Object,
    at: &str,
    body: &Value,
    index: &Index,
    go: bool,
    findings: &mut Vec<Finding>,
) -> Vec<Value> {
    if index.clusters.is_empty() {
        findings.push(o.finding(
            &format!("{at}.clusters"),
            "no Argo CD cluster Secret (label argocd.argoproj.io/secret-type: cluster) in the input: nothing generated; give their files to --from",
        ));
        return Vec::new();
    }
    let wanted = body["selector"]["matchLabels"].as_object();
    let mut out = Vec::new();
    for secret in &index.clusters {
        let labels = &secret.value["metadata"]["labels"];
        if wanted.is_some_and(|w| w.iter().any(|(k, v)| labels.get(k) != Some(v))) {
            continue;
        }
        let name = cluster_field(secret, "name");
        let element = json!({
            "name": name,
            "nameNormalized": name.to_ascii_lowercase().replace(['_', '.'], "-"),
            "server": cluster_field(secret, "server"),
            "metadata": {
                "labels": labels.clone(),
                "annotations": secret.value["metadata"]["annotations"].clone(),
            },
        });
        let mut element = params(&element, go);
        let values = render(&body["values"], &element, go);
        if let Value::Object(values) = values {
            for (k, v) in values {
                if go {
                    element["values"][&k] = v;
                } else {
                    element[format!("values.{k}")] = v;
                }
            }
        }
        out.push(element);
    }
    out
}

/// `name` or `server` of a cluster Secret: `stringData`, else `data` (base64). Only these
/// two keys are read; the credentials in `config` never are.
pub fn cluster_field(secret: &Object, key: &str) -> String {
    use base64::Engine;
    if let Some(v) = secret.value["stringData"][key].as_str() {
        return v.to_string();
    }
    secret.value["data"][key]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

/// `template` with every `{{…}}` a parameter names replaced, in keys and strings.
pub fn render(template: &Value, params: &Value, go: bool) -> Value {
    match template {
        Value::String(s) => Value::String(substitute(s, params, go)),
        Value::Array(a) => Value::Array(a.iter().map(|v| render(v, params, go)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (substitute(k, params, go), render(v, params, go)))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// `text` with `{{param}}` (or `{{.param.path}}` with goTemplate) replaced; anything else
/// between braces is left as written.
pub fn substitute(text: &str, params: &Value, go: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = rest[start + 2..start + len]
            .trim()
            .trim_start_matches('-')
            .trim_end_matches('-')
            .trim();
        let found = if go {
            inner
                .strip_prefix('.')
                .and_then(|p| super::values::get_path(params, p))
        } else {
            params.get(inner)
        };
        out.push_str(&rest[..start]);
        match found {
            Some(Value::String(s)) => out.push_str(s),
            Some(v) if !v.is_null() => out.push_str(&v.to_string()),
            _ => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitute_fills_fasttemplate_and_go_template_parameters() {
        let fast = params(&json!({"cluster": "eu", "values": {"tier": "gold"}}), false);
        assert_eq!(
            substitute("{{cluster}}-{{ values.tier }}", &fast, false),
            "eu-gold"
        );
        let go = params(&json!({"path": {"basename": "acme"}}), true);
        assert_eq!(
            substitute("{{ .path.basename }}-prod", &go, true),
            "acme-prod"
        );
        assert_eq!(substitute("{{ .missing }}", &go, true), "{{ .missing }}");
    }
}
