//! The shards this replica holds, and the ones whose tenants it may sync.
//!
//! In: the shard manager's takes and hand-backs, and the main loop's word that a shard taken
//! is ready (a fetch that started after the take has finished, so this replica renders at
//! least the commit the shard's previous holder last applied). Out: [`Ownership::owns`], asked
//! before a tenant is queued or synced, and a change counter the main loop waits on. Also the
//! rollout's word between replicas: this replica's [`Progress`] to announce, and the other
//! live replicas' as their Leases say.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, RwLock};

use tokio::sync::watch;

use fief_core::shard::{Shard, shard_of};

/// A replica's progress through the rollout of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The commit rolled out.
    pub(crate) commit: String,
    /// The wave it stands at (`usize::MAX`: nothing held back).
    pub(crate) wave: usize,
    /// Its own tenants of that wave are healthy.
    pub(crate) done: bool,
}

impl Progress {
    /// As written on a Lease: `<commit>/<wave>/<0|1>`.
    pub(crate) fn encode(&self) -> String {
        format!("{}/{}/{}", self.commit, self.wave, u8::from(self.done))
    }

    /// Read back what [`Progress::encode`] wrote (`None`: not that).
    pub(crate) fn decode(text: &str) -> Option<Progress> {
        let mut parts = text.split('/');
        let commit = parts.next().filter(|c| !c.is_empty())?.to_string();
        let wave = parts.next()?.parse().ok()?;
        let done = match parts.next()? {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        parts
            .next()
            .is_none()
            .then_some(Progress { commit, wave, done })
    }

    /// Whether this replica lets the wave `wave` of `commit` go on: it is past that wave, or
    /// at it with its part done.
    fn lets_go(&self, commit: &str, wave: usize) -> bool {
        self.commit == commit && (self.wave > wave || (self.wave == wave && self.done))
    }
}

/// The shards this replica holds (their Leases) and the ready ones (their tenants synced).
#[derive(Debug)]
pub(crate) struct Ownership {
    count: u32,
    sets: RwLock<Sets>,
    changed: watch::Sender<u64>,
    /// This replica's rollout progress, to announce.
    mine: Mutex<Option<Progress>>,
    /// The other live replicas' (none: they announced nothing readable).
    peers: Mutex<BTreeMap<String, Option<Progress>>>,
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
            mine: Mutex::new(None),
            peers: Mutex::new(BTreeMap::new()),
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

    /// Set this replica's rollout progress (announced at the shard manager's next tick).
    pub(crate) fn announce(&self, progress: Progress) {
        *self.mine.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress);
    }

    /// This replica's rollout progress.
    pub(crate) fn announced(&self) -> Option<Progress> {
        self.mine.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The other live replicas and their announced progress.
    pub(crate) fn set_peers(&self, peers: BTreeMap<String, Option<Progress>>) {
        *self.peers.lock().unwrap_or_else(|e| e.into_inner()) = peers;
    }

    /// The other live replicas that do not let wave `wave` of `commit` go on yet.
    pub(crate) fn peers_waiting(&self, commit: &str, wave: usize) -> Vec<String> {
        self.peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(_, p)| !p.as_ref().is_some_and(|p| p.lets_go(commit, wave)))
            .map(|(r, _)| r.clone())
            .collect()
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
    fn a_wave_goes_on_only_when_every_other_replica_is_past_it_or_done_with_it() {
        let own = Ownership::new(4);
        let at = |commit: &str, wave, done| {
            Some(Progress {
                commit: commit.into(),
                wave,
                done,
            })
        };
        own.set_peers(
            [
                ("a".to_string(), at("c2", 1, true)),
                ("b".to_string(), at("c2", usize::MAX, true)),
                ("c".to_string(), at("c2", 1, false)),
                ("d".to_string(), at("c1", usize::MAX, true)),
                ("e".to_string(), None),
            ]
            .into(),
        );
        assert_eq!(own.peers_waiting("c2", 1), ["c", "d", "e"]);
        assert_eq!(own.peers_waiting("c2", 0), ["d", "e"]);
        let p = Progress {
            commit: "abc".into(),
            wave: 3,
            done: true,
        };
        assert_eq!(Progress::decode(&p.encode()), Some(p));
        assert_eq!(Progress::decode("abc/x/1"), None);
        assert_eq!(Progress::decode("abc/1/1/extra"), None);
    }

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
