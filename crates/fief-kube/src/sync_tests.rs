//! Fast unit tests of a tenant sync's decisions, against the mock API server of
//! [`crate::fixtures`]: what is applied and how, what is pruned and what is held, what is
//! refused, and how the inventory is written.
//!
//! In: small tenants repos rendered by fief-core, synced by [`crate::sync::sync_with`]. Out:
//! assertions on the requests the mock API server answered and on what it then holds.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use http::Method;
use serde_json::{Value, json};

use crate::fixtures::{MockApiServer, Scenario, mock_api_server, resources};
use crate::sync::{ClusterState, SyncOptions, SyncResult, sync_with};
use fief_core::inventory::Inventory;
use fief_core::model::{PruneGuard, Repo};
use fief_core::objects::{self, ObjectId};
use fief_core::plan::{self, PruneHold};
use fief_core::render::TenantRender;
use fief_core::snapshot::Snapshot;
use fief_core::status::{Outcome, PruneHeld};

const AGENT_NS: &str = "fief-system";
const NAMESPACE: &str = "/api/v1/namespaces/acme-prod";
const INVENTORY_COLLECTION: &str = "/api/v1/namespaces/fief-system/configmaps";

/// The path of tenant `acme`'s inventory ConfigMap.
fn inventory() -> String {
    format!("{INVENTORY_COLLECTION}/{}", objects::inventory_name("acme"))
}

/// The path of a component ConfigMap of tenant `acme` in `prod`.
fn configmap(name: &str) -> String {
    format!("/api/v1/namespaces/acme-prod/configmaps/{name}")
}

/// Tenant `acme` (environment `prod`) whose component `web` renders one ConfigMap per name in
/// `configmaps`; the baseline is its Namespace only. `broken` makes the template fail.
fn render(configmaps: &[&str], broken: bool) -> TenantRender {
    let names = configmaps
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let template = if broken {
        "{% for %}\n".to_string()
    } else {
        "{% for name in values.configmaps %}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\ndata:\n  k: v\n{% endfor %}\n".to_string()
    };
    let files = [
        (
            "tenants/acme.yaml",
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  components:\n    - name: web\n".to_string(),
        ),
        (
            "baseline/namespace.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ namespace }}\n".to_string(),
        ),
        ("components/web/varz.yaml", format!("configmaps: [{names}]\n")),
        ("components/web/templates/cm.yaml", template),
    ];
    let repo = Repo::load(Arc::new(Snapshot::from_files(files)));
    let mut renders = fief_core::pipeline::render_all(&repo, &[]);
    assert_eq!(renders.len(), 1, "one tenant rendered");
    let render = renders.remove(0);
    assert_eq!(render.is_ok(), !broken, "{:?}", render.errors);
    render
}

fn options() -> SyncOptions {
    SyncOptions {
        agent_namespace: AGENT_NS.to_string(),
        concurrency: 1,
        object_concurrency: 1,
        allow_mass_prune: false,
        guard: PruneGuard::default(),
        cluster: "default".to_string(),
        commit: None,
        progress: None,
    }
}

/// One sync of `render` against the mock API server, over the inventory `prev` (if any).
async fn sync(
    server: &MockApiServer,
    client: &kube::Client,
    render: &TenantRender,
    prev: Option<&Inventory>,
    options: &SyncOptions,
) -> SyncResult {
    let mut state = ClusterState::default();
    if let Some(prev) = prev {
        state
            .inventories
            .insert("acme".to_string(), Ok(prev.clone()));
        state.live = live_hashes(server, render);
    }
    let known = BTreeSet::from(["acme".to_string()]);
    let resources = resources(client.clone());
    let renders = std::slice::from_ref(render);
    sync_with(&resources, renders, &state, &known, false, options).await
}

/// For each rendered object the mock API server holds: the hash of its fields fief sets, as
/// `observe` computes it from the live object.
fn live_hashes(server: &MockApiServer, render: &TenantRender) -> HashMap<ObjectId, String> {
    let mut live = HashMap::new();
    for o in &render.objects {
        let path = if o.id.kind == "Namespace" {
            format!("/api/v1/namespaces/{}", o.id.name)
        } else {
            configmap(&o.id.name)
        };
        if let Some(stored) = server.object(&path) {
            live.insert(o.id.clone(), plan::live_hash(&o.object, &stored));
        }
    }
    live
}

/// The inventory the mock API server holds for `acme`.
fn stored_inventory(server: &MockApiServer) -> Inventory {
    let cm = server
        .object(&inventory())
        .expect("the inventory ConfigMap exists");
    Inventory::from_configmap(&cm).expect("the inventory ConfigMap reads back")
}

/// The inventory names: the ConfigMap names it records.
fn recorded_configmaps(inv: &Inventory) -> Vec<String> {
    inv.entries
        .keys()
        .filter(|id| id.kind == "ConfigMap")
        .map(|id| id.name.clone())
        .collect()
}

/// Sync `configmaps` once on an empty cluster; the client, the server and the inventory.
async fn synced(configmaps: &[&str]) -> (kube::Client, MockApiServer, Inventory) {
    let (client, server) = mock_api_server(Scenario::new());
    let result = sync(
        &server,
        &client,
        &render(configmaps, false),
        None,
        &options(),
    )
    .await;
    assert!(result.reports[0].is_ok(), "{:?}", result.reports[0]);
    let inv = stored_inventory(&server);
    server.clear_log();
    (client, server, inv)
}

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
        allow_mass_prune: true,
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
    let result = sync(&server, &client, &render(&["a"], false), None, &options()).await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(
        report.errors[0].contains("refusing to adopt"),
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
async fn a_failed_inventory_write_stops_the_tenant_before_any_apply() {
    let (client, server) =
        mock_api_server(Scenario::new().failing(Method::POST, INVENTORY_COLLECTION, 403));
    let result = sync(&server, &client, &render(&["a"], false), None, &options()).await;
    let report = &result.reports[0];
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(
        report.errors[0].contains("nothing applied or pruned"),
        "{:?}",
        report.errors
    );
    assert!(server.applied_paths().is_empty());
}
