//! A per-object table indexed by the slot of each interned [`Id`].
//!
//! In: values keyed on ids the agent's [`super::Interner`] handed out. Out: the value of an id,
//! found without a hash, and every (id, value) held. A table holds its ids (so the interner
//! sweeps an id only once no table holds it, and a slot is handed out again only then).
//!
//! The table is a vector with a place per slot; the interner hands out the lowest free slots
//! first, so the vector is about as long as the count of live ids. It grows by an eighth at a
//! time: a hash table of the same entries keeps between an eighth and half of its places
//! empty, each the size of a key and a value, and hashes the four strings of an id per lookup.

use super::Id;

/// Values per object, at each id's slot (see the module docs).
pub struct Slots<T> {
    entries: Vec<Option<(Id, T)>>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            entries: Vec::new(),
        }
    }
}

impl<T> Slots<T> {
    /// The value of `id`, and the id as held.
    pub fn get_key_value(&self, id: &Id) -> Option<(&Id, &T)> {
        match self.entries.get(id.slot()) {
            Some(Some((held, value))) if Id::ptr_eq(held, id) => Some((held, value)),
            _ => None,
        }
    }

    /// The value of `id`.
    pub fn get(&self, id: &Id) -> Option<&T> {
        self.get_key_value(id).map(|(_, v)| v)
    }

    /// The value of `id`, to change.
    pub fn get_mut(&mut self, id: &Id) -> Option<&mut T> {
        match self.entries.get_mut(id.slot()) {
            Some(Some((held, value))) if Id::ptr_eq(held, id) => Some(value),
            _ => None,
        }
    }

    /// Whether `id` has a value.
    #[cfg(test)]
    pub fn contains(&self, id: &Id) -> bool {
        self.get(id).is_some()
    }

    /// Set the value of `id`; returns the one it replaces.
    #[cfg(test)]
    pub fn insert(&mut self, id: Id, value: T) -> Option<T> {
        self.place(id.slot()).replace((id, value)).map(|(_, v)| v)
    }

    /// The value of `id`, set to `T::default()` first when it has none.
    pub fn get_or_default(&mut self, id: Id) -> &mut T
    where
        T: Default,
    {
        let place = self.place(id.slot());
        if !place
            .as_ref()
            .is_some_and(|(held, _)| Id::ptr_eq(held, &id))
        {
            *place = None;
        }
        &mut place.get_or_insert_with(|| (id, T::default())).1
    }

    /// Remove the value of `id` (and the table's hold on the id).
    pub fn remove(&mut self, id: &Id) -> Option<T> {
        let place = self.entries.get_mut(id.slot())?;
        if !place.as_ref().is_some_and(|(held, _)| Id::ptr_eq(held, id)) {
            return None;
        }
        place.take().map(|(_, v)| v)
    }

    /// Every id held and its value, in slot order.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (&Id, &T)> {
        self.entries.iter().flatten().map(|(id, v)| (id, v))
    }

    /// Ids held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether no id is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The place of `slot`, the vector grown to hold it (by an eighth at least).
    fn place(&mut self, slot: usize) -> &mut Option<(Id, T)> {
        let len = self.entries.len();
        if slot >= len {
            let want = (slot + 1).max(len + len / 8 + 16);
            self.entries.reserve_exact(want - len);
            self.entries.resize_with(want, || None);
        }
        &mut self.entries[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::{Interner, configmap as object};

    #[test]
    fn a_value_is_found_by_its_id_and_a_swept_ids_slot_serves_a_new_object() {
        let mut ids = Interner::default();
        let mut table = Slots::default();
        let a = ids.intern(&object("a"));
        let b = ids.intern(&object("b"));
        assert_eq!(table.insert(a.clone(), 1), None);
        *table.get_or_default(b.clone()) += 2;
        assert_eq!(
            (table.get(&a), table.get(&b), table.len()),
            (Some(&1), Some(&2), 2)
        );
        assert_eq!(table.remove(&a), Some(1));
        assert_eq!((table.get(&a), table.len()), (None, 1));
        drop(a);
        for n in 0..3000 {
            ids.intern(&object(&format!("x{n}")));
        }
        ids.sweep();
        let c = ids.intern(&object("c"));
        assert!(
            c.slot() < 3002,
            "a swept slot is handed out again: {}",
            c.slot()
        );
        assert_eq!(
            table.get(&c),
            None,
            "a new object in an old slot has no value"
        );
        assert_eq!(table.insert(c.clone(), 3), None);
        let held: Vec<(String, i32)> = table.iter().map(|(id, v)| (id.name().into(), *v)).collect();
        assert_eq!(held.len(), 2);
        assert!(held.contains(&("b".into(), 2)) && held.contains(&("c".into(), 3)));
    }

    #[test]
    fn an_id_held_by_a_table_is_not_swept() {
        let mut ids = Interner::default();
        let mut table = Slots::default();
        let a = ids.intern(&object("a"));
        table.insert(a.clone(), ());
        let slot = a.slot();
        drop(a);
        for n in 0..3000 {
            ids.intern(&object(&format!("x{n}")));
        }
        ids.sweep();
        let again = ids.intern(&object("a"));
        assert_eq!(again.slot(), slot, "the table's hold kept the id");
        assert!(table.contains(&again));
    }
}
