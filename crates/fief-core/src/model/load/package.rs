//! Loading the chart of a `kind: helm` component and the kustomization of a `kind: kustomize`
//! one: the fields component.yaml must and must not have, and the files to send.
//!
//! In: the snapshot, the component's folder and its parsed component.yaml. Out: the
//! component's [`Package`] (every file under the chart's or the component's folder, a chart's
//! files that are not UTF-8 text as bytes, keyed by a hash of them), or diagnostics at
//! component.yaml's lines. Only what the snapshot holds is read, so nothing outside the repo
//! can reach a chart. Pure.

use std::sync::Arc;

use serde_json::Value;

use super::archive::{self, ChartFiles};
use super::{line_of_key, parse_file, read};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{ChartSource, ComponentMeta, RenderKind};
use crate::render::package::Package;
use crate::snapshot::{Snapshot, safe_relative};

/// The names kustomize reads as a kustomization.
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The component's package, `None` for `kind: templates`; problems go to `errors`.
pub(super) fn load_package(
    snapshot: &Snapshot,
    dir: &str,
    meta: &ComponentMeta,
    errors: &mut Vec<Diagnostic>,
) -> Option<Package> {
    if let (RenderKind::Helm, Some(ChartSource::Repository(chart))) = (meta.kind, &meta.chart) {
        return super::remote::load_remote(snapshot, dir, meta, chart, errors);
    }
    let file = format!("{dir}/component.yaml");
    let mut refuse = |field: &str, detail: String| {
        let line = read(snapshot, &file)
            .ok()
            .flatten()
            .and_then(|t| line_of_key(t, field));
        errors.push(Diagnostic::new(
            file.clone(),
            line,
            Problem::InvalidField {
                field: field.to_string(),
                detail,
            },
        ));
    };
    let folder = checked_folder(meta, &mut refuse)?;
    let field = if meta.kind == RenderKind::Helm {
        "chart"
    } else {
        "path"
    };
    let (root_dir, root) = match meta.kind {
        RenderKind::Helm => (format!("{dir}/{folder}"), String::new()),
        _ => (dir.to_string(), folder.clone()),
    };
    let marker_dir = if folder == "." {
        dir.to_string()
    } else {
        format!("{dir}/{folder}")
    };
    let markers: &[&str] = match meta.kind {
        RenderKind::Helm => &["Chart.yaml"],
        _ => &KUSTOMIZATION_FILES,
    };
    if !markers
        .iter()
        .any(|m| snapshot.get(&format!("{marker_dir}/{m}")).is_some())
    {
        refuse(field, format!("`{marker_dir}` has no {}", markers[0]));
        return None;
    }
    if meta.kind == RenderKind::Helm && snapshot.has_dir(&format!("{dir}/templates")) {
        refuse(
            "kind",
            format!(
                "`{dir}/templates/` is rendered only for `kind: templates`; a helm component renders its chart's templates"
            ),
        );
    }
    let files = package_files(snapshot, meta.kind, &root_dir, errors)?;
    let defaults = match meta.kind {
        RenderKind::Helm => chart_values(snapshot, &root_dir, errors),
        _ => Value::Null,
    };
    Some(Package {
        kind: meta.kind,
        key: archive::key_of(meta.kind, &root, &files),
        dir: root_dir,
        root,
        files: Arc::new(files.text),
        binary: Arc::new(files.binary),
        defaults,
    })
}

/// The folder `chart:` or `path:` names, checked: the fields the kind needs and no others, a
/// folder inside the component. `None` for `kind: templates` or a refused field.
fn checked_folder(meta: &ComponentMeta, refuse: &mut impl FnMut(&str, String)) -> Option<String> {
    let kind = meta.kind.as_str();
    match meta.kind {
        RenderKind::Templates => {
            for (field, set) in [
                ("chart", meta.chart.is_some()),
                ("path", meta.path.is_some()),
            ] {
                if set {
                    refuse(field, format!("`{field}` needs `kind: {}`", wants(field)));
                }
            }
            if !meta.secret_values.is_empty() {
                refuse(
                    "secretValues",
                    "`secretValues` is for `kind: helm` and `kind: kustomize`; templates read the tenant's secrets as `secrets`".into(),
                );
            }
            return None;
        }
        RenderKind::Helm if meta.path.is_some() => {
            refuse(
                "path",
                "`path` is for `kind: kustomize`; a chart is named by `chart`".into(),
            );
        }
        RenderKind::Kustomize if meta.chart.is_some() => {
            refuse(
                "chart",
                "`chart` is for `kind: helm`; a kustomization is named by `path`".into(),
            );
        }
        _ => {}
    }
    let (field, folder) = match meta.kind {
        RenderKind::Helm => match &meta.chart {
            Some(ChartSource::Folder(f)) => ("chart", Some(f.as_str())),
            _ => ("chart", None),
        },
        _ => ("path", meta.path.as_deref()),
    };
    let Some(folder) = folder else {
        refuse(
            field,
            format!(
                "`kind: {kind}` needs `{field}`: the folder inside the component that holds the {}",
                what(meta.kind)
            ),
        );
        return None;
    };
    let folder = match safe_relative(folder) {
        Ok(f) => f,
        Err(_) if meta.kind == RenderKind::Kustomize && folder.trim_matches('/') == "." => {
            ".".into()
        }
        Err(_) => {
            refuse(
                field,
                format!("`{folder}` must be a folder inside the component (no `..`, not absolute)"),
            );
            return None;
        }
    };
    Some(folder)
}

fn wants(field: &str) -> &'static str {
    if field == "chart" {
        "helm"
    } else {
        "kustomize"
    }
}

fn what(kind: RenderKind) -> &'static str {
    match kind {
        RenderKind::Helm => "chart (Chart.yaml, values.yaml, templates/, charts/)",
        _ => "kustomization.yaml",
    }
}

/// Every file under `root`, relative to it, a packed subchart (`charts/<x>.tgz`) of a chart
/// unpacked as the folder `charts/<x>/`. A chart's files that are not UTF-8 text go as bytes,
/// as Helm reads them, but for those Helm parses as YAML; a kustomization's must be text. A
/// file the snapshot could not read (too large, a symlink leaving the repo) or an archive
/// that does not unpack is an error.
fn package_files(
    snapshot: &Snapshot,
    kind: RenderKind,
    root: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<ChartFiles> {
    let mut files = ChartFiles::default();
    let mut packed = Vec::new();
    let mut ok = true;
    let mut refuse = |path: &String, problem: Problem| {
        errors.push(Diagnostic::new(path.clone(), None, problem));
        ok = false;
    };
    for (path, entry) in snapshot.under(root) {
        let rel = &path[root.len() + 1..];
        match entry {
            Ok(text) => {
                files.text.insert(rel.to_string(), text.clone());
            }
            Err(Problem::Binary { .. })
                if kind == RenderKind::Helm && archive::read_as_yaml(rel) =>
            {
                let reason = archive::not_text(rel);
                refuse(path, Problem::Unreadable { reason });
            }
            Err(Problem::Binary { bytes })
                if kind == RenderKind::Helm && archive::is_packed_subchart(rel) =>
            {
                packed.push((path, rel, bytes));
            }
            Err(Problem::Binary { bytes }) if kind == RenderKind::Helm => {
                files.binary.insert(rel.to_string(), bytes.clone());
            }
            Err(problem) => refuse(path, problem.clone()),
        }
    }
    for (path, rel, bytes) in packed {
        if let Err(reason) = archive::add_subchart(&mut files, rel, bytes) {
            let reason = format!("a packed subchart fief cannot read: {reason}");
            refuse(path, Problem::Unreadable { reason });
        }
    }
    ok.then_some(files)
}

/// The chart's `values.yaml` (an empty map when absent), which must be a mapping.
fn chart_values(snapshot: &Snapshot, chart: &str, errors: &mut Vec<Diagnostic>) -> Value {
    let file = format!("{chart}/values.yaml");
    match parse_file::<Value>(snapshot, &file) {
        Ok(None) | Ok(Some(Value::Null)) => Value::Object(Default::default()),
        Ok(Some(v @ Value::Object(_))) => v,
        Ok(Some(_)) => {
            errors.push(Diagnostic::new(
                file,
                Some(1),
                Problem::InvalidField {
                    field: "values".to_string(),
                    detail: "a chart's values.yaml must be a mapping".to_string(),
                },
            ));
            Value::Null
        }
        Err(d) => {
            errors.push(d);
            Value::Null
        }
    }
}

#[cfg(test)]
#[path = "package_binary_tests.rs"]
mod binary_tests;
