//! Live objects as the agent's watches read them: each object's JSON without
//! `metadata.managedFields`, parsed once, and the version fief last applied it at.
//!
//! In: list pages and watch events of any kind (the kind is a [`ApiResource`], as for
//! `DynamicObject`). Out: [`LiveObject`], its JSON body (for the live hash and health), its
//! [`AppliedVersion`] (uid, resourceVersion and the fingerprint of fief's own `managedFields`
//! entry, [`fief_core::plan::managed_fingerprint`]) and the little metadata the watcher
//! needs (name, namespace, resourceVersion). `managedFields` is most of a
//! server-side-applied object's bytes; only fief's own `Apply` entry is built (to be
//! fingerprinted, then dropped), the others' field sets are skipped while parsing: a page of a
//! list costs its bytes once, not three times (text, typed object, JSON copy).

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
use kube::core::DynamicResourceScope;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use fief_core::inventory::AppliedVersion;

/// A live object read by a watch: its JSON body without `metadata.managedFields`, and its
/// version.
#[derive(Clone, Debug, Default)]
pub struct LiveObject {
    meta: ObjectMeta,
    body: Value,
    version: AppliedVersion,
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

    /// The object's version: uid, resourceVersion, fief's `managedFields` fingerprint.
    pub fn version(&self) -> &AppliedVersion {
        &self.version
    }

    /// Take the object's JSON and its version.
    pub fn into_parts(self) -> (Value, AppliedVersion) {
        (self.body, self.version)
    }
}

/// Parses an object's own map into JSON, its `metadata` through [`Metadata`].
struct ObjectMap;

impl<'de> Visitor<'de> for ObjectMap {
    type Value = (Map<String, Value>, String);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        let mut managed = String::new();
        while let Some(key) = access.next_key::<String>()? {
            if key == "metadata" {
                let meta = access.next_value::<Metadata>()?;
                managed = meta.managed;
                map.insert(key, Value::Object(meta.map));
            } else {
                map.insert(key, access.next_value::<Value>()?);
            }
        }
        Ok((map, managed))
    }
}

/// An object's `metadata` map without `managedFields`, and the fingerprint of fief's own
/// entry in it.
struct Metadata {
    map: Map<String, Value>,
    managed: String,
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Metadata;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object's metadata")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Metadata, A::Error> {
                let mut map = Map::new();
                let mut managed = String::new();
                while let Some(key) = access.next_key::<String>()? {
                    if key == "managedFields" {
                        managed = access.next_value::<Fingerprint>()?.0;
                    } else {
                        map.insert(key, access.next_value::<Value>()?);
                    }
                }
                Ok(Metadata { map, managed })
            }
        }
        d.deserialize_map(V)
    }
}

/// [`fief_core::plan::managed_fingerprint`] of a `managedFields` list, read without building
/// the other managers' field sets.
struct Fingerprint(String);

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fingerprint;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a managedFields list")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Fingerprint, E> {
                Ok(Fingerprint(String::new()))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Fingerprint, A::Error> {
                let mut ours = Vec::new();
                while let Some(entry) = seq.next_element::<ManagedEntry>()? {
                    if let Some(e) = entry.0 {
                        ours.push(e);
                    }
                }
                Ok(Fingerprint(fief_core::plan::managed_fingerprint(
                    &Value::Array(ours),
                    super::FIELD_MANAGER,
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// One `managedFields` entry: kept (as JSON) only when fief's field manager wrote it.
struct ManagedEntry(Option<Value>);

impl<'de> Deserialize<'de> for ManagedEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ManagedEntry;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a managedFields entry")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<ManagedEntry, A::Error> {
                let mut map = Map::new();
                let mut manager: Option<String> = None;
                while let Some(key) = access.next_key::<String>()? {
                    let theirs = manager
                        .as_deref()
                        .is_some_and(|m| m != super::FIELD_MANAGER);
                    if key == "fieldsV1" && theirs {
                        // Another manager's field set: most of the bytes, never needed.
                        access.next_value::<IgnoredAny>()?;
                        continue;
                    }
                    let value = access.next_value::<Value>()?;
                    if key == "manager" {
                        manager = value.as_str().map(str::to_string);
                    }
                    map.insert(key, value);
                }
                let ours = manager.as_deref() == Some(super::FIELD_MANAGER);
                Ok(ManagedEntry(ours.then_some(Value::Object(map))))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for LiveObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (map, managed) = d.deserialize_map(ObjectMap)?;
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
        let version = AppliedVersion {
            uid: text("uid").unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            managed,
        };
        Ok(LiveObject {
            meta,
            body: Value::Object(map),
            version,
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
    fn the_version_carries_the_same_fingerprint_as_the_whole_managed_fields() {
        let managed = json!([
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
             "time": "2026-11-23T10:05:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {"f:replicas": {}}}, "subresource": "status"},
            {"manager": "fief", "operation": "Apply", "apiVersion": "apps/v1",
             "time": "2026-11-23T10:00:01Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:replicas": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}},
            {"fieldsV1": {"f:data": {}}, "manager": "kubectl-edit", "operation": "Update"}
        ]);
        let text = json!({"metadata": {"name": "a", "uid": "u-1", "resourceVersion": "7",
            "managedFields": managed}, "spec": {}})
        .to_string();
        let o: LiveObject = serde_json::from_str(&text).unwrap();
        let expected = fief_core::plan::managed_fingerprint(&managed, "fief");
        assert!(!expected.is_empty());
        assert_eq!(
            o.version(),
            &AppliedVersion {
                uid: "u-1".into(),
                resource_version: "7".into(),
                managed: expected,
            }
        );
        assert_eq!(
            o.body(),
            &json!({"metadata": {"name": "a", "uid": "u-1", "resourceVersion": "7"}, "spec": {}})
        );
        let none: LiveObject =
            serde_json::from_str(&json!({"metadata": {"name": "b"}}).to_string()).unwrap();
        assert_eq!(none.version().managed, "");
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
