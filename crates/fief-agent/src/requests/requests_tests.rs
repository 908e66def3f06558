//! The day-2 requests' decisions ([`crate::requests`]), through the agent's watch of its
//! namespace's ConfigMaps on the mock API server: a suspended tenant is left alone (also at
//! start) and synced at once when resumed; a `fief reconcile` request fetches, syncs its
//! tenants now and is answered on the ConfigMap that carried it.

use fief_core::objects;
use fief_core::status::{
    ANNOTATION_HANDLED_AT, ANNOTATION_RECONCILE_RESULT, ANNOTATION_REQUESTED_AT,
    ANNOTATION_SUSPENDED, RECONCILE_ALL,
};
use fief_kube::fixtures::Scenario;
use http::Method;
use serde_json::json;

use crate::kit::{AGENT_NS, Kit, configmap_path, fleet, inventory_path, tenant};

/// Wait until the reconcile request on the inventory at `path` is answered; its result.
async fn answer(kit: &mut Kit, path: &str) -> String {
    kit.until("the request is answered", |k| {
        k.annotation(path, ANNOTATION_HANDLED_AT).is_some()
    })
    .await;
    kit.annotation(path, ANNOTATION_RECONCILE_RESULT)
        .unwrap_or_default()
}
use crate::requests::is_suspended;

/// Tenants `a` (with `greeting`) and `b`, sharing the component's varz greeting `shared`.
fn two(greeting: &str, shared: &str) -> Vec<(String, String)> {
    let mut files = fleet(
        "",
        &[
            tenant("a", "", "", &format!("{{greeting: {greeting}}}")),
            tenant("b", "", "", ""),
        ],
    );
    files.push((
        "components/app/varz.yaml".to_string(),
        format!("configmaps: [app]\ngreeting: {shared}\n"),
    ));
    files
}

fn greeting(kit: &Kit, tenant: &str) -> String {
    let app = kit
        .server
        .object(&configmap_path(&format!("{tenant}-prod"), "app"));
    let app = app.expect("the ConfigMap exists");
    app["data"]["greeting"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// An agent that synced [`two`] (`a` saying `hi`, `b` the shared `hello`).
async fn synced() -> Kit {
    let mut kit = Kit::start(&two("hi", "hello"), Scenario::new()).await;
    assert_eq!(kit.turn().await, ["a", "b"]);
    kit
}

const SUSPENDED: &str = "by alice at 2026-01-01T00:00:00Z: incident 42";

#[tokio::test]
async fn a_suspended_tenant_is_not_synced_and_is_synced_at_once_when_resumed() {
    let mut kit = synced().await;
    kit.annotate(&inventory_path("a"), ANNOTATION_SUSPENDED, Some(SUSPENDED));
    kit.wait("a is suspended", |k| is_suspended(&k.shared, "a"))
        .await;
    kit.push(&two("bye", "hey"), &[]).await;
    kit.turn().await;
    // a is left alone, b is synced.
    assert_eq!(
        (greeting(&kit, "a"), greeting(&kit, "b")),
        ("hi".into(), "hey".into())
    );
    kit.annotate(&inventory_path("a"), ANNOTATION_SUSPENDED, None);
    kit.wait("a is queued on its resume", |k| k.due("a")).await;
    assert_eq!(kit.turn().await, ["a"]);
    assert_eq!(greeting(&kit, "a"), "bye");
}

#[tokio::test]
async fn a_tenant_suspended_while_the_agent_was_down_is_not_synced_at_start() {
    let kit = synced().await;
    kit.annotate(&inventory_path("a"), ANNOTATION_SUSPENDED, Some(SUSPENDED));
    kit.repo.commit(&two("bye", "hello"), &[]);
    let mut kit = kit.restart().await;
    kit.turn().await;
    assert_eq!(
        greeting(&kit, "a"),
        "hi",
        "the first batch waits for the suspensions"
    );
    assert!(is_suspended(&kit.shared, "a"));
}

#[tokio::test]
async fn a_reconcile_request_syncs_its_tenant_now_and_is_answered_on_its_inventory() {
    let mut kit = synced().await;
    let rendered = kit.shared.cluster.metrics().tenants_rendered.get();
    kit.annotate(&inventory_path("a"), ANNOTATION_REQUESTED_AT, Some("t1"));
    let path = inventory_path("a");
    kit.until("the request is answered", |k| {
        k.annotation(&path, ANNOTATION_HANDLED_AT).as_deref() == Some("t1")
    })
    .await;
    let result = kit.annotation(&path, ANNOTATION_RECONCILE_RESULT);
    let result = result.unwrap_or_default();
    assert!(
        result.starts_with("Ready: 1 tenant(s) synced at commit"),
        "{result}"
    );
    assert_eq!(
        kit.shared.cluster.metrics().tenants_rendered.get(),
        rendered + 1,
        "a, rendered"
    );
}

#[tokio::test]
async fn a_reconcile_request_for_every_tenant_is_answered_on_its_own_configmap() {
    let mut kit = synced().await;
    let path = configmap_path(AGENT_NS, RECONCILE_ALL);
    kit.server.put(
        &path,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": RECONCILE_ALL, "namespace": AGENT_NS,
                "labels": {objects::LABEL_MANAGED_BY: "fief"},
                "annotations": {ANNOTATION_REQUESTED_AT: "t1"}}}),
    );
    let result = answer(&mut kit, &path).await;
    assert!(result.starts_with("Ready: 2 tenant(s)"), "{result}");
}

#[tokio::test]
async fn a_reconcile_request_for_a_suspended_tenant_leaves_it_alone_and_says_so() {
    let mut kit = synced().await;
    let path = inventory_path("a");
    kit.annotate(&path, ANNOTATION_SUSPENDED, Some(SUSPENDED));
    kit.wait("a is suspended", |k| is_suspended(&k.shared, "a"))
        .await;
    kit.annotate(&path, ANNOTATION_REQUESTED_AT, Some("t1"));
    let result = answer(&mut kit, &path).await;
    assert!(
        result.starts_with("Suspended: nothing synced; left alone: a (suspended by alice"),
        "{result}"
    );
}

#[tokio::test]
async fn a_reconcile_request_whose_tenant_fails_is_answered_failed_with_why() {
    let mut kit = synced().await;
    kit.push(&two("bye", "hello"), &[]).await;
    kit.server
        .fail(Method::PATCH, &configmap_path("a-prod", "app"), 500);
    let path = inventory_path("a");
    kit.annotate(&path, ANNOTATION_REQUESTED_AT, Some("t1"));
    let result = answer(&mut kit, &path).await;
    assert!(
        result.starts_with("Failed: 1 of 1 tenant(s) not synced"),
        "{result}"
    );
    assert!(result.contains("a: "), "{result}");
}

#[tokio::test]
async fn a_reconcile_request_for_a_tenant_with_no_file_is_answered_failed() {
    let mut kit = synced().await;
    let path = inventory_path("gone");
    kit.server.put(
        &path,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": objects::inventory_name("gone"), "namespace": AGENT_NS,
                "labels": {objects::LABEL_MANAGED_BY: "fief", objects::LABEL_TENANT: "gone"},
                "annotations": {ANNOTATION_REQUESTED_AT: "t1"}}}),
    );
    let result = answer(&mut kit, &path).await;
    assert!(
        result.contains("tenant gone has no tenant file in git"),
        "{result}"
    );
}
