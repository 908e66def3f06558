//! The health gate's status writer: one task that writes each tenant's changed verdict onto
//! its inventory's status, one at a time.
//!
//! In: the tenants the gate queues when a verdict changes (and again after a write that
//! failed, or a `Reconciling` still within its grace). Out: the inventory's conditions set
//! from the verdict ([`fief_kube::health::write_verdict`], guarded by the inventory's
//! resourceVersion), and what the gate records as written, so a later `Ready` is written only
//! where the inventory may hold another verdict.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{GRACE, Gate, lock};
use fief_core::health::Verdict;

/// The verdict write in flight: its tenant, and whether a sync of it ended meanwhile (what
/// the writer then recorded as written may no longer be what the inventory holds).
pub(super) struct Writing {
    pub(super) tenant: String,
    pub(super) synced: bool,
}

impl Gate {
    /// The agent namespace the inventories are in.
    pub fn set_namespace(&self, namespace: &str) {
        *self.namespace.lock().unwrap_or_else(|e| e.into_inner()) = namespace.to_string();
    }

    /// Write verdicts onto the inventories' status, one at a time, until `stop`.
    pub fn spawn_writer(self: &Arc<Self>, client: kube::Client, stop: CancellationToken) {
        let Some(mut rx) = self
            .receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let gate = self.clone();
        tokio::spawn(async move {
            loop {
                let tenant = tokio::select! {
                    t = rx.recv() => match t { Some(t) => t, None => return },
                    _ = stop.cancelled() => return,
                };
                let Some(v) = gate.due(&tenant) else { continue };
                let ns = gate
                    .namespace
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                let now = fief_kube::sync::now_rfc3339();
                let wrote = fief_kube::health::write_verdict(&client, &ns, &tenant, &v, &now).await;
                if let Err(e) = &wrote {
                    tracing::warn!(tenant, error = %e, "cannot write the health status; retrying");
                }
                gate.wrote(tenant, v, wrote.is_ok());
            }
        });
    }

    /// The verdict to write for `tenant` now, if any: none while it syncs or while its
    /// `Reconciling` is younger than [`GRACE`] (queued again for then), nor when it is already
    /// written. A verdict other than `Ready` marks the tenant dirty before it is written, so a
    /// `Ready` judged while the write is in flight is written after it, not taken as quiet.
    fn due(self: &Arc<Self>, tenant: &str) -> Option<Verdict> {
        let mut t = lock(&self.tracker);
        let young = t
            .waiting
            .get(tenant)
            .map(|w| w.since + GRACE)
            .filter(|at| *at > Instant::now());
        let v = match t.verdicts.get(tenant) {
            Some(Verdict::Reconciling(_)) if young.is_some() => {
                if let Some(at) = young {
                    self.resend_at(tenant, at);
                }
                return None;
            }
            Some(v) if !t.syncing.contains(tenant) && t.written.get(tenant) != Some(v) => v.clone(),
            _ => return None,
        };
        if v != Verdict::Ready {
            t.dirty.insert(tenant.to_string());
        }
        t.writing = Some(Writing {
            tenant: tenant.to_string(),
            synced: false,
        });
        Some(v)
    }

    /// The writer wrote `v` for `tenant` (`ok`) or failed to (queued again shortly). When a
    /// sync of the tenant ended during the write, which of the two the inventory holds is not
    /// known: nothing is recorded as written and the tenant is queued again, to be compared
    /// afresh (an inventory that already holds the verdict takes no write).
    fn wrote(self: &Arc<Self>, tenant: String, v: Verdict, ok: bool) {
        let mut t = lock(&self.tracker);
        let synced = t.writing.take().is_some_and(|w| w.synced);
        if !ok {
            self.resend_at(&tenant, Instant::now() + Duration::from_millis(500));
        } else if synced {
            let _ = self.writes.send(tenant);
        } else {
            if v == Verdict::Ready {
                t.dirty.remove(&tenant);
            }
            t.written.insert(tenant, v);
        }
    }

    /// Queue `tenant` for the writer again at `at`.
    fn resend_at(self: &Arc<Self>, tenant: &str, at: Instant) {
        let gate = self.clone();
        let tenant = tenant.to_string();
        tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            let _ = gate.writes.send(tenant);
        });
    }
}
