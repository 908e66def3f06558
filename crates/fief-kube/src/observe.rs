//! Observe: what a sync needs to know before it starts — the agent namespace, the
//! inventories, and the live state of the kinds the tenants in scope have or had.
//!
//! In: rendered tenants. Out: a [`ClusterState`] (inventories and live hashes). Only objects
//! fief applied before need a live hash; per kind, one metadata-only LIST (paged) says which
//! still carry the resourceVersion recorded in the inventory, or fief's own `managedFields`
//! entry as recorded (their recorded hash stands: no field fief sets was written), and
//! only the others are read in full. A pass over many tenants lists each kind's metadata once
//! for all of them instead ([`Prefetch`]), as its batches first need the kind. Reads only
//! (creates the agent namespace when it is missing).

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, ListParams, Patch};
use serde_json::{Value, json};

mod meta;
mod prefetch;

pub use prefetch::Prefetch;

use meta::{KINDS_AT_ONCE, each_metadata, unchanged_since_applied};

use super::inventory_store::{get_inventories, load_inventories};
use super::sync::{ClusterState, SyncOptions, api_version};
use super::{ClusterError, FIELD_MANAGER, Resource, Resources, live_id};
use fief_core::inventory::{Entry, Inventory, InventoryError};
use fief_core::model::is_dns_label;
use fief_core::objects::{self, ObjectId};
use fief_core::plan;
use fief_core::render::TenantRender;

/// Read what a sync needs: the agent namespace (created if missing), the inventories, and the
/// live hash of every rendered object fief applied before (see the module docs). The
/// rendered tenants' inventories are read by name; with `all_tenants` (orphans are looked
/// for) every inventory is read and held at once: a pass over the fleet goes through
/// [`super::batched::sync_batched`], which holds a batch's.
pub async fn observe(
    resources: &Resources,
    renders: &[TenantRender],
    all_tenants: bool,
    options: &SyncOptions,
) -> Result<ClusterState, ClusterError> {
    let client = resources.client().clone();
    ensure_namespace(&client, &options.agent_namespace).await?;
    let inventories = if all_tenants {
        load_inventories(&client, &options.agent_namespace).await?
    } else {
        let names: Vec<String> = renders.iter().map(|r| r.tenant.clone()).collect();
        get_inventories(&client, &options.agent_namespace, &names).await?
    };
    let live = observe_live(resources, renders, &inventories, all_tenants, None).await?;
    Ok(ClusterState { inventories, live })
}

/// The live hash of every rendered object fief applied before (recorded in `inventories`);
/// see the module docs. `all_tenants`: the renders are the whole repo (a selector on the
/// tenant label then replaces the list of names when they are many). With `prefetch` (the
/// metadata pass of a pass over many tenants, [`Prefetch`]), no metadata is
/// listed again (the kinds it has not listed yet are listed first): only the bodies of
/// objects it found moved are read.
pub async fn observe_live(
    resources: &Resources,
    renders: &[TenantRender],
    inventories: &BTreeMap<String, Result<Inventory, InventoryError>>,
    all_tenants: bool,
    prefetch: Option<&Prefetch>,
) -> Result<HashMap<ObjectId, String>, ClusterError> {
    // Only objects applied before need a live hash: anything else is applied anyway.
    let mut wanted: HashMap<(String, String), HashMap<ObjectId, Wanted<'_>>> = HashMap::new();
    for r in renders {
        let Some(Ok(inv)) = inventories.get(&r.tenant) else {
            continue;
        };
        for o in &r.objects {
            let Some(entry) = inv.entries.get(&o.id).filter(|e| !e.live.is_empty()) else {
                continue;
            };
            wanted
                .entry((api_version(&o.object), o.id.kind.clone()))
                .or_default()
                .insert(
                    o.id.clone(),
                    Wanted {
                        desired: &o.object,
                        entry,
                    },
                );
        }
    }
    if let Some(p) = prefetch {
        let entries = wanted.values().flat_map(|w| w.values().map(|w| w.entry));
        p.ensure(resources, entries).await?;
    }
    // Name the tenants when they are few (the cluster may hold many more of other repos);
    // past that, one selector for all fief members keeps the URL short.
    let selector = if all_tenants && renders.len() > 200 {
        objects::LABEL_TENANT.to_string()
    } else {
        tenant_selector(renders)
    };
    let kinds: Vec<_> = wanted.into_iter().collect();
    // The kinds are read concurrently (a few at a time): each is a round trip or more.
    let selector = &selector;
    let per_kind: Vec<Result<HashMap<ObjectId, String>, ClusterError>> = stream::iter(kinds)
        .map(|((api_version, kind), wanted)| async move {
            let mut live = HashMap::new();
            let Some(resource) = resources.resolve(&api_version, &kind).await else {
                return Ok(live);
            };
            live_hashes(resources, &resource, selector, &wanted, &mut live, prefetch)
                .await
                .map_err(|source| {
                    ClusterError::request(
                        format!("list {kind} ({api_version}) where {selector}"),
                        source,
                    )
                })?;
            Ok(live)
        })
        .buffer_unordered(KINDS_AT_ONCE)
        .collect()
        .await;
    let mut live = HashMap::new();
    for part in per_kind {
        live.extend(part?);
    }
    Ok(live)
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
        &super::forced_apply(FIELD_MANAGER),
        &Patch::Apply(&ns),
    )
    .await
    .map_err(|source| ClusterError::request(format!("create Namespace/{name}"), source))?;
    Ok(())
}

/// Objects per LIST page.
const PAGE: u32 = 500;

/// A rendered object applied before: what its live hash is computed against.
struct Wanted<'a> {
    desired: &'a Value,
    entry: &'a Entry,
}

/// Above this many changed objects of one kind, one paged LIST of full bodies is cheaper than
/// a GET per object.
const GET_LIMIT: usize = 64;

/// The live hash of every wanted object of one resource that exists, into `live`.
///
/// One metadata-only LIST (paged) finds which objects exist and their resourceVersion; an
/// object whose resourceVersion and uid are those fief recorded when it last applied it is
/// exactly the object the server returned then, so its recorded live hash stands; so does one
/// whose only writes since left fief's own `managedFields` entry as recorded (a controller's
/// status updates to Deployments, StatefulSets, ResourceQuotas...). Only the
/// others (changed since, or recorded by an older fief without a resourceVersion) are read in
/// full: one GET each when few, else a paged LIST of full bodies. No page is kept.
async fn live_hashes(
    resources: &Resources,
    resource: &Resource,
    selector: &str,
    wanted: &HashMap<ObjectId, Wanted<'_>>,
    live: &mut HashMap<ObjectId, String>,
    prefetch: Option<&Prefetch>,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(resources.client().clone(), &resource.api);
    let mut moved: HashSet<ObjectId> = HashSet::new();
    if let Some(p) = prefetch {
        for (id, w) in wanted {
            if p.unchanged(w.entry) {
                live.insert(id.clone(), w.entry.live.clone());
            } else if p.found(w.entry) {
                moved.insert(id.clone());
            }
            // Not found by the metadata pass: it does not exist (it is applied).
        }
    }
    if prefetch.is_none() {
        each_metadata(resources, resource, selector, PAGE, |id, m| {
            let Some(w) = wanted.get(&id) else { return };
            let managed = || plan::managed_fingerprint(&m.managed_fields, FIELD_MANAGER);
            if unchanged_since_applied(w.entry, &m.resource_version, &m.uid, managed) {
                live.insert(id, w.entry.live.clone());
            } else {
                moved.insert(id);
            }
        })
        .await?;
    }
    if moved.is_empty() {
        return Ok(());
    }
    if moved.len() <= GET_LIMIT {
        let bodies: Vec<(ObjectId, Result<Option<DynamicObject>, kube::Error>)> =
            stream::iter(moved)
                .map(|id| async move {
                    let api = resources.api(resource, &id.namespace);
                    let got = api.get_opt(&id.name).await;
                    (id, got)
                })
                .buffer_unordered(16)
                .collect()
                .await;
        for (id, got) in bodies {
            if let (Some(object), Some(w)) = (got?, wanted.get(&id)) {
                let object = serde_json::to_value(object).unwrap_or(Value::Null);
                live.insert(id, plan::live_hash(w.desired, &object));
            }
        }
        return Ok(());
    }
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels(selector).limit(PAGE);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = api.list(&params).await?;
        for item in page.items {
            let object = serde_json::to_value(item).unwrap_or(Value::Null);
            let id = live_id(resource, &object);
            if !moved.contains(&id) {
                continue;
            }
            if let Some(w) = wanted.get(&id) {
                live.insert(id, plan::live_hash(w.desired, &object));
            }
        }
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    Ok(())
}
