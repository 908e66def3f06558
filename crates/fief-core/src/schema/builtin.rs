//! The offline schema of the built-in Kubernetes kinds: `kube-schema.json` beside this file
//! (fields and types of every built-in kind, compacted from the `/openapi/v3` of the API
//! server the tests run), parsed once per process with every type string resolved.
//!
//! In: the committed JSON. Out: the compiled schema ([`compiled`]) that `k8s.rs` checks
//! objects against, the Kubernetes version it was taken from ([`kubernetes_version`], which
//! diagnostics name) and whether a kind is unknown in a group it knows
//! ([`is_unknown_builtin`]). Reads nothing else of the crate, so the diagnostics can name the
//! version without depending on the checks. Pure.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// The compact schema, generated from a real API server (see the module docs).
const SCHEMA_JSON: &str = include_str!("kube-schema.json");

#[derive(Deserialize)]
pub(super) struct KubeSchema {
    /// `v1.36.3`: the version of the API server the schema was taken from.
    pub(super) kubernetes: String,
    /// apiVersion (`apps/v1`, `v1`) → kind → type name.
    pub(super) kinds: HashMap<String, HashMap<String, String>>,
    /// Type name → field → type (`string`, `integer`, `number`, `boolean`,
    /// `int-or-string`, `any`, `[]T`, `{}T` or a type name).
    pub(super) types: HashMap<String, HashMap<String, String>>,
}

/// A field's type, resolved once: named types are indices into [`Compiled::types`].
pub(super) enum Ty {
    Str,
    Int,
    Num,
    Bool,
    IntOrStr,
    Any,
    List(Box<Ty>),
    Map(Box<Ty>),
    Named(usize),
    /// A type name the schema does not define: not checked.
    Unknown,
}

/// A named type's fields, sorted by name (a binary search costs less than hashing the key).
pub(super) struct TypeDef {
    pub(super) name: String,
    pub(super) fields: Vec<(String, Ty)>,
}

impl TypeDef {
    pub(super) fn field(&self, name: &str) -> Option<&Ty> {
        self.fields
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| &self.fields[i].1)
    }
}

/// The schema with every type string resolved, so that checking an object costs one lookup
/// per field and no allocation (the raw form is kept for the kind lookups and suggestions).
pub(super) struct Compiled {
    pub(super) raw: KubeSchema,
    pub(super) types: Vec<TypeDef>,
    by_name: HashMap<String, usize>,
}

impl Compiled {
    fn new(raw: KubeSchema) -> Compiled {
        let by_name: HashMap<String, usize> = raw
            .types
            .keys()
            .enumerate()
            .map(|(i, name)| (name.clone(), i))
            .collect();
        let types = raw
            .types
            .iter()
            .map(|(name, fields)| {
                let mut fields: Vec<(String, Ty)> = fields
                    .iter()
                    .map(|(k, t)| (k.clone(), resolve(t, &by_name)))
                    .collect();
                fields.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                TypeDef {
                    name: name.clone(),
                    fields,
                }
            })
            .collect();
        Compiled {
            raw,
            types,
            by_name,
        }
    }

    /// The type of a kind of an apiVersion, if the schema has it.
    pub(super) fn kind(&self, api_version: &str, kind: &str) -> Option<Ty> {
        let name = self.raw.kinds.get(api_version)?.get(kind)?;
        Some(resolve(name, &self.by_name))
    }
}

fn resolve(ty: &str, by_name: &HashMap<String, usize>) -> Ty {
    match ty {
        "string" => Ty::Str,
        "integer" => Ty::Int,
        "number" => Ty::Num,
        "boolean" => Ty::Bool,
        "int-or-string" => Ty::IntOrStr,
        "any" => Ty::Any,
        t if t.starts_with("[]") => Ty::List(Box::new(resolve(&t[2..], by_name))),
        t if t.starts_with("{}") => Ty::Map(Box::new(resolve(&t[2..], by_name))),
        name => by_name.get(name).map_or(Ty::Unknown, |i| Ty::Named(*i)),
    }
}

pub(super) fn compiled() -> Option<&'static Compiled> {
    static SCHEMA: OnceLock<Option<Compiled>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| serde_json::from_str(SCHEMA_JSON).ok().map(Compiled::new))
        .as_ref()
}

fn schema() -> Option<&'static KubeSchema> {
    compiled().map(|c| &c.raw)
}

/// The Kubernetes version the offline schema was taken from (`v1.36.3`).
pub fn kubernetes_version() -> &'static str {
    schema().map_or("unknown", |s| s.kubernetes.as_str())
}

/// Whether `object` names a kind that its API group, one the schema knows, does not serve.
pub fn is_unknown_builtin(object: &Value) -> bool {
    let Some(schema) = schema() else {
        return false;
    };
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    schema
        .kinds
        .get(api_version)
        .is_none_or(|ks| !ks.contains_key(kind))
        && schema
            .kinds
            .keys()
            .any(|gv| gv.rsplit_once('/').map_or("", |(g, _)| g) == group)
}
