//! Layered values ("varz"): deep merge of maps, later layers win, lists replaced.
//!
//! In: the layers in precedence order (component varz → environment values → environment
//! component values → tenant values). Out: one merged `serde_json::Value`. Pure.

use serde_json::Value;

/// Merge `overlay` into `base`: maps merge key by key (recursively), anything else replaces.
/// A `null` in the overlay replaces too, so a tenant can blank a default.
pub fn merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

/// Merge every layer, in order, over an empty map. `None` layers are skipped.
pub fn layered<'a>(layers: impl IntoIterator<Item = Option<&'a Value>>) -> Value {
    let mut out = Value::Object(Default::default());
    for layer in layers.into_iter().flatten() {
        merge(&mut out, layer);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn later_layers_win_and_maps_merge_deeply() {
        let component =
            json!({"replicas": 1, "image": {"repo": "web", "tag": "1.0"}, "hosts": ["a"]});
        let env = json!({"image": {"tag": "1.1"}});
        let tenant = json!({"replicas": 3, "hosts": ["b", "c"]});
        let merged = layered([Some(&component), Some(&env), None, Some(&tenant)]);
        assert_eq!(
            merged,
            json!({"replicas": 3, "image": {"repo": "web", "tag": "1.1"}, "hosts": ["b", "c"]})
        );
    }

    #[test]
    fn lists_are_replaced_not_appended() {
        let mut base = json!({"l": [1, 2, 3]});
        merge(&mut base, &json!({"l": [4]}));
        assert_eq!(base, json!({"l": [4]}));
    }
}
