//! Kustomize releases, from a Flux `Kustomization` or an Argo CD kustomize source: the
//! component's folder and path, and the values its image overrides, replica counts and
//! substitution variables read (`images.<image>.newTag`, `replicas.<workload>`,
//! `vars.<variable>`).
//!
//! In: the object and its kustomize settings. Out: a [`Release`] and findings. Pure.

use serde_json::{Value, json};

use super::model::{Finding, Image, Object, Release, SecretRef, Source};
use super::read::{Index, ref_key, suspended, unmapped};
use super::values::set_path;

/// The folder to copy (`web` for `web/overlays/prod`) and the kustomization's folder inside
/// it (`overlays/prod`; `.` when the kustomization is at the top).
pub fn split_path(path: &str) -> (String, String) {
    let segments: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    match segments.iter().position(|s| *s == "overlays") {
        Some(i) if i > 0 => (segments[..i].join("/"), segments[i..].join("/")),
        _ => (segments.join("/"), ".".to_string()),
    }
}

/// A kustomize release of `o` from `source` into `namespace`, without settings yet.
pub fn release(o: &Object, source: Source, namespace: String) -> Release {
    let path = match &source {
        Source::Kustomize { path, .. } => path.clone(),
        _ => String::new(),
    };
    let (root, inner) = split_path(&path);
    let name = root
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(o.name())
        .to_string();
    Release {
        kustomize_path: Some(inner),
        ..Release::new(o, source, name, namespace)
    }
}

/// The values key of an image: its last path segment, as a value name.
pub fn image_key(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    let last = last.split([':', '@']).next().unwrap_or(last);
    last.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Add an image override: its literals become the release's values.
pub fn add_image(release: &mut Release, image: Image) {
    let key = image_key(&image.name);
    for (field, value) in [
        ("newName", &image.new_name),
        ("newTag", &image.new_tag),
        ("digest", &image.digest),
    ] {
        if let Some(v) = value {
            set_path(
                &mut release.values,
                &format!("images.{key}.{field}"),
                json!(v),
            );
        }
    }
    release.images.push(image);
}

/// What to do about the fields of a Flux Kustomization that are not mapped.
const KUSTOMIZATION_HINTS: [(&str, &str); 9] = [
    (
        "patches",
        "write the patches into the kustomization in the component's folder",
    ),
    (
        "components",
        "list the kustomize components in the kustomization in the component's folder",
    ),
    (
        "namePrefix",
        "set `namePrefix:` in the kustomization in the component's folder",
    ),
    (
        "nameSuffix",
        "set `nameSuffix:` in the kustomization in the component's folder",
    ),
    (
        "commonMetadata",
        "set `labels:`/`commonAnnotations:` in the kustomization in the component's folder",
    ),
    (
        "healthChecks",
        "fief waits for the health of every object it applies (component.yaml `health`)",
    ),
    (
        "decryption",
        "SOPS secrets live under `secrets/` of the tenants repo (see the secrets guide)",
    ),
    (
        "kubeConfig",
        "a tenant's `spec.cluster` names the cluster whose agent applies it",
    ),
    (
        "serviceAccountName",
        "fief applies a tenant's objects as its own `fief-tenant` ServiceAccount",
    ),
];

/// A Flux Kustomization's `postBuild`, `images`, `prune`, `suspend` and what is not mapped.
pub fn flux_settings(
    o: &Object,
    index: &Index,
    release: &mut Release,
    findings: &mut Vec<Finding>,
) {
    let spec = &o.value["spec"];
    if let Some(vars) = spec["postBuild"]["substitute"].as_object() {
        for (var, value) in vars {
            add_var(release, var, value.clone());
        }
    }
    substitute_from(o, index, release, findings);
    for image in spec["images"].as_array().into_iter().flatten() {
        let text = |k: &str| image[k].as_str().map(str::to_string);
        add_image(
            release,
            Image {
                name: image["name"].as_str().unwrap_or("").to_string(),
                new_name: text("newName"),
                new_tag: text("newTag"),
                digest: text("digest"),
            },
        );
    }
    if spec["prune"] == false {
        findings.push(o.finding(
            "spec.prune",
            "`prune: false` not mapped: fief prunes what leaves git (behind its guards); annotate objects that must stay with `fief.dev/prune: disabled`",
        ));
    }
    suspended(o, spec, findings);
    findings.extend(unmapped(
        o,
        &[
            "sourceRef",
            "path",
            "targetNamespace",
            "postBuild",
            "images",
            "dependsOn",
            "prune",
            "suspend",
        ],
        &["interval", "retryInterval", "timeout", "wait", "force"],
        &KUSTOMIZATION_HINTS,
    ));
}

/// A substitution variable with its value: `kustomize.substitute` names `vars.<var>`.
pub fn add_var(release: &mut Release, var: &str, value: Value) {
    set_path(&mut release.values, &format!("vars.{var}"), value);
    if !release.vars.iter().any(|v| v == var) {
        release.vars.push(var.to_string());
    }
}

/// `postBuild.substituteFrom`: a ConfigMap's data as variables; a Secret's keys as secret
/// values (its data never read).
fn substitute_from(o: &Object, index: &Index, release: &mut Release, findings: &mut Vec<Finding>) {
    for from in o.value["spec"]["postBuild"]["substituteFrom"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = ref_key(from, o.namespace());
        let kind = from["kind"].as_str().unwrap_or("ConfigMap");
        let found = if kind == "Secret" {
            index.secrets.get(&key)
        } else {
            index.config_maps.get(&key)
        };
        let Some(found) = found else {
            findings.push(o.finding(
                "spec.postBuild.substituteFrom",
                format!("{kind} {key} is not in the input: its variables are not imported; add them to the tenant's values under `vars`"),
            ));
            continue;
        };
        let keys = ["data", "stringData"]
            .iter()
            .filter_map(|f| found.value[*f].as_object())
            .flat_map(|m| m.iter());
        for (var, value) in keys {
            if kind == "Secret" {
                release.vars.push(var.clone());
                release.secrets.push(SecretRef {
                    path: format!("vars.{var}"),
                    secret: key.clone(),
                    secret_key: var.clone(),
                    at: o.origin_of("spec.postBuild.substituteFrom"),
                });
            } else {
                add_var(release, var, value.clone());
            }
        }
    }
}

/// An Argo CD image override, `[alias=]name[:tag|@digest]` or `name=newName:tag`.
pub fn argo_image(text: &str) -> Image {
    let (name, new) = match text.split_once('=') {
        Some((n, rest)) => (n.to_string(), rest),
        None => (String::new(), text),
    };
    let (rest, digest) = match new.split_once('@') {
        Some((r, d)) => (r, Some(d.to_string())),
        None => (new, None),
    };
    let (image, tag) = match rest.rsplit_once(':').filter(|(_, t)| !t.contains('/')) {
        Some((i, t)) => (i.to_string(), Some(t.to_string())),
        None => (rest.to_string(), None),
    };
    if name.is_empty() {
        Image {
            name: image,
            new_name: None,
            new_tag: tag,
            digest,
        }
    } else {
        Image {
            name,
            new_name: Some(image),
            new_tag: tag,
            digest,
        }
    }
}

/// An Argo CD source's `kustomize:` block: images and replicas mapped, the rest reported.
pub fn argo_settings(
    o: &Object,
    at: &str,
    block: &Value,
    release: &mut Release,
    findings: &mut Vec<Finding>,
) {
    let Some(map) = block.as_object() else { return };
    for (field, value) in map {
        match field.as_str() {
            "images" => {
                for image in value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    add_image(release, argo_image(image));
                }
            }
            "replicas" => {
                for r in value.as_array().into_iter().flatten() {
                    let name = r["name"].as_str().unwrap_or("").to_string();
                    set_path(
                        &mut release.values,
                        &format!("replicas.{name}"),
                        r["count"].clone(),
                    );
                    release.replicas.push(name);
                }
            }
            "version" => {}
            other => findings.push(o.finding(
                &format!("{at}.kustomize.{other}"),
                format!("not mapped: set `{other}` in the kustomization in the component's folder"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlay_is_copied_with_its_base_from_the_folder_above_overlays() {
        assert_eq!(
            split_path("apps/web/overlays/prod"),
            ("apps/web".into(), "overlays/prod".into())
        );
        assert_eq!(split_path("./apps/web"), ("apps/web".into(), ".".into()));
    }

    #[test]
    fn argo_image_overrides_read_as_kustomize_edit_set_image_writes_them() {
        let i = argo_image("ghcr.io/acme/web:1.4.2");
        assert_eq!(
            (i.name.as_str(), i.new_tag.as_deref()),
            ("ghcr.io/acme/web", Some("1.4.2"))
        );
        let i = argo_image("web=registry.local:5000/web@sha256:abc");
        assert_eq!(i.new_name.as_deref(), Some("registry.local:5000/web"));
        assert_eq!(
            (i.name.as_str(), i.digest.as_deref()),
            ("web", Some("sha256:abc"))
        );
    }
}
