//! The agent's object ids, compact, and the interner that hands them out.
//!
//! In: full object ids ([`ObjectId`], four strings) as the renders, the inventories and the
//! watches carry them. Out: one [`Id`] per object for the whole agent, which every per-object
//! map keys on, and [`Key`], the borrowed form the maps are looked up by from either kind of id.
//!
//! An [`Id`] is one small allocation of three pointers and a slot, counted by `triomphe`'s
//! `Arc` (a reference count and no weak count: a word less per object than the standard
//! library's, for an id that is never held weakly): its group and kind point
//! into a table of the kinds (a fleet has few), its namespace and its name into a table of
//! strings (a tenant's objects share a handful of namespaces, and the objects of one template
//! have the same name in every tenant). Both tables are the interner's and are swept with it.
//! The slot is a small number no other live id has (a swept id's slot is handed out again):
//! the per-object tables ([`super::Slots`]) are vectors indexed by it, with no hash and no
//! empty half of a hash table.
//!
//! Ids hash, compare and order by their four strings, exactly as an [`ObjectId`] does, so a
//! map keyed on [`Id`] finds an object from a full id (through [`key`]) and a map keyed on
//! [`ObjectId`] finds one from an [`Id`]. Two ids compare first by their allocation, the one
//! the interner made for the object.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use triomphe::Arc as Counted;

use fief_core::objects::ObjectId;

/// The four strings of an object id, borrowed: what ids of either form hash, compare and order
/// by (in [`ObjectId`]'s field order, so the same way an [`ObjectId`] does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Parts<'a> {
    /// API group, empty for the core group.
    pub group: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
}

/// An object id of either form, as the agent's maps are looked up by it.
pub trait Key {
    /// Its four strings.
    fn parts(&self) -> Parts<'_>;
}

impl Key for ObjectId {
    fn parts(&self) -> Parts<'_> {
        Parts {
            group: &self.group,
            kind: &self.kind,
            namespace: &self.namespace,
            name: &self.name,
        }
    }
}

impl Key for Id {
    fn parts(&self) -> Parts<'_> {
        let Inner {
            kind,
            namespace,
            name,
            ..
        } = &*self.0;
        Parts {
            group: &kind.group,
            kind: &kind.kind,
            namespace: &namespace.0,
            name: &name.0,
        }
    }
}

impl Hash for dyn Key + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn Key + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn Key + '_ {}

impl PartialOrd for dyn Key + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn Key + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

/// `id` as the key a map of [`Id`]s is looked up by.
pub fn key(id: &ObjectId) -> &dyn Key {
    id
}

impl<'a> Borrow<dyn Key + 'a> for Id {
    fn borrow(&self) -> &(dyn Key + 'a) {
        self
    }
}

impl<'a> Borrow<dyn Key + 'a> for ObjectId {
    fn borrow(&self) -> &(dyn Key + 'a) {
        self
    }
}

/// A group and kind, held once by the interner for every object of the kind.
struct Kind {
    group: Box<str>,
    kind: Box<str>,
}

/// A namespace or a name, held once by the interner for every id that has it (a pointer
/// wide).
#[derive(Clone)]
struct Text(Counted<Box<str>>);

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        str::hash(&self.0, state);
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Text {}

/// What an [`Id`] points to.
struct Inner {
    kind: Counted<Kind>,
    namespace: Text,
    name: Text,
    /// Its index in the per-object tables, unique among live ids.
    slot: u32,
}

/// An object id as the agent holds it: one small allocation per object, shared by every map
/// that keys on it (see the module docs). Two ids of one object are equal, whichever their
/// allocation; the [`Interner`] makes it one.
#[derive(Clone)]
pub struct Id(Counted<Inner>);

impl Id {
    /// API group, empty for the core group.
    pub fn group(&self) -> &str {
        &self.0.kind.group
    }

    /// Kind.
    pub fn kind(&self) -> &str {
        &self.0.kind.kind
    }

    /// Namespace, empty for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        &self.0.namespace.0
    }

    /// Name.
    pub fn name(&self) -> &str {
        &self.0.name.0
    }

    /// Its index in the per-object tables ([`super::Slots`]): no other live id has it.
    pub fn slot(&self) -> usize {
        self.0.slot as usize
    }

    /// The full id.
    pub fn to_object_id(&self) -> ObjectId {
        let p = self.parts();
        ObjectId {
            group: p.group.to_string(),
            kind: p.kind.to_string(),
            namespace: p.namespace.to_string(),
            name: p.name.to_string(),
        }
    }

    /// Whether `a` and `b` are the same allocation (ids from one interner: the same object).
    pub fn ptr_eq(a: &Id, b: &Id) -> bool {
        Counted::ptr_eq(&a.0, &b.0)
    }
}

impl Hash for Id {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        Counted::ptr_eq(&self.0, &other.0) || self.parts() == other.parts()
    }
}

impl Eq for Id {}

impl PartialEq<ObjectId> for Id {
    fn eq(&self, other: &ObjectId) -> bool {
        self.parts() == other.parts()
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.parts();
        f.debug_struct("Id")
            .field("group", &p.group)
            .field("kind", &p.kind)
            .field("namespace", &p.namespace)
            .field("name", &p.name)
            .finish()
    }
}

/// As [`ObjectId`]'s: `Kind[.group]/[namespace/]name`.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.parts();
        f.write_str(p.kind)?;
        if !p.group.is_empty() {
            write!(f, ".{}", p.group)?;
        }
        if !p.namespace.is_empty() {
            write!(f, "/{}", p.namespace)?;
        }
        write!(f, "/{}", p.name)
    }
}

/// The agent's one [`Interner`], shared by whoever keys a table on ids (the index and the
/// health gate). Its lock is a leaf: nothing is locked while it is held.
#[derive(Clone, Default)]
pub struct Ids(Arc<Mutex<Interner>>);

impl Ids {
    /// The interner, locked.
    pub fn lock(&self) -> MutexGuard<'_, Interner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The agent's id for `id`, made on first use.
    pub fn intern(&self, id: &ObjectId) -> Id {
        self.lock().intern(id)
    }

    /// The agent's id for `id`, if it has one (a table holds only ids it has).
    pub fn find(&self, id: &ObjectId) -> Option<Id> {
        self.lock().find(id)
    }
}

/// One [`Id`] per object for the whole agent. A map keeps its old key when a key equal to it
/// is inserted, so two maps that each made their own id of an object (a watch that listed the
/// object before its tenant was rendered or verified, say) would hold both allocations for
/// good; ids taken from here are the same allocation everywhere, and each has a slot no other
/// live id has. It holds the tables of kinds and strings the ids point into.
#[derive(Default)]
pub struct Interner {
    ids: HashSet<Id>,
    /// Slots of swept ids, handed out again first.
    free: Vec<u32>,
    /// The next slot never handed out.
    next: u32,
    /// The kinds, by kind name (each name's groups: one, as a rule).
    kinds: HashMap<Box<str>, Vec<Counted<Kind>>>,
    /// The namespaces and names.
    texts: HashSet<Text>,
    /// Ids held after the last sweep.
    kept: usize,
}

impl Interner {
    /// The agent's id for `id`, made on first use.
    pub fn intern(&mut self, id: &ObjectId) -> Id {
        if let Some(held) = self.ids.get(key(id)) {
            return held.clone();
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.next = self.next.saturating_add(1);
            self.next - 1
        });
        let made = Id(Counted::new(Inner {
            kind: self.kind(&id.group, &id.kind),
            namespace: self.text(&id.namespace),
            name: self.text(&id.name),
            slot,
        }));
        self.ids.insert(made.clone());
        made
    }

    /// The agent's id for `id`, if it has one (nothing is made).
    pub fn find(&self, id: &ObjectId) -> Option<Id> {
        self.ids.get(key(id)).cloned()
    }

    /// [`Self::intern`], taking the id.
    pub fn intern_owned(&mut self, id: ObjectId) -> Id {
        self.intern(&id)
    }

    /// The table's entry for `group` and `kind`, added on first use.
    fn kind(&mut self, group: &str, kind: &str) -> Counted<Kind> {
        if let Some(held) = self
            .kinds
            .get(kind)
            .and_then(|ks| ks.iter().find(|k| &*k.group == group))
        {
            return held.clone();
        }
        let made = Counted::new(Kind {
            group: group.into(),
            kind: kind.into(),
        });
        self.kinds
            .entry(kind.into())
            .or_default()
            .push(made.clone());
        made
    }

    /// The table's entry for `text`, added on first use.
    fn text(&mut self, text: &str) -> Text {
        if let Some(held) = self.texts.get(text) {
            return held.clone();
        }
        let made = Text(Counted::new(text.into()));
        self.texts.insert(made.clone());
        made
    }

    /// Forget ids nothing else holds any more (objects deleted or no longer desired), and the
    /// kinds and strings no id points into, once the set has doubled since the last sweep:
    /// a sweep is a pass over every id, so this keeps its cost per new id constant.
    pub fn sweep(&mut self) {
        if self.ids.len() <= 2 * self.kept + 1024 {
            return;
        }
        let free = &mut self.free;
        self.ids.retain(|id| {
            let held = Counted::strong_count(&id.0) > 1;
            if !held {
                free.push(id.0.slot);
            }
            held
        });
        self.ids.shrink_to_fit();
        self.texts.retain(|t| Counted::strong_count(&t.0) > 1);
        self.texts.shrink_to_fit();
        self.kinds.retain(|_, ks| {
            ks.retain(|k| Counted::strong_count(k) > 1);
            !ks.is_empty()
        });
        self.kept = self.ids.len();
    }

    /// Ids held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Kinds and strings held.
    #[cfg(test)]
    fn tables(&self) -> (usize, usize) {
        (self.kinds.values().map(Vec::len).sum(), self.texts.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};
    use std::hash::BuildHasher;

    fn object(group: &str, kind: &str, namespace: &str, name: &str) -> ObjectId {
        ObjectId {
            group: group.into(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    #[test]
    fn an_id_hashes_compares_orders_and_prints_as_its_full_id() {
        let full = [
            object("apps", "Deployment", "a-prod", "web"),
            object("", "Namespace", "", "a-prod"),
            object("", "ConfigMap", "a-prod", "web"),
        ];
        let mut ids = Interner::default();
        let hasher = std::collections::hash_map::RandomState::new();
        for o in &full {
            let id = ids.intern(o);
            assert_eq!(hasher.hash_one(o), hasher.hash_one(&id));
            assert_eq!(hasher.hash_one(o), hasher.hash_one(key(o)));
            assert_eq!(id.to_string(), o.to_string());
            assert_eq!(&id.to_object_id(), o);
            assert!(id == *o);
        }
        let by_id: HashMap<Id, usize> = full.iter().map(|o| (ids.intern(o), 1)).collect();
        let by_full: HashMap<ObjectId, usize> = full.iter().map(|o| (o.clone(), 2)).collect();
        let ordered: BTreeMap<ObjectId, usize> = full.iter().map(|o| (o.clone(), 3)).collect();
        for o in &full {
            let id = ids.intern(o);
            assert_eq!(by_id.get(key(o)), Some(&1), "found from the full id");
            assert_eq!(by_full.get(&id as &dyn Key), Some(&2), "found from the id");
            assert_eq!(ordered.get(&id as &dyn Key), Some(&3), "found in order");
        }
        let other = object("apps", "Deployment", "a-prod", "api");
        assert!(!by_id.contains_key(key(&other)));
        let mut sorted: Vec<Id> = full.iter().map(|o| ids.intern(o)).collect();
        sorted.sort_by(|a, b| (a as &dyn Key).cmp(b));
        let in_order: Vec<ObjectId> = sorted.iter().map(Id::to_object_id).collect();
        assert_eq!(in_order, ordered.into_keys().collect::<Vec<_>>());
    }

    #[test]
    fn kinds_namespaces_and_names_are_held_once_and_swept_with_the_ids() {
        let mut ids = Interner::default();
        let kept: Vec<Id> = ["a", "b"]
            .iter()
            .flat_map(|n| {
                [
                    object("apps", "Deployment", "a-prod", n),
                    object("", "ConfigMap", "a-prod", n),
                ]
            })
            .map(|o| ids.intern(&o))
            .collect();
        assert_eq!(ids.tables(), (2, 3), "a-prod, a, b");
        assert_eq!(kept[0].group(), "apps");
        assert_eq!(kept[1].kind(), "ConfigMap");
        assert_eq!(kept[2].namespace(), "a-prod");
        assert_eq!(kept[3].name(), "b");
        for n in 0..3000 {
            ids.intern(&object("batch", "Job", &format!("ns-{n}"), "j"));
        }
        assert_eq!(ids.tables(), (3, 3004));
        ids.sweep();
        assert_eq!(ids.len(), kept.len());
        assert_eq!(ids.tables(), (2, 3), "only what the ids held point into");
        assert!(Id::ptr_eq(&ids.intern(&kept[2].to_object_id()), &kept[2]));
    }
}
