//! Kubernetes Events for tenant status, paced behind the syncs: on each tenant's inventory
//! ConfigMap and in each tenant's own namespaces, as [`fief_kube::tenant_events`] builds them.
//!
//! In: each chunk's sync results. Out: those Events, sent through kube-runtime's recorder by
//! a task of their own behind the syncs (16 in flight; 5 per second while a batch syncs).
//! What waits in the queue is each tenant's notes and the names of where they go
//! ([`Queued`]); each Event is built as it is sent, so a batch that syncs a whole fleet
//! queues a few hundred bytes a tenant, not its built Events.

use std::collections::BTreeMap;

use fief_kube::sync::SyncResult;
use fief_kube::tenant_events::{Queued, owned_namespaces, send};

/// The average rate Events are sent at while a batch syncs, per second; between batches they
/// go out as fast as [`fief_kube::tenant_events::EVENTS_IN_FLIGHT`] allows. A change that
/// syncs every tenant of a large fleet thus does not share the API server between its
/// applies and thousands of Event writes (at 1,000 tenants, about 3,000 Events: one per
/// tenant and one per tenant namespace): they follow its last apply.
const PER_SECOND_WHILE_SYNCING: f64 = 5.0;

/// One chunk's Events, held compactly until they are sent.
type Job = Queued;

/// The status Events of every sync, sent in the background behind the syncs, slowed to
/// [`PER_SECOND_WHILE_SYNCING`] while a batch syncs. Best effort: Events still queued when
/// the agent stops are not sent.
pub(super) struct Events {
    tx: tokio::sync::mpsc::UnboundedSender<Job>,
    syncing: tokio::sync::watch::Sender<bool>,
}

/// While held, a batch is syncing: Events are slowed down.
pub(super) struct Syncing<'a>(&'a tokio::sync::watch::Sender<bool>);

impl Drop for Syncing<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

impl Events {
    /// Start the sender task.
    pub(super) fn start(client: kube::Client) -> Events {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let syncing = tokio::sync::watch::Sender::new(false);
        let mut busy = syncing.subscribe();
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                // While a batch syncs, each chunk's Events first wait out their own pace, so
                // a batch shorter than that sends none of them among its applies; as soon as
                // the batch ends they go.
                let pace = job.len() as f64 / PER_SECOND_WHILE_SYNCING;
                let pace = std::time::Duration::from_secs_f64(pace);
                let _ = tokio::time::timeout(pace, busy.wait_for(|b| !*b)).await;
                send(&client, "fief-agent", job.events()).await;
            }
        });
        Events { tx, syncing }
    }

    /// Mark a batch as syncing until the guard is dropped.
    pub(super) fn syncing(&self) -> Syncing<'_> {
        self.syncing.send_replace(true);
        Syncing(&self.syncing)
    }

    /// Queue the Events of a chunk's sync results: on each inventory in `agent_namespace`
    /// and in each synced tenant's own namespaces.
    pub(super) fn send(&self, agent_namespace: &str, result: &SyncResult) {
        let namespaces = own_namespaces(result);
        let job = Queued::of(&result.reports, Some(agent_namespace), &namespaces);
        if job.is_empty() {
            return;
        }
        if self.tx.send(job).is_err() {
            tracing::debug!("the event sender has stopped; events not sent");
        }
    }
}

/// Each synced tenant's own namespaces, from the inventory its sync left.
fn own_namespaces(result: &SyncResult) -> BTreeMap<String, Vec<String>> {
    result
        .inventories
        .iter()
        .filter_map(|(t, inv)| Some((t.clone(), owned_namespaces(inv.as_ref()?))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fief_core::status::{Failure, Outcome, TenantReport};

    #[test]
    fn a_job_holds_an_event_per_changed_inventory_and_per_namespace_of_it() {
        let mut changed = TenantReport::new("a", Outcome::Applied);
        changed.counts.configured = 1;
        let unchanged = TenantReport::new("b", Outcome::Applied);
        let mut failed = TenantReport::new("c", Outcome::Failed);
        failed.fail(Failure::Apply, "refused");
        let namespaces = BTreeMap::from([
            (
                "a".to_string(),
                vec!["a-prod".to_string(), "a-dev".to_string()],
            ),
            ("b".to_string(), vec!["b-prod".to_string()]),
            ("c".to_string(), vec!["c-prod".to_string()]),
        ]);
        let job = Queued::of(
            &[changed, unchanged, failed],
            Some("fief-system"),
            &namespaces,
        );
        // a: its inventory and two namespaces; b: nothing changed; c: inventory and namespace.
        assert_eq!(job.len(), 5);
    }

    #[test]
    fn a_queued_batch_holds_its_tenants_notes_not_their_built_events() {
        let reports: Vec<TenantReport> = (0..500)
            .map(|i| {
                let mut r = TenantReport::new(&format!("tenant-{i:04}"), Outcome::Applied);
                r.counts.configured = 1;
                r.counts.unchanged = 25;
                r
            })
            .collect();
        let namespaces: BTreeMap<String, Vec<String>> = reports
            .iter()
            .map(|r| {
                let t = &r.tenant;
                (t.clone(), vec![format!("{t}-prod"), format!("{t}-dev")])
            })
            .collect();
        let mut queued = None;
        let held = -crate::memory::counted::freed(|| {
            queued = Some(Queued::of(&reports, Some("fief-system"), &namespaces));
        });
        let queued = queued.unwrap_or_default();
        let mut built = None;
        let built_bytes = -crate::memory::counted::freed(|| {
            built = Some(queued.events().collect::<Vec<_>>());
        });
        assert_eq!(built.map(|b| b.len()), Some(1500));
        assert_eq!(queued.len(), 1500);
        // Three Events a tenant, held as two notes and two names.
        assert!(
            held * 3 < built_bytes,
            "queued {held} B, the same Events built {built_bytes} B"
        );
    }
}
