//! Inventory store: the tenants' ApplySet parent ConfigMaps in the agent namespace.
//!
//! In: [`Inventory`] values. Out: reads, server-side-applied writes (skipped when unchanged)
//! and deletes of the ConfigMaps.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::Value;

use super::sync::Ctx;
use super::{ClusterError, FIELD_MANAGER};
use crate::core::inventory::{Inventory, InventoryError, LABEL_APPLYSET_ID};
use crate::core::objects;

/// Inventory ConfigMaps per page of [`load_inventories`]: a page is parsed and dropped before
/// the next is read, so at thousands of tenants the read holds one page's text, not the whole
/// namespace's. An inventory of 26 objects is about 24 KB of JSON, and a page is held as
/// received, as one body and as parsed JSON at once: 25 a page is about 2 MiB of it, 100 was
/// about 8 MiB. (The agent reads a chunk's inventories, 10 tenants, in one page either way.)
const PAGE: u32 = 25;

/// Every inventory ConfigMap in the agent namespace, by tenant (read in pages of [`PAGE`]).
pub async fn load_inventories(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, Result<Inventory, InventoryError>>, ClusterError> {
    let mut out = BTreeMap::new();
    each_inventory(client, namespace, None, |tenant, inv| {
        out.insert(tenant, inv);
    })
    .await?;
    Ok(out)
}

/// Read the inventory ConfigMaps of the agent namespace in pages of [`PAGE`] (only those of
/// `tenants` when given; names that are not DNS labels have none), handing each to `each` as
/// it is parsed: the caller keeps what it needs, a page at a time.
pub async fn each_inventory(
    client: &kube::Client,
    namespace: &str,
    tenants: Option<&[String]>,
    mut each: impl FnMut(String, Result<Inventory, InventoryError>),
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let failed =
        |source| ClusterError::request(format!("list inventory ConfigMaps in {namespace}"), source);
    let mut selector = format!("{LABEL_APPLYSET_ID},{}=fief", objects::LABEL_MANAGED_BY);
    if let Some(tenants) = tenants {
        let names: Vec<&str> = tenants
            .iter()
            .map(String::as_str)
            .filter(|t| crate::core::model::is_dns_label(t))
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        selector.push_str(&format!(
            ",{} in ({})",
            objects::LABEL_TENANT,
            names.join(",")
        ));
    }
    // Named tenants (a chunk's) fit one page: one more than asked, so the server does not
    // hand back a continue token for an empty second page.
    let page = match tenants {
        Some(t) if t.len() < 4 * PAGE as usize => t.len() as u32 + 1,
        _ => PAGE,
    };
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels(&selector).limit(page);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        // Read straight into JSON values (one decode; no typed detour).
        let request = kube::core::Request::new(api.resource_url())
            .list(&params)
            .map_err(|e| failed(kube::Error::BuildRequest(e)))?;
        let page: Value = client.request(request).await.map_err(failed)?;
        for cm in page["items"].as_array().into_iter().flatten() {
            let tenant = cm["metadata"]["labels"][objects::LABEL_TENANT]
                .as_str()
                .unwrap_or_default()
                .to_string();
            each(tenant, Inventory::from_configmap(cm));
        }
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => break,
        }
    }
    Ok(())
}

/// Write the inventory unless it equals `previous` (steady state writes nothing).
pub(super) async fn write_inventory(
    ctx: &Ctx<'_>,
    inv: &Inventory,
    previous: Option<&Inventory>,
) -> Result<(), ClusterError> {
    if previous == Some(inv) {
        return Ok(());
    }
    let ns = &ctx.options.agent_namespace;
    let cm = inv.to_configmap(ns);
    let name = objects::inventory_name(&inv.tenant);
    let api: Api<ConfigMap> = Api::namespaced(ctx.resources.client().clone(), ns);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&cm),
    )
    .await
    .map_err(|source| {
        ClusterError::request(format!("apply inventory ConfigMap/{ns}/{name}"), source)
    })?;
    Ok(())
}

/// Delete a tenant's inventory (after a purge); a missing one is fine.
pub(super) async fn delete_inventory(ctx: &Ctx<'_>, tenant: &str) -> Result<(), ClusterError> {
    let ns = &ctx.options.agent_namespace;
    let name = objects::inventory_name(tenant);
    let api: Api<ConfigMap> = Api::namespaced(ctx.resources.client().clone(), ns);
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(ClusterError::request(
            format!("delete inventory ConfigMap/{ns}/{name}"),
            source,
        )),
    }
}
