//! Rendering a `helm` or `kustomize` component for one tenant environment, and checking the
//! values a tenant or environment sets against the keys the chart defines.
//!
//! In: the component (with its [`Package`]), its layered values, the environment and its
//! namespace. Out: the objects (each at the chart file it came from, namespaces defaulted as
//! for templates) and diagnostics naming the component and the chart or kustomization file.
//! The rendering itself is the installed [`super::package::PackageRenderer`]'s. Pure.

use serde_json::Value;

use super::package::{Capabilities, Package, PackageRequest, helper_missing_hint};
use super::parse::parse_rendered;
use super::{RenderedObject, Renderer, values};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Component, CrdPolicy, KustomizeFromValues, RenderKind};
use crate::schema::strict::{check_undefined, check_undefined_in};
use crate::schema::values::Layer;
use crate::snapshot::Snapshot;

/// Strict values: for a helm component the keys a layer may set are those of the chart's
/// `values.yaml` and the component's `varz.yaml`; for the other kinds, those of `varz.yaml`.
pub(super) fn check_strict(
    snapshot: &Snapshot,
    component: &Component,
    dir: &str,
    layers: &[Layer<'_>],
) -> Vec<Diagnostic> {
    match component.package.as_deref() {
        Some(package) if package.kind == RenderKind::Helm => {
            let mut defined = package.defaults.clone();
            values::merge(&mut defined, &component.values);
            let defined_in = format!(
                "the chart's {}/values.yaml or components/{dir}/varz.yaml",
                package.dir
            );
            check_undefined_in(snapshot, &component.name, &defined, &defined_in, layers)
        }
        _ => check_undefined(snapshot, &component.name, layers),
    }
}

/// Where a package's objects go and what they are rendered with.
pub(super) struct Target<'a> {
    /// The component's name: the release name.
    pub(super) component: &'a str,
    /// The environment.
    pub(super) env: &'a str,
    /// The tenant environment's namespace.
    pub(super) namespace: &'a str,
    /// The layered values.
    pub(super) values: &'a Value,
    /// What a chart sees as `.Capabilities` (fief.yaml).
    pub(super) capabilities: Capabilities<'a>,
    /// kustomize: which values set the build's images, replicas and substitution.
    pub(super) kustomize: &'a KustomizeFromValues,
    /// helm: whether the chart's `crds/` CRDs are rendered (to be created when absent).
    pub(super) crds: CrdPolicy,
}

/// What one package rendered: its objects, its chart's `crds/` CRDs, the problems.
#[derive(Default)]
pub(super) struct PackageOutput {
    /// The objects, validated later as every component's.
    pub(super) objects: Vec<RenderedObject>,
    /// The CRDs of the chart's `crds/` folders (with `crds: Create`).
    pub(super) crds: Vec<RenderedObject>,
    /// Why not, or what is wrong.
    pub(super) errors: Vec<Diagnostic>,
}

/// Render `package` for `target`: the objects, or the diagnostics of why not.
pub(super) fn render_package(
    renderer: &Renderer,
    snapshot: &Snapshot,
    package: &Package,
    target: &Target<'_>,
) -> PackageOutput {
    let kind = package.kind.as_str();
    let at = package_file(package);
    let problem = |detail: String| {
        let problem = Problem::Package {
            kind,
            component: target.component.to_string(),
            detail,
        };
        Diagnostic::new(at.clone(), None, problem)
    };
    let refused = |detail: String| PackageOutput {
        errors: vec![problem(detail)],
        ..PackageOutput::default()
    };
    let Some(packages) = renderer.packages.as_ref() else {
        return refused(helper_missing_hint().to_string());
    };
    let settings = match package.kind {
        RenderKind::Kustomize => match target.kustomize.resolve(target.values) {
            Ok(s) => Some(s),
            Err(detail) => return refused(format!("component.yaml `kustomize`: {detail}")),
        },
        _ => None,
    };
    let request = PackageRequest {
        package,
        values: target.values,
        release: target.component,
        namespace: target.namespace,
        capabilities: target.capabilities,
        include_crds: package.kind == RenderKind::Helm && target.crds == CrdPolicy::Create,
        kustomize: settings.as_ref(),
    };
    let documents = match packages.render(&request) {
        Ok(docs) => docs,
        Err(e) => return refused(e.to_string()),
    };
    let mut out = PackageOutput::default();
    for doc in documents {
        let file = package.repo_path(&doc.source);
        // A chart from a repository is not in the snapshot: its template is in the package.
        let in_package = || {
            let rel = doc.source.split_once('/').map_or("", |(_, rest)| rest);
            package.files.get(rel).map_or("", |t| t.as_ref())
        };
        let source = match snapshot.get(&file) {
            Some(Ok(text)) => text.as_ref(),
            _ => in_package(),
        };
        let (objs, errs) = parse_rendered(
            &file,
            source,
            &[],
            &doc.text,
            target.component,
            target.env,
            target.namespace,
        );
        out.errors.extend(errs);
        if doc.crd {
            keep_crds(&mut out, objs, |o| {
                problem(format!(
                    "{file} holds {} `{}`: a chart's crds/ folder may hold only CustomResourceDefinitions (move it to templates/)",
                    o.id.kind, o.id.name
                ))
            });
        } else {
            out.objects.extend(objs);
        }
    }
    out
}

/// The objects of a chart's `crds/` file into `out.crds`; anything but a CRD is `refused`.
fn keep_crds(
    out: &mut PackageOutput,
    objs: Vec<RenderedObject>,
    refused: impl Fn(&RenderedObject) -> Diagnostic,
) {
    for o in objs {
        if (o.id.group.as_str(), o.id.kind.as_str())
            == ("apiextensions.k8s.io", "CustomResourceDefinition")
        {
            out.crds.push(o);
        } else {
            out.errors.push(refused(&o));
        }
    }
}

/// The file a package's errors are reported at: the chart's `Chart.yaml`, or the
/// kustomization.
fn package_file(package: &Package) -> String {
    match package.kind {
        RenderKind::Helm => format!("{}/Chart.yaml", package.dir),
        _ => package.repo_path(""),
    }
}

#[cfg(test)]
#[path = "package_tests.rs"]
mod tests;
