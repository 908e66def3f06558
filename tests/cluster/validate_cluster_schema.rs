//! The committed offline Kubernetes schema (`crates/fief-core/src/schema/kube-schema.json`) is what the
//! real API server of the test control plane serves at `/openapi/v3`, compacted: per
//! built-in kind its fields and their types. Regenerate it with
//! `FIEF_WRITE_KUBE_SCHEMA=1 cargo test --test cluster validate_cluster_schema::`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use serde_json::{Map, Value};

fn raw(path: &str) -> Value {
    let out = common::kubectl::Kubectl::admin().ok(&["get", "--raw", path]);
    serde_json::from_str(&out).expect("openapi JSON")
}

/// Short type name: `io.k8s.api.apps.v1.DeploymentSpec` → `api.apps.v1.DeploymentSpec`.
fn short(name: &str) -> String {
    name.strip_prefix("io.k8s.").unwrap_or(name).to_string()
}

struct Compactor<'a> {
    schemas: &'a Map<String, Value>,
    types: BTreeMap<String, BTreeMap<String, String>>,
    queue: VecDeque<String>,
    seen: BTreeSet<String>,
}

impl Compactor<'_> {
    fn named(&mut self, reference: &str) -> String {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity" {
            return "int-or-string".to_string();
        }
        let Some(schema) = self.schemas.get(name) else {
            return "any".to_string();
        };
        let has_props = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if !has_props || schema["x-kubernetes-preserve-unknown-fields"] == true {
            return self.ty(schema);
        }
        if self.seen.insert(name.to_string()) {
            self.queue.push_back(name.to_string());
        }
        short(name)
    }

    fn ty(&mut self, schema: &Value) -> String {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            return self.named(r);
        }
        if let Some([one]) = schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            && let Some(r) = one.get("$ref").and_then(Value::as_str)
        {
            return self.named(r);
        }
        if schema["x-kubernetes-preserve-unknown-fields"] == true {
            return "any".to_string();
        }
        if schema["x-kubernetes-int-or-string"] == true || schema["format"] == "int-or-string" {
            return "int-or-string".to_string();
        }
        for union in ["oneOf", "anyOf"] {
            if let Some(options) = schema.get(union).and_then(Value::as_array) {
                let kinds: BTreeSet<&str> =
                    options.iter().filter_map(|o| o["type"].as_str()).collect();
                let numeric = kinds.contains("integer") || kinds.contains("number");
                return if numeric && kinds.contains("string") {
                    "int-or-string".to_string()
                } else {
                    "any".to_string()
                };
            }
        }
        match schema["type"].as_str() {
            Some(t @ ("string" | "integer" | "number" | "boolean")) => t.to_string(),
            Some("array") => match schema.get("items") {
                Some(items) => format!("[]{}", self.ty(items)),
                None => "[]any".to_string(),
            },
            Some("object") => match schema.get("additionalProperties") {
                Some(ap) if ap.is_object() => format!("{{}}{}", self.ty(ap)),
                _ => "any".to_string(),
            },
            _ => "any".to_string(),
        }
    }

    fn fields(&mut self, name: &str, is_kind: bool) -> BTreeMap<String, String> {
        let props = self.schemas[name]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        props
            .iter()
            .map(|(field, schema)| {
                // Status is written by controllers, never by fief: any shape is left alone.
                let ty = if is_kind && field == "status" {
                    "any".to_string()
                } else {
                    self.ty(schema)
                };
                (field.clone(), ty)
            })
            .collect()
    }
}

/// The compact schema of every built-in kind the API server serves.
fn generate() -> String {
    let version = raw("/version");
    let schemas = served_schemas();
    let (kinds, roots) = kinds_of(&schemas);
    let mut c = Compactor {
        schemas: &schemas,
        types: BTreeMap::new(),
        queue: VecDeque::new(),
        seen: BTreeSet::new(),
    };
    for root in &roots {
        c.seen.insert(root.clone());
        let fields = c.fields(root, true);
        c.types.insert(short(root), fields);
    }
    while let Some(name) = c.queue.pop_front() {
        let fields = c.fields(&name, false);
        c.types.insert(short(&name), fields);
    }
    let mut out = String::from("{\n");
    out.push_str(&format!(
        "\"kubernetes\": {},\n\"kinds\": {{\n",
        serde_json::to_string(&version["gitVersion"]).unwrap()
    ));
    out.push_str(&json_lines(&kinds));
    out.push_str("\n},\n\"types\": {\n");
    out.push_str(&json_lines(&c.types));
    out.push_str("\n}\n}\n");
    out
}

/// Every schema of every group/version the API server serves (OpenAPI v3), by name.
fn served_schemas() -> Map<String, Value> {
    let index = raw("/openapi/v3");
    let mut schemas = Map::new();
    let paths = index["paths"].as_object().expect("openapi v3 paths");
    for (path, entry) in paths {
        let is_gv =
            path == "api/v1" || (path.starts_with("apis/") && path.matches('/').count() == 2);
        if !is_gv {
            continue;
        }
        let url = entry["serverRelativeURL"]
            .as_str()
            .expect("serverRelativeURL");
        let doc = raw(url);
        if let Some(s) = doc["components"]["schemas"].as_object() {
            for (k, v) in s {
                schemas.insert(k.clone(), v.clone());
            }
        }
    }
    schemas
}

/// The built-in kinds by group/version (each to its type's short name), and the names of
/// their schemas; lists, apimachinery types and custom resources left out.
fn kinds_of(
    schemas: &Map<String, Value>,
) -> (BTreeMap<String, BTreeMap<String, String>>, Vec<String>) {
    let mut kinds: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut roots = Vec::new();
    for (name, schema) in schemas {
        // Built-in kinds only: the CRDs other tests create in the shared control plane
        // (`com.example...`) are not Kubernetes'.
        if name.starts_with("io.k8s.apimachinery.") || !name.starts_with("io.k8s.") {
            continue;
        }
        for gvk in schema["x-kubernetes-group-version-kind"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (Some(g), Some(v), Some(k)) = (
                gvk["group"].as_str(),
                gvk["version"].as_str(),
                gvk["kind"].as_str(),
            ) else {
                continue;
            };
            if k.ends_with("List") {
                continue;
            }
            let gv = if g.is_empty() {
                v.to_string()
            } else {
                format!("{g}/{v}")
            };
            kinds
                .entry(gv)
                .or_default()
                .insert(k.to_string(), short(name));
            roots.push(name.clone());
        }
    }
    (kinds, roots)
}

/// One `"key": value` JSON line per entry, joined by `,\n`.
fn json_lines<V: serde::Serialize>(map: &BTreeMap<String, V>) -> String {
    let lines: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            format!(
                "{}: {}",
                serde_json::to_string(k).unwrap(),
                serde_json::to_string(v).unwrap()
            )
        })
        .collect();
    lines.join(",\n")
}

#[test]
fn committed_kube_schema_matches_the_test_api_server_openapi() {
    let generated = generate();
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/fief-core/src/schema/kube-schema.json");
    if std::env::var_os("FIEF_WRITE_KUBE_SCHEMA").is_some() {
        std::fs::write(&file, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from what the API server serves; regenerate it with FIEF_WRITE_KUBE_SCHEMA=1 cargo test --test cluster validate_cluster_schema::",
        file.display()
    );
}
