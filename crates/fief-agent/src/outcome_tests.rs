//! The sync outcome's decisions ([`super::outcome`]), through the agent's loop against the
//! mock API server: what a synced, failed, purged or degraded tenant leaves in the loop state,
//! the queue and the drift baseline.

use http::Method;

use super::kit::{Kit, configmap_path, fleet, inventory_path, tenant, tenant_of};
use fief_core::status::Outcome;
use fief_kube::fixtures::Scenario;

/// The fleet of one tenant `acme` (with `values`).
fn acme(values: &str) -> Vec<(String, String)> {
    fleet("", &[tenant("acme", "", "", values)])
}

/// The ConfigMaps of `tenant` in its drift baseline (what it recorded), by name.
fn baseline(kit: &Kit, tenant: &str) -> Vec<String> {
    let mut names: Vec<String> = kit
        .shared
        .index
        .recorded_of(tenant)
        .iter()
        .filter(|id| id.kind() == "ConfigMap")
        .map(|id| id.name().to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_synced_tenant_is_settled_at_its_input_hash_and_its_inventory_read_back_before_its_next_sync()
 {
    let mut kit = Kit::start(&acme(""), Scenario::new()).await;
    assert_eq!(kit.turn().await, ["acme"]);
    let head = kit.state.rev.clone().expect("a head");
    assert_eq!(kit.state.synced.get("acme"), head.hashes.get("acme"));
    assert!(!kit.state.unsettled.contains("acme"));
    assert!(!kit.queued("acme"), "nothing left to do");
    let attempt = kit.attempt("acme").expect("an attempt");
    assert_eq!(
        (attempt.outcome, attempt.commit),
        (Outcome::Applied, head.commit.clone())
    );
    // Its inventory is not held: it is read back before its next sync.
    assert!(kit.state.evicted.contains("acme"));
    assert!(
        kit.state
            .inventories
            .as_ref()
            .is_some_and(|i| !i.contains_key("acme"))
    );
    // What it applied is the drift baseline, with the live hashes the watches compare with.
    assert_eq!(baseline(&kit, "acme"), ["app"]);
    let (live, recorded) = kit.shared.index.sizes();
    assert_eq!(live, recorded, "a live hash for each");
    assert!(kit.shared.work.syncing().is_empty());

    kit.server.clear_log();
    kit.push(&acme("{greeting: hi}"), &[]).await;
    assert_eq!(kit.turn().await, ["acme"]);
    let requests = kit.server.requests();
    let read_back = requests
        .iter()
        .position(|r| r.method == Method::GET && r.path == inventory_path("acme"));
    let first_apply = requests.iter().position(|r| r.is_apply());
    assert!(
        read_back.is_some() && read_back < first_apply,
        "the inventory is read (by name) before the first apply: {:?}",
        requests
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_failed_sync_is_retried_after_a_backoff_and_is_not_counted_as_synced() {
    let mut kit = Kit::start(&acme(""), Scenario::new()).await;
    kit.turn().await;
    let app = configmap_path("acme-prod", "app");
    kit.server.fail(Method::PATCH, &app, 500);
    kit.push(&acme("{greeting: hi}"), &[]).await;
    assert_eq!(kit.turn().await, ["acme"]);
    let attempt = kit.attempt("acme").expect("an attempt");
    assert_eq!(attempt.outcome, Outcome::Failed);
    let head = kit.state.rev.clone().expect("a head");
    assert_ne!(kit.state.synced.get("acme"), head.hashes.get("acme"));
    assert!(
        kit.state.unsettled.contains("acme"),
        "looked at again by the next commit"
    );
    assert!(
        kit.queued("acme") && !kit.due("acme"),
        "retried after a backoff, not at once"
    );
    assert!(kit.turn().await.is_empty());

    kit.server.heal(&Method::PATCH, &app);
    kit.until("the retry syncs it", |k| {
        k.attempt("acme")
            .is_some_and(|a| a.outcome == Outcome::Applied)
    })
    .await;
    assert_eq!(kit.state.synced.get("acme"), head.hashes.get("acme"));
    assert!(!kit.queued("acme"));
}

#[tokio::test]
async fn a_purged_tenant_holds_no_inventory_and_is_not_read_back() {
    let mut kit = Kit::start(&acme(""), Scenario::new()).await;
    kit.turn().await;
    let purged = tenant("acme", "", "", "")
        .1
        .replace("spec:\n", "spec:\n  state: purged\n");
    kit.push(&[("tenants/acme.yaml".to_string(), purged)], &[])
        .await;
    assert_eq!(kit.turn().await, ["acme"]);
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Purged)
    );
    assert!(kit.inventory("acme").is_none(), "its inventory is deleted");
    assert!(!kit.state.evicted.contains("acme"), "nothing to read back");
    assert!(
        baseline(&kit, "acme").is_empty(),
        "no drift baseline is left"
    );
    assert!(
        kit.server
            .object(&configmap_path("acme-prod", "app"))
            .is_none()
    );
}

#[tokio::test]
async fn a_sync_replaces_its_own_tenants_drift_baseline_and_leaves_the_others() {
    let fleet_of = |a: &str| {
        fleet(
            "",
            &[
                tenant("a", "", "", a),
                tenant("b", "", "", "{configmaps: [one, two]}"),
            ],
        )
    };
    let mut kit = Kit::start(&fleet_of("{configmaps: [old]}"), Scenario::new()).await;
    kit.turn().await;
    assert_eq!(baseline(&kit, "a"), ["old"]);
    kit.push(&fleet_of("{configmaps: [new]}"), &[]).await;
    assert_eq!(kit.turn().await, ["a"]);
    assert_eq!(baseline(&kit, "a"), ["new"]);
    assert_eq!(baseline(&kit, "b"), ["one", "two"]);
}

#[tokio::test]
async fn a_tenant_whose_kind_cannot_be_watched_is_degraded_retried_and_not_ready() {
    // The drift watch of ConfigMaps (across namespaces) is refused; the agent namespace's own
    // ConfigMaps (inventories, requests) are still read.
    let scenario = Scenario::new().failing(Method::GET, "/api/v1/configmaps", 403);
    let mut kit = Kit::start(&acme(""), scenario).await;
    assert_eq!(kit.turn().await, ["acme"]);
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Failed)
    );
    assert!(kit.shared.report.degraded().contains_key("acme"));
    assert!(
        kit.queued("acme") && !kit.due("acme"),
        "retried after a backoff"
    );
    assert!(
        kit.server
            .applied_paths()
            .iter()
            .all(|p| !p.contains("/namespaces/acme-prod"))
    );
    assert!(kit.state.synced.is_empty());
}

/// Guards the drift baseline of a tenant whose render fails: its sync applies nothing, so it
/// must neither take the recorded live hashes for what the watches saw nor leave the watches
/// unable to judge its objects. A hand edit made meanwhile is then known when the render is
/// fixed, and the fix's sync applies the object again instead of skipping it as unchanged.
#[tokio::test]
async fn a_hand_edit_made_while_the_render_fails_is_repaired_by_the_fixs_sync() {
    let broken = fleet(
        "",
        &[tenant_of("acme", "", "", &[("app", ""), ("nope", "")])],
    );
    let mut kit = Kit::start(&acme(""), Scenario::new()).await;
    kit.turn().await;
    kit.push(&broken, &[]).await;
    assert_eq!(kit.turn().await, ["acme"]);
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Invalid)
    );
    kit.server.edit(&configmap_path("acme-prod", "app"), |o| {
        o["data"]["greeting"] = "edited".into();
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    // A drift it queues syncs the tenant again, still invalid.
    kit.turn().await;
    assert_eq!(kit.greeting("acme"), "edited");

    // The fix renders the ConfigMap as it was applied (its values name the default).
    kit.push(&acme("{greeting: hello}"), &[]).await;
    kit.until("the fix is synced", |k| {
        k.attempt("acme")
            .is_some_and(|a| a.outcome == Outcome::Applied)
    })
    .await;
    assert_eq!(kit.greeting("acme"), "hello", "the hand edit is repaired");
}

#[tokio::test]
async fn a_completed_sync_leaves_its_tenant_judged_by_versions_and_a_failed_one_keeps_its_shapes() {
    let mut kit = Kit::start(&acme(""), Scenario::new()).await;
    assert_eq!(kit.turn().await, ["acme"]);
    let app = configmap_path("acme-prod", "app");
    let id = kit
        .shared
        .index
        .recorded_of("acme")
        .into_iter()
        .find(|id| id.kind() == "ConfigMap" && id.name() == "app")
        .expect("app is recorded")
        .to_object_id();
    // Completed: no shape held; the live object is judged by the version fief applied.
    assert!(kit.shared.index.find_desired(&id).is_none());
    let live: fief_kube::live::LiveObject =
        serde_json::from_value(kit.server.object(&app).expect("applied")).expect("an object");
    let (_, version) = live.into_parts();
    let judged = kit.shared.index.by_version(&id, &version);
    let recorded = kit.shared.index.recorded_live(&id);
    assert!(
        judged.is_some_and(|(_, tenant, hash)| tenant.as_ref() == "acme"
            && hash.is_some()
            && hash == recorded),
        "its recorded live hash stands while the version does"
    );
    // A sync that fails keeps the shapes of its render: its objects are judged by them.
    kit.server.fail(Method::PATCH, &app, 500);
    kit.push(&acme("{greeting: hi}"), &[]).await;
    assert_eq!(kit.turn().await, ["acme"]);
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Failed)
    );
    assert!(kit.shared.index.find_desired(&id).is_some());
    // The retry completes: judged by versions again.
    kit.server.heal(&Method::PATCH, &app);
    kit.until("the retry syncs it", |k| {
        k.attempt("acme")
            .is_some_and(|a| a.outcome == Outcome::Applied)
    })
    .await;
    assert!(kit.shared.index.find_desired(&id).is_none());
}
