//! Inventory store: the tenants' ApplySet parent ConfigMaps in the agent namespace.
//!
//! In: [`Inventory`] values. Out: reads (one at a time in the order of the tenants' names,
//! counted while held: [`Walk`]; a few by name; or all at once), merge-patched or created
//! writes (skipped when unchanged) and deletes of the ConfigMaps.

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::Value;

use super::sync::Ctx;
use super::{ClusterError, FIELD_MANAGER};
use fief_core::inventory::{Inventory, InventoryError, LABEL_APPLYSET_ID};
use fief_core::objects;

mod pages;
mod split;
mod walk;

pub use pages::PAGE;
pub use walk::{Inventories, Walk, held, peak_held};

/// Every inventory ConfigMap in the agent namespace, by tenant (read in pages of [`PAGE`]),
/// all held at once: for the few callers that need them together. A pass over every tenant
/// takes them one at a time instead ([`Walk`]).
pub async fn load_inventories(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, Result<Inventory, InventoryError>>, ClusterError> {
    let mut out = BTreeMap::new();
    each_inventory(client, namespace, |tenant, inv| {
        out.insert(tenant, inv);
    })
    .await?;
    Ok(out)
}

/// Read every inventory ConfigMap of the agent namespace in pages of [`PAGE`], handing each
/// to `each` as it is parsed: the caller keeps what it needs, a page at a time. One whose
/// name and tenant label disagree is left out. (A few tenants' inventories are read by name:
/// [`get_inventories`].)
pub async fn each_inventory(
    client: &kube::Client,
    namespace: &str,
    mut each: impl FnMut(String, Result<Inventory, InventoryError>),
) -> Result<(), ClusterError> {
    // The ConfigMaps are parsed on the reader's side while each one taken becomes an
    // inventory here; dropping the receiver (an error) stops the reader.
    let (mut configmaps, _reader) = pages::spawn(client, namespace);
    while let Some(cm) = configmaps.recv().await {
        let cm = cm?;
        let tenant = cm["metadata"]["labels"][objects::LABEL_TENANT]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // A ConfigMap named for another tenant than its label says is no tenant's
        // inventory, as a read by name finds it ([`get_inventories`]).
        if cm["metadata"]["name"].as_str() != Some(&objects::inventory_name(&tenant)) {
            continue;
        }
        each(tenant, Inventory::from_configmap(&cm));
    }
    Ok(())
}

/// The inventories of `tenants`, each read by name, a few at once (absent ones are left out,
/// as is a ConfigMap of that name that is not fief's inventory of that tenant). A GET costs
/// the API server one object, where a LIST naming the tenants in a label selector costs it
/// every ConfigMap of the namespace: the agent reads a chunk's inventories this way so that a
/// change to a few tenants costs the same at any fleet size. Also what a tenant's own people
/// may read, who cannot list the agent namespace (see [`crate::status_access`]).
pub async fn get_inventories(
    client: &kube::Client,
    namespace: &str,
    tenants: &[String],
) -> Result<BTreeMap<String, Result<Inventory, InventoryError>>, ClusterError> {
    let named: Vec<String> = tenants
        .iter()
        .filter(|t| fief_core::model::is_dns_label(t))
        .cloned()
        .collect();
    let reads = named.into_iter().map(|tenant| {
        let (client, namespace) = (client.clone(), namespace.to_string());
        async move {
            let got = get_inventory(&client, &namespace, &tenant).await?;
            Ok::<_, ClusterError>(got.map(|inv| (tenant, inv)))
        }
    });
    let found: Vec<_> = stream::iter(reads)
        .buffer_unordered(GETS_AT_ONCE)
        .collect()
        .await;
    let mut out = BTreeMap::new();
    for one in found {
        out.extend(one?);
    }
    Ok(out)
}

/// Inventories [`get_inventories`] reads at once.
const GETS_AT_ONCE: usize = 8;

/// One tenant's inventory, read by name; `None` when there is none.
async fn get_inventory(
    client: &kube::Client,
    namespace: &str,
    tenant: &str,
) -> Result<Option<Result<Inventory, InventoryError>>, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let name = objects::inventory_name(tenant);
    let failed = |e| ClusterError::request(format!("get ConfigMap/{namespace}/{name}"), e);
    let request = kube::core::Request::new(api.resource_url())
        .get(&name, &Default::default())
        .map_err(|e| failed(kube::Error::BuildRequest(e)))?;
    let cm = match client.request::<Value>(request).await {
        Ok(cm) => cm,
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
        Err(e) => return Err(failed(e)),
    };
    // What the LIST's label selector would have matched: fief's inventory of this tenant.
    let labels = &cm["metadata"]["labels"];
    let ours = labels[LABEL_APPLYSET_ID].is_string()
        && labels[objects::LABEL_MANAGED_BY].as_str() == Some("fief")
        && labels[objects::LABEL_TENANT].as_str() == Some(tenant);
    Ok(ours.then(|| Inventory::from_configmap(&cm)))
}

/// Write the inventory unless it equals `previous` (steady state writes nothing).
///
/// The inventory is fief's own object, so it is written with a strategic merge patch (or
/// created when there is none), not a server-side apply: the API server parses an apply body
/// as YAML, and the inventory's entries (about 20 KB of escaped JSON at 48 objects) made that
/// parse the largest single cost of a change reaching every tenant. The patch sets every label,
/// annotation and data key fief writes; keys others added (`fief suspend`'s annotation) stay.
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
    let client = ctx.resources.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let failed = |verb: &str, source| {
        ClusterError::request(format!("{verb} inventory ConfigMap/{ns}/{name}"), source)
    };
    let patch = || patch_inventory(client, ns, &name, &cm);
    let create = || async {
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..Default::default()
        };
        let body = serde_json::to_vec(&cm).map_err(kube::Error::SerdeError)?;
        let request = kube::core::Request::new(api.resource_url())
            .create(&params, body)
            .map_err(kube::Error::BuildRequest)?;
        client.request_text(metadata_only(request)).await.map(drop)
    };
    // The previous inventory says whether the ConfigMap exists; when it was wrong (deleted or
    // made meanwhile), the other request follows.
    let result = if previous.is_some() {
        match patch().await {
            Err(kube::Error::Api(s)) if s.code == 404 => create().await.map_err(|e| ("create", e)),
            other => other.map_err(|e| ("patch", e)),
        }
    } else {
        match create().await {
            Err(kube::Error::Api(s)) if s.code == 409 => patch().await.map_err(|e| ("patch", e)),
            other => other.map_err(|e| ("create", e)),
        }
    };
    result.map_err(|(verb, source)| failed(verb, source))
}

/// Strategic-merge-patch an inventory ConfigMap with `patch` (field manager fief). The
/// answer is asked for as metadata only: fief does not read it back, and the whole object
/// (its entries) would be encoded by the API server and sent for nothing.
pub(super) async fn patch_inventory(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    patch: &Value,
) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..Default::default()
    }
    .validation_ignore();
    let request = kube::core::Request::new(api.resource_url())
        .patch(name, &params, &Patch::Strategic(patch))
        .map_err(kube::Error::BuildRequest)?;
    client.request_text(metadata_only(request)).await.map(drop)
}

/// Ask for a write's answer as `PartialObjectMetadata` (the object's metadata, no data).
/// An error answer is a `Status` as ever.
fn metadata_only(mut request: http::Request<Vec<u8>>) -> http::Request<Vec<u8>> {
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        ),
    );
    request
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

#[cfg(test)]
mod tests {
    use http::Method;
    use serde_json::json;

    use super::*;
    use crate::fixtures::{Scenario, mock_api_server};

    const COLLECTION: &str = "/api/v1/namespaces/fief-system/configmaps";

    fn path(tenant: &str) -> String {
        format!("{COLLECTION}/{}", objects::inventory_name(tenant))
    }

    #[tokio::test]
    async fn inventories_read_by_name_are_fiefs_own_and_absent_ones_are_left_out() {
        let acme = Inventory::new("acme").to_configmap("fief-system");
        // A ConfigMap with an inventory's name that fief did not write.
        let stray = json!({"metadata": {"name": objects::inventory_name("bob"),
            "namespace": "fief-system", "labels": {objects::LABEL_TENANT: "bob"}}});
        let (client, server) = mock_api_server(
            Scenario::new()
                .with_object(&path("acme"), acme)
                .with_object(&path("bob"), stray),
        );
        let names = ["acme", "bob", "carol", "Not_A_Label"].map(String::from);
        let read = get_inventories(&client, "fief-system", &names)
            .await
            .expect("the mock answers every GET");
        assert_eq!(read.keys().collect::<Vec<_>>(), ["acme"]);
        assert!(read["acme"].as_ref().is_ok_and(|i| i.tenant == "acme"));
        let mut asked: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
        asked.sort();
        assert_eq!(asked, [path("acme"), path("bob"), path("carol")]);
        assert!(server.requests().iter().all(|r| r.method == Method::GET));
    }

    #[tokio::test]
    async fn a_refused_read_by_name_is_an_error_naming_the_configmap() {
        let (client, _server) =
            mock_api_server(Scenario::new().failing(Method::GET, &path("acme"), 500));
        let err = get_inventories(&client, "fief-system", &["acme".to_string()])
            .await
            .expect_err("a refused GET fails the read");
        assert!(err.to_string().contains("fief-tenant-acme"), "{err}");
    }
}
