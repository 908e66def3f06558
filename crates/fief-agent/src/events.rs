//! Kubernetes Events for tenant status: one when a sync changed something, one when it
//! failed, on the tenant's inventory ConfigMap.
//!
//! In: each chunk's sync results. Out: Events through kube-runtime's recorder, sent by a task
//! of their own behind the syncs (16 in flight; 5 per second while a batch syncs).

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use fief_core::status::Outcome;
use fief_kube::sync::{SyncResult, TenantReport};

/// Events sent at once.
const IN_FLIGHT: usize = 16;

/// The average rate Events are sent at while a batch syncs, per second; between batches they
/// go out as fast as [`IN_FLIGHT`] allows. A change that syncs every tenant of a large fleet
/// thus does not share the API server between its applies and thousands of Event writes (at
/// 1,000 tenants, about 3,000 Events: one per tenant and one per tenant namespace): they
/// follow its last apply.
const PER_SECOND_WHILE_SYNCING: f64 = 5.0;

/// One chunk's Events.
struct Job {
    agent_namespace: String,
    reports: Vec<TenantReport>,
    /// Each synced tenant's own namespaces.
    namespaces: BTreeMap<String, Vec<String>>,
}

/// The status Events of every sync, sent in the background behind the syncs: on each
/// inventory ConfigMap ([`publish_events`]) and in each tenant's own namespaces
/// ([`fief_kube::tenant_events`]), [`IN_FLIGHT`] at a time, slowed to
/// [`PER_SECOND_WHILE_SYNCING`] while a batch syncs. Best effort: Events still queued when
/// the agent stops are not sent.
pub(super) struct Events {
    tx: tokio::sync::mpsc::UnboundedSender<Job>,
    syncing: tokio::sync::watch::Sender<bool>,
}

impl Job {
    /// How many Events the job sends: one on each inventory whose report deserves one, and
    /// one in each of that tenant's own namespaces whose report deserves one there.
    fn count(&self) -> usize {
        self.reports
            .iter()
            .map(|r| {
                let own = self.namespaces.get(&r.tenant).map_or(0, Vec::len);
                usize::from(event_for(r).is_some())
                    + fief_kube::tenant_events::event_for(r).map_or(0, |_| own)
            })
            .sum()
    }
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
                let pace = job.count() as f64 / PER_SECOND_WHILE_SYNCING;
                let pace = std::time::Duration::from_secs_f64(pace);
                let _ = tokio::time::timeout(pace, busy.wait_for(|b| !*b)).await;
                futures::join!(
                    publish_events(&client, &job.agent_namespace, &job.reports),
                    fief_kube::tenant_events::publish(
                        &client,
                        "fief-agent",
                        &job.reports,
                        &job.namespaces
                    ),
                );
            }
        });
        Events { tx, syncing }
    }

    /// Mark a batch as syncing until the guard is dropped.
    pub(super) fn syncing(&self) -> Syncing<'_> {
        self.syncing.send_replace(true);
        Syncing(&self.syncing)
    }

    /// Queue the Events of a chunk's sync results.
    pub(super) fn send(&self, agent_namespace: &str, result: &SyncResult) {
        let namespaces: BTreeMap<String, Vec<String>> = result
            .inventories
            .iter()
            .filter_map(|(t, inv)| {
                let own = fief_kube::tenant_events::owned_namespaces(inv.as_ref()?);
                Some((t.clone(), own))
            })
            .collect();
        let job = Job {
            agent_namespace: agent_namespace.to_string(),
            reports: result.reports.clone(),
            namespaces,
        };
        if self.tx.send(job).is_err() {
            tracing::debug!("the event sender has stopped; events not sent");
        }
    }
}

/// The Event a report deserves on its inventory ConfigMap, if any.
fn event_for(r: &TenantReport) -> Option<Event> {
    let c = &r.counts;
    let (type_, reason, note) = if !r.is_ok() {
        let note = r
            .first_error()
            .map(str::to_string)
            .or_else(|| r.prune_held.as_ref().map(ToString::to_string))
            .unwrap_or_else(|| r.outcome.to_string());
        let reason = r
            .failure()
            .map_or("SyncFailed", fief_core::status::Failure::event_reason);
        (EventType::Warning, reason, note)
    } else if c.created + c.configured + c.pruned > 0 || r.prune_held.is_some() {
        let mut note = format!(
            "{} created, {} configured, {} pruned, {} unchanged",
            c.created, c.configured, c.pruned, c.unchanged
        );
        if let Some(hold) = &r.prune_held {
            note = format!("{note}; {hold}");
        }
        let reason = if r.outcome == Outcome::Purged {
            "Purged"
        } else {
            "Applied"
        };
        (EventType::Normal, reason, note)
    } else {
        return None;
    };
    Some(Event {
        type_,
        reason: reason.to_string(),
        note: Some(note.chars().take(1000).collect()),
        action: "Sync".to_string(),
        secondary: None,
    })
}

/// Status as Kubernetes Events on each tenant's inventory ConfigMap: one when a sync changed
/// something, one when it failed, [`IN_FLIGHT`] at a time. An unchanged tenant gets none
/// (steady state writes nothing).
async fn publish_events(client: &kube::Client, agent_namespace: &str, reports: &[TenantReport]) {
    let reporter = Reporter {
        controller: "fief-agent".to_string(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let events: Vec<(&str, Event)> = reports
        .iter()
        .filter_map(|r| Some((r.tenant.as_str(), event_for(r)?)))
        .collect();
    stream::iter(events)
        .for_each_concurrent(IN_FLIGHT, |(tenant, event)| {
            let recorder = &recorder;
            async move {
                let reference = k8s_openapi::api::core::v1::ObjectReference {
                    api_version: Some("v1".to_string()),
                    kind: Some("ConfigMap".to_string()),
                    name: Some(fief_core::objects::inventory_name(tenant)),
                    namespace: Some(agent_namespace.to_string()),
                    ..Default::default()
                };
                if let Err(e) = recorder.publish(&event, &reference).await {
                    tracing::debug!(tenant, error = %e, "cannot publish an event");
                }
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_counts_an_event_per_changed_inventory_and_per_namespace_of_it() {
        let mut changed = TenantReport::new("a", Outcome::Applied);
        changed.counts.configured = 1;
        let unchanged = TenantReport::new("b", Outcome::Applied);
        let mut failed = TenantReport::new("c", Outcome::Failed);
        failed.fail(fief_core::status::Failure::Apply, "refused");
        let job = Job {
            agent_namespace: "fief-system".to_string(),
            reports: vec![changed, unchanged, failed],
            namespaces: BTreeMap::from([
                (
                    "a".to_string(),
                    vec!["a-prod".to_string(), "a-dev".to_string()],
                ),
                ("b".to_string(), vec!["b-prod".to_string()]),
                ("c".to_string(), vec!["c-prod".to_string()]),
            ]),
        };
        // a: its inventory and two namespaces; b: nothing changed; c: inventory and namespace.
        assert_eq!(job.count(), 5);
    }
}
