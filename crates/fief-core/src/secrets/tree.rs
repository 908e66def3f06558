//! An order-preserving document tree for SOPS files: the MAC is a hash over the values in
//! document order, so maps must keep the order they were written in.
//!
//! In: YAML (through [`crate::yaml`]) or JSON text. Out: a [`Node`] tree. Pure.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One node of a SOPS document, maps in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `null` / `~` / empty: never encrypted, never part of the MAC.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string (every encrypted value is one: `ENC[...]`).
    Str(String),
    /// A list; its items share the list's key path.
    List(Vec<Node>),
    /// A map, in document order.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The value at `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// As plain JSON (for the metadata block and for unencrypted values).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => Value::from(*i),
            Node::Float(f) => Value::from(*f),
            Node::Str(s) => Value::String(s.clone()),
            Node::List(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML or JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(i64::try_from(v).map_or(Node::Float(v as f64), Node::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Node>()?;
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_keep_document_order() {
        let n: Node =
            serde_json::from_str(r#"{"z": 1, "a": {"y": true, "b": [1.5, "s"]}}"#).expect("json");
        let Node::Map(entries) = &n else {
            panic!("not a map")
        };
        assert_eq!(entries[0].0, "z");
        assert_eq!(entries[1].0, "a");
        let yaml: Option<Node> = crate::yaml::parse_single("z: 1\na:\n  y: true\n").expect("yaml");
        assert_eq!(
            yaml.and_then(|y| y.get("a").cloned()),
            Some(Node::Map(vec![("y".into(), Node::Bool(true))]))
        );
    }
}
