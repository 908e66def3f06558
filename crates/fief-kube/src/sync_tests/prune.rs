//! What a tenant sync prunes, and when it holds off: only what left the render, nothing when
//! the tenant failed, an apply failed or the mass-prune guard trips, never an object now
//! another tenant's; a purge deletes everything fief made, then the inventory.
//!
//! In: renders of the test tenant and scenarios of the mock API server. Out: assertions.

use http::Method;
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn only_objects_in_the_old_inventory_and_not_in_the_new_render_are_deleted() {
    let (client, server, inv) = synced(&["a", "b", "c"]).await;
    let result = sync(
        &server,
        &client,
        &render(&["a"], false),
        Some(&inv),
        &options(),
    )
    .await;
    let report = &result.reports[0];
    assert_eq!(report.counts.pruned, 2, "{report:?}");
    let mut deleted = server.deleted_paths();
    deleted.sort();
    assert_eq!(deleted, vec![configmap("b"), configmap("c")]);
    assert!(server.object(&configmap("a")).is_some());
    assert_eq!(
        recorded_configmaps(&stored_inventory(&server)),
        vec!["a".to_string()]
    );
    // Component objects are deleted as the tenant.
    for delete in server
        .requests()
        .iter()
        .filter(|r| r.method == Method::DELETE)
    {
        assert_eq!(
            delete.impersonate.as_deref(),
            Some("system:serviceaccount:acme-prod:fief-tenant")
        );
    }
}

#[tokio::test]
async fn nothing_is_applied_or_pruned_when_the_tenant_fails_to_render() {
    let (client, server, inv) = synced(&["a", "b"]).await;
    let result = sync(&server, &client, &render(&[], true), Some(&inv), &options()).await;
    let report = &result.reports[0];
    assert_ne!(report.outcome, Outcome::Applied, "{report:?}");
    assert!(server.applied_paths().is_empty());
    assert!(server.deleted_paths().is_empty());
    // The failure is recorded in the inventory, whose entries stay.
    let stored = stored_inventory(&server);
    assert_eq!(
        recorded_configmaps(&stored),
        vec!["a".to_string(), "b".to_string()]
    );
    assert_ne!(stored.status, inv.status);
}

#[tokio::test]
async fn nothing_is_pruned_when_an_apply_fails() {
    let (client, server, inv) = synced(&["a", "b"]).await;
    // `d` is new, and its apply fails: `b` must stay, the new objects may not exist.
    server.fail(Method::PATCH, &configmap("d"), 500);
    let result = sync(
        &server,
        &client,
        &render(&["a", "d"], false),
        Some(&inv),
        &options(),
    )
    .await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Failed, "{report:?}");
    assert_eq!(
        report.prune_held,
        Some(PruneHeld::Hold(PruneHold::ApplyFailed { failed: 1 }))
    );
    assert!(server.deleted_paths().is_empty());
    assert!(server.object(&configmap("b")).is_some());
}

#[tokio::test]
async fn nothing_is_pruned_past_the_mass_prune_guard_unless_allowed() {
    let (client, server, inv) = synced(&["a", "b"]).await;
    let strict = SyncOptions {
        guard: PruneGuard {
            max_objects: 0,
            ..PruneGuard::default()
        },
        ..options()
    };
    let result = sync(
        &server,
        &client,
        &render(&["a"], false),
        Some(&inv),
        &strict,
    )
    .await;
    assert!(
        matches!(
            result.reports[0].prune_held,
            Some(PruneHeld::Hold(PruneHold::MassPrune { count: 1, .. }))
        ),
        "{:?}",
        result.reports[0]
    );
    assert!(server.deleted_paths().is_empty());
    let allowed = SyncOptions {
        release: crate::sync::PruneRelease::All("test".into()),
        ..strict
    };
    let inv = stored_inventory(&server);
    sync(
        &server,
        &client,
        &render(&["a"], false),
        Some(&inv),
        &allowed,
    )
    .await;
    assert_eq!(server.deleted_paths(), vec![configmap("b")]);
}

#[tokio::test]
async fn a_held_rename_stays_held_when_synced_again_from_the_inventory_it_left() {
    let old = ["a", "b", "c", "d", "e", "f"];
    let new = ["g", "h", "i", "j", "k", "l"];
    let (client, server, inv) = synced(&old).await;
    let first = sync(
        &server,
        &client,
        &render(&new, false),
        Some(&inv),
        &options(),
    )
    .await;
    // Six of seven (the namespace stays).
    let held = Some(PruneHeld::Hold(PruneHold::MassPrune { count: 6, total: 7 }));
    assert_eq!(first.reports[0].prune_held, held);
    // The inventory now records both sets; the next syncs measure against the seven before.
    for _ in 0..2 {
        let inv = stored_inventory(&server);
        assert_eq!(inv.entries.len(), 13);
        let again = sync(
            &server,
            &client,
            &render(&new, false),
            Some(&inv),
            &options(),
        )
        .await;
        assert_eq!(again.reports[0].prune_held, held);
        assert!(server.deleted_paths().is_empty());
        let hold = inv.status.prune_hold.clone();
        assert_eq!(hold.map(|h| h.count), Some(6));
    }
}

#[tokio::test]
async fn an_object_now_labelled_for_another_tenant_is_kept_not_deleted() {
    let (client, server, inv) = synced(&["a", "b"]).await;
    server.edit(&configmap("b"), |o: &mut Value| {
        o["metadata"]["labels"][objects::LABEL_TENANT] = json!("other");
    });
    let result = sync(
        &server,
        &client,
        &render(&["a"], false),
        Some(&inv),
        &options(),
    )
    .await;
    let report = &result.reports[0];
    assert!(server.deleted_paths().is_empty(), "{report:?}");
    assert!(
        report.kept.iter().any(|k| k.contains("no longer labelled")),
        "{report:?}"
    );
    // Kept objects leave the inventory: they are no longer this tenant's.
    assert_eq!(
        recorded_configmaps(&stored_inventory(&server)),
        vec!["a".to_string()]
    );
}

#[tokio::test]
async fn a_purge_deletes_every_object_fief_made_then_the_inventory() {
    let (client, server, inv) = synced(&["a", "b"]).await;
    let purged = tenant_render(&[], false, "  state: purged\n");
    let result = sync(&server, &client, &purged, Some(&inv), &options()).await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Purged, "{report:?}");
    assert_eq!(
        result.inventories.get("acme"),
        Some(&None),
        "no inventory stands"
    );
    let deleted = server.deleted_paths();
    // Component objects first, the namespace (which fief created) last, then the inventory.
    assert_eq!(
        deleted[..3].iter().collect::<BTreeSet<_>>(),
        [configmap("a"), configmap("b"), NAMESPACE.to_string()]
            .iter()
            .collect::<BTreeSet<_>>()
    );
    assert_eq!(
        deleted[2], NAMESPACE,
        "the namespace goes last: {deleted:?}"
    );
    assert_eq!(deleted.last(), Some(&inventory()), "{deleted:?}");
    assert!(server.object(&inventory()).is_none());
}

#[tokio::test]
async fn a_purge_leaves_a_namespace_fief_did_not_create() {
    // The namespace existed before the tenant took it (labelled for it, so not adopted).
    let ours = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "acme-prod",
            "uid": "made-by-someone",
            "labels": {
                objects::LABEL_TENANT: "acme",
                objects::LABEL_MANAGED_BY: "fief",
            },
        },
    });
    let (client, server) = mock_api_server(Scenario::new().with_object(NAMESPACE, ours));
    let first = sync(&server, &client, &render(&["a"], false), None, &options()).await;
    assert!(first.reports[0].is_ok(), "{:?}", first.reports[0]);
    let inv = stored_inventory(&server);
    server.clear_log();
    let purged = tenant_render(&[], false, "  state: purged\n");
    let result = sync(&server, &client, &purged, Some(&inv), &options()).await;
    let report = &result.reports[0];
    assert!(!server.deleted_paths().contains(&NAMESPACE.to_string()));
    assert!(server.object(NAMESPACE).is_some());
    assert!(
        report
            .kept
            .iter()
            .any(|k| k.contains("not created by fief")),
        "{report:?}"
    );
    assert_eq!(server.deleted_paths()[0], configmap("a"));
}
