//! The rollout as the agent last published it, and its writes to the cluster.
//!
//! In: the record the loop works out after each turn ([`super::record`]). Out: the record
//! `/status`, `/metrics` and the web view show; the `fief-rollout` ConfigMap written one
//! write at a time, each writing the latest record, a failed write retried at the next
//! publication.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::lock;
use fief_core::rollout::Record;

/// The published rollout and the state of its writes (see the module docs).
#[derive(Default)]
pub(crate) struct RolloutState {
    /// The rollout as last published.
    current: Mutex<Option<Record>>,
    /// The record last written to the cluster (held while writing: one write at once).
    written: tokio::sync::Mutex<Option<Record>>,
    /// The last write of the record failed: write it again.
    retry: AtomicBool,
}

impl RolloutState {
    /// The rollout as last published.
    pub(crate) fn current(&self) -> Option<Record> {
        lock(&self.current).clone()
    }

    /// Run `f` on the rollout as last published, under its lock.
    pub(crate) fn read<R>(&self, f: impl FnOnce(Option<&Record>) -> R) -> R {
        f(lock(&self.current).as_ref())
    }

    /// Publish `record` when it differs from the last one or the last write failed:
    /// `on_change` is told the old and the new record under the lock. Returns whether it was
    /// published (and is to be written).
    pub(super) fn publish(
        &self,
        record: Option<Record>,
        on_change: impl FnOnce(Option<&Record>, Option<&Record>),
    ) -> bool {
        let retry = self.retry.swap(false, Ordering::Relaxed);
        let mut current = lock(&self.current);
        if *current == record && !retry {
            return false;
        }
        on_change(current.as_ref(), record.as_ref());
        *current = record;
        true
    }

    /// Write the latest published record to the `fief-rollout` ConfigMap of `namespace`,
    /// unless it is the one last written; a failed write is retried at the next publication.
    pub(super) async fn write(&self, client: &kube::Client, namespace: &str) {
        let mut written = self.written.lock().await;
        let latest = lock(&self.current).clone();
        let Some(record) = latest.filter(|l| written.as_ref() != Some(l)) else {
            return;
        };
        match fief_kube::rollout_store::write_record(client, namespace, &record).await {
            Ok(()) => *written = Some(record),
            Err(e) => {
                tracing::warn!(error = %e, "cannot write the rollout record; retrying");
                // Written again on the main loop's next turn (at the latest its next tick).
                self.retry.store(true, Ordering::Relaxed);
            }
        }
    }
}
