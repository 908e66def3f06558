//! Helm charts and kustomizations as components: what fief sends to the renderer that runs
//! Helm's and kustomize's own engines, and the trait that renderer implements.
//!
//! In: a component's [`Package`] (its files, text and bytes, read from the snapshot when the
//! repo loads), the layered values, the release name and namespace. Out: the rendered
//! documents, each named by the chart file it came from. The core never runs a program: a
//! [`PackageRenderer`] does, installed by the CLI or the agent ([`install`]) and reached
//! through the [`super::Renderer`].

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::model::KustomizeSettings;
pub use crate::model::Package;

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
