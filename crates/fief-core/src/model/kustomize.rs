//! `kustomize:` in a `kind: kustomize` component's component.yaml: which of the component's
//! values set the build's image overrides, replica counts and `${var}` substitution.
//!
//! In: the parsed block, and the layered values of one tenant environment. Out: the
//! [`KustomizeSettings`] sent to the render helper, or why a value does not fit. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `kustomize:` in component.yaml: each field names values by their dotted path in the
/// component's values (`image.tag`), so a tenant or environment sets them like any value.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KustomizeFromValues {
    /// Image overrides, as a kustomization's `images:` (Argo CD's `kustomize.images`,
    /// `kustomize edit set image`), applied after everything the kustomization does: `name`
    /// is the image as the kustomization outputs it, `newName`, `newTag` and `digest` each
    /// name a value; a value that is unset (null) leaves that part as it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageFromValues>,
    /// Replica counts by workload name, as a kustomization's `replicas:` (Argo CD's
    /// `kustomize.replicas`): `count` names a value holding a whole number; unset leaves the
    /// workload's own count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicasFromValues>,
    /// Flux's post-build substitution (`postBuild.substitute`): variable name → the value it
    /// stands for. `${name}` in the built objects is replaced by it, as Flux does.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
}

/// One entry of `kustomize.images`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageFromValues {
    /// The image name to override, as in the built objects (`ghcr.io/acme/web`).
    pub name: String,
    /// The value holding the new image name (registry and repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// The value holding the new tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tag: Option<String>,
    /// The value holding the digest (`sha256:...`), which replaces the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// One entry of `kustomize.replicas`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplicasFromValues {
    /// The workload's name (Deployment, StatefulSet, ReplicaSet), as in the built objects.
    pub name: String,
    /// The value holding the count.
    pub count: String,
}

/// What one render of a kustomization gets: the helper's `kustomize` request field.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct KustomizeSettings {
    /// Image overrides with their values filled in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageSetting>,
    /// Replica counts with their values filled in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaSetting>,
    /// The substitution's variables (an unset value is left out: it substitutes as empty).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// Whether to substitute at all: the component declares `substitute`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub substitution: bool,
}

/// An image override, as kustomize's `images:` entry.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ImageSetting {
    /// The image to override.
    pub name: String,
    /// The new name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// The new tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_tag: Option<String>,
    /// The digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A replica count, as kustomize's `replicas:` entry.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ReplicaSetting {
    /// The workload's name.
    pub name: String,
    /// The count.
    pub count: u64,
}

impl KustomizeFromValues {
    /// Whether the block sets nothing.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.replicas.is_empty() && self.substitute.is_empty()
    }

    /// Every value path the block names, with where (`images[0].newTag`), in file order.
    pub fn paths(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        for (i, image) in self.images.iter().enumerate() {
            for (field, path) in [
                ("newName", &image.new_name),
                ("newTag", &image.new_tag),
                ("digest", &image.digest),
            ] {
                if let Some(path) = path {
                    out.push((format!("images[{i}].{field}"), path.as_str()));
                }
            }
        }
        for (i, r) in self.replicas.iter().enumerate() {
            out.push((format!("replicas[{i}].count"), r.count.as_str()));
        }
        for (name, path) in &self.substitute {
            out.push((format!("substitute.{name}"), path.as_str()));
        }
        out
    }

    /// The settings for one render, from the layered `values`; the error names the field,
    /// the value's path and what it holds.
    pub fn resolve(&self, values: &Value) -> Result<KustomizeSettings, String> {
        let text = |field: String, path: &str| -> Result<Option<String>, String> {
            scalar_text(lookup(values, path)).map_err(|held| {
                format!("`{field}` names the value `{path}`, which holds {held}; it needs a string")
            })
        };
        let mut settings = KustomizeSettings {
            substitution: !self.substitute.is_empty(),
            ..KustomizeSettings::default()
        };
        for (i, image) in self.images.iter().enumerate() {
            let part = |field: &str, path: &Option<String>| match path {
                Some(p) => text(format!("images[{i}].{field}"), p),
                None => Ok(None),
            };
            let setting = ImageSetting {
                name: image.name.clone(),
                new_name: part("newName", &image.new_name)?,
                new_tag: part("newTag", &image.new_tag)?,
                digest: part("digest", &image.digest)?,
            };
            if setting.new_name.is_some() || setting.new_tag.is_some() || setting.digest.is_some() {
                settings.images.push(setting);
            }
        }
        for (i, r) in self.replicas.iter().enumerate() {
            match lookup(values, &r.count) {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_u64().is_some() => {
                    let count = n.as_u64().unwrap_or_default();
                    settings.replicas.push(ReplicaSetting {
                        name: r.name.clone(),
                        count,
                    });
                }
                Some(other) => {
                    return Err(format!(
                        "`replicas[{i}].count` names the value `{}`, which holds {}; it needs a whole number",
                        r.count,
                        describe(other)
                    ));
                }
            }
        }
        for (name, path) in &self.substitute {
            // Flux drops line breaks from a variable's value.
            if let Some(v) = text(format!("substitute.{name}"), path)? {
                settings
                    .substitute
                    .insert(name.clone(), v.replace('\n', ""));
            }
        }
        Ok(settings)
    }
}

/// The value at a dotted path (`image.tag`), if any.
pub fn lookup<'a>(values: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(values, |v, key| v.get(key))
}

/// Whether `name` is a variable name Flux accepts: a letter or `_`, then letters, digits, `_`.
pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A scalar as text (numbers and booleans as written), `None` when unset; `Err` describes a
/// mapping or a list.
fn scalar_text(value: Option<&Value>) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
        Some(other) => Err(describe(other).to_string()),
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "a mapping",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number that is not a whole number",
        Value::Null => "nothing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block() -> KustomizeFromValues {
        serde_saphyr::from_str(
            "images:\n  - {name: web, newTag: image.tag, digest: image.digest}\n\
             replicas:\n  - {name: web, count: replicas}\n\
             substitute:\n  cluster_name: cluster.name\n  region: region\n",
        )
        .expect("the block parses")
    }

    #[test]
    fn values_fill_the_settings_and_unset_ones_are_left_out() {
        let values = json!({"image": {"tag": "1.2", "digest": null}, "replicas": 3,
            "cluster": {"name": "eu\n1"}, "region": null});
        let s = block().resolve(&values).expect("resolves");
        assert_eq!(s.images.len(), 1);
        assert_eq!(s.images[0].new_tag.as_deref(), Some("1.2"));
        assert_eq!(s.images[0].digest, None);
        assert_eq!(s.replicas[0].count, 3);
        assert_eq!(
            s.substitute.get("cluster_name").map(String::as_str),
            Some("eu1")
        );
        assert!(!s.substitute.contains_key("region"));
        assert!(s.substitution);
        let none = block().resolve(&json!({})).expect("resolves");
        assert!(none.images.is_empty() && none.replicas.is_empty() && none.substitution);
    }

    #[test]
    fn a_value_of_the_wrong_shape_names_the_field_and_the_path() {
        let e = block()
            .resolve(&json!({"image": {"tag": {"a": 1}}}))
            .unwrap_err();
        assert!(e.contains("images[0].newTag") && e.contains("image.tag") && e.contains("mapping"));
        let e = block().resolve(&json!({"replicas": "three"})).unwrap_err();
        assert!(
            e.contains("replicas[0].count") && e.contains("whole number"),
            "{e}"
        );
    }

    #[test]
    fn variable_names_are_flux_s() {
        for ok in ["a", "_x", "cluster_name", "A1"] {
            assert!(is_var_name(ok), "{ok}");
        }
        for bad in ["", "1a", "a-b", "a.b"] {
            assert!(!is_var_name(bad), "{bad}");
        }
    }
}
