//! Verify-on-start's decisions ([`super`]), through the agent's loop against the mock API
//! server: after a restart, a tenant whose inputs and live objects are as it last applied them
//! is taken as synced with no render and no write; anything else that moved is rendered and
//! synced.

use fief_core::status::Outcome;
use fief_kube::fixtures::Scenario;

use crate::kit::{Kit, configmap_path, fleet, tenant};

/// The fleet of tenants `a` and `b`, `a` with `values`.
fn two(values: &str) -> Vec<(String, String)> {
    fleet("", &[tenant("a", "", "", values), tenant("b", "", "", "")])
}

/// An agent that synced [`two`], restarted (nothing of it synced yet since).
async fn restarted() -> Kit {
    let mut kit = Kit::start(&two(""), Scenario::new()).await;
    assert_eq!(kit.turn().await, ["a", "b"]);
    let kit = kit.restart().await;
    kit.server.clear_log();
    kit
}

fn verified(kit: &Kit) -> u64 {
    kit.shared.cluster.metrics().tenants_verified.get()
}

fn rendered(kit: &Kit) -> u64 {
    kit.shared.cluster.metrics().tenants_rendered.get()
}

#[tokio::test]
async fn a_restarted_agent_finds_unchanged_tenants_as_last_applied_and_writes_nothing() {
    let mut kit = restarted().await;
    assert_eq!(kit.turn().await, ["a", "b"]);
    assert_eq!(verified(&kit), 2);
    assert_eq!(rendered(&kit), 0, "nothing is rendered");
    let writes: Vec<String> = kit.server.writes().iter().map(|r| r.path.clone()).collect();
    assert!(writes.is_empty(), "nothing is written: {writes:?}");
    let head = kit.state.rev.clone().expect("a head");
    for t in ["a", "b"] {
        assert_eq!(
            kit.state.synced.get(t),
            head.hashes.get(t),
            "{t} counts as synced"
        );
        assert!(!kit.queued(t));
    }
}

#[tokio::test]
async fn an_object_changed_while_the_agent_was_down_has_its_tenant_synced_again() {
    let mut kit = restarted().await;
    let app = configmap_path("a-prod", "app");
    kit.server
        .edit(&app, |o| o["data"]["greeting"] = "edited".into());
    assert_eq!(kit.turn().await, ["a", "b"]);
    assert_eq!(verified(&kit), 1, "b only");
    assert_eq!(rendered(&kit), 1, "a is rendered");
    assert!(kit.server.applied_paths().contains(&app));
    let stored = kit.server.object(&app).expect("a's ConfigMap");
    assert_eq!(stored["data"]["greeting"], "hello", "repaired");
}

#[tokio::test]
async fn an_object_deleted_while_the_agent_was_down_is_applied_again() {
    let mut kit = restarted().await;
    let app = configmap_path("b-prod", "app");
    kit.server.remove(&app);
    kit.turn().await;
    assert_eq!(verified(&kit), 1, "a only");
    assert!(kit.server.object(&app).is_some(), "b's ConfigMap is back");
    assert_eq!(kit.attempt("b").map(|a| a.outcome), Some(Outcome::Applied));
}

#[tokio::test]
async fn a_tenant_whose_inputs_changed_while_the_agent_was_down_is_rendered_not_verified() {
    let mut kit = Kit::start(&two(""), Scenario::new()).await;
    kit.turn().await;
    // Committed while the agent is down: the restarted agent reads it first.
    kit.repo.commit(&two("{greeting: hi}"), &[]);
    let mut kit = kit.restart().await;
    kit.turn().await;
    assert_eq!(verified(&kit), 1, "b only");
    let app = kit.server.object(&configmap_path("a-prod", "app"));
    assert_eq!(app.expect("a's ConfigMap")["data"]["greeting"], "hi");
}

#[tokio::test]
async fn a_resync_renders_every_tenant_even_when_nothing_moved() {
    let mut kit = Kit::start(&two(""), Scenario::new()).await;
    kit.turn().await;
    let before = rendered(&kit);
    kit.resync();
    assert_eq!(kit.turn().await, ["a", "b"]);
    assert_eq!(rendered(&kit), before + 2);
    assert_eq!(verified(&kit), 0, "only a commit's tenants are candidates");
}

#[tokio::test]
async fn a_verified_tenant_whose_object_moves_afterwards_is_drift() {
    let mut kit = restarted().await;
    kit.turn().await;
    assert_eq!((verified(&kit), rendered(&kit)), (2, 0));
    // Judged by the version fief applied (its tenant has no rendered shape): a new version
    // of a field fief sets is drift.
    kit.server.edit(&configmap_path("a-prod", "app"), |o| {
        o["data"]["greeting"] = "edited".into();
    });
    kit.wait("a is queued by drift", |k| k.queued("a")).await;
    assert_eq!(kit.shared.cluster.metrics().drift.get(), 1);
    kit.until("a is repaired", |k| {
        let app = k.server.object(&configmap_path("a-prod", "app"));
        app.is_some_and(|o| o["data"]["greeting"] == "hello")
    })
    .await;
}

#[tokio::test]
async fn a_change_to_fields_fief_does_not_set_leaves_a_tenant_verified() {
    let mut kit = restarted().await;
    // Another manager adds a label of its own: fief's fields are as it applied them.
    kit.server.edit(&configmap_path("a-prod", "app"), |o| {
        o["metadata"]["labels"]["team"] = "blue".into();
    });
    kit.turn().await;
    assert_eq!((verified(&kit), rendered(&kit)), (2, 0));
    assert!(kit.server.writes().is_empty());
}

#[tokio::test]
async fn a_commit_after_a_restart_updates_the_cross_tenant_index_instead_of_building_it_whole() {
    let mut kit = restarted().await;
    assert_eq!(kit.turn().await, ["a", "b"]);
    assert_eq!(
        rendered(&kit),
        0,
        "nothing rendered: no check read the index"
    );
    kit.push(&two("{greeting: hi}"), &[]).await;
    let head = kit.head().expect("a revision");
    assert!(
        head.repo.across_built(),
        "the commit's repo carries the index the start's read built"
    );
    assert_eq!(kit.turn().await, ["a"]);
    assert_eq!(rendered(&kit), 1);
}
