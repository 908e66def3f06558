//! The shards this replica holds, and the ones whose tenants it may sync.
//!
//! In: the shard manager's takes and hand-backs, and the main loop's word that a shard taken
//! is ready (a fetch that started after the take has finished, so this replica renders at
//! least the commit the shard's previous holder last applied). Out: [`Ownership::owns`], asked
//! before a tenant is queued or synced, and a change counter the main loop waits on.

use std::collections::BTreeSet;
use std::sync::RwLock;

use tokio::sync::watch;

use fief_core::shard::{Shard, shard_of};

/// The shards this replica holds (their Leases) and the ready ones (their tenants synced).
#[derive(Debug)]
pub(crate) struct Ownership {
    count: u32,
    sets: RwLock<Sets>,
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Sets {
    held: BTreeSet<Shard>,
    ready: BTreeSet<Shard>,
}

impl Ownership {
    /// No shard held yet, of `count` shards.
    pub(crate) fn new(count: u32) -> Ownership {
        Ownership {
            count,
            sets: RwLock::new(Sets::default()),
            changed: watch::Sender::new(0),
        }
    }

    fn sets(&self) -> std::sync::RwLockReadGuard<'_, Sets> {
        self.sets.read().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Sets)) {
        f(&mut self.sets.write().unwrap_or_else(|e| e.into_inner()));
        self.changed.send_modify(|n| *n += 1);
    }

    /// How many shards the tenants are split into.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The shards whose Leases this replica holds.
    pub(crate) fn held(&self) -> BTreeSet<Shard> {
        self.sets().held.clone()
    }

    /// The shards whose tenants this replica syncs.
    pub(crate) fn ready(&self) -> BTreeSet<Shard> {
        self.sets().ready.clone()
    }

    /// This replica took `shard`'s Lease (its tenants wait for [`Ownership::make_ready`]).
    pub(crate) fn gain(&self, shard: Shard) {
        self.update(|s| {
            s.held.insert(shard);
        });
    }

    /// This replica stops syncing `shard`'s tenants (before its Lease is released).
    pub(crate) fn lose(&self, shard: Shard) {
        self.update(|s| {
            s.held.remove(&shard);
            s.ready.remove(&shard);
        });
    }

    /// `shard` is ready: its tenants may be synced (when its Lease is still held).
    pub(crate) fn make_ready(&self, shard: Shard) {
        self.update(|s| {
            if s.held.contains(&shard) {
                s.ready.insert(shard);
            }
        });
    }

    /// The shard of `tenant`.
    pub(crate) fn shard_of(&self, tenant: &str) -> Shard {
        shard_of(tenant, self.count)
    }

    /// Whether this replica may sync `tenant` now.
    pub(crate) fn owns(&self, tenant: &str) -> bool {
        self.sets().ready.contains(&self.shard_of(tenant))
    }

    /// A receiver that changes with every take, hand-back and readiness.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_shards_tenants_are_synced_only_once_it_is_ready_and_never_after_it_is_lost() {
        let own = Ownership::new(4);
        let tenant = "acme";
        let shard = own.shard_of(tenant);
        own.gain(shard);
        assert!(!own.owns(tenant), "taken, not ready");
        own.make_ready(shard);
        assert!(own.owns(tenant));
        own.lose(shard);
        assert!(!own.owns(tenant));
        own.make_ready(shard);
        assert!(!own.owns(tenant), "a shard not held never becomes ready");
    }
}
