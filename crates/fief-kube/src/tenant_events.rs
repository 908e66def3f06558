//! Tenant-visible status: Kubernetes Events in each tenant's own namespaces, so the tenant's
//! admins, operators and viewers (whose baseline Roles may read Events there) see their last
//! sync's outcome and error without any access to the agent namespace.
//!
//! In: sync reports and, per tenant, its inventory (only the Namespaces recorded there — ones
//! fief created or was handed for this tenant — ever receive an Event; a namespace the tenant
//! merely names, e.g. a reserved one refused at validate, never does). Out: one Event per
//! namespace for a sync that changed something (`Synced`), failed (`SyncFailed`, with the first
//! error) or had its prune held (`Stalled`); an unchanged tenant gets none (steady state
//! writes nothing). Messages are the reports' own, which never carry secret values.

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use fief_core::inventory::Inventory;
use fief_core::status::TenantReport;

/// Events sent at once.
const EVENTS_IN_FLIGHT: usize = 16;

/// The namespaces a tenant's inventory records as its own.
pub fn owned_namespaces(inv: &Inventory) -> Vec<String> {
    inv.entries
        .keys()
        .filter(|id| id.group.is_empty() && id.kind == "Namespace")
        .map(|id| id.name.clone())
        .collect()
}

/// The Event a report deserves in the tenant's namespaces, if any.
pub fn event_for(r: &TenantReport) -> Option<Event> {
    let c = &r.counts;
    let short = |s: &str| -> String { s.chars().take(1000).collect() };
    let (type_, reason, note) = if !r.is_ok() {
        let first = r
            .first_error()
            .map(str::to_string)
            .or_else(|| r.prune_held.as_ref().map(ToString::to_string))
            .unwrap_or_else(|| r.outcome.to_string());
        (
            EventType::Warning,
            "SyncFailed",
            format!("{} error(s); first: {first}", r.errors.len().max(1)),
        )
    } else if let Some(hold) = r.prune_held.as_ref().filter(|h| h.blocks()) {
        (EventType::Warning, "Stalled", format!("prune held: {hold}"))
    } else if c.created + c.configured + c.pruned > 0 {
        (
            EventType::Normal,
            "Synced",
            format!(
                "{} created, {} configured, {} pruned, {} unchanged",
                c.created, c.configured, c.pruned, c.unchanged
            ),
        )
    } else {
        return None;
    };
    Some(Event {
        type_,
        reason: reason.to_string(),
        note: Some(short(&note)),
        action: "Sync".to_string(),
        secondary: None,
    })
}

/// Publish each report's Event into the namespaces its tenant owns (`namespaces`: tenant →
/// its own namespaces). Failures to publish are logged at debug level and never fail a sync.
pub async fn publish(
    client: &kube::Client,
    controller: &str,
    reports: &[TenantReport],
    namespaces: &BTreeMap<String, Vec<String>>,
) {
    let reporter = Reporter {
        controller: controller.to_string(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let mut sends = Vec::new();
    for r in reports {
        if event_for(r).is_none() {
            continue;
        }
        for ns in namespaces.get(&r.tenant).into_iter().flatten() {
            sends.push((r, ns.as_str()));
        }
    }
    // A few at a time: a cold apply of many tenants is not held up by its Events.
    stream::iter(sends)
        .for_each_concurrent(EVENTS_IN_FLIGHT, |(r, ns)| {
            let recorder = &recorder;
            async move {
                let (tenant, Some(event)) = (r.tenant.as_str(), event_for(r)) else {
                    return;
                };
                // The Event is about the Namespace and lives in it, so `kubectl get events -n
                // NS` shows it to whoever may read Events there.
                let reference = ObjectReference {
                    api_version: Some("v1".to_string()),
                    kind: Some("Namespace".to_string()),
                    name: Some(ns.to_string()),
                    namespace: Some(ns.to_string()),
                    ..Default::default()
                };
                if let Err(e) = recorder.publish(&event, &reference).await {
                    tracing::debug!(tenant, namespace = ns, error = %e, "cannot publish a tenant event");
                }
            }
        })
        .await;
}
