//! Live objects as the agent's watches read them: each object's JSON without
//! `metadata.managedFields`, parsed once.
//!
//! In: list pages and watch events of any kind (the kind is a [`ApiResource`], as for
//! `DynamicObject`). Out: [`LiveObject`], its JSON body (for the live hash and health) and the
//! little metadata the watcher needs (name, namespace, resourceVersion). `managedFields` is
//! most of a server-side-applied object's bytes and nothing fief reads from a watch (the live
//! hash projects the live object on the desired object's fields, and no desired object sets
//! `managedFields`), so it is skipped while parsing instead of being built and dropped: a page
//! of a list costs its bytes once, not three times (text, typed object, JSON copy).

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
use kube::core::DynamicResourceScope;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

/// A live object read by a watch: its JSON body without `metadata.managedFields`.
#[derive(Clone, Debug, Default)]
pub struct LiveObject {
    meta: ObjectMeta,
    body: Value,
}

impl LiveObject {
    /// The object's JSON (without `metadata.managedFields`).
    pub fn body(&self) -> &Value {
        &self.body
    }

    /// Take the object's JSON.
    pub fn into_body(self) -> Value {
        self.body
    }
}

/// Parses a map into JSON, skipping `managedFields` when `metadata` is set (the object's
/// `metadata` map) and parsing `metadata` with that set (the object's own map).
struct MapSkipping {
    metadata: bool,
}

impl<'de> Visitor<'de> for MapSkipping {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if self.metadata {
                if key == "managedFields" {
                    access.next_value::<IgnoredAny>()?;
                    continue;
                }
                map.insert(key, access.next_value::<Value>()?);
            } else if key == "metadata" {
                let meta = access.next_value::<Metadata>()?;
                map.insert(key, Value::Object(meta.0));
            } else {
                map.insert(key, access.next_value::<Value>()?);
            }
        }
        Ok(map)
    }
}

/// An object's `metadata` map without `managedFields`.
struct Metadata(Map<String, Value>);

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MapSkipping { metadata: true })
            .map(Metadata)
    }
}

impl<'de> Deserialize<'de> for LiveObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(MapSkipping { metadata: false })?;
        let text = |k: &str| {
            map.get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let meta = ObjectMeta {
            name: text("name"),
            namespace: text("namespace"),
            resource_version: text("resourceVersion"),
            ..ObjectMeta::default()
        };
        if meta.name.is_none() {
            return Err(de::Error::missing_field("metadata.name"));
        }
        Ok(LiveObject {
            meta,
            body: Value::Object(map),
        })
    }
}

impl kube::Resource for LiveObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_fields_are_skipped_and_the_rest_is_kept() {
        let text = json!({
            "metadata": {"name": "a", "namespace": "n", "resourceVersion": "7",
                "labels": {"x": "1"}, "managedFields": [{"manager": "fief", "fieldsV1": {"f:data": {}}}]},
            "data": {"managedFields": "kept", "k": "v"},
        })
        .to_string();
        let o: LiveObject = serde_json::from_str(&text).unwrap();
        assert_eq!(
            o.body(),
            &json!({"metadata": {"name": "a", "namespace": "n", "resourceVersion": "7", "labels": {"x": "1"}},
                "data": {"managedFields": "kept", "k": "v"}})
        );
        assert_eq!(
            kube::Resource::meta(&o).resource_version.as_deref(),
            Some("7")
        );
        assert_eq!(kube::Resource::meta(&o).namespace.as_deref(), Some("n"));
    }

    #[test]
    fn a_watch_event_parses_through_the_tagged_enum() {
        let text = json!({"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "9", "managedFields": []}, "spec": {}}}).to_string();
        let e: kube::api::WatchEvent<LiveObject> = serde_json::from_str(&text).unwrap();
        match e {
            kube::api::WatchEvent::Modified(o) => {
                assert_eq!(
                    o.body(),
                    &json!({"metadata": {"name": "a", "resourceVersion": "9"}, "spec": {}})
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
