//! A sync's status as Kubernetes Events: the one builder and sender of fief's Events, for
//! two audiences. On the tenant's inventory ConfigMap in the agent namespace, for whoever runs
//! the agent; in each tenant's own namespaces, so the tenant's admins, operators and viewers
//! (whose baseline Roles may read Events there) see their last sync's outcome and error
//! without any access to the agent namespace.
//!
//! In: sync reports, the agent namespace (for the inventories' Events) and, per tenant, its
//! inventory (only the Namespaces recorded there — ones fief created or was handed for this
//! tenant — ever receive an Event; a namespace the tenant merely names, e.g. a reserved one
//! refused at validate, never does). Out: at most one Event per report and place, sent
//! [`EVENTS_IN_FLIGHT`] at a time. On the inventory: `Applied` or `Purged` for a sync that
//! changed something or had its prune held, a failure's reason
//! ([`fief_core::status::Failure::event_reason`]: `RenderFailed`, `SyncFailed`) with its
//! first error. In the tenant's namespaces: `Synced`, `SyncFailed` (with the error count and
//! the first error) or `Stalled` (a prune held). An unchanged tenant gets none (steady state
//! writes nothing). Messages are the reports' own, which never carry secret values. Until
//! they are sent, a batch's Events are held as [`Queued`]: each tenant's messages and the
//! names of where they go, each Event built as it is sent.

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use fief_core::inventory::Inventory;
use fief_core::status::{Failure, Outcome, TenantReport};

/// Events sent at once.
pub const EVENTS_IN_FLIGHT: usize = 16;

/// Who an Event is for, and so where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Whoever runs the agent: on the tenant's inventory ConfigMap.
    Inventory,
    /// The tenant's own people: in each namespace the tenant owns.
    Tenant,
}

/// The namespaces a tenant's inventory records as its own.
pub fn owned_namespaces(inv: &Inventory) -> Vec<String> {
    inv.entries
        .keys()
        .filter(|id| id.group.is_empty() && id.kind == "Namespace")
        .map(|id| id.name.clone())
        .collect()
}

/// The Event a report deserves for `audience`, if any.
pub fn event_for(r: &TenantReport, audience: Audience) -> Option<Event> {
    note_for(r, audience).map(|n| n.event())
}

/// What differs from one of fief's Events to the next: its type, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Note {
    warning: bool,
    reason: &'static str,
    text: Box<str>,
}

impl Note {
    fn new(type_: EventType, reason: &'static str, text: String) -> Note {
        let text = match text.char_indices().nth(NOTE_CHARS) {
            Some((end, _)) => text[..end].into(),
            None => text.into(),
        };
        Note {
            warning: matches!(type_, EventType::Warning),
            reason,
            text,
        }
    }

    fn event(&self) -> Event {
        Event {
            type_: if self.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: self.reason.to_string(),
            note: Some(self.text.to_string()),
            action: "Sync".to_string(),
            secondary: None,
        }
    }
}

/// Longest message an Event carries, in characters.
const NOTE_CHARS: usize = 1000;

/// [`event_for`]'s parts, without building the Event.
fn note_for(r: &TenantReport, audience: Audience) -> Option<Note> {
    let c = &r.counts;
    let changed = c.created + c.configured + c.pruned > 0;
    let counts = || {
        format!(
            "{} created, {} configured, {} pruned, {} unchanged",
            c.created, c.configured, c.pruned, c.unchanged
        )
    };
    let (type_, reason, note) = if !r.is_ok() {
        let first = r
            .first_error()
            .map(str::to_string)
            .or_else(|| r.prune_held.as_ref().map(ToString::to_string))
            .unwrap_or_else(|| r.outcome.to_string());
        match audience {
            Audience::Inventory => {
                let reason = r.failure().map_or("SyncFailed", Failure::event_reason);
                (EventType::Warning, reason, first)
            }
            Audience::Tenant => {
                let note = format!("{} error(s); first: {first}", r.errors.len().max(1));
                (EventType::Warning, "SyncFailed", note)
            }
        }
    } else {
        match (audience, &r.prune_held) {
            (Audience::Inventory, hold) if changed || hold.is_some() => {
                let note = match hold {
                    Some(hold) => format!("{}; {hold}", counts()),
                    None => counts(),
                };
                let reason = if r.outcome == Outcome::Purged {
                    "Purged"
                } else {
                    "Applied"
                };
                (EventType::Normal, reason, note)
            }
            (Audience::Tenant, Some(hold)) if hold.blocks() => {
                (EventType::Warning, "Stalled", format!("prune held: {hold}"))
            }
            (Audience::Tenant, _) if changed => (EventType::Normal, "Synced", counts()),
            _ => return None,
        }
    };
    Some(Note::new(type_, reason, note))
}

/// One tenant's Events, as their notes and the names of where they go.
#[derive(Debug)]
struct TenantEvents {
    tenant: Box<str>,
    inventory: Option<Note>,
    namespaces: Option<(Note, Box<[Box<str>]>)>,
}

/// Reports' Events, held until they are sent: per tenant that gets any, its notes and the
/// namespaces they go to, and each Event and its reference made only as it is sent. The agent
/// queues the Events of a whole batch behind its syncs, so what waits is kept this small.
#[derive(Debug, Default)]
pub struct Queued {
    agent_namespace: Option<Box<str>>,
    tenants: Vec<TenantEvents>,
    count: usize,
}

impl Queued {
    /// The Events of `reports`: on each inventory in `agent_namespace` (when given) and in
    /// each tenant's own namespaces (`namespaces`: tenant → its own namespaces).
    pub fn of(
        reports: &[TenantReport],
        agent_namespace: Option<&str>,
        namespaces: &BTreeMap<String, Vec<String>>,
    ) -> Queued {
        let mut queued = Queued {
            agent_namespace: agent_namespace.map(Into::into),
            ..Queued::default()
        };
        for r in reports {
            let inventory = agent_namespace.and(note_for(r, Audience::Inventory));
            let own = namespaces.get(&r.tenant).filter(|n| !n.is_empty());
            let in_namespaces = own.and_then(|own| {
                let note = note_for(r, Audience::Tenant)?;
                Some((note, own.iter().map(|n| n.as_str().into()).collect()))
            });
            let count = usize::from(inventory.is_some())
                + in_namespaces
                    .as_ref()
                    .map_or(0, |(_, n): &(_, Box<[_]>)| n.len());
            if count > 0 {
                queued.count += count;
                queued.tenants.push(TenantEvents {
                    tenant: r.tenant.as_str().into(),
                    inventory,
                    namespaces: in_namespaces,
                });
            }
        }
        queued.tenants.shrink_to_fit();
        queued
    }

    /// How many Events are held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no Event is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Each Event and where it goes, made as it is asked for.
    pub fn events(&self) -> impl Iterator<Item = (Event, ObjectReference)> + '_ {
        self.tenants.iter().flat_map(move |t| {
            let on_inventory = self.agent_namespace.as_deref().and_then(|ns| {
                let name = fief_core::objects::inventory_name(&t.tenant);
                Some((
                    t.inventory.as_ref()?.event(),
                    reference("ConfigMap", &name, ns),
                ))
            });
            // The Event is about the Namespace and lives in it, so `kubectl get events -n NS`
            // shows it to whoever may read Events there.
            let in_namespaces = t.namespaces.iter().flat_map(|(note, names)| {
                names
                    .iter()
                    .map(move |ns| (note.event(), reference("Namespace", ns, ns)))
            });
            on_inventory.into_iter().chain(in_namespaces)
        })
    }
}

/// A reference to the core (`v1`) object `kind` `name` in `namespace`.
fn reference(kind: &str, name: &str, namespace: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_string()),
        kind: Some(kind.to_string()),
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        ..Default::default()
    }
}

/// Send `events` as `controller` (the Pod in `POD_NAME` its instance), [`EVENTS_IN_FLIGHT`]
/// at a time, so a cold apply of many tenants is not held up by its Events. Failures to
/// publish are logged at debug level and never fail a sync.
///
/// Each Event goes through a recorder of its own: kube-runtime's recorder keeps every Event
/// it sent (for a few minutes, to count a repeat as a series) and scans them all on each
/// send, which for the Events of a whole fleet would hold each one and cost the square of
/// their number. One call sends at most one Event per object and reason, so no series is
/// lost.
pub async fn send(
    client: &kube::Client,
    controller: &str,
    events: impl IntoIterator<Item = (Event, ObjectReference)>,
) {
    let reporter = Reporter {
        controller: controller.to_string(),
        instance: std::env::var("POD_NAME").ok(),
    };
    stream::iter(events)
        .for_each_concurrent(EVENTS_IN_FLIGHT, |(event, reference)| {
            let recorder = Recorder::new(client.clone(), reporter.clone());
            async move {
                if let Err(e) = recorder.publish(&event, &reference).await {
                    let (kind, name) = (reference.kind, reference.name);
                    tracing::debug!(?kind, ?name, error = %e, "cannot publish an event");
                }
            }
        })
        .await;
}

/// Publish each report's Event into the namespaces its tenant owns (`namespaces`: tenant →
/// its own namespaces), as `controller`; each Event is made as it is sent.
pub async fn publish(
    client: &kube::Client,
    controller: &str,
    reports: &[TenantReport],
    namespaces: &BTreeMap<String, Vec<String>>,
) {
    let queued = Queued::of(reports, None, namespaces);
    send(client, controller, queued.events()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use fief_core::plan::PruneHold;

    fn events_of(
        reports: &[TenantReport],
        agent_namespace: Option<&str>,
        namespaces: &BTreeMap<String, Vec<String>>,
    ) -> Vec<(Event, ObjectReference)> {
        let queued = Queued::of(reports, agent_namespace, namespaces);
        let events: Vec<_> = queued.events().collect();
        assert_eq!(queued.len(), events.len(), "the count is what is sent");
        events
    }

    fn note(e: &Option<Event>) -> Option<(&str, &str)> {
        e.as_ref()
            .map(|e| (e.reason.as_str(), e.note.as_deref().unwrap_or("")))
    }

    #[test]
    fn a_failure_names_its_kind_on_the_inventory_and_counts_its_errors_for_the_tenant() {
        let mut invalid = TenantReport::new("a", Outcome::Invalid);
        invalid.fail(Failure::Render, "a.yaml:3: bad");
        let inv = event_for(&invalid, Audience::Inventory);
        assert_eq!(note(&inv), Some(("RenderFailed", "a.yaml:3: bad")));
        let tenant = event_for(&invalid, Audience::Tenant);
        assert_eq!(
            note(&tenant),
            Some(("SyncFailed", "1 error(s); first: a.yaml:3: bad"))
        );
        let mut failed = TenantReport::new("a", Outcome::Failed);
        failed.fail(Failure::Forbidden, "apply: 403");
        let inv = event_for(&failed, Audience::Inventory);
        assert_eq!(note(&inv), Some(("SyncFailed", "apply: 403")));
    }

    #[test]
    fn a_change_is_applied_on_the_inventory_and_synced_for_the_tenant_and_no_change_is_silent() {
        let mut changed = TenantReport::new("a", Outcome::Applied);
        changed.counts.created = 2;
        let inv = event_for(&changed, Audience::Inventory);
        let counts = "2 created, 0 configured, 0 pruned, 0 unchanged";
        assert_eq!(note(&inv), Some(("Applied", counts)));
        assert_eq!(
            note(&event_for(&changed, Audience::Tenant)),
            Some(("Synced", counts))
        );
        let unchanged = TenantReport::new("a", Outcome::Applied);
        assert!(event_for(&unchanged, Audience::Inventory).is_none());
        assert!(event_for(&unchanged, Audience::Tenant).is_none());
        let purged = TenantReport::new("a", Outcome::Purged);
        let mut pruned = purged.clone();
        pruned.counts.pruned = 1;
        let inv = event_for(&pruned, Audience::Inventory);
        assert_eq!(inv.map(|e| e.reason), Some("Purged".to_string()));
    }

    #[test]
    fn a_held_prune_is_noted_on_the_inventory_and_stalls_for_the_tenant_when_it_blocks() {
        let mut held = TenantReport::new("a", Outcome::Applied);
        held.prune_held = Some(PruneHold::EmptyRender.into());
        let inv = event_for(&held, Audience::Inventory).unwrap();
        assert_eq!(inv.reason, "Applied");
        let tenant = event_for(&held, Audience::Tenant).unwrap();
        assert_eq!(tenant.reason, "Stalled");
        assert!(matches!(tenant.type_, EventType::Warning));
    }

    #[test]
    fn events_go_to_the_inventory_and_to_each_namespace_the_tenant_owns() {
        let mut changed = TenantReport::new("a", Outcome::Applied);
        changed.counts.configured = 1;
        let unchanged = TenantReport::new("b", Outcome::Applied);
        let namespaces = BTreeMap::from([
            (
                "a".to_string(),
                vec!["a-prod".to_string(), "a-dev".to_string()],
            ),
            ("b".to_string(), vec!["b-prod".to_string()]),
        ]);
        let reports = [changed, unchanged];
        let places: Vec<(String, String)> = events_of(&reports, Some("fief-system"), &namespaces)
            .into_iter()
            .map(|(_, r)| (r.kind.unwrap(), r.namespace.unwrap()))
            .collect();
        let want = [
            ("ConfigMap", "fief-system"),
            ("Namespace", "a-prod"),
            ("Namespace", "a-dev"),
        ];
        assert_eq!(places, want.map(|(k, n)| (k.to_string(), n.to_string())));
        assert_eq!(events_of(&reports, None, &namespaces).len(), 2);
    }
}
