//! Drift's decisions ([`super`]), through the agent's watches on the mock API server and
//! through events sent to its index task: what a change of a managed object queues, and what
//! it never does (fief's own writes, a change of fields fief does not set, a list older than
//! the tenant's last sync, the first list); the index task takes the events of several kinds
//! in the order they come, each kind's relist diffing against that kind's objects, and a sync's
//! live hashes replace the watches' only for the objects it wrote.

use std::time::{Duration, Instant};

use fief_core::status::Outcome;
use fief_kube::fixtures::Scenario;
use fief_kube::live::LiveObject;
use fief_kube::live_id;
use http::Method;
use serde_json::Value;

use crate::kit::{Kit, configmap_path, fleet, tenant, tenant_of, web};
use crate::parts::index::feed::{Event, KindEvent, LiveWrite, Observed};

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

/// Let the watches take the events of the last changes, and the index task take them in.
async fn settle(kit: &Kit) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    kit.shared.index.settled().await;
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
    settle(&kit).await;
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
    settle(&kit).await;
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 0);
    assert!(!kit.queued("acme"), "its own apply does not queue it again");
}

/// The object at `path` (of kind `kind` in `api_version`) as a watch hands it on after
/// someone else changed it by `edit`: its id, body and version.
async fn seen_as(
    kit: &Kit,
    (api_version, kind): (&str, &str),
    path: &str,
    edit: impl FnOnce(&mut Value),
) -> Observed {
    let resource = kit
        .resources
        .resolve(api_version, kind)
        .await
        .expect("the kind is known");
    let value = kit.server.edited(path, edit).expect("the object exists");
    let live: LiveObject = serde_json::from_value(value).expect("a live object");
    let (value, version) = live.into_parts();
    Observed {
        id: live_id(&resource, &value),
        value,
        version,
    }
}

/// The live ConfigMap `app` as a watch hands it on, with `greeting`.
async fn listed(kit: &Kit, greeting: &str) -> Observed {
    seen_as(kit, ("v1", "ConfigMap"), &app(), |v| {
        v["data"]["greeting"] = greeting.into();
    })
    .await
}

/// Send `events` of the watch of `kind` (a key no real watch uses) to the index task, and
/// wait until it has taken them in.
async fn feed(kit: &Kit, events: Vec<(&str, KindEvent)>) {
    for (kind, event) in events {
        kit.shared.index.send(Event::Kind(kind.into(), event)).await;
    }
    kit.shared.index.settled().await;
}

#[tokio::test]
async fn a_relist_that_began_before_the_tenants_last_sync_is_not_drift() {
    let before = Instant::now();
    let kit = synced().await;
    let now = || KindEvent::ListBegan(Instant::now());
    feed(&kit, vec![("test", now()), ("test", KindEvent::ListDone)]).await;
    // A list that began before the sync may hold the object as it was before fief's write.
    let stale = listed(&kit, "as before the sync").await;
    let relist = KindEvent::ListBegan(before);
    feed(
        &kit,
        vec![("test", relist), ("test", KindEvent::Listed(stale))],
    )
    .await;
    assert!(!kit.queued("acme"));
    // A list that began after it holds the object as it is: a difference is drift.
    let stale = listed(&kit, "as before the sync").await;
    feed(
        &kit,
        vec![("test", now()), ("test", KindEvent::Listed(stale))],
    )
    .await;
    assert!(kit.queued("acme"));
}

#[tokio::test]
async fn the_first_list_is_the_baseline_and_never_drift() {
    let kit = synced().await;
    let changed = listed(&kit, "changed").await;
    let began = || KindEvent::ListBegan(Instant::now());
    let events = vec![
        ("test/a", began()),
        ("test/a", KindEvent::Listed(changed)),
        ("test/a", KindEvent::ListDone),
        // A first list without the object does not count it as gone.
        ("test/b", began()),
        ("test/b", KindEvent::ListDone),
    ];
    feed(&kit, events).await;
    assert!(!kit.queued("acme"));
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 0);
}

#[tokio::test]
async fn an_event_of_a_tenant_being_synced_is_its_own_write() {
    let kit = synced().await;
    let changed = listed(&kit, "mid-sync").await;
    let id = changed.id.clone();
    assert!(kit.shared.start_sync("acme"));
    let events = vec![
        ("test", KindEvent::Applied(changed)),
        ("test", KindEvent::Deleted(id)),
    ];
    feed(&kit, events).await;
    assert!(!kit.queued("acme"));
}

/// Hold `tenant`'s desired shapes, as a render before its sync does: a completed sync drops
/// them (the watches then judge its objects by their versions), a sync in flight has them.
fn rendering(kit: &Kit, tenant: &str) {
    let rev = kit.head().expect("a head revision");
    let batch = fief_core::fleet::BatchRenders::from_repo(
        rev.repo.clone(),
        std::sync::Arc::new(fief_core::scope::EnvScope::All),
        std::sync::Arc::new(rev.hashes.clone()),
    );
    let renders = batch.batch(&[tenant.to_string()]);
    kit.shared.index.replace_desired(
        renders
            .iter()
            .map(|r| (r.tenant.clone(), crate::desired::shapes_of(r))),
    );
}

/// The live hash the planner reads for `object`.
fn live_hash(kit: &Kit, object: &Observed) -> Option<String> {
    kit.shared
        .index
        .live_hashes([&object.id])
        .remove(&object.id)
}

/// The live hash `object` has when its body is the one it carries.
fn hash_of(kit: &Kit, object: &Observed) -> String {
    let found = kit.shared.index.find_desired(&object.id).expect("desired");
    fief_core::plan::live_digest(&found.shape, &object.value).to_hex()
}

#[tokio::test]
async fn interleaved_kinds_are_taken_in_order_each_relist_diffing_only_its_own_kind() {
    let mut files = fleet(
        "",
        &[tenant_of("acme", "", "", &[("app", ""), ("web", "")])],
    );
    files.extend(web());
    let mut kit = Kit::start(&files, Scenario::new()).await;
    assert_eq!(kit.turn().await, ["acme"]);
    rendering(&kit, "acme");
    let deployment = ("apps/v1", "Deployment");
    let path = "/apis/apps/v1/namespaces/acme-prod/deployments/web";
    let seen_web = || seen_as(&kit, deployment, path, |_| {});
    let (app_one, app_two) = (listed(&kit, "one").await, listed(&kit, "two").await);
    let expected = hash_of(&kit, &app_two);
    let app_id = app_two.id.clone();
    let began = || KindEvent::ListBegan(Instant::now());
    let events = vec![
        ("test/a", began()),
        ("test/b", began()),
        ("test/a", KindEvent::Listed(app_one)),
        ("test/b", KindEvent::Listed(seen_web().await)),
        ("test/a", KindEvent::ListDone),
        ("test/b", KindEvent::ListDone),
        ("test/a", KindEvent::Deleted(app_id)),
        ("test/b", KindEvent::Applied(seen_web().await)),
        ("test/a", KindEvent::Applied(app_two)),
    ];
    feed(&kit, events).await;
    let (app, web) = (listed(&kit, "two").await, seen_web().await);
    assert_eq!(
        live_hash(&kit, &app),
        Some(expected),
        "the re-created object's"
    );
    assert!(live_hash(&kit, &web).is_some());
    // A relist of kind b that no longer finds its object: gone, and kind a's object stays.
    feed(
        &kit,
        vec![("test/b", began()), ("test/b", KindEvent::ListDone)],
    )
    .await;
    assert_eq!(live_hash(&kit, &web), None);
    assert!(live_hash(&kit, &app).is_some());
}

#[tokio::test]
async fn a_syncs_live_hashes_replace_the_watches_only_for_the_objects_it_wrote() {
    let kit = synced().await;
    rendering(&kit, "acme");
    let edited = listed(&kit, "edited").await;
    let seen = hash_of(&kit, &edited);
    let id = kit
        .shared
        .index
        .find_desired(&edited.id)
        .expect("desired")
        .id;
    feed(&kit, vec![("test", KindEvent::Applied(edited))]).await;
    let recorded = kit
        .shared
        .index
        .recorded_live(&id.to_object_id())
        .expect("recorded");
    let write = |wrote| LiveWrite {
        id: id.clone(),
        hash: recorded,
        wrote,
    };
    assert_ne!(seen, recorded.to_hex(), "the edit moved the live hash");
    let full = id.to_object_id();
    let live = || kit.shared.index.live_hashes([&full]).remove(&full);
    kit.shared.index.written(vec![write(false)]).await;
    assert_eq!(live(), Some(seen), "left alone: the watches' hash stands");
    kit.shared.index.written(vec![write(true)]).await;
    assert_eq!(live(), Some(recorded.to_hex()), "written: the sync's hash");
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
