//! Observe: what a sync needs to know before it starts — the agent namespace, the
//! inventories, and the live state of the kinds the tenants in scope have or had.
//!
//! In: rendered tenants. Out: a [`ClusterState`] (inventories and live hashes), one LIST per
//! kind. Reads only (creates the agent namespace when it is missing).

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::inventory_store::load_inventories;
use super::sync::{ClusterState, SyncOptions, api_version};
use super::{ClusterError, FIELD_MANAGER, Resources, list_all, live_id};
use crate::core::model::is_dns_label;
use crate::core::objects::{self, ObjectId};
use crate::core::plan;
use crate::core::render::TenantRender;

/// Read what a sync needs: the agent namespace (created if missing), the inventories, and the
/// live state of every kind the tenants in scope have or had (one LIST per kind).
pub async fn observe(
    resources: &Resources,
    renders: &[TenantRender],
    all_tenants: bool,
    options: &SyncOptions,
) -> Result<ClusterState, ClusterError> {
    let client = resources.client().clone();
    ensure_namespace(&client, &options.agent_namespace).await?;
    let inventories = load_inventories(&client, &options.agent_namespace).await?;
    let mut kinds: BTreeSet<(String, String)> = BTreeSet::new();
    for r in renders {
        for o in &r.objects {
            kinds.insert((api_version(&o.object), o.id.kind.clone()));
        }
        if let Some(Ok(inv)) = inventories.get(&r.tenant) {
            for e in inv.entries.values() {
                kinds.insert((e.api_version.clone(), e.id.kind.clone()));
            }
        }
    }
    // Name the tenants when they are few (the cluster may hold many more of other repos);
    // past that, one selector for all fief members keeps the URL short.
    let selector = if all_tenants && renders.len() > 200 {
        objects::LABEL_TENANT.to_string()
    } else {
        tenant_selector(renders)
    };
    let objects = load_live(resources, &kinds, &selector).await?;
    let mut live = HashMap::new();
    for r in renders {
        for o in &r.objects {
            if let Some(l) = objects.get(&o.id) {
                live.insert(o.id.clone(), plan::live_hash(&o.object, l));
            }
        }
    }
    Ok(ClusterState { inventories, live })
}

/// `fief.dev/tenant in (...)` over the tenants whose names are valid label values. A tenant
/// file with an invalid name is that file's error (reported by validate); its name never
/// reaches a selector, where it would make the LIST fail for every tenant.
pub fn tenant_selector(renders: &[TenantRender]) -> String {
    let names: Vec<&str> = renders
        .iter()
        .map(|r| r.tenant.as_str())
        .filter(|t| is_dns_label(t))
        .collect();
    format!("{} in ({})", objects::LABEL_TENANT, names.join(","))
}

/// Create the agent namespace if it does not exist (one read when it does).
pub async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), ClusterError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let unreachable = |source| ClusterError::request(format!("get Namespace/{name}"), source);
    if api.get_opt(name).await.map_err(unreachable)?.is_some() {
        return Ok(());
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&ns),
    )
    .await
    .map_err(|source| ClusterError::request(format!("create Namespace/{name}"), source))?;
    Ok(())
}

/// Every object of these kinds matching `selector`, by identity (one LIST per kind).
pub async fn load_live(
    resources: &Resources,
    kinds: &BTreeSet<(String, String)>,
    selector: &str,
) -> Result<HashMap<ObjectId, Value>, ClusterError> {
    let mut live = HashMap::new();
    for (api_version, kind) in kinds {
        let Some(resource) = resources.resolve(api_version, kind).await else {
            continue;
        };
        let items = list_all(resources, &resource, selector)
            .await
            .map_err(|source| {
                ClusterError::request(
                    format!("list {kind} ({api_version}) where {selector}"),
                    source,
                )
            })?;
        for item in items {
            live.insert(live_id(&resource, &item), item);
        }
    }
    Ok(live)
}
