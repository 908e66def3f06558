//! The desired objects' shapes, as much of them as drift detection needs, kept lean.
//!
//! In: each render's objects. Out: per object its tenant and its *shape* — the desired object
//! with every scalar replaced by null. [`fief_core::plan::projection`] reads only the desired
//! object's keys and array lengths, so the live hash computed from the shape equals the one
//! computed from the object. Shapes are interned: the objects of one template have the same
//! shape in every tenant, so 26,000 objects hold a few dozen shapes, not 26,000 copies of the
//! desired JSON. Replacing a tenant's objects costs that tenant's objects, not the fleet's.
//! Object ids are interned too: every per-object map of the agent (desired shapes, live
//! hashes, the drift baseline, health, the watches' known sets) keys on the one [`Id`] the
//! agent's [`Interner`] hands out for an object, whichever of them met the object first: a
//! compact id ([`id`]) that finds the object from a full [`ObjectId`] too, and whose slot
//! indexes the per-object tables ([`Slots`]).

mod id;
mod slots;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use fief_core::objects::ObjectId;

pub use id::{Id, Ids, Interner, Key, key};
pub use slots::Slots;

/// The ConfigMap `name` of namespace `ns`: an object id for the per-object tables' tests.
#[cfg(test)]
pub fn configmap(name: &str) -> ObjectId {
    ObjectId {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: "ns".into(),
        name: name.into(),
    }
}

/// `value` with every scalar replaced by null (objects and arrays kept).
#[cfg(test)]
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        _ => Value::Null,
    }
}

/// One object's id and its shape's JSON ([`shape_key`], the interning key): the shape itself
/// is built from it only when no object held so far has it.
pub type Shaped = (ObjectId, String);

/// The JSON of [`shape`]`(value)`, written without building the shape: compact, keys in the
/// object's order, every scalar `null` (`shape_key(v) == shape(v).to_string()`).
pub fn shape_key(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                out.push('{');
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if k.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
                        out.push_str(&Value::from(k.as_str()).to_string());
                    } else {
                        // Nothing to escape (every key of a Kubernetes object, in practice).
                        out.push('"');
                        out.push_str(k);
                        out.push('"');
                    }
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            _ => out.push_str("null"),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// The shapes of a render's objects (none for a failed render: nothing of it is desired).
pub fn shapes_of(render: &fief_core::render::TenantRender) -> Vec<Shaped> {
    if !render.is_ok() {
        return Vec::new();
    }
    render
        .objects
        .iter()
        .map(|o| (o.id.clone(), shape_key(&o.object)))
        .collect()
}

/// Desired objects by id: tenant and interned shape. A record is small: the tenant is an index
/// into a table of the tenants' names (each held once, a row per tenant whose shapes are held;
/// a row a tenant's last shapes leave is handed to the next tenant). The
/// agent holds the shapes of the tenants being synced and of those whose last sync did not
/// complete (a completed tenant is judged by its versions: `crate::outcome`), a few of the
/// fleet, so the objects are in a hash table sized to them, not in [`Slots`] (a place per
/// interned id of the fleet).
#[derive(Default)]
pub struct Desired {
    /// Per object: its tenant (an index into `tenants`) and its shape.
    objects: HashMap<Id, (u32, Arc<Value>)>,
    /// Per tenant, at the index its objects hold: its name and its objects' ids (`None`: a
    /// free row).
    tenants: Vec<Option<(Arc<str>, Vec<Id>)>>,
    /// The free rows of `tenants`, handed out again first.
    free: Vec<u32>,
    /// The index of each tenant's name in `tenants`.
    tenant_index: HashMap<Arc<str>, u32>,
    shapes: HashMap<String, Arc<Value>>,
}

/// A desired object as the watches look it up: its interned id, tenant and shape.
pub struct Found {
    /// The interned id.
    pub id: Id,
    /// The tenant it belongs to.
    pub tenant: Arc<str>,
    /// Its shape.
    pub shape: Arc<Value>,
}

impl Desired {
    /// Replace the objects of `tenant` by `objects` (id, shape, shape's JSON); each id is
    /// taken from `ids`, so it is the allocation the agent's other maps hold.
    pub fn replace(&mut self, tenant: &str, objects: Vec<Shaped>, ids: &mut Interner) {
        let t = self.tenant(tenant);
        if let Some(Some((_, held))) = self.tenants.get_mut(t as usize) {
            for id in std::mem::take(held) {
                self.objects.remove(&id);
            }
        }
        let mut now = Vec::with_capacity(objects.len());
        for (id, key) in objects {
            let shape = self.shape(key);
            let id = ids.intern_owned(id);
            now.push(id.clone());
            self.objects.insert(id, (t, shape));
        }
        if now.is_empty() {
            self.release(t);
        } else if let Some(Some((_, held))) = self.tenants.get_mut(t as usize) {
            *held = now;
        }
        // Emptied after a change every tenant took: give the room back.
        if self.objects.capacity() > 4 * self.objects.len() + 1024 {
            self.objects.shrink_to_fit();
        }
    }

    /// Free the row at `t` (its tenant holds no shapes).
    fn release(&mut self, t: u32) {
        if let Some(row) = self.tenants.get_mut(t as usize)
            && let Some((name, _)) = row.take()
        {
            self.tenant_index.remove(&name);
            self.free.push(t);
        }
    }

    /// The interned shape whose JSON is `key`.
    fn shape(&mut self, key: String) -> Arc<Value> {
        if let Some(shape) = self.shapes.get(&key) {
            return shape.clone();
        }
        // The key is the shape's own JSON, so it reads back as the shape.
        let shape = Arc::new(serde_json::from_str(&key).unwrap_or(Value::Null));
        self.shapes.insert(key, shape.clone());
        shape
    }

    /// The index of `tenant`'s row, taken (a free one first) on first use.
    fn tenant(&mut self, tenant: &str) -> u32 {
        if let Some(i) = self.tenant_index.get(tenant) {
            return *i;
        }
        let name: Arc<str> = tenant.into();
        let row = Some((name.clone(), Vec::new()));
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(free) = self.tenants.get_mut(i as usize) {
                    *free = row;
                }
                i
            }
            None => {
                self.tenants.push(row);
                u32::try_from(self.tenants.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.tenant_index.insert(name, i);
        i
    }

    /// The name of the tenant at index `t`.
    fn name(&self, t: u32) -> Arc<str> {
        match self.tenants.get(t as usize) {
            Some(Some((name, _))) => name.clone(),
            _ => Arc::from(""),
        }
    }

    /// Forget shapes no object uses any more.
    pub fn drop_unused_shapes(&mut self) {
        self.shapes.retain(|_, s| Arc::strong_count(s) > 1);
    }

    /// The tenant and shape of a desired object.
    pub fn get(&self, id: &Id) -> Option<(Arc<str>, Arc<Value>)> {
        self.objects
            .get(id)
            .map(|(t, s)| (self.name(*t), s.clone()))
    }

    /// A desired object's interned id, tenant and shape.
    pub fn find(&self, id: &Id) -> Option<Found> {
        self.objects
            .get_key_value(id)
            .map(|(id, (tenant, shape))| Found {
                id: id.clone(),
                tenant: self.name(*tenant),
                shape: shape.clone(),
            })
    }

    /// Distinct shapes held.
    pub fn shapes(&self) -> usize {
        self.shapes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_live_hash_from_the_shape_equals_the_one_from_the_object() {
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}, "list": [1, {"a": 2}], "empty": {}});
        let live = json!({"metadata": {"name": "a", "labels": {"x": "2", "y": "3"}, "uid": "u"}, "data": {"k": "edited", "other": "o"}, "list": [5, {"a": 6, "b": 7}], "empty": {"z": 1}, "status": {}});
        assert_eq!(
            fief_core::plan::live_hash(&desired, &live),
            fief_core::plan::live_hash(&shape(&desired), &live)
        );
        let short = json!({"list": [1]});
        assert_eq!(
            fief_core::plan::live_hash(&desired, &short),
            fief_core::plan::live_hash(&shape(&desired), &short)
        );
    }

    #[test]
    fn the_shape_key_is_the_json_of_the_shape_and_reads_back_as_it() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1", "quote\"d": "2"}}, "data": {"k": "v"}}),
            json!({"spec": {"list": [1, {"a": [true, null, 2.5]}, "s"], "empty": {}, "none": []}}),
            json!("scalar"),
            json!({"ünï\u{1}code\n": {"\\": 1}}),
        ];
        for o in &objects {
            assert_eq!(shape_key(o), shape(o).to_string());
            assert_eq!(
                serde_json::from_str::<Value>(&shape_key(o)).unwrap(),
                shape(o)
            );
        }
    }

    /// The ConfigMap `app` of tenant `t`.
    fn app_of(t: &str) -> ObjectId {
        ObjectId {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: format!("{t}-prod"),
            name: "app".into(),
        }
    }

    #[test]
    fn shapes_are_shared_between_tenants_and_replaced_per_tenant() {
        let id = app_of;
        let object = |v: &str| json!({"data": {"k": v}});
        let entry = |t: &str, v: &str| vec![(id(t), shape_key(&object(v)))];
        let mut d = Desired::default();
        let mut ids = Interner::default();
        d.replace("a", entry("a", "1"), &mut ids);
        d.replace("b", entry("b", "2"), &mut ids);
        let (a, b) = (ids.intern(&id("a")), ids.intern(&id("b")));
        assert_eq!(d.shapes(), 1);
        assert!(Arc::ptr_eq(&d.get(&a).unwrap().1, &d.get(&b).unwrap().1));
        d.replace("a", Vec::new(), &mut ids);
        assert!(d.get(&a).is_none());
        assert_eq!(d.get(&b).unwrap().0.as_ref(), "b");
        d.replace("b", Vec::new(), &mut ids);
        d.drop_unused_shapes();
        assert_eq!(d.shapes(), 0);
    }

    #[test]
    fn a_tenant_without_shapes_holds_no_row_and_its_row_is_handed_on() {
        let id = app_of;
        let entry = |t: &str| vec![(id(t), shape_key(&json!({"data": {"k": t}})))];
        let mut d = Desired::default();
        let mut ids = Interner::default();
        d.replace("a", entry("a"), &mut ids);
        d.replace("b", entry("b"), &mut ids);
        d.replace("a", Vec::new(), &mut ids);
        assert!(!d.tenant_index.contains_key("a"), "a's name is not held");
        d.replace("c", entry("c"), &mut ids);
        assert_eq!(d.tenants.len(), 2, "c took a's row");
        let (b, c) = (ids.intern(&id("b")), ids.intern(&id("c")));
        assert_eq!(d.get(&b).unwrap().0.as_ref(), "b");
        assert_eq!(d.get(&c).unwrap().0.as_ref(), "c");
        for t in ["b", "c"] {
            d.replace(t, Vec::new(), &mut ids);
        }
        assert!(d.tenant_index.is_empty() && d.tenants.iter().all(Option::is_none));
    }

    #[test]
    fn an_object_id_is_allocated_once_and_shared_by_every_lookup() {
        let id = ObjectId {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "a-prod".into(),
            name: "app".into(),
        };
        let key = shape_key(&json!({"data": {"k": "v"}}));
        let mut d = Desired::default();
        let mut ids = Interner::default();
        d.replace("a", vec![(id.clone(), key.clone())], &mut ids);
        let interned = ids.find(&id).unwrap();
        let found = d.find(&interned).unwrap();
        assert_eq!(found.tenant.as_ref(), "a");
        assert!(Id::ptr_eq(&found.id, &interned));
        let other = ids.intern(&ObjectId {
            name: "other".into(),
            ..id
        });
        assert!(d.find(&other).is_none());
    }

    #[test]
    fn an_id_the_agent_already_holds_is_reused_not_copied() {
        let id = ObjectId {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "a-prod".into(),
            name: "app".into(),
        };
        let mut ids = Interner::default();
        // A watch listed the object before its tenant was rendered.
        let held = ids.intern(&id);
        let key = shape_key(&json!({"data": {"k": "v"}}));
        let mut d = Desired::default();
        d.replace("a", vec![(id.clone(), key)], &mut ids);
        assert!(Id::ptr_eq(&d.find(&held).unwrap().id, &held));
        assert!(Id::ptr_eq(&ids.intern_owned(id), &held));
        assert_eq!(ids.len(), 1);
    }

    #[test]
    fn a_sweep_forgets_ids_nothing_holds_once_the_set_has_doubled() {
        let id = |n: usize| ObjectId {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "ns".into(),
            name: format!("o{n}"),
        };
        let mut ids = Interner::default();
        let kept: Vec<Id> = (0..10).map(|n| ids.intern(&id(n))).collect();
        for n in 10..500 {
            ids.intern(&id(n));
        }
        ids.sweep();
        assert_eq!(ids.len(), 500, "not doubled past the floor yet: no pass");
        for n in 500..2000 {
            ids.intern(&id(n));
        }
        ids.sweep();
        assert_eq!(
            ids.len(),
            kept.len(),
            "only the ids still held elsewhere stay"
        );
        assert!(Id::ptr_eq(&ids.intern(&id(3)), &kept[3]));
    }
}
