//! Kubernetes Events for tenant status: one when a sync changed something, one when it
//! failed, on the tenant's inventory ConfigMap.
//!
//! In: sync reports. Out: Events through kube-runtime's recorder.

use super::Shared;

/// Status as Kubernetes Events on each tenant's inventory ConfigMap: one when a sync changed
/// something, one when it failed. An unchanged tenant gets none (steady state writes nothing).
pub(super) async fn publish_events(
    shared: &Shared,
    agent_namespace: &str,
    reports: &[crate::kube::sync::TenantReport],
) {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let reporter = Reporter {
        controller: "fief-agent".to_string(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(shared.client.clone(), reporter);
    for r in reports {
        let c = &r.counts;
        let event = if !r.is_ok() {
            let note = r
                .errors
                .first()
                .cloned()
                .or_else(|| r.prune_held.clone())
                .unwrap_or_else(|| r.outcome.clone());
            Event {
                type_: EventType::Warning,
                reason: if r.outcome == "invalid" {
                    "RenderFailed"
                } else {
                    "SyncFailed"
                }
                .to_string(),
                note: Some(note.chars().take(1000).collect()),
                action: "Sync".to_string(),
                secondary: None,
            }
        } else if c.created + c.configured + c.pruned > 0 || r.prune_held.is_some() {
            let mut note = format!(
                "{} created, {} configured, {} pruned, {} unchanged",
                c.created, c.configured, c.pruned, c.unchanged
            );
            if let Some(hold) = &r.prune_held {
                note = format!("{note}; {hold}");
            }
            Event {
                type_: EventType::Normal,
                reason: if r.outcome == "purged" {
                    "Purged"
                } else {
                    "Applied"
                }
                .to_string(),
                note: Some(note.chars().take(1000).collect()),
                action: "Sync".to_string(),
                secondary: None,
            }
        } else {
            continue;
        };
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("v1".to_string()),
            kind: Some("ConfigMap".to_string()),
            name: Some(crate::core::objects::inventory_name(&r.tenant)),
            namespace: Some(agent_namespace.to_string()),
            ..Default::default()
        };
        if let Err(e) = recorder.publish(&event, &reference).await {
            tracing::debug!(tenant = r.tenant, error = %e, "cannot publish an event");
        }
    }
}
