//! Loading the components (`components/<name>/`): `component.yaml`, `varz.yaml`, templates.
//!
//! In: the snapshot (and, for an incremental load, the previous repo and the changed paths).
//! Out: each [`Component`] parsed and checked, or its diagnostics; an incremental load parses
//! only the components with a changed path under their folder.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{LoadStats, Reuse, is_dns_label, is_rendered_template, line_of_key, parse_file, read};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{BASELINE, Component, ComponentMeta, Parsed, RenderKind, parse_duration};
use crate::snapshot::Snapshot;

/// Every component folder, parsed (or taken from the previous load when untouched).
pub(super) fn load_components(
    snapshot: &Snapshot,
    reuse: Reuse<'_>,
    stats: &mut LoadStats,
) -> BTreeMap<String, Parsed<Component>> {
    let mut components = BTreeMap::new();
    let mut names: Vec<String> = snapshot
        .under("components")
        .filter_map(|(p, _)| p.split('/').nth(1).map(str::to_string))
        .collect();
    names.dedup();
    // A component whose chart comes from a repository reads fief.lock and the archives: a
    // change there loads every component again.
    let charts_changed = reuse.is_some_and(|(_, changed)| {
        changed.contains(crate::model::LOCK_FILE)
            || changed
                .iter()
                .any(|p| p.starts_with(crate::snapshot::CHART_ARCHIVES))
    });
    for name in names {
        let kept = reuse
            .filter(|_| !charts_changed)
            .and_then(|(prev, changed)| {
                let prefix = format!("components/{name}/");
                let touched = changed
                    .range(prefix.clone()..)
                    .next()
                    .is_some_and(|p| p.starts_with(&prefix));
                if touched {
                    None
                } else {
                    prev.components.get(&name).cloned()
                }
            });
        let component = kept.unwrap_or_else(|| {
            stats.components_parsed += 1;
            load_component(snapshot, &name)
        });
        components.insert(name, component);
    }
    components
}

/// One component folder; `name` is the folder's name (`<name>@<ref>` when pinned).
fn load_component(snapshot: &Snapshot, name: &str) -> Parsed<Component> {
    let dir = format!("components/{name}");
    let mut errors = Vec::new();
    let meta = load_meta(snapshot, &dir, &mut errors);
    let values = load_values(snapshot, &dir, &mut errors);
    let package = super::package::load_package(snapshot, &dir, &meta, &mut errors);
    super::kustomize::check_kustomize_block(snapshot, &dir, &meta, &values, &mut errors);
    let mut templates = Vec::new();
    let template_dir = match meta.kind {
        RenderKind::Templates => format!("{dir}/templates"),
        // A chart or kustomization renders its own files, read into `package`.
        _ => String::new(),
    };
    for (path, entry) in snapshot.under(&template_dir).filter(|_| package.is_none()) {
        if let Err(problem) = entry {
            errors.push(Diagnostic::new(path.clone(), None, problem.clone()));
        } else if is_rendered_template(path) {
            templates.push(path.clone());
        }
    }
    // `<name>@<ref>` is a pinned component read at a git ref (see `core::pins`).
    let (base, pinned) = match name.split_once('@') {
        Some((base, r)) => (base, Some(r.replace("%2F", "/").replace("%25", "%"))),
        None => (name, None),
    };
    check_name(base, &dir, &mut errors);
    if errors.is_empty() {
        Ok(Component {
            name: base.to_string(),
            pinned,
            meta,
            values,
            templates,
            package: package.map(std::sync::Arc::new),
        })
    } else {
        Err(errors)
    }
}

/// `component.yaml` (defaults when absent), its health timeout checked.
fn load_meta(snapshot: &Snapshot, dir: &str, errors: &mut Vec<Diagnostic>) -> ComponentMeta {
    let file = format!("{dir}/component.yaml");
    let meta = match parse_file::<ComponentMeta>(snapshot, &file) {
        Ok(m) => m.unwrap_or_default(),
        Err(d) => {
            errors.push(d);
            ComponentMeta::default()
        }
    };
    if let Some(Err(detail)) = meta.health.timeout.as_deref().map(parse_duration) {
        let line = read(snapshot, &file)
            .ok()
            .flatten()
            .and_then(|t| line_of_key(t, "timeout"));
        errors.push(Diagnostic::new(
            file,
            line,
            Problem::InvalidField {
                field: "health.timeout".to_string(),
                detail,
            },
        ));
    }
    meta
}

/// `varz.yaml` (an empty map when absent), which must be a mapping.
fn load_values(snapshot: &Snapshot, dir: &str, errors: &mut Vec<Diagnostic>) -> Value {
    let values = match parse_file::<Value>(snapshot, &format!("{dir}/varz.yaml")) {
        Ok(v) => v.unwrap_or(Value::Object(Default::default())),
        Err(d) => {
            errors.push(d);
            Value::Null
        }
    };
    if !values.is_object() && errors.is_empty() {
        errors.push(Diagnostic::new(
            format!("{dir}/varz.yaml"),
            Some(1),
            Problem::InvalidField {
                field: "varz".to_string(),
                detail: "must be a mapping of values".to_string(),
            },
        ));
    }
    values
}

/// The component's name (without its ref) must be a DNS label and not `baseline`.
fn check_name(base: &str, dir: &str, errors: &mut Vec<Diagnostic>) {
    if !is_dns_label(base) {
        errors.push(Diagnostic::new(
            dir.to_string(),
            None,
            Problem::InvalidField {
                field: "component name".to_string(),
                detail: format!("`{base}` is not a DNS-1123 label"),
            },
        ));
    }
    if base == BASELINE {
        errors.push(Diagnostic::new(
            dir.to_string(),
            None,
            Problem::InvalidField {
                field: "component name".to_string(),
                detail: "`baseline` is reserved for the per-tenant baseline".to_string(),
            },
        ));
    }
}
