//! What a tenant sync applies, and how: forced server-side apply as fief (component objects
//! as the tenant), the inventory recorded before the first apply and completed after,
//! nothing written for an unchanged tenant, a foreign namespace refused.
//!
//! In: renders of the test tenant and scenarios of the mock API server. Out: assertions.

use http::Method;
use serde_json::json;

use super::*;

#[tokio::test]
async fn a_new_tenant_is_applied_by_forced_server_side_apply_as_fief() {
    let (client, server) = mock_api_server(Scenario::new());
    let result = sync(
        &server,
        &client,
        &render(&["a", "b"], false),
        None,
        &options(),
    )
    .await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Applied, "{report:?}");
    assert_eq!(report.counts.created, 3);
    let applies: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_apply())
        .collect();
    assert_eq!(
        server.applied_paths(),
        vec![NAMESPACE.to_string(), configmap("a"), configmap("b")],
        "baseline first, then the component, each once"
    );
    for apply in &applies {
        assert_eq!(apply.param("fieldManager"), Some("fief"), "{apply:?}");
        assert_eq!(apply.param("force"), Some("true"), "{apply:?}");
    }
    // The baseline goes as the agent; component objects as the tenant's ServiceAccount.
    assert_eq!(applies[0].impersonate, None);
    for apply in &applies[1..] {
        assert_eq!(
            apply.impersonate.as_deref(),
            Some("system:serviceaccount:acme-prod:fief-tenant")
        );
        assert_eq!(
            apply.body["metadata"]["labels"][objects::LABEL_TENANT],
            json!("acme")
        );
    }
    assert!(server.deleted_paths().is_empty(), "nothing to prune");
}

#[tokio::test]
async fn the_inventory_is_recorded_before_the_first_apply_and_completed_after() {
    let (client, server) = mock_api_server(Scenario::new());
    sync(&server, &client, &render(&["a"], false), None, &options()).await;
    let writes = server.writes();
    // Union(old, desired) is created before anything is applied, with empty live hashes.
    assert_eq!(writes[0].method, Method::POST);
    assert_eq!(writes[0].path, INVENTORY_COLLECTION);
    let union = Inventory::from_configmap(&writes[0].body).expect("the union reads back");
    assert_eq!(recorded_configmaps(&union), vec!["a".to_string()]);
    assert!(union.entries.values().all(|e| e.live.is_empty()));
    assert!(writes[1].is_apply(), "the applies follow: {:?}", writes[1]);
    // The final inventory is merge-patched (not applied) once every apply is done.
    let last = writes.last().expect("a final write");
    assert_eq!(last.method, Method::PATCH);
    assert_eq!(last.path, inventory());
    assert_eq!(last.content_type, "application/strategic-merge-patch+json");
    assert_eq!(last.param("fieldManager"), Some("fief"));
    let inv = stored_inventory(&server);
    assert_eq!(inv.entries.len(), 2);
    for entry in inv.entries.values() {
        assert!(!entry.live.is_empty(), "{entry:?}");
        assert!(!entry.uid.is_empty(), "{entry:?}");
    }
}

#[tokio::test]
async fn an_unchanged_tenant_sends_no_mutating_request() {
    let (client, server, inv) = synced(&["a", "b"]).await;
    let result = sync(
        &server,
        &client,
        &render(&["a", "b"], false),
        Some(&inv),
        &options(),
    )
    .await;
    assert_eq!(
        result.reports[0].counts.unchanged, 3,
        "{:?}",
        result.reports[0]
    );
    assert!(server.writes().is_empty(), "{:?}", server.writes());
}

#[tokio::test]
async fn a_namespace_of_another_tenant_is_refused_and_nothing_is_applied() {
    let theirs = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "acme-prod",
            "uid": "their-uid",
            "labels": {
                objects::LABEL_TENANT: "other",
                objects::LABEL_MANAGED_BY: "fief",
            },
        },
    });
    let (client, server) = mock_api_server(Scenario::new().with_object(NAMESPACE, theirs));
    // Not even `--adopt=force` takes another tenant's namespace.
    let forced = SyncOptions {
        adopt: crate::adoption::Adopt::Force,
        ..options()
    };
    let result = sync(&server, &client, &render(&["a"], false), None, &forced).await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(
        report.errors[0]
            .message
            .contains("belongs to fief tenant `other`")
            && report.errors[0].message.contains("not even with --adopt"),
        "{:?}",
        report.errors
    );
    assert!(server.applied_paths().is_empty());
    assert!(server.deleted_paths().is_empty());
    assert_eq!(
        server.object(NAMESPACE).expect("still there")["metadata"]["labels"][objects::LABEL_TENANT],
        json!("other")
    );
}

#[tokio::test]
async fn a_failed_inventory_write_stops_the_tenant_before_any_apply() {
    let (client, server) =
        mock_api_server(Scenario::new().failing(Method::POST, INVENTORY_COLLECTION, 403));
    let result = sync(&server, &client, &render(&["a"], false), None, &options()).await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(
        report.errors[0]
            .message
            .contains("nothing applied or pruned"),
        "{:?}",
        report.errors
    );
    assert!(server.applied_paths().is_empty());
}
