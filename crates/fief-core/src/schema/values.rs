//! `components/<c>/values.schema.json`: a JSON Schema for a component's merged values.
//!
//! In: the snapshot (every component's schema file, compiled once per render) and, per
//! tenant × environment × component, the merged values with the layers they were merged
//! from. Out: diagnostics at the file and line of the layer that set the offending key (the
//! tenant file, an environment file or the component's `varz.yaml`), naming the schema path
//! and what the schema allows there. A schema that does not parse or compile is one
//! diagnostic at the schema file, given to every tenant that uses the component. Remote
//! `$ref`s are never fetched (the `jsonschema` crate is built without its resolvers). Pure.

use std::collections::BTreeMap;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::locate::{Step, line_of_path};
use crate::diagnostic::{Diagnostic, Problem};
use crate::snapshot::Snapshot;
use crate::suggest::suggest;

/// The file name of a component's values schema.
pub const SCHEMA_FILE: &str = "values.schema.json";

/// Longest excerpt of a validator message kept in a diagnostic.
const MAX_DETAIL: usize = 200;

struct Compiled {
    file: String,
    raw: Value,
    validator: jsonschema::Validator,
}

/// Every component's compiled values schema, by component folder (`web`, `web@v1`).
#[derive(Default)]
pub struct ValuesSchemas {
    by_dir: BTreeMap<String, Result<Compiled, Diagnostic>>,
}

/// One layer of a component's values and where it is written.
pub struct Layer<'a> {
    /// The layer's values, if the layer exists.
    pub value: Option<&'a Value>,
    /// Repo-relative file holding it.
    pub file: String,
    /// Where the values sit inside that file.
    pub anchor: Vec<Step<'a>>,
}

impl ValuesSchemas {
    /// Parse and compile every `components/<c>/values.schema.json` of the snapshot.
    pub fn load(snapshot: &Snapshot) -> ValuesSchemas {
        let mut by_dir = BTreeMap::new();
        for (path, entry) in snapshot.under("components") {
            let mut parts = path.split('/');
            let (Some(_), Some(dir), Some(SCHEMA_FILE), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let compiled = match entry {
                Err(problem) => Err(Diagnostic::new(path.clone(), None, problem.clone())),
                Ok(text) => compile(path, text),
            };
            by_dir.insert(dir.to_string(), compiled);
        }
        ValuesSchemas { by_dir }
    }

    /// Whether the component in folder `dir` ships a `values.schema.json`.
    pub fn has_schema(&self, dir: &str) -> bool {
        self.by_dir.contains_key(dir)
    }

    /// Check `values` (merged from `layers`, in precedence order) of the component in folder
    /// `dir`; empty when the component has no schema or the values pass.
    pub fn check(
        &self,
        snapshot: &Snapshot,
        dir: &str,
        component: &str,
        values: &Value,
        layers: &[Layer<'_>],
    ) -> Vec<Diagnostic> {
        let compiled = match self.by_dir.get(dir) {
            None => return Vec::new(),
            Some(Err(d)) => return vec![d.clone()],
            Some(Ok(c)) => c,
        };
        let mut out = Vec::new();
        for err in compiled.validator.iter_errors(values) {
            let parent: Vec<String> = pointer_segments(err.instance_path().as_str());
            let schema_path = err.schema_path().as_str().to_string();
            let (path, detail, allowed) = match err.kind() {
                ValidationErrorKind::AdditionalProperties { unexpected }
                | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                    let known = allowed_keys(&compiled.raw, &schema_path);
                    for key in unexpected {
                        let mut path = parent.clone();
                        path.push(key.clone());
                        let mut allowed = String::new();
                        if !known.is_empty() {
                            allowed = format!("; allowed here: {}", known.join(", "));
                            if let Some(s) = suggest(key, known.iter().map(String::as_str)) {
                                allowed.push_str(&format!(" (did you mean `{s}`?)"));
                            }
                        }
                        out.push(diagnostic(
                            snapshot,
                            layers,
                            compiled,
                            component,
                            &path,
                            "is not an allowed value".to_string(),
                            &schema_path,
                            allowed,
                        ));
                    }
                    continue;
                }
                ValidationErrorKind::Required { property } => {
                    let name = property
                        .as_str()
                        .map_or_else(|| property.to_string(), str::to_string);
                    (
                        parent,
                        format!("lacks the required key `{name}`"),
                        String::new(),
                    )
                }
                _ => {
                    let mut message = err.to_string();
                    if message.len() > MAX_DETAIL {
                        let cut = (0..=MAX_DETAIL)
                            .rev()
                            .find(|i| message.is_char_boundary(*i))
                            .unwrap_or(0);
                        message.truncate(cut);
                        message.push('…');
                    }
                    (parent, format!("is invalid: {message}"), String::new())
                }
            };
            out.push(diagnostic(
                snapshot,
                layers,
                compiled,
                component,
                &path,
                detail,
                &schema_path,
                allowed,
            ));
        }
        out
    }
}

fn compile(path: &str, text: &str) -> Result<Compiled, Diagnostic> {
    let invalid =
        |line, detail: String| Diagnostic::new(path, line, Problem::InvalidSchema { detail });
    let raw: Value = serde_json::from_str(text)
        .map_err(|e| invalid(Some(e.line()), format!("not JSON: {e}")))?;
    let validator = jsonschema::validator_for(&raw).map_err(|e| {
        let message = e.to_string();
        let detail = match message
            .split_once("Resource '")
            .and_then(|(_, rest)| rest.split_once('\''))
            .filter(|_| message.contains("not present in a registry"))
        {
            Some((uri, _)) => format!(
                "`$ref` to `{uri}` points outside the schema file; fief fetches nothing (no network, no other files): copy what it refers to into `$defs` of this file"
            ),
            None => {
                let at = e.instance_path().as_str();
                if at.is_empty() {
                    message
                } else {
                    format!("{message} (at {at})")
                }
            }
        };
        invalid(None, detail)
    })?;
    Ok(Compiled {
        file: path.to_string(),
        raw,
        validator,
    })
}

/// `/a/b~1c/0` → `["a", "b/c", "0"]`.
fn pointer_segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The `properties` declared beside the keyword at `schema_path` (an `additionalProperties`).
fn allowed_keys(raw: &Value, schema_path: &str) -> Vec<String> {
    let parent = schema_path.rsplit_once('/').map_or("", |(p, _)| p);
    raw.pointer(parent)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether `value` holds `path` (map keys and list indexes).
fn holds(value: &Value, path: &[String]) -> bool {
    let mut cur = value;
    for seg in path {
        let next = match cur {
            Value::Object(m) => m.get(seg),
            Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    true
}

/// The layer that set `path` (the last that holds it), else the last layer: the tenant's.
fn blame<'l, 'a>(layers: &'l [Layer<'a>], path: &[String]) -> Option<&'l Layer<'a>> {
    layers
        .iter()
        .rev()
        .find(|l| l.value.is_some_and(|v| holds(v, path)))
        .or(layers.last())
}

#[allow(clippy::too_many_arguments)]
fn diagnostic(
    snapshot: &Snapshot,
    layers: &[Layer<'_>],
    compiled: &Compiled,
    component: &str,
    path: &[String],
    detail: String,
    schema_path: &str,
    allowed: String,
) -> Diagnostic {
    let schema_path = if schema_path.is_empty() {
        "/"
    } else {
        schema_path
    };
    let problem = Problem::ValuesSchema {
        component: component.to_string(),
        path: values_path(path),
        detail: format!(
            "{detail} (schema {}, at {schema_path}){allowed}",
            compiled.file
        ),
    };
    let Some(layer) = blame(layers, path) else {
        return Diagnostic::new(compiled.file.clone(), None, problem);
    };
    let mut steps = layer.anchor.clone();
    for seg in path {
        steps.push(match seg.parse::<usize>() {
            Ok(i) => Step::Index(i),
            Err(_) => Step::Key(seg),
        });
    }
    let line = snapshot
        .get(&layer.file)
        .and_then(|e| e.as_ref().ok())
        .and_then(|text| line_of_path(text, &steps));
    Diagnostic::new(layer.file.clone(), line, problem)
}

/// `["image", "tag"]` → `values.image.tag`; `["hosts", "0"]` → `values.hosts[0]`; `[]` → `values`.
fn values_path(path: &[String]) -> String {
    let out = super::dotted(path);
    if out.is_empty() {
        "values".to_string()
    } else {
        format!("values.{out}")
    }
}
