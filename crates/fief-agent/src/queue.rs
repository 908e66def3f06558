//! The work queue: tenants waiting for a sync, deduplicated, with exponential backoff.
//!
//! In: tenants to sync (new commit, drift, retry) and sync outcomes. Out: the tenants due now,
//! and when the next one is due. Pure: time is passed in.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// First retry delay after a failure.
pub const BACKOFF_START: Duration = Duration::from_secs(1);
/// Longest retry delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// Longest delay between two looks at a tenant whose components wait for their dependencies.
pub const RECHECK_MAX: Duration = Duration::from_secs(10);

/// Pending tenants and their failure counts.
#[derive(Debug, Default)]
pub struct Queue {
    pending: BTreeMap<String, Instant>,
    failures: HashMap<String, u32>,
    /// Tenants whose components wait for their dependencies: looks taken so far.
    rechecks: HashMap<String, u32>,
    triggers: HashMap<String, &'static str>,
}

/// Delay before the `n`th retry (n ≥ 1): 1 s, 2 s, 4 s, … up to 5 min.
pub fn backoff(n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1).min(20));
    (BACKOFF_START * factor).min(BACKOFF_MAX)
}

impl Queue {
    /// Queue `tenant` to run at `now`. A tenant backing off after a failure keeps its time (a
    /// backoff is not cut short); any other queued tenant runs at the earlier of the two.
    pub fn push(&mut self, tenant: &str, now: Instant) {
        let backing_off = self.failures.contains_key(tenant);
        let at = self.pending.entry(tenant.to_string()).or_insert(now);
        if !backing_off && now < *at {
            *at = now;
        }
    }

    /// Record a sync that left components waiting for their dependencies: the tenant is
    /// looked at again after 1 s, 2 s, 4 s, … up to [`RECHECK_MAX`] (a commit or drift of it
    /// comes sooner).
    pub fn recheck(&mut self, tenant: &str, now: Instant) {
        let n = self.rechecks.entry(tenant.to_string()).or_insert(0);
        *n += 1;
        let at = now + backoff(*n).min(RECHECK_MAX);
        self.pending.insert(tenant.to_string(), at);
        self.triggers.insert(tenant.to_string(), "dependency");
    }

    /// Record a sync that left nothing waiting for a dependency.
    pub fn settled(&mut self, tenant: &str) {
        self.rechecks.remove(tenant);
    }

    /// [`Queue::push`], remembering what triggered the sync (for logs and spans).
    pub fn push_for(&mut self, tenant: &str, now: Instant, trigger: &'static str) {
        self.push(tenant, now);
        self.triggers.entry(tenant.to_string()).or_insert(trigger);
    }

    /// What triggered a due tenant's sync (`commit`, `drift`, `resync`, `retry`, …).
    pub fn take_trigger(&mut self, tenant: &str) -> &'static str {
        self.triggers.remove(tenant).unwrap_or("commit")
    }

    /// Record a failed sync: the tenant comes back after its backoff.
    pub fn failed(&mut self, tenant: &str, now: Instant) {
        let n = self.failures.entry(tenant.to_string()).or_insert(0);
        *n += 1;
        self.pending.insert(tenant.to_string(), now + backoff(*n));
        self.triggers.insert(tenant.to_string(), "retry");
    }

    /// Record a successful sync: the backoff resets.
    pub fn succeeded(&mut self, tenant: &str) {
        self.failures.remove(tenant);
    }

    /// Forget a tenant (its file is gone).
    pub fn forget(&mut self, tenant: &str) {
        self.pending.remove(tenant);
        self.failures.remove(tenant);
        self.rechecks.remove(tenant);
        self.triggers.remove(tenant);
    }

    /// Take every tenant due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Vec<String> {
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(t, _)| t.clone())
            .collect();
        for t in &due {
            self.pending.remove(t);
        }
        due
    }

    /// When the next tenant is due, if any is queued.
    pub fn next_due(&self) -> Option<Instant> {
        self.pending.values().min().copied()
    }

    /// When `tenant` is due, if it is queued.
    pub fn due_at(&self, tenant: &str) -> Option<Instant> {
        self.pending.get(tenant).copied()
    }

    /// Number of tenants waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_queued_twice_is_synced_once() {
        let mut q = Queue::default();
        let now = Instant::now();
        q.push("a", now);
        q.push("a", now);
        q.push("b", now);
        assert_eq!(q.take_due(now), ["a", "b"]);
        assert!(q.is_empty());
    }

    #[test]
    fn failures_back_off_exponentially_and_success_resets() {
        let mut q = Queue::default();
        let now = Instant::now();
        q.failed("a", now);
        assert!(q.take_due(now).is_empty());
        assert_eq!(q.take_due(now + Duration::from_secs(1)), ["a"]);
        q.failed("a", now);
        assert!(q.take_due(now + Duration::from_secs(1)).is_empty());
        assert_eq!(q.take_due(now + Duration::from_secs(2)), ["a"]);
        q.succeeded("a");
        q.failed("a", now);
        assert_eq!(q.take_due(now + Duration::from_secs(1)), ["a"]);
    }

    #[test]
    fn drift_does_not_cut_a_backoff_short() {
        let mut q = Queue::default();
        let now = Instant::now();
        q.failed("a", now);
        q.failed("a", now);
        q.push("a", now);
        assert!(q.take_due(now).is_empty());
        assert_eq!(q.next_due(), Some(now + Duration::from_secs(2)));
    }

    #[test]
    fn a_tenant_waiting_for_a_dependency_is_looked_at_again_and_a_commit_comes_sooner() {
        let mut q = Queue::default();
        let now = Instant::now();
        q.recheck("a", now);
        assert!(q.take_due(now).is_empty());
        assert_eq!(q.take_due(now + Duration::from_secs(1)), ["a"]);
        q.recheck("a", now);
        assert_eq!(q.next_due(), Some(now + Duration::from_secs(2)));
        q.push("a", now);
        assert_eq!(
            q.take_due(now),
            ["a"],
            "a commit is not held back by a recheck"
        );
        for _ in 0..10 {
            q.recheck("a", now);
        }
        assert_eq!(q.next_due(), Some(now + RECHECK_MAX));
        q.settled("a");
        q.recheck("a", now);
        assert_eq!(q.next_due(), Some(now + Duration::from_secs(1)));
    }

    #[test]
    fn backoff_is_capped() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(8));
        assert_eq!(backoff(40), BACKOFF_MAX);
    }
}
