//! Fast unit tests of a tenant sync's decisions, against the mock API server of
//! [`crate::fixtures`]: what is applied and how, what is pruned and what is held, what is
//! refused, and how the inventory is written.
//!
//! In: small tenants repos rendered by fief-core, synced by [`crate::sync::sync_with`]. Out:
//! assertions on the requests the mock API server answered and on what it then holds.
//!
//! Here: the tenants, the sync and what to read back; applies, the inventory and refusals in
//! `apply`, prunes and purges in `prune`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::fixtures::{MockApiServer, Scenario, mock_api_server, resources};
use crate::sync::{ClusterState, SyncOptions, SyncResult, sync_with};
use fief_core::inventory::Inventory;
use fief_core::model::{PruneGuard, Repo};
use fief_core::objects::{self, ObjectId};
use fief_core::plan::{self, PruneHold};
use fief_core::render::TenantRender;
use fief_core::snapshot::Snapshot;
use fief_core::status::{Outcome, PruneHeld};

mod apply;
mod prune;

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
    tenant_render(configmaps, broken, "")
}

/// [`render`] of the tenant with `spec_extra` (e.g. `  state: purged\n`) in its spec.
fn tenant_render(configmaps: &[&str], broken: bool, spec_extra: &str) -> TenantRender {
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
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n{spec_extra}  components:\n    - name: web\n"
            ),
        ),
        (
            "baseline/namespace.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ namespace }}\n".to_string(),
        ),
        (
            "components/web/varz.yaml",
            format!("configmaps: [{names}]\n"),
        ),
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
        release: crate::sync::PruneRelease::None,
        guard: PruneGuard::default(),
        cluster: "default".to_string(),
        commit: None,
        progress: None,
        adopt: Default::default(),
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
