//! The inventories the agent reads, holds and evicts ([`super::inventories`]), through its
//! loop against the mock API server: none is held after a start, a synced tenant's is read
//! back (by name, its own only) before its next sync, a read that fails leaves the tenant
//! for a retry, and a tenant whose last sync was interrupted is applied again in full. A
//! change many tenants take reads their inventories in one walk of pages, not one by one.

use http::Method;

use super::kit::{AGENT_NS, Kit, configmap_path, fleet, inventory_path, tenant};
use fief_core::objects;
use fief_core::status::Outcome;
use fief_kube::fixtures::Scenario;

/// Tenants `a` (with `values`), `b` and `c`.
fn three(values: &str) -> Vec<(String, String)> {
    fleet(
        "",
        &[
            tenant("a", "", "", values),
            tenant("b", "", "", ""),
            tenant("c", "", "", ""),
        ],
    )
}

/// The inventories read by this agent since the log was cleared: GETs by name, and LISTs of
/// the agent namespace's inventories.
fn inventory_reads(kit: &Kit) -> (Vec<String>, usize) {
    let requests = kit.server.requests();
    let prefix = inventory_path("");
    let gets = requests
        .iter()
        .filter(|r| r.method == Method::GET && r.path.starts_with(&prefix))
        .map(|r| r.path.trim_start_matches(&prefix).to_string())
        .collect();
    let collection = format!("/api/v1/namespaces/{AGENT_NS}/configmaps");
    let lists = requests
        .iter()
        .filter(|r| r.path == collection && !r.is_watch())
        .filter(|r| {
            r.param("labelSelector")
                .is_some_and(|s| s.contains(fief_core::inventory::LABEL_APPLYSET_ID))
        })
        .count();
    (gets, lists)
}

#[tokio::test]
async fn after_a_start_no_inventory_is_held_and_each_is_read_back_before_its_tenant_syncs() {
    let mut kit = Kit::start(&three(""), Scenario::new()).await;
    kit.turn().await;
    kit.repo.commit(&three("{greeting: hi}"), &[]);
    let mut kit = kit.restart().await;
    kit.turn().await;
    assert_eq!(kit.greeting("a"), "hi", "a is synced, b and c verified");
    let held = kit.state.inventories.as_ref().expect("inventories in hand");
    assert!(held.is_empty(), "none is held: {:?}", held.keys());
    for t in ["a", "b", "c"] {
        assert!(
            kit.state.evicted.contains(t),
            "{t}'s is read back before its next sync"
        );
    }
    let (_, lists) = inventory_reads(&kit);
    assert!(lists >= 1, "a start reads every inventory, in pages");
}

#[tokio::test]
async fn a_change_of_one_tenant_reads_back_its_own_inventory_only() {
    let mut kit = Kit::start(&three(""), Scenario::new()).await;
    kit.turn().await;
    kit.server.clear_log();
    kit.push(&three("{greeting: hi}"), &[]).await;
    assert_eq!(kit.turn().await, ["a"]);
    let (gets, lists) = inventory_reads(&kit);
    assert_eq!(gets, ["a"], "by name: {}", objects::inventory_name("a"));
    assert_eq!(lists, 0, "no read of the whole namespace");
}

#[tokio::test]
async fn an_inventory_that_cannot_be_read_leaves_its_tenant_for_a_retry_with_nothing_applied() {
    let mut kit = Kit::start(&three(""), Scenario::new()).await;
    kit.turn().await;
    let path = inventory_path("a");
    kit.server.fail(Method::GET, &path, 500);
    kit.server.clear_log();
    kit.push(&three("{greeting: hi}"), &[]).await;
    kit.turn().await;
    assert!(
        kit.server.applied_paths().is_empty(),
        "{:?}",
        kit.server.applied_paths()
    );
    assert!(kit.queued("a") && !kit.due("a"), "retried after a backoff");
    kit.server.heal(&Method::GET, &path);
    kit.until("a is synced", |k| k.greeting("a") == "hi").await;
}

#[tokio::test]
async fn a_tenant_whose_last_sync_was_interrupted_is_applied_again_in_full() {
    let mut kit = Kit::start(&three(""), Scenario::new()).await;
    kit.turn().await;
    // A sync that adds an object records its inventory before its first apply and completes
    // it after: with the completion refused, the inventory says a sync is under way, as after
    // a SIGKILL.
    let path = inventory_path("a");
    kit.server.fail_after(Method::PATCH, &path, 1, 500);
    kit.push(&three("{configmaps: [app, extra]}"), &[]).await;
    kit.turn().await;
    assert_eq!(kit.attempt("a").map(|a| a.outcome), Some(Outcome::Failed));
    let extra = configmap_path("a-prod", "extra");
    assert!(
        kit.server.object(&extra).is_some(),
        "applied before the completion failed"
    );
    kit.server.heal(&Method::PATCH, &path);
    kit.server.clear_log();
    kit.until("a's retry succeeds", |k| {
        k.attempt("a")
            .is_some_and(|a| a.outcome == Outcome::Applied)
    })
    .await;
    // Objects the interrupted sync did not change are applied again too.
    let applied = kit.server.applied_paths();
    assert!(
        applied.contains(&configmap_path("a-prod", "app")),
        "{applied:?}"
    );
}

/// Tenants `t000` to `t079`, each with `values`: more than a batch reads by name.
fn many(values: &str) -> Vec<(String, String)> {
    let tenants: Vec<_> = (0..80)
        .map(|i| tenant(&format!("t{i:03}"), "", "", values))
        .collect();
    fleet("", &tenants)
}

/// A fleet of [`many`] applied, then an agent started on it (as a restarted Pod) and ready.
async fn many_after_a_start() -> Kit {
    let mut kit = Kit::start(&many(""), Scenario::new()).await;
    kit.turn().await;
    let mut kit = kit.restart().await;
    kit.turn().await;
    kit
}

/// Every tenant of [`many`] has its greeting `hi` after a change every tenant takes.
async fn every_tenant_takes_hi(kit: &mut Kit) {
    kit.server.clear_log();
    kit.push(&many("{greeting: hi}"), &[]).await;
    kit.until("every tenant is synced", |k| {
        (0..80).all(|i| k.greeting(&format!("t{i:03}")) == "hi")
    })
    .await;
}

#[tokio::test]
async fn a_change_every_tenant_takes_reads_their_inventories_in_pages_not_one_by_one() {
    let mut kit = many_after_a_start().await;
    every_tenant_takes_hi(&mut kit).await;
    let (gets, lists) = inventory_reads(&kit);
    assert!(gets.is_empty(), "none read by name: {gets:?}");
    let pages = 80usize.div_ceil(fief_kube::inventory_store::PAGE as usize);
    assert_eq!(
        lists, pages,
        "one walk of the agent namespace's inventories"
    );
}

#[tokio::test]
async fn a_walk_that_fails_leaves_each_tenant_to_read_its_inventory_by_name() {
    let mut kit = many_after_a_start().await;
    let collection = format!("/api/v1/namespaces/{AGENT_NS}/configmaps");
    kit.server.fail(Method::GET, &collection, 500);
    every_tenant_takes_hi(&mut kit).await;
    let (gets, _) = inventory_reads(&kit);
    let expected: Vec<String> = (0..80).map(|i| format!("t{i:03}")).collect();
    let mut gets = gets;
    gets.sort();
    assert_eq!(gets, expected, "each read by name once");
}
