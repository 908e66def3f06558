//! A value a tenant file gives (a component's per-tenant values, an environment's override of
//! them), held as compact JSON text.
//!
//! In: the value as the tenant file's YAML gives it (any YAML value). Out: [`Packed`], which
//! serializes, compares and describes its schema as that value does, and gives it back parsed
//! ([`Packed::value`]) when its tenant renders. Why text: the agent keeps every tenant of the
//! fleet parsed between commits, and a parsed map takes a whole B-tree node (several hundred
//! bytes) for one key, where its text takes the bytes of the text. Pure.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A value held as compact JSON text (see the module docs).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Packed(Box<str>);

impl Packed {
    /// Pack `value`.
    pub fn new(value: &Value) -> Packed {
        // Writing a `Value` as JSON fails only on a map key that is not a string, which a
        // `Value` cannot hold.
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_string());
        Packed(text.into_boxed_str())
    }

    /// The value, parsed again (the text is what [`Packed::new`] wrote, so it parses).
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The value as compact JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

impl From<Value> for Packed {
    fn from(value: Value) -> Packed {
        Packed::new(&value)
    }
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Packed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Packed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Packed, D::Error> {
        Value::deserialize(deserializer).map(|v| Packed::new(&v))
    }
}

impl schemars::JsonSchema for Packed {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }

    fn inline_schema() -> bool {
        Value::inline_schema()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_packed_value_reads_back_serializes_and_compares_as_the_value_it_holds() {
        let value = json!({"replicas": 3, "resources": {"cpu": "500m"}, "ratio": 0.1, "on": true, "list": [1, "a", null]});
        let packed = Packed::new(&value);
        assert_eq!(packed.value(), value);
        assert_eq!(serde_json::to_value(&packed).unwrap(), value);
        assert_eq!(packed, Packed::from(value.clone()));
        assert_ne!(packed, Packed::new(&json!({"replicas": 4})));
        let from_yaml: Packed = serde_saphyr::from_str("{replicas: 3, ratio: 0.1}").unwrap();
        assert_eq!(from_yaml.value(), json!({"replicas": 3, "ratio": 0.1}));
        let text = r#"{"list":[1,"a",null],"on":true,"ratio":0.1,"replicas":3,"resources":{"cpu":"500m"}}"#;
        assert_eq!(packed.text(), text, "held as its compact text");
    }
}
