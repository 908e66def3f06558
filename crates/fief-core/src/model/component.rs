//! A component (`components/<c>/`) and an environment file (`environments/<env>.yaml`).
//!
//! In: the deserialized files. Out: [`Component`], [`ComponentMeta`], [`Environment`], the
//! files of a helm or kustomize component as loaded ([`Package`], which `crate::render::package`
//! sends to the renderer), and the `dependsOn` of a tenant's components ([`Dependencies`]).
//! Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `components/<name>/component.yaml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComponentMeta {
    /// What the component is.
    #[serde(default)]
    pub description: String,
    /// What the component renders from: `templates` (its `templates/` folder, the default),
    /// `helm` (the chart in `chart`) or `kustomize` (the kustomization in `path`).
    #[serde(default, skip_serializing_if = "RenderKind::is_templates")]
    pub kind: RenderKind,
    /// `kind: helm`: the chart. Either its folder inside the component (e.g. `chart`),
    /// holding `Chart.yaml`, its `values.yaml`, `templates/` and its subcharts in `charts/`
    /// (folders or packed `.tgz`); or a chart in a repository, `{repository, name, version}`:
    /// `repository` is `https://…` (a Helm repository's `index.yaml`) or `oci://host/path`
    /// (an OCI registry), `version` is exact (no ranges). A chart from a repository needs its
    /// entry in `fief.lock` (the digest of its archive), written by `fief chart update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<super::ChartSource>,
    /// `kind: kustomize`: the folder inside the component holding the `kustomization.yaml`
    /// to build (e.g. `overlays/prod`); its bases must be inside the component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `kind: helm`: what happens to the CustomResourceDefinitions in the chart's `crds/`
    /// folders (and its enabled subcharts'): `Create` (the default, as `helm install` and
    /// Flux's HelmRelease) creates each one that is absent from the cluster, before anything
    /// else, and never updates or deletes it; `Skip` leaves them out (the platform installs
    /// them, e.g. from the baseline).
    #[serde(default, skip_serializing_if = "CrdPolicy::is_create")]
    pub crds: CrdPolicy,
    /// `kind: kustomize`: the values that set the build's image overrides (`images`), replica
    /// counts (`replicas`) and Flux-style `${var}` substitution (`substitute`).
    #[serde(default, skip_serializing_if = "super::KustomizeFromValues::is_empty")]
    pub kustomize: super::KustomizeFromValues,
    /// `kind: helm` or `kind: kustomize`: values taken from the tenant's SOPS secrets, by
    /// values path, e.g. `{auth.password: tenant.postgresPassword}` sets the release's
    /// `auth.password` to `secrets.tenant.postgresPassword` (`shared.<key>` reads
    /// `secrets/shared.sops.yaml`). The only way a secret reaches a chart or a kustomization:
    /// values files never hold secrets, and these values are set after every layer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_values: BTreeMap<String, String>,
    /// Default version.
    #[serde(default)]
    pub version: Option<String>,
    /// Components applied before this one.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Health settings.
    #[serde(default)]
    pub health: Health,
    /// Whether a tenant or environment may only set the values varz.yaml defines (default
    /// true; a component with a `values.schema.json` is checked by its schema instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_values: Option<bool>,
}

/// What a component renders from (`kind:` in component.yaml).
#[derive(
    Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RenderKind {
    /// fief's minijinja templates in `templates/`.
    #[default]
    Templates,
    /// A Helm chart stored in the component, rendered as `helm template` renders it.
    Helm,
    /// A kustomization stored in the component, built as `kustomize build` builds it.
    Kustomize,
}

impl RenderKind {
    /// Whether this is the default kind (templates).
    pub fn is_templates(&self) -> bool {
        *self == RenderKind::Templates
    }

    /// The kind as component.yaml spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RenderKind::Templates => "templates",
            RenderKind::Helm => "helm",
            RenderKind::Kustomize => "kustomize",
        }
    }
}

/// What fief does with a chart's `crds/` (`crds:` in component.yaml), named as Flux's
/// HelmRelease `install.crds` names it.
#[derive(
    Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
pub enum CrdPolicy {
    /// Create each CRD that is absent; never update or delete one.
    #[default]
    Create,
    /// Leave the chart's CRDs out.
    Skip,
}

impl CrdPolicy {
    /// Whether this is the default (`Create`).
    pub fn is_create(&self) -> bool {
        *self == CrdPolicy::Create
    }
}

/// When a component counts as healthy (`health:` in component.yaml).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// Whether a sync that waits for health (`fief apply --wait`) waits for this component's
    /// objects; default true.
    #[serde(default)]
    pub wait: Option<bool>,
    /// How long to wait, e.g. `5m` (default: the command's `--timeout`).
    #[serde(default)]
    pub timeout: Option<String>,
}

impl Health {
    /// Whether to wait for this component (unset means yes).
    pub fn waits(&self) -> bool {
        self.wait.unwrap_or(true)
    }
}

/// A duration written as `30s`, `5m`, `1h` or `250ms`, or combined (`1h 30m`); a bare
/// number is seconds. Units are humantime's (`ms`, `s`, `m`, `h`, `d` and their long names).
/// The error names the text and the accepted forms.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|c| c.is_ascii_digit()) {
        return text
            .parse()
            .map(std::time::Duration::from_secs)
            .map_err(|_| format!("`{text}`: too many seconds"));
    }
    humantime::parse_duration(text).map_err(|e| {
        format!(
            "`{text}` is not a duration like 250ms, 30s, 5m or 1h (a bare number is seconds): {e}"
        )
    })
}

/// A parsed component.
#[derive(Debug, Clone)]
pub struct Component {
    /// Directory name (for a pinned component, the name without `@<ref>`).
    pub name: String,
    /// The git ref it was read at, for a pinned component.
    pub pinned: Option<String>,
    /// component.yaml.
    pub meta: ComponentMeta,
    /// varz.yaml.
    pub values: Value,
    /// Repo-relative paths of the templates that render objects (not `_` partials).
    pub templates: Vec<String>,
    /// The chart or kustomization of a `helm` or `kustomize` component.
    pub package: Option<Arc<Package>>,
}

/// `environments/<env>.yaml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Merged into every component's values.
    #[serde(default)]
    pub values: Option<Value>,
    /// Merged into one component's values.
    #[serde(default)]
    pub components: BTreeMap<String, Value>,
}

/// The files of a chart or a kustomization, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// `Helm` or `Kustomize`.
    pub kind: RenderKind,
    /// The repo-relative folder the files are relative to: the chart's folder (helm) or the
    /// component's folder (kustomize).
    pub dir: String,
    /// kustomize: the folder of the kustomization to build, relative to `dir`; helm: empty.
    pub root: String,
    /// Every file under `dir` that is UTF-8 text, by path relative to it.
    pub files: Arc<BTreeMap<String, Arc<str>>>,
    /// helm: the chart's files that are not UTF-8 text (an icon, a compressed dashboard, a
    /// keystore), by path relative to `dir`, which Helm reads as bytes (`.Files.GetBytes`);
    /// kustomize: empty.
    pub binary: Arc<BTreeMap<String, Arc<[u8]>>>,
    /// A hash of `files` and `binary`: the renderer keeps what it loaded under this key.
    pub key: String,
    /// helm: the chart's `values.yaml` (the keys a layer may set); kustomize: null.
    pub defaults: Value,
}

impl Package {
    /// The repo-relative file a rendered document names (`<chart>/templates/x.yaml` as Helm
    /// names it, or the kustomization's folder), for error lines.
    pub fn repo_path(&self, source: &str) -> String {
        match self.kind {
            // Helm names a template `<chart name>/templates/...`; the chart name is not
            // necessarily the folder's.
            RenderKind::Helm => match source.split_once('/') {
                Some((_, rest)) => format!("{}/{rest}", self.dir),
                None => format!("{}/{source}", self.dir),
            },
            _ => match self.root.trim_matches('/') {
                "" | "." => format!("{}/kustomization.yaml", self.dir),
                root => format!("{}/{root}/kustomization.yaml", self.dir),
            },
        }
    }
}

/// The tenant's components' `dependsOn`, as its render found them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependencies {
    /// Component → the components it depends on (only components with dependencies).
    pub needs: BTreeMap<String, Vec<String>>,
    /// Components that do not wait for health (`health.wait: false`): applied is ready.
    pub unwaited: BTreeSet<String>,
}

impl Dependencies {
    /// The dependencies of a tenant's enabled components.
    pub fn of(components: &[&Component]) -> Dependencies {
        let mut out = Dependencies::default();
        for c in components {
            if !c.meta.depends_on.is_empty() {
                out.needs.insert(c.name.clone(), c.meta.depends_on.clone());
            }
            if !c.meta.health.waits() {
                out.unwaited.insert(c.name.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_read_with_a_unit_or_as_bare_seconds() {
        for (text, want) in [
            ("30", Duration::from_secs(30)),
            ("0", Duration::ZERO),
            ("250ms", Duration::from_millis(250)),
            ("30s", Duration::from_secs(30)),
            (" 5m ", Duration::from_secs(300)),
            ("1h", Duration::from_secs(3600)),
            ("1h 30m", Duration::from_secs(5400)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn a_bad_duration_names_the_text_and_the_accepted_forms() {
        for text in ["", "5x", "soon", "-1s", "1.5.2s", "99999999999999999999"] {
            let error = parse_duration(text).unwrap_err();
            assert!(error.contains(&format!("`{text}`")), "{error}");
        }
        let error = parse_duration("5x").unwrap_err();
        assert!(
            error.contains("30s") && error.contains("bare number"),
            "{error}"
        );
    }

    fn package(kind: RenderKind, dir: &str, root: &str) -> Package {
        Package {
            kind,
            dir: dir.to_string(),
            root: root.to_string(),
            files: Arc::default(),
            binary: Arc::default(),
            key: String::new(),
            defaults: Value::Null,
        }
    }

    #[test]
    fn a_helm_document_maps_to_the_file_in_the_chart_folder_whatever_the_chart_is_called() {
        let p = package(RenderKind::Helm, "components/ms/chart", "");
        assert_eq!(
            p.repo_path("metrics-server/templates/deployment.yaml"),
            "components/ms/chart/templates/deployment.yaml"
        );
        assert_eq!(
            p.repo_path("metrics-server/charts/sub/templates/a.yaml"),
            "components/ms/chart/charts/sub/templates/a.yaml"
        );
        let k = package(RenderKind::Kustomize, "components/app", "overlays/prod");
        assert_eq!(
            k.repo_path("overlays/prod"),
            "components/app/overlays/prod/kustomization.yaml"
        );
    }
}
