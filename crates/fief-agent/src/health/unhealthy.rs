//! The health of the objects that are not current, as the health gate keeps it.
//!
//! In: each object's [`Health`] as the watches see it. Out: the same health, back, for the
//! objects that are converging or failed; an object not held is current. What is held per
//! object is its id, whether it failed and why, and the why is shared: objects that converge
//! the same way give the same text ("0/1 replicas available", "no status yet"), so a fleet of
//! converging objects holds each text once, not once per object. Texts no object holds any
//! more are dropped when the texts held have doubled since the last drop.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::desired::{Id, Key};
use fief_core::health::Health;

/// An object's health that is not current: whether it failed, and why.
type Held = (bool, Arc<str>);

/// The objects that are not current (see the module docs).
#[derive(Default)]
pub(super) struct Unhealthy {
    objects: HashMap<Id, Held>,
    /// Every text some object holds (and those dropped since the last sweep).
    texts: HashSet<Arc<str>>,
    /// Texts held after the last sweep.
    kept: usize,
}

impl Unhealthy {
    /// The health of `id`: current unless held.
    pub(super) fn get(&self, id: &dyn Key) -> Health {
        match self.objects.get(id) {
            None => Health::Current,
            Some((false, why)) => Health::InProgress(why.to_string()),
            Some((true, why)) => Health::Failed(why.to_string()),
        }
    }

    /// Set the health of `id`: held when not current, forgotten when current.
    pub(super) fn set(&mut self, id: &Id, health: Health) {
        let (failed, why) = match health {
            Health::Current => {
                self.objects.remove(id);
                return;
            }
            Health::InProgress(why) => (false, why),
            Health::Failed(why) => (true, why),
        };
        let why = self.text(why);
        self.objects.insert(id.clone(), (failed, why));
    }

    /// Forget `id` (it is gone).
    pub(super) fn remove(&mut self, id: &dyn Key) {
        self.objects.remove(id);
    }

    /// Objects held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object is held.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The shared text equal to `why`, held from now on if none is.
    fn text(&mut self, why: String) -> Arc<str> {
        if let Some(held) = self.texts.get(why.as_str()) {
            return held.clone();
        }
        if self.texts.len() >= 2 * self.kept + 64 {
            self.texts.retain(|t| Arc::strong_count(t) > 1);
            self.kept = self.texts.len();
        }
        let held: Arc<str> = why.into();
        self.texts.insert(held.clone());
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::{Interner, configmap};

    #[test]
    fn objects_that_converge_alike_share_their_text_and_read_back_as_seen() {
        let mut ids = Interner::default();
        let mut u = Unhealthy::default();
        let (a, b, c) = (
            ids.intern(&configmap("a")),
            ids.intern(&configmap("b")),
            ids.intern(&configmap("c")),
        );
        u.set(&a, Health::InProgress("0/1 replicas available".into()));
        u.set(&b, Health::InProgress("0/1 replicas available".into()));
        u.set(
            &c,
            Health::Failed("job failed: BackoffLimitExceeded".into()),
        );
        assert_eq!(
            u.get(&a),
            Health::InProgress("0/1 replicas available".into())
        );
        assert_eq!(
            u.get(&c),
            Health::Failed("job failed: BackoffLimitExceeded".into())
        );
        assert!(Arc::ptr_eq(&u.objects[&a].1, &u.objects[&b].1), "one text");
        u.set(&a, Health::Current);
        u.remove(&c);
        assert_eq!(
            (u.get(&a), u.get(&c), u.len()),
            (Health::Current, Health::Current, 1)
        );
    }

    #[test]
    fn texts_no_object_holds_are_dropped_as_new_ones_come() {
        let mut ids = Interner::default();
        let mut u = Unhealthy::default();
        let x = ids.intern(&configmap("x"));
        for n in 0..1000 {
            u.set(&x, Health::InProgress(format!("{n}/1000 replicas ready")));
        }
        assert!(u.texts.len() <= 2 * u.kept + 64, "{} texts", u.texts.len());
        assert!(u.texts.len() < 200, "swept: {} texts", u.texts.len());
        assert_eq!(
            u.get(&x),
            Health::InProgress("999/1000 replicas ready".into())
        );
    }
}
