//! The mass-prune guard through the agent ([`super`]'s batches against the mock API server):
//! a change that would delete most of a tenant (its environment renamed) is held, and stays
//! held through drift repair, a resync, a restart and a further commit; a person's release
//! lets it through for the request it came with only; a renamed tenant file leaves the old
//! tenant orphaned with nothing deleted.

use fief_core::condition::ConditionType;
use fief_core::status::{
    ANNOTATION_ALLOW_MASS_PRUNE, ANNOTATION_HANDLED_AT, ANNOTATION_REQUESTED_AT,
};
use fief_kube::fixtures::Scenario;

use crate::kit::{Kit, configmap_path, fleet, inventory_path, tenant};

/// Tenant `acme` in environment `env`, with six ConfigMaps and `greeting`.
fn acme(env: &str, greeting: &str) -> Vec<(String, String)> {
    let values = format!("{{configmaps: [a, b, c, d, e, f], greeting: {greeting}}}");
    fleet("", &[tenant("acme", "", &format!("[{env}]"), &values)])
}

/// The number of objects acme's held prune would delete (`None`: no hold).
fn held(kit: &Kit) -> Option<usize> {
    let inv = kit.inventory("acme").expect("acme's inventory");
    inv.status.prune_hold.map(|h| h.count)
}

/// An agent that synced acme in `prod`, then took the rename of its environment to `live`:
/// every object of `prod` would go, and the guard holds it.
async fn renamed() -> (Kit, usize) {
    let mut kit = Kit::start(&acme("prod", "hello"), Scenario::new()).await;
    kit.turn().await;
    let before = kit
        .inventory("acme")
        .expect("acme's inventory")
        .entries
        .len();
    kit.push(&acme("live", "hello"), &[]).await;
    kit.turn().await;
    assert!(
        kit.server
            .object(&configmap_path("acme-live", "a"))
            .is_some(),
        "the new objects are applied"
    );
    assert_eq!(
        held(&kit),
        Some(before),
        "every object of prod would go: held"
    );
    assert!(kit.server.deleted_paths().is_empty());
    (kit, before)
}

/// Guards the mass-prune guard on a rename: the sync that holds the prune records the new
/// objects as pending, and every later sync — drift repair, a resync, an agent restart that
/// reads the inventory back, a further commit that still asks for the rename — measures
/// against what the last completed sync applied. Measuring against the inventory the held
/// sync left (old and new objects together) would let half of it pass the guard and delete
/// the old environment on the second sync.
#[tokio::test]
async fn a_renamed_environment_stays_held_through_drift_resync_restart_and_a_further_commit() {
    let (mut kit, count) = renamed().await;
    kit.server.edit(&configmap_path("acme-live", "a"), |o| {
        o["data"]["greeting"] = "edited".into();
    });
    kit.wait("acme is queued by drift", |k| k.due("acme")).await;
    kit.turn().await;
    assert_eq!(held(&kit), Some(count), "after drift repair");
    kit.resync();
    kit.turn().await;
    assert_eq!(held(&kit), Some(count), "after a resync");
    let mut kit = kit.restart().await;
    kit.turn().await;
    assert_eq!(held(&kit), Some(count), "after a restart");
    kit.push(&acme("live", "hi"), &[]).await;
    kit.turn().await;
    assert_eq!(held(&kit), Some(count), "after a further commit");
    assert!(
        kit.server.deleted_paths().is_empty(),
        "{:?}",
        kit.server.deleted_paths()
    );
    assert!(
        kit.server
            .object(&configmap_path("acme-prod", "a"))
            .is_some()
    );
}

/// Guards the scope of a person's release: it lets the held prune through for the
/// `fief reconcile --allow-mass-prune` request it came with, and not for a later one.
#[tokio::test]
async fn a_persons_release_lets_the_held_prune_through_for_its_request_only() {
    let (mut kit, count) = renamed().await;
    let inventory = inventory_path("acme");
    kit.annotate(
        &inventory,
        ANNOTATION_ALLOW_MASS_PRUNE,
        Some("by alice at t1"),
    );
    kit.annotate(&inventory, ANNOTATION_REQUESTED_AT, Some("t1"));
    kit.until("the request is answered", |k| {
        k.annotation(&inventory, ANNOTATION_HANDLED_AT).is_some()
    })
    .await;
    assert_eq!(
        kit.server.deleted_paths().len(),
        count,
        "the old environment is deleted"
    );
    assert_eq!(held(&kit), None);
    assert_eq!(
        kit.annotation(&inventory, ANNOTATION_ALLOW_MASS_PRUNE),
        None,
        "the release is spent"
    );

    kit.push(&acme("qa", "hello"), &[]).await;
    kit.turn().await;
    assert!(held(&kit).is_some(), "the next rename is held again");
    assert_eq!(
        kit.server.deleted_paths().len(),
        count,
        "nothing more is deleted"
    );
}

#[tokio::test]
async fn a_renamed_tenant_file_leaves_the_old_tenant_orphaned_with_nothing_deleted() {
    let mut kit = Kit::start(&acme("prod", "hello"), Scenario::new()).await;
    kit.turn().await;
    let renamed = tenant("acme2", "", "[prod]", "{greeting: hello}");
    kit.push(&[renamed], &["tenants/acme.yaml"]).await;
    kit.turn().await;
    assert!(
        kit.server.deleted_paths().is_empty(),
        "{:?}",
        kit.server.deleted_paths()
    );
    let inv = kit.inventory("acme").expect("the old inventory stays");
    assert!(inv.status.condition(ConditionType::Orphaned).is_some());
    assert!(
        kit.server
            .object(&configmap_path("acme2-prod", "app"))
            .is_some()
    );
    assert!(
        kit.server
            .object(&configmap_path("acme-prod", "a"))
            .is_some()
    );
}
