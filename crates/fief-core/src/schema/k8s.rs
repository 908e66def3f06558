//! Offline checks of rendered objects of built-in Kubernetes kinds: unknown kinds in a
//! built-in API group (`kind: Deploymnet`), fields of the wrong type (`replicas: two`) and
//! unknown fields (`spec.replicsa`), before anything is sent to a cluster.
//!
//! In: rendered objects and the snapshot (to find the field's line in the template). Out:
//! diagnostics at the template file and line. The schema is `kube-schema.json` beside this
//! file, read by `builtin.rs`: fields and types of every built-in kind, compacted from the
//! `/openapi/v3` of the Kubernetes API server the tests run
//! (`tests/cluster/validate_cluster_schema.rs` checks that it still matches and regenerates
//! it). Kinds of API groups it does not know (custom resources) are left to the cluster. Pure;
//! the schema is parsed once per process.

use super::dotted;

use serde_json::Value;

use super::builtin::{Compiled, KubeSchema, Ty, TypeDef, compiled};
pub use super::builtin::{is_unknown_builtin, kubernetes_version};
use super::locate::{Step, line_of_path};
use crate::diagnostic::{Diagnostic, Problem};
use crate::render::RenderedObject;
use crate::snapshot::Snapshot;
use crate::suggest::suggest;

/// Most problems reported for one object (a template with a systematic mistake would
/// otherwise print hundreds).
const MAX_PER_OBJECT: usize = 10;

/// One step of the path to a field being checked (borrowed from the object).
#[derive(Clone, Copy)]
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

fn owned_path(path: &[Seg<'_>]) -> Vec<String> {
    path.iter()
        .map(|s| match s {
            Seg::Key(k) => k.to_string(),
            Seg::Index(i) => i.to_string(),
        })
        .collect()
}

/// Check every object of a built-in kind against the offline schema.
pub fn check_builtin_kinds(objects: &[RenderedObject], snapshot: &Snapshot) -> Vec<Diagnostic> {
    let Some(compiled) = compiled() else {
        return Vec::new();
    };
    let schema = &compiled.raw;
    let mut out = Vec::new();
    for o in objects {
        let api_version = o.object["apiVersion"].as_str().unwrap_or_default();
        let kind = o.object["kind"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let at = |line: Option<usize>, problem| {
            Diagnostic::new(
                o.source.file.clone(),
                Some(line.unwrap_or(o.source.line)),
                problem,
            )
        };
        let Some(ty) = compiled.kind(api_version, kind) else {
            if let Some(problem) = unknown_kind(schema, api_version, group, kind) {
                let line = field_line(snapshot, o, &["kind".to_string()]);
                out.push(at(line, problem));
            }
            continue;
        };
        let mut found = Vec::new();
        walk(compiled, &o.object, &ty, &mut Vec::new(), &mut found);
        for (path, detail) in found.into_iter().take(MAX_PER_OBJECT) {
            let line = field_line(snapshot, o, &path);
            out.push(at(
                line,
                Problem::KubeSchema {
                    kind: kind.to_string(),
                    name: o.id.name.clone(),
                    path: dotted(&path),
                    detail,
                },
            ));
        }
    }
    out
}

/// A kind the schema does not have: an error only in an API group the schema knows.
fn unknown_kind(
    schema: &KubeSchema,
    api_version: &str,
    group: &str,
    kind: &str,
) -> Option<Problem> {
    let group_of = |gv: &str| gv.rsplit_once('/').map_or("", |(g, _)| g).to_string();
    let group_known = schema.kinds.keys().any(|gv| group_of(gv) == group);
    if !group_known {
        return None;
    }
    // The same kind in another version or group of the schema: name where it lives.
    let mut homes: Vec<&str> = schema
        .kinds
        .iter()
        .filter(|(_, ks)| ks.contains_key(kind))
        .map(|(gv, _)| gv.as_str())
        .collect();
    homes.sort_unstable();
    let suggestion = if !homes.is_empty() {
        format!(" (`{kind}` is served as apiVersion {})", homes.join(", "))
    } else {
        let mut candidates: Vec<(&str, &str)> = schema
            .kinds
            .iter()
            .flat_map(|(gv, ks)| ks.keys().map(move |k| (k.as_str(), gv.as_str())))
            .collect();
        candidates.sort_unstable();
        let same_group: Vec<&str> = candidates
            .iter()
            .filter(|(_, gv)| group_of(gv) == group)
            .map(|(k, _)| *k)
            .collect();
        match suggest(kind, same_group.iter().copied())
            .or_else(|| suggest(kind, candidates.iter().map(|(k, _)| *k)))
        {
            Some(s) => {
                let gv = candidates
                    .iter()
                    .filter(|(k, _)| *k == s)
                    .map(|(_, gv)| *gv)
                    .find(|gv| *gv == api_version)
                    .or_else(|| candidates.iter().find(|(k, _)| *k == s).map(|(_, gv)| *gv))
                    .unwrap_or(api_version);
                format!(" (did you mean `{s}` of apiVersion {gv}?)")
            }
            None => String::new(),
        }
    };
    Some(Problem::UnknownKind {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        suggestion,
    })
}

fn type_word(ty: &Ty) -> &'static str {
    match ty {
        Ty::Str => "a string",
        Ty::Int => "an integer",
        Ty::Num => "a number",
        Ty::Bool => "true or false",
        Ty::IntOrStr => "an integer or a string",
        Ty::List(_) => "a list",
        _ => "a map",
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("the string {:?}", truncate(s)),
        Value::Number(n) => format!("the number {n}"),
        Value::Bool(b) => format!("{b}"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a map".to_string(),
        Value::Null => "null".to_string(),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Whether `value` certainly fits `ty` without walking into it (most leaves): what [`walk`]
/// would find nothing in.
fn fits_scalar(value: &Value, ty: &Ty) -> bool {
    value.is_null()
        || match ty {
            Ty::Str => value.is_string(),
            Ty::Bool => value.is_boolean(),
            Ty::Num => value.is_number(),
            Ty::IntOrStr => value.is_string() || value.is_number(),
            Ty::Any | Ty::Unknown => true,
            _ => false,
        }
}

/// Walk `value` as type `ty`, collecting `(path, problem)` for every mismatch.
fn walk<'v>(
    schema: &Compiled,
    value: &'v Value,
    ty: &Ty,
    path: &mut Vec<Seg<'v>>,
    found: &mut Vec<(Vec<String>, String)>,
) {
    if found.len() >= MAX_PER_OBJECT {
        return;
    }
    let mismatch = |found: &mut Vec<(Vec<String>, String)>, path: &[Seg<'_>]| {
        found.push((
            owned_path(path),
            format!("is {}, but must be {}", shown(value), type_word(ty)),
        ));
    };
    if value.is_null() || matches!(ty, Ty::Any) {
        return;
    }
    match ty {
        Ty::Any | Ty::Unknown => {}
        Ty::Str | Ty::Int | Ty::Num | Ty::Bool | Ty::IntOrStr => {
            if !scalar_fits(value, ty) {
                mismatch(found, path);
            }
        }
        Ty::List(item_ty) => match value.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    if fits_scalar(item, item_ty) {
                        continue;
                    }
                    path.push(Seg::Index(i));
                    walk(schema, item, item_ty, path, found);
                    path.pop();
                }
            }
            None => mismatch(found, path),
        },
        Ty::Map(value_ty) => match value.as_object() {
            Some(map) => {
                for (k, v) in map {
                    if fits_scalar(v, value_ty) {
                        continue;
                    }
                    path.push(Seg::Key(k));
                    walk(schema, v, value_ty, path, found);
                    path.pop();
                }
            }
            None => mismatch(found, path),
        },
        Ty::Named(index) => match value.as_object() {
            Some(map) => walk_fields(schema, &schema.types[*index], map, path, found),
            None => mismatch(found, path),
        },
    }
}

/// Whether a scalar value (not null) fits a scalar type; an integer may be written as a
/// float with no fraction.
fn scalar_fits(value: &Value, ty: &Ty) -> bool {
    match ty {
        Ty::Int => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => fits_scalar(value, ty),
    }
}

/// Walk the fields of an object of type `def`: each known field as its type, each unknown
/// one a problem (with the nearest field's name).
fn walk_fields<'v>(
    schema: &Compiled,
    def: &TypeDef,
    map: &'v serde_json::Map<String, Value>,
    path: &mut Vec<Seg<'v>>,
    found: &mut Vec<(Vec<String>, String)>,
) {
    for (k, v) in map {
        match def.field(k) {
            Some(field_ty) if fits_scalar(v, field_ty) => {}
            Some(field_ty) => {
                path.push(Seg::Key(k));
                walk(schema, v, field_ty, path, found);
                path.pop();
            }
            None => {
                let mut at = owned_path(path);
                at.push(k.clone());
                let name = def.name.as_str();
                let mut detail = format!(
                    "is not a field of {}",
                    name.rsplit('.').next().unwrap_or(name)
                );
                if let Some(s) = suggest(k, def.fields.iter().map(|(f, _)| f.as_str())) {
                    detail.push_str(&format!(" (did you mean `{s}`?)"));
                }
                found.push((at, detail));
            }
        }
    }
}

/// The template line of `path` inside the object's document, if the template writes it
/// in block style; `None` leaves the document's first line.
fn field_line(snapshot: &Snapshot, o: &RenderedObject, path: &[String]) -> Option<usize> {
    let text = snapshot.get(&o.source.file)?.as_ref().ok()?;
    let skip = o.source.line.saturating_sub(1);
    let doc: String = text
        .lines()
        .skip(skip)
        .enumerate()
        .take_while(|(i, l)| *i == 0 || !l.starts_with("---"))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let steps: Vec<Step<'_>> = path
        .iter()
        .map(|s| match s.parse::<usize>() {
            Ok(i) => Step::Index(i),
            Err(_) => Step::Key(s.as_str()),
        })
        .collect();
    line_of_path(&doc, &steps).map(|l| l + skip)
}
