//! Values arithmetic for the importer: what every release agrees on, what is left of a
//! release's values once the shared part is taken out, deep merge, setting a dotted path, and
//! an ApplicationSet generator's element as template parameters (flattened to dotted keys).
//!
//! In: `serde_json::Value` mappings. Out: new values. Pure.

use serde_json::{Map, Value};

/// What every value of `all` agrees on: mappings key by key (a key every one has), anything
/// else only when all are equal. `None` when they agree on nothing.
pub fn common(all: &[&Value]) -> Option<Value> {
    let (first, rest) = all.split_first()?;
    if let Value::Object(map) = first
        && rest.iter().all(|v| v.is_object())
    {
        let mut out = Map::new();
        for (key, value) in map {
            let values: Option<Vec<&Value>> = std::iter::once(Some(value))
                .chain(rest.iter().map(|v| v.get(key)))
                .collect();
            if let Some(c) = values.as_deref().and_then(common) {
                out.insert(key.clone(), c);
            }
        }
        return (!out.is_empty() || rest.is_empty()).then_some(Value::Object(out));
    }
    rest.iter().all(|v| *v == *first).then(|| (*first).clone())
}

/// `value` without what `base` already gives it (equal leaves and lists); `None` when nothing
/// is left.
pub fn subtract(value: &Value, base: Option<&Value>) -> Option<Value> {
    match (value, base) {
        (_, None) => Some(value.clone()),
        (Value::Object(map), Some(Value::Object(b))) => {
            let out: Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| subtract(v, b.get(k)).map(|v| (k.clone(), v)))
                .collect();
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (v, Some(b)) if v == b => None,
        (v, Some(_)) => Some(v.clone()),
    }
}

/// Merge `from` into `into`, mappings key by key, anything else replaced: fief's own merge
/// of value layers (Helm merges values the same way).
pub use crate::core::render::values::merge;

/// Set the dotted `path` (`image.tag`) in `into` to `value`, making mappings on the way (a
/// non-mapping in the way is replaced).
pub fn set_path(into: &mut Value, path: &str, value: Value) {
    let mut at = into;
    for key in path.split('.') {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Value::Object(map) = at else { return };
        at = map.entry(key.to_string()).or_insert(Value::Null);
    }
    *at = value;
}

/// The value at dotted `path`, when there is one.
pub fn get_path<'a>(from: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(from, |v, k| v.get(k))
}

/// Whether `v` is absent in effect: null or an empty mapping.
pub fn is_empty(v: &Value) -> bool {
    v.is_null() || v.as_object().is_some_and(Map::is_empty)
}

/// `camelCase` of the words of `parts` split at `-`, `_`, `.` and `/`: a SOPS key name.
pub fn camel(parts: &[&str]) -> String {
    let mut out = String::new();
    for word in parts
        .iter()
        .flat_map(|p| p.split(['-', '_', '.', '/']))
        .filter(|w| !w.is_empty())
    {
        let mut chars = word.chars();
        if let Some(c) = chars.next() {
            if out.is_empty() {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            out.push_str(chars.as_str());
        }
    }
    out
}

/// A generator element as template parameters: nested for goTemplate, flattened to dotted
/// keys for `{{param}}`.
pub fn params(element: &Value, go: bool) -> Value {
    if go {
        return element.clone();
    }
    let mut flat = Map::new();
    flatten("", element, &mut flat);
    Value::Object(flat)
}

fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        v => {
            out.insert(prefix.to_string(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_keeps_what_every_release_agrees_on_key_by_key() {
        let a = json!({"replicas": 2, "image": {"tag": "1", "repo": "r"}, "x": [1]});
        let b = json!({"replicas": 3, "image": {"tag": "1", "repo": "r"}, "x": [1]});
        assert_eq!(
            common(&[&a, &b]),
            Some(json!({"image": {"tag": "1", "repo": "r"}, "x": [1]}))
        );
        assert_eq!(common(&[&json!({"a": 1}), &json!({"a": 2})]), None);
    }

    #[test]
    fn subtract_leaves_what_differs_from_the_shared_values() {
        let v = json!({"replicas": 3, "image": {"tag": "1", "repo": "r"}});
        let base = json!({"image": {"tag": "1", "repo": "r"}});
        assert_eq!(subtract(&v, Some(&base)), Some(json!({"replicas": 3})));
        assert_eq!(subtract(&base, Some(&base)), None);
    }

    #[test]
    fn set_path_makes_the_mappings_on_its_way() {
        let mut v = json!({"a": {"b": 1}});
        set_path(&mut v, "a.c.d", json!("x"));
        assert_eq!(v, json!({"a": {"b": 1, "c": {"d": "x"}}}));
        assert_eq!(get_path(&v, "a.c.d"), Some(&json!("x")));
    }

    #[test]
    fn camel_joins_words_as_a_sops_key() {
        assert_eq!(
            camel(&["podinfo", "redis.password"]),
            "podinfoRedisPassword"
        );
    }
}
