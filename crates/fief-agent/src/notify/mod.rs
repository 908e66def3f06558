//! Notifications: the agent tells people when a tenant's sync fails, its objects stall, it
//! recovers, a prune is held, a tenant file leaves git, and (the platform only) when a
//! rollout halts or completes — each tenant's messages to the platform's channels (fief.yaml)
//! and to that tenant's own (its tenant file), never to another tenant's.
//!
//! In: calls from where the agent learns a transition — each chunk's sync reports
//! ([`Notifier::synced`]), the health gate's verdicts ([`Notifier::verdict`]), the rollout
//! record ([`Notifier::rollout`]) — and each new revision ([`Notifier::follow`]). Out: HTTP
//! POSTs in each channel's format, from one sender task ([`sender`]) and one delivery task
//! per channel ([`client`]). The calls never block and never wait on the network: they
//! `try_send` on a bounded queue (a full queue drops the fact and says so in the log). Only
//! transitions are sent, the same message at most once per window, at most a channel's rate,
//! and a receiver that is down delays only its own channel. URLs come only from SOPS files
//! or (fief.yaml's channels) from a Secret of the agent's namespace, read for each message
//! ([`secret_url`]); they are held in memory and never logged. [`test_message`] sends one
//! test message to one channel, for `fief notify test`.

mod client;
mod format;
mod limit;
mod message;
mod retry;
mod route;
pub mod secret_url;
mod sender;
mod state;
pub mod test_message;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::sync::{mpsc, watch};

use fief_core::health::Verdict;
use fief_core::rollout::{Phase, Record};
use fief_core::secrets::Keys;
use fief_core::status::Outcome;
use fief_kube::sync::TenantReport;

use crate::metrics::NotificationLabel;
use fief_source::revision::Revision;
use sender::{Input, Router};
use state::Fact;

/// Facts the sender task's queue holds.
const QUEUE: usize = 4096;

/// The handle the agent's loops call. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Notifier {
    tx: mpsc::Sender<Input>,
    /// Tenants whose last sync fact was sent (failed, prune held, orphaned): their next
    /// report is sent too, so a recovery is seen. The others' fine reports are not sent.
    noted: Arc<Mutex<HashSet<String>>>,
    /// Tenants last said to be stalled: their next ready verdict is sent.
    stalled: Arc<Mutex<HashSet<String>>>,
    /// The queue was full (warned once until it takes a fact again).
    full: Arc<AtomicBool>,
}

fn lock(m: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Notifier {
    /// Start the sender task: messages are counted in `counter`, URLs decrypted with
    /// `keys` (or read from a Secret with `kube`), and only tenants of `cluster` have
    /// channels.
    pub(crate) fn start(
        counter: Family<NotificationLabel, Counter>,
        keys: Option<Arc<Keys>>,
        cluster: String,
        kube: kube::Client,
    ) -> Notifier {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(Router::new(counter, keys, cluster, Some(kube)).run(rx));
        Notifier {
            tx,
            noted: Arc::default(),
            stalled: Arc::default(),
            full: Arc::default(),
        }
    }

    /// Read the channels of every new revision.
    pub(crate) fn follow(&self, mut revisions: watch::Receiver<Option<Arc<Revision>>>) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let mut last = String::new();
            loop {
                let rev = revisions.borrow_and_update().clone();
                if let Some(rev) = rev.filter(|r| r.commit != last) {
                    last = rev.commit.clone();
                    if tx.send(Input::Repo(rev.repo.clone())).await.is_err() {
                        return;
                    }
                }
                if revisions.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    fn send(&self, fact: Fact) {
        match self.tx.try_send(Input::Fact(fact)) {
            Ok(()) => self.full.store(false, Ordering::Relaxed),
            Err(_) => {
                if !self.full.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "the notification queue is full; facts are dropped until it drains"
                    );
                }
            }
        }
    }

    /// A chunk's sync reports at `commit`: failures, held prunes and orphans, and the
    /// first fine report after them.
    pub(crate) fn synced(&self, reports: &[TenantReport], commit: &str) {
        for r in reports {
            // Left alone (another cluster's, suspended): says nothing about its state.
            if matches!(
                r.outcome,
                Outcome::Skipped | Outcome::Moved | Outcome::Suspended
            ) {
                continue;
            }
            let news = !r.is_ok() || r.prune_blocked() || r.outcome == Outcome::Orphaned;
            let was = {
                let mut noted = lock(&self.noted);
                if news {
                    !noted.insert(r.tenant.clone())
                } else {
                    noted.remove(&r.tenant)
                }
            };
            if !news && !was {
                continue;
            }
            self.send(Fact::Synced {
                tenant: r.tenant.clone(),
                outcome: r.outcome,
                error: r.first_error().map(str::to_string),
                prune_held: r
                    .prune_held
                    .as_ref()
                    .filter(|h| h.blocks())
                    .map(ToString::to_string),
                commit: commit.to_string(),
            });
        }
    }

    /// A tenant's health verdict changed: stalled is news, and ready after it.
    pub(crate) fn verdict(&self, tenant: &str, verdict: &Verdict) {
        let stalled = match verdict {
            Verdict::Stalled(objects) => {
                lock(&self.stalled).insert(tenant.to_string());
                Some(objects.clone())
            }
            Verdict::Ready if lock(&self.stalled).remove(tenant) => None,
            _ => return,
        };
        self.send(Fact::Health {
            tenant: tenant.to_string(),
            stalled,
        });
    }

    /// The rollout record changed from `before` to `after`: a halt (with why) or the end.
    pub(crate) fn rollout(&self, before: Option<&Record>, after: Option<&Record>) {
        let Some(a) = after else { return };
        if before
            .is_some_and(|b| b.commit == a.commit && b.phase == a.phase && b.reason == a.reason)
        {
            return;
        }
        let halted = match a.phase {
            Phase::Halted => Some(a.reason.clone().unwrap_or_else(|| a.summary())),
            Phase::Complete => None,
            Phase::Progressing => return,
        };
        self.send(Fact::Rollout {
            commit: a.commit.clone(),
            halted,
        });
    }
}

#[cfg(test)]
mod tests;
