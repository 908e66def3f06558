//! Checking the `kustomize:` block of a component.yaml: only with `kind: kustomize`, Flux's
//! variable names, and every value it names defined in the component's `varz.yaml` (strict
//! values let a tenant or environment set only those keys); and `crds:` only with
//! `kind: helm`.
//!
//! In: the snapshot, the component's folder, its parsed component.yaml and varz.yaml. Out:
//! diagnostics at component.yaml's `kustomize` line. Pure.

use serde_json::Value;

use super::{line_of_key, read};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{ComponentMeta, RenderKind, is_var_name, lookup_value};
use crate::snapshot::Snapshot;

/// Problems of `meta.kustomize`, pushed to `errors`.
pub(super) fn check_kustomize_block(
    snapshot: &Snapshot,
    dir: &str,
    meta: &ComponentMeta,
    values: &Value,
    errors: &mut Vec<Diagnostic>,
) {
    let file = format!("{dir}/component.yaml");
    if !meta.crds.is_create() && meta.kind != RenderKind::Helm {
        let line = read(snapshot, &file)
            .ok()
            .flatten()
            .and_then(|t| line_of_key(t, "crds"));
        errors.push(Diagnostic::new(
            file.clone(),
            line,
            Problem::InvalidField {
                field: "crds".to_string(),
                detail: "`crds` says what happens to a chart's crds/ folder; it needs `kind: helm`"
                    .to_string(),
            },
        ));
    }
    let block = &meta.kustomize;
    if block.is_empty() {
        return;
    }
    let line = read(snapshot, &file)
        .ok()
        .flatten()
        .and_then(|t| line_of_key(t, "kustomize"));
    let mut refuse = |detail: String| {
        errors.push(Diagnostic::new(
            file.clone(),
            line,
            Problem::InvalidField {
                field: "kustomize".to_string(),
                detail,
            },
        ));
    };
    if meta.kind != RenderKind::Kustomize {
        refuse(format!(
            "`kustomize` sets a kustomization's images, replicas and substitution; it needs `kind: kustomize` (this component is `kind: {}`)",
            meta.kind.as_str()
        ));
        return;
    }
    for name in block.substitute.keys() {
        if !is_var_name(name) {
            refuse(format!(
                "`substitute.{name}`: a variable name is a letter or `_`, then letters, digits or `_` (as Flux's)"
            ));
        }
    }
    for (field, path) in block.paths() {
        if path.is_empty() || lookup_value(values, path).is_none() {
            refuse(format!(
                "`{field}` names the value `{path}`, which {dir}/varz.yaml does not define: add it there (null for no default) so tenants and environments may set it"
            ));
        }
    }
}
