//! Drift's decisions ([`super`]), through the agent's watches on the mock API server: what a
//! change of a managed object queues, and what it never does (fief's own writes, a change of
//! fields fief does not set, a list older than the tenant's last sync, the first list).

use std::time::{Duration, Instant};

use fief_core::status::Outcome;
use fief_kube::fixtures::Scenario;
use fief_kube::live::LiveObject;
use fief_kube::live_id;
use http::Method;

use super::{Seen, deleted, observe};
use crate::kit::{Kit, configmap_path, fleet, tenant, tenant_of, web};

/// An agent that synced tenant `acme` (component `app`).
async fn synced() -> Kit {
    let mut kit = Kit::start(&fleet("", &[tenant("acme", "", "", "")]), Scenario::new()).await;
    assert_eq!(kit.turn().await, ["acme"]);
    kit
}

fn app() -> String {
    configmap_path("acme-prod", "app")
}

fn greeting(kit: &Kit) -> String {
    let app = kit.server.object(&app()).expect("the ConfigMap exists");
    app["data"]["greeting"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Let the watches take the events of the last changes.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_hand_edit_of_a_field_fief_sets_queues_its_tenant_and_the_sync_repairs_it() {
    let mut kit = synced().await;
    kit.server
        .edit(&app(), |o| o["data"]["greeting"] = "edited".into());
    kit.wait("acme is queued by drift", |k| k.due("acme")).await;
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 1);
    assert_eq!(kit.turn().await, ["acme"]);
    assert_eq!(greeting(&kit), "hello");
}

#[tokio::test]
async fn a_change_of_fields_fief_does_not_set_is_not_drift() {
    let kit = synced().await;
    kit.server.edit(&app(), |o| {
        o["metadata"]["labels"]["team"] = "blue".into();
        o["metadata"]["annotations"] = serde_json::json!({"note": "by hand"});
    });
    settle().await;
    assert!(!kit.queued("acme"));
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 0);
}

#[tokio::test]
async fn a_deleted_managed_object_queues_its_tenant_and_is_created_again() {
    let mut kit = synced().await;
    kit.server.remove(&app());
    kit.wait("acme is queued by drift", |k| k.due("acme")).await;
    kit.turn().await;
    assert_eq!(greeting(&kit), "hello");
}

#[tokio::test]
async fn fiefs_own_writes_are_never_counted_as_drift() {
    let mut kit = synced().await;
    let files = fleet("", &[tenant("acme", "", "", "{greeting: hi}")]);
    kit.push(&files, &[]).await;
    assert_eq!(kit.turn().await, ["acme"]);
    assert_eq!(greeting(&kit), "hi");
    settle().await;
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 0);
    assert!(!kit.queued("acme"), "its own apply does not queue it again");
}

/// The live ConfigMap `app` as a watch hands it on: its id, its body with `greeting`, and
/// its version.
async fn listed(
    kit: &Kit,
    greeting: &str,
) -> (
    fief_core::objects::ObjectId,
    serde_json::Value,
    fief_core::inventory::AppliedVersion,
) {
    let resource = kit
        .resources
        .resolve("v1", "ConfigMap")
        .await
        .expect("ConfigMaps are known");
    let mut value = kit.server.object(&app()).expect("the ConfigMap exists");
    value["data"]["greeting"] = greeting.into();
    let live: LiveObject = serde_json::from_value(value).expect("a live object");
    let (value, version) = live.into_parts();
    (live_id(&resource, &value), value, version)
}

#[tokio::test]
async fn a_relist_that_began_before_the_tenants_last_sync_is_not_drift() {
    let before = Instant::now();
    let kit = synced().await;
    let (id, stale, version) = listed(&kit, "as before the sync").await;
    // A list that began before the sync may hold the object as it was before fief's write.
    observe(&kit.shared, &id, &stale, &version, Seen::Listed(before));
    assert!(!kit.queued("acme"));
    // A list that began after it holds the object as it is: a difference is drift.
    observe(
        &kit.shared,
        &id,
        &stale,
        &version,
        Seen::Listed(Instant::now()),
    );
    assert!(kit.queued("acme"));
}

#[tokio::test]
async fn the_first_list_is_the_baseline_and_never_drift() {
    let kit = synced().await;
    let (id, changed, version) = listed(&kit, "changed").await;
    observe(&kit.shared, &id, &changed, &version, Seen::First);
    deleted(&kit.shared, &id, Seen::First);
    assert!(!kit.queued("acme"));
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 0);
}

#[tokio::test]
async fn an_event_of_a_tenant_being_synced_is_its_own_write() {
    let kit = synced().await;
    let (id, changed, version) = listed(&kit, "mid-sync").await;
    assert!(kit.shared.start_sync("acme"));
    observe(&kit.shared, &id, &changed, &version, Seen::Event);
    deleted(&kit.shared, &id, Seen::Event);
    assert!(!kit.queued("acme"));
}

#[tokio::test]
async fn a_kind_that_cannot_be_watched_degrades_only_the_tenants_using_it() {
    let mut files = fleet(
        "",
        &[
            tenant("a", "", "", ""),
            tenant_of("b", "", "", &[("app", ""), ("web", "")]),
        ],
    );
    files.extend(web());
    let refused = Scenario::new().failing(Method::GET, "/apis/apps/v1/deployments", 403);
    let mut kit = Kit::start(&files, refused).await;
    assert_eq!(kit.turn().await, ["a", "b"]);
    assert_eq!(kit.attempt("a").map(|a| a.outcome), Some(Outcome::Applied));
    assert_eq!(kit.attempt("b").map(|a| a.outcome), Some(Outcome::Failed));
    let degraded = kit.shared.report.degraded();
    assert_eq!(degraded.keys().collect::<Vec<_>>(), ["b"]);
    assert!(degraded["b"].contains("Deployment"), "{degraded:?}");
    assert!(
        kit.server
            .object(&configmap_path("b-prod", "app"))
            .is_none(),
        "nothing of b is applied"
    );
}
