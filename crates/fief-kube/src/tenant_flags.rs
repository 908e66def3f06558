//! Day-2 flags on the inventories: suspension and reconcile requests, as annotations on each
//! tenant's inventory ConfigMap (and on the `fief-reconcile` ConfigMap for "every tenant").
//!
//! In: a client, the agent namespace, tenant names, annotation values. Out: the flags read
//! from the ConfigMaps' metadata (a paged metadata-only LIST), JSON merge patches of single
//! annotations (field manager named by the caller, so fief's own server-side apply of the
//! inventory never removes them), who the caller is (SelfSubjectReview), and whether a
//! namespace holds anything of fief at all ([`presence`]), so that a request is never written
//! into a namespace without an agent.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Map, Value, json};

use super::ClusterError;
use fief_core::inventory::LABEL_APPLYSET_ID;
use fief_core::objects;
use fief_core::status::{ANNOTATION_REQUESTED_AT, Flags, RECONCILE_ALL};

/// Every inventory's flags in `namespace`, by tenant (metadata only).
pub async fn load_flags(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, Flags>, ClusterError> {
    let mut out = BTreeMap::new();
    each_flags(client, namespace, |tenant, flags| {
        out.insert(tenant, flags);
    })
    .await?;
    Ok(out)
}

/// Inventories whose metadata one page of [`each_flags`] lists, so a read holds one page's
/// metadata (labels, annotations and managed fields of each), however many tenants there
/// are. The metadata pass's `each_metadata` pages the same way but lists objects of any kind
/// across namespaces and reads no labels or annotations, so it is not used here.
const FLAGS_PAGE: u32 = 250;

/// Every inventory's flags in `namespace`, handed to `each` by tenant as they are listed
/// (metadata only, [`FLAGS_PAGE`] inventories a request): the caller keeps what it needs.
pub async fn each_flags(
    client: &kube::Client,
    namespace: &str,
    mut each: impl FnMut(String, Flags),
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{LABEL_APPLYSET_ID},{}=fief", objects::LABEL_MANAGED_BY);
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels(&selector).limit(FLAGS_PAGE);
        if let Some(t) = token.take() {
            params = params.continue_token(&t);
        }
        let list = api.list_metadata(&params).await.map_err(|source| {
            ClusterError::request(
                format!("list inventory ConfigMaps in {namespace} (metadata)"),
                source,
            )
        })?;
        for cm in list.items {
            let meta = cm.metadata;
            let tenant = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(objects::LABEL_TENANT));
            if let Some(tenant) = tenant.cloned() {
                each(
                    tenant,
                    Flags::from_annotations(&meta.annotations.unwrap_or_default()),
                );
            }
        }
        token = list.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(());
        }
    }
}

/// The flags of one ConfigMap; `None` when it does not exist.
pub async fn get_flags(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Flags>, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    match api.get_metadata_opt(name).await {
        Ok(found) => {
            Ok(found.map(|m| Flags::from_annotations(&m.metadata.annotations.unwrap_or_default())))
        }
        Err(source) => Err(ClusterError::request(
            format!("get ConfigMap/{namespace}/{name}"),
            source,
        )),
    }
}

/// Set (`Some`) or remove (`None`) annotations of an existing ConfigMap with a JSON merge
/// patch as `manager`. Returns false when the ConfigMap does not exist.
pub async fn annotate(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    annotations: &[(&str, Option<&str>)],
    manager: &str,
) -> Result<bool, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut map = Map::new();
    for (k, v) in annotations {
        map.insert((*k).to_string(), v.map_or(Value::Null, |v| json!(v)));
    }
    let patch = json!({"metadata": {"annotations": map}});
    let params = PatchParams {
        field_manager: Some(manager.to_string()),
        ..Default::default()
    };
    match api.patch(name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(source) => Err(ClusterError::request(
            format!("annotate ConfigMap/{namespace}/{name}"),
            source,
        )),
    }
}

/// Ask for a sync of every tenant: set `requestedAt` on the `fief-reconcile` ConfigMap,
/// creating it when missing (server-side apply as `manager`).
pub async fn request_all(
    client: &kube::Client,
    namespace: &str,
    at: &str,
    manager: &str,
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": RECONCILE_ALL,
            "namespace": namespace,
            "labels": {objects::LABEL_MANAGED_BY: "fief"},
            "annotations": {ANNOTATION_REQUESTED_AT: at},
        },
    });
    api.patch(
        RECONCILE_ALL,
        &super::forced_apply(manager),
        &Patch::Apply(&cm),
    )
    .await
    .map_err(|source| {
        ClusterError::request(
            format!("apply ConfigMap/{namespace}/{RECONCILE_ALL}"),
            source,
        )
    })?;
    Ok(())
}

/// Name of the agent's Deployment and of its leader-election Lease.
const AGENT: &str = "fief-agent";
/// Label of the agent's shard and membership Leases.
const LEASE_LABEL: &str = "fief.dev/lease";

/// What of fief a namespace holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Presence {
    /// At least one tenant inventory.
    pub inventories: bool,
    /// A sign of the agent: its Deployment `fief-agent`, its Lease `fief-agent` or a shard
    /// Lease.
    pub agent: bool,
}

impl Presence {
    /// Whether the namespace holds anything of fief (a request written there can be answered).
    pub fn any(&self) -> bool {
        self.inventories || self.agent
    }
}

/// What of fief `namespace` holds: one metadata LIST of inventories (limit 1), then, when
/// there is none, the agent's Deployment and Leases. A sign of the agent the caller may not
/// read (403) counts as absent; a refused LIST of inventories is an error.
pub async fn presence(client: &kube::Client, namespace: &str) -> Result<Presence, ClusterError> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{LABEL_APPLYSET_ID},{}=fief", objects::LABEL_MANAGED_BY);
    let one = ListParams::default().labels(&selector).limit(1);
    let listed = configmaps.list_metadata(&one).await.map_err(|source| {
        ClusterError::request(format!("list inventory ConfigMaps in {namespace}"), source)
    })?;
    if !listed.items.is_empty() {
        return Ok(Presence {
            inventories: true,
            agent: false,
        });
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let shard = ListParams::default().labels(LEASE_LABEL).limit(1);
    let agent = matches!(deployments.get_metadata_opt(AGENT).await, Ok(Some(_)))
        || matches!(leases.get_metadata_opt(AGENT).await, Ok(Some(_)))
        || leases
            .list_metadata(&shard)
            .await
            .is_ok_and(|l| !l.items.is_empty());
    Ok(Presence {
        inventories: false,
        agent,
    })
}

/// The caller's user name as the API server sees it (SelfSubjectReview); `None` when the
/// server does not say.
pub async fn who_am_i(client: &kube::Client) -> Option<String> {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .ok()?;
    review.status?.user_info?.username
}

/// Now, RFC 3339 with nanoseconds (a request time that two requests never share).
pub fn now_precise() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}
