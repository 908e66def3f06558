//! Helm charts and kustomizations as components: what fief sends to the renderer that runs
//! Helm's and kustomize's own engines, and the trait that renderer implements.
//!
//! In: a component's [`Package`] (its files, text and bytes, read from the snapshot when the
//! repo loads), the layered values, the release name and namespace. Out: the rendered
//! documents, each named by the chart file it came from. The core never runs a program: a
//! [`PackageRenderer`] does, installed by the CLI or the agent ([`install`]) and reached
//! through the [`super::Renderer`].

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::model::{KustomizeSettings, RenderKind};

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

/// What to render: one package with one set of values.
#[derive(Debug, Clone, Copy)]
pub struct PackageRequest<'a> {
    /// The package.
    pub package: &'a Package,
    /// The release's values (helm: merged over the chart's `values.yaml` by Helm itself).
    pub values: &'a Value,
    /// The release name: the component's name.
    pub release: &'a str,
    /// The tenant environment's namespace.
    pub namespace: &'a str,
    /// helm: what the chart sees as `.Capabilities` (fief.yaml `kubernetesVersion` and
    /// `apiVersions`).
    pub capabilities: Capabilities<'a>,
    /// helm: whether the files of the chart's `crds/` folders come out too, first, as
    /// `helm template --include-crds` prints them (their source names the `crds/` file).
    pub include_crds: bool,
    /// kustomize: the images, replicas and substitution the component's values set.
    pub kustomize: Option<&'a KustomizeSettings>,
}

/// What a chart sees as `.Capabilities`, as `helm template --kube-version --api-versions`
/// sets it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities<'a> {
    /// The Kubernetes version (`1.34.0`); `None`: Helm's built-in one.
    pub kube_version: Option<&'a str>,
    /// API versions added to Helm's default list.
    pub api_versions: &'a [String],
}

/// One rendered manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageDocument {
    /// The file it came from, as the tool names it (`<chart>/templates/x.yaml`).
    pub source: String,
    /// The manifest's YAML.
    pub text: String,
    /// A file of a chart's `crds/` folder (asked for with
    /// [`PackageRequest::include_crds`]), as Helm reads it: not a template.
    pub crd: bool,
}

/// Why a package did not render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    /// No renderer can run (none installed, or the helper cannot be found or started).
    #[error("{0}")]
    Unavailable(String),
    /// The tool refused the package or the values.
    #[error("{0}")]
    Render(String),
}

/// Renders charts and kustomizations (the process side lives outside the core).
pub trait PackageRenderer: Send + Sync {
    /// Render one package with one set of values.
    fn render(&self, request: &PackageRequest<'_>) -> Result<Vec<PackageDocument>, PackageError>;
}

static INSTALLED: OnceLock<Arc<dyn PackageRenderer>> = OnceLock::new();

/// Install the process-wide renderer every [`super::Renderer`] uses from then on (the first
/// call wins; later calls return false).
pub fn install(renderer: Arc<dyn PackageRenderer>) -> bool {
    INSTALLED.set(renderer).is_ok()
}

/// The installed renderer, if any.
pub(crate) fn installed() -> Option<Arc<dyn PackageRenderer>> {
    INSTALLED.get().cloned()
}

/// What a CLI without the helper says for a component of kind `kind`.
pub fn helper_missing_hint() -> &'static str {
    "rendering it needs fief-render-helper: build it with `tools/build-render-helper.sh` (it \
     prints the binary's path), then put it next to the fief binary, on PATH, or name it in \
     $FIEF_RENDER_HELPER"
}

#[cfg(test)]
mod tests {
    use super::*;

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
