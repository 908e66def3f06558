//! The work: the queue of tenants to sync, the tenants being synced now and when each last
//! finished, the day-2 requests, and the notifications the loop and its waiters wake on.
//!
//! In: tenants queued (by a commit, drift, a retry, a rollout, a request, a resync or a shard
//! taken) and taken when due; syncs started and finished; changes other tasks wait on (a
//! watch listed or failed, the requests watch listed, a fetch finished, a revision
//! published). Out: the due tenants, whether a tenant is in flight (its objects' events are
//! fief's own writes, not drift) and when its last sync ended; the loop woken when work is
//! queued; [`Work::wait_for`] returning once what a waiter waits on holds.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio_util::sync::CancellationToken;

use crate::lock;
use crate::queue::Queue;
use crate::requests::Requests;

/// The work of the agent (see the module docs).
#[derive(Default)]
pub(crate) struct Work {
    queue: Mutex<Queue>,
    /// Notified when work is queued: the loop looks at the queue again.
    wake: Notify,
    /// Notified when state another task waits on changes (see [`Work::wait_for`]).
    changed: Notify,
    /// Tenants being synced now: their objects' events are fief's own writes, not drift.
    in_flight: Mutex<HashSet<String>>,
    /// When each tenant's last sync ended: a relist that began before holds objects that may
    /// predate that sync's writes, which are not drift.
    synced_at: Mutex<HashMap<String, Instant>>,
    /// Suspended tenants and `fief reconcile` requests (see [`crate::requests`]).
    requests: Requests,
}

impl Work {
    /// Queue `tenant` now for `trigger` and wake the loop.
    pub(crate) fn enqueue_for(&self, tenant: &str, trigger: &'static str) {
        lock(&self.queue).push_for(tenant, Instant::now(), trigger);
        self.wake.notify_one();
    }

    /// Run `f` on the queue under its lock: several pushes or takes as one step.
    pub(crate) fn queue<R>(&self, f: impl FnOnce(&mut Queue) -> R) -> R {
        f(&mut lock(&self.queue))
    }

    /// Tenants queued.
    pub(crate) fn queue_len(&self) -> usize {
        lock(&self.queue).len()
    }

    /// Wake the loop: work was queued.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves when the loop is woken.
    pub(crate) fn woken(&self) -> Notified<'_> {
        self.wake.notified()
    }

    /// Tell every waiter of [`Work::wait_for`] to look again.
    pub(crate) fn changed(&self) {
        self.changed.notify_waiters();
    }

    /// Wait until `ready()` holds, `deadline` passes or `stop` is cancelled; whether it held.
    /// `ready` is checked again each time [`Work::changed`] is called, which every change it
    /// may read calls; the waiter is registered before each check, so no change is missed.
    pub(crate) async fn wait_for(
        &self,
        deadline: Instant,
        stop: &CancellationToken,
        mut ready: impl FnMut() -> bool,
    ) -> bool {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if ready() {
                return true;
            }
            if Instant::now() >= deadline || stop.is_cancelled() {
                return false;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline.into()) => {}
                _ = stop.cancelled() => {}
            }
        }
    }

    /// Mark `tenant` in flight if `owns()` holds, checked under the same lock (a shard handed
    /// back waits for its tenants in flight). Returns whether it was marked.
    pub(crate) fn start_sync(&self, tenant: &str, owns: impl FnOnce() -> bool) -> bool {
        let mut in_flight = lock(&self.in_flight);
        if !owns() {
            return false;
        }
        in_flight.insert(tenant.to_string());
        true
    }

    /// The syncs of `tenants` ended at `now`: none is in flight any more.
    pub(crate) fn finish_syncs<'a>(
        &self,
        tenants: impl IntoIterator<Item = &'a str>,
        now: Instant,
    ) {
        let mut in_flight = lock(&self.in_flight);
        let mut synced_at = lock(&self.synced_at);
        for t in tenants {
            in_flight.remove(t);
            synced_at.insert(t.to_string(), now);
        }
    }

    /// Whether `tenant` is being synced now.
    pub(crate) fn is_in_flight(&self, tenant: &str) -> bool {
        lock(&self.in_flight).contains(tenant)
    }

    /// The tenants being synced now.
    pub(crate) fn syncing(&self) -> HashSet<String> {
        lock(&self.in_flight).clone()
    }

    /// When `tenant`'s last sync ended.
    pub(crate) fn synced_at(&self, tenant: &str) -> Option<Instant> {
        lock(&self.synced_at).get(tenant).copied()
    }

    /// Drop the queue (`queue`) or the syncs in flight and their end times (`syncs`), for the
    /// heap harness to measure what they held.
    #[cfg(test)]
    pub(crate) fn drop_state(&self, part: &str) {
        match part {
            "queue" => drop(std::mem::take(&mut *lock(&self.queue))),
            "syncs" => {
                drop(std::mem::take(&mut *lock(&self.in_flight)));
                drop(std::mem::take(&mut *lock(&self.synced_at)));
            }
            other => panic!("no part {other}"),
        }
    }

    /// The day-2 requests (their state is [`crate::requests`]'s own).
    pub(crate) fn requests(&self) -> &Requests {
        &self.requests
    }
}
