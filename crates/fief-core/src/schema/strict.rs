//! Strict values: a key that a tenant or an environment sets for one component must be one
//! the component defines in its `varz.yaml`, so `replicsa: 3` is an error at its line instead
//! of a silent default.
//!
//! In: a component's value layers (see [`Layer`]) and the snapshot for line numbers. Out: a
//! diagnostic per key that `varz.yaml` does not define, with the nearest defined key. A
//! component with a `values.schema.json` is checked by its schema instead, and one whose
//! component.yaml says `strictValues: false` is not checked. An environment's shared
//! `values:` (read by every component and the baseline) is not checked. Pure.

use serde_json::{Map, Value};

use super::locate::{Step, line_of_path};
use super::values::Layer;
use crate::diagnostic::{Diagnostic, Problem};
use crate::snapshot::Snapshot;
use crate::suggest::suggest;

/// The layers checked: index 0 is `varz.yaml`, 1 the environment's shared `values:`; from 2
/// on, the layers that set values for this component only.
const FIRST_CHECKED: usize = 2;

/// Diagnostics for the keys of `layers[2..]` that `layers[0]` (varz.yaml) does not define.
pub fn check_undefined(
    snapshot: &Snapshot,
    component: &str,
    layers: &[Layer<'_>],
) -> Vec<Diagnostic> {
    let Some(varz) = layers.first() else {
        return Vec::new();
    };
    let empty = Value::Object(Map::new());
    let defined = varz.value.unwrap_or(&empty);
    check_undefined_in(snapshot, component, defined, &varz.file, layers)
}

/// Diagnostics for the keys of `layers[2..]` that `defined` does not define; `defined_in`
/// names where the defined keys are written (a chart's `values.yaml` and the component's
/// `varz.yaml` for a helm component).
pub fn check_undefined_in(
    snapshot: &Snapshot,
    component: &str,
    defined: &Value,
    defined_in: &str,
    layers: &[Layer<'_>],
) -> Vec<Diagnostic> {
    let empty = Map::new();
    let defined = defined.as_object().unwrap_or(&empty);
    let mut out = Vec::new();
    for layer in layers.iter().skip(FIRST_CHECKED) {
        if let Some(Value::Object(set)) = layer.value {
            let mut path = Vec::new();
            walk(set, defined, &mut path, &mut |path, known| {
                out.push(diagnostic(
                    snapshot, component, defined_in, layer, path, known,
                ));
            });
        }
    }
    out
}

/// Calls `report` with the path of every key of `set` missing from `defined`, and the keys
/// defined at that level. Below a key whose definition is not a non-empty map, anything goes.
fn walk<'a>(
    set: &'a Map<String, Value>,
    defined: &'a Map<String, Value>,
    path: &mut Vec<&'a str>,
    report: &mut impl FnMut(&[&'a str], Vec<&'a str>),
) {
    for (key, value) in set {
        path.push(key);
        match defined.get(key) {
            None => report(path, defined.keys().map(String::as_str).collect()),
            Some(Value::Object(inner)) if !inner.is_empty() => {
                if let Value::Object(nested) = value {
                    walk(nested, inner, path, report);
                }
            }
            Some(_) => {}
        }
        path.pop();
    }
}

fn diagnostic(
    snapshot: &Snapshot,
    component: &str,
    varz_file: &str,
    layer: &Layer<'_>,
    path: &[&str],
    known: Vec<&str>,
) -> Diagnostic {
    let key = path.last().copied().unwrap_or_default();
    let suggestion = suggest(key, known.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let mut steps = layer.anchor.clone();
    steps.extend(path.iter().map(|k| Step::Key(k)));
    let line = snapshot
        .get(&layer.file)
        .and_then(|e| e.as_ref().ok())
        .and_then(|text| line_of_path(text, &steps));
    Diagnostic::new(
        layer.file.clone(),
        line,
        Problem::UndefinedValue {
            component: component.to_string(),
            path: format!("values.{}", path.join(".")),
            varz: varz_file.to_string(),
            suggestion,
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn layer<'a>(value: &'a Value, file: &str) -> Layer<'a> {
        Layer {
            value: Some(value),
            file: file.to_string(),
            anchor: Vec::new(),
        }
    }

    #[test]
    fn a_key_varz_does_not_define_is_reported_with_the_nearest_defined_key() {
        let varz = json!({"replicas": 1, "resources": {"cpu": "1"}, "extra": {}});
        let shared = json!({"logLevel": "debug"});
        let tenant =
            json!({"replicsa": 3, "resources": {"cpu": "2", "memroy": "1Gi"}, "extra": {"any": 1}});
        let snapshot = Snapshot::from_files([("tenants/t.yaml", "replicsa: 3\n".to_string())]);
        let layers = [
            layer(&varz, "components/web/varz.yaml"),
            layer(&shared, "environments/dev.yaml"),
            layer(&tenant, "tenants/t.yaml"),
        ];
        let ds = check_undefined(&snapshot, "web", &layers);
        let text: Vec<String> = ds.iter().map(|d| d.problem.to_string()).collect();
        assert_eq!(ds.len(), 2, "{text:?}");
        assert!(text[0].contains("values.replicsa") && text[0].contains("did you mean `replicas`"));
        assert_eq!(ds[0].line, Some(1));
        assert!(text[1].contains("values.resources.memroy"), "{text:?}");
    }
}
