//! Waiting for health: after a tenant is applied, read its objects until every one is healthy
//! by kstatus rules ([`fief_core::health`]), one fails, or its component's timeout passes.
//!
//! In: a rendered tenant, each component's health settings, a default timeout. Out: the
//! objects that are not healthy, and why. Reads only (one GET per pending object per second).
//! A pre or post object with `helm.sh/hook-delete-policy: hook-succeeded` that is not found
//! was deleted by that policy once it succeeded: it counts as healthy.
//! For the agent, [`write_verdict`] writes a tenant's health verdict onto its inventory's
//! status (one GET and a strategic merge patch of the status key, guarded by the
//! resourceVersion read).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::Resources;
use fief_core::health::{Health, Verdict, health, set_conditions};
use fief_core::inventory::{DATA_STATUS, Inventory};
use fief_core::model::{BASELINE, Repo, parse_duration};
use fief_core::objects::ObjectId;
use fief_core::plan::hooks::deleted_when_healthy;
use fief_core::render::TenantRender;

/// Why the health of a live object cannot be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unread {
    /// There is no such object.
    #[error("not found")]
    NotFound,
    /// The cluster does not serve its kind.
    #[error("the cluster does not serve this kind")]
    NotServed,
    /// Reading it failed.
    #[error("cannot read it: {0}")]
    Unreadable(String),
}

/// An object that did not become healthy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unhealthy {
    /// The object, `group/kind namespace/name`.
    pub object: String,
    /// What its status says.
    pub reason: String,
    /// `true` when it failed (will not converge); `false` when it timed out still in progress.
    pub failed: bool,
}

/// How long to wait for each of the tenant's components; `None`: do not wait for it.
pub fn deadlines(
    repo: &Repo,
    render: &TenantRender,
    default: Duration,
) -> BTreeMap<String, Option<Duration>> {
    let mut out = BTreeMap::new();
    for o in &render.objects {
        if o.component == BASELINE || out.contains_key(&o.component) {
            continue;
        }
        let health = repo
            .components
            .values()
            .filter_map(|c| c.as_ref().ok())
            .find(|c| c.name == o.component)
            .map(|c| c.meta.health.clone())
            .unwrap_or_default();
        let timeout = health
            .timeout
            .as_deref()
            .and_then(|t| parse_duration(t).ok())
            .unwrap_or(default);
        out.insert(o.component.clone(), health.waits().then_some(timeout));
    }
    out
}

/// Poll the tenant's component objects until all are healthy, one fails, or time runs out.
pub async fn wait_healthy(
    resources: &Resources,
    render: &TenantRender,
    deadlines: &BTreeMap<String, Option<Duration>>,
) -> Vec<Unhealthy> {
    let start = Instant::now();
    let mut pending: HashMap<&ObjectId, (Duration, String, &Value)> = render
        .objects
        .iter()
        .filter_map(|o| {
            let limit = deadlines.get(&o.component).copied().flatten()?;
            Some((&o.id, (limit, "not read yet".to_string(), &o.object)))
        })
        .collect();
    let mut bad = Vec::new();
    while !pending.is_empty() {
        let mut done = Vec::new();
        for (id, (_, reason, object)) in pending.iter_mut() {
            match live_health(resources, id, object).await {
                Ok(Health::Current) => done.push((*id, None)),
                Err(Unread::NotFound) if deleted_when_healthy(object) => done.push((*id, None)),
                Ok(Health::Failed(why)) => done.push((*id, Some(why))),
                Ok(Health::InProgress(why)) => *reason = why,
                Err(why) => *reason = why.to_string(),
            }
        }
        for (id, failure) in done {
            pending.remove(id);
            if let Some(reason) = failure {
                bad.push(Unhealthy {
                    object: id.to_string(),
                    reason,
                    failed: true,
                });
            }
        }
        let elapsed = start.elapsed();
        let expired: Vec<&ObjectId> = pending
            .iter()
            .filter(|(_, (limit, ..))| elapsed >= *limit)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some((limit, reason, _)) = pending.remove(id) {
                bad.push(Unhealthy {
                    object: id.to_string(),
                    reason: format!("{reason} (still not healthy after {}s)", limit.as_secs()),
                    failed: false,
                });
            }
        }
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    bad.sort_by(|a, b| a.object.cmp(&b.object));
    bad
}

/// Reads in flight at once for one tenant in [`read_health`].
const READS: usize = 8;

/// The health of each of `objects` by kstatus rules, a few read at a time; an object that is
/// not found, not served or not readable is in progress, and says why.
pub async fn read_health<'a>(
    resources: &Resources,
    objects: impl IntoIterator<Item = &'a fief_core::render::RenderedObject>,
) -> HashMap<ObjectId, Health> {
    use futures::stream::{self, StreamExt};
    stream::iter(objects)
        .map(|o| async move {
            let h = live_health(resources, &o.id, &o.object).await;
            (
                o.id.clone(),
                h.unwrap_or_else(|why| Health::InProgress(why.to_string())),
            )
        })
        .buffer_unordered(READS)
        .collect()
        .await
}

/// The health of the live object `id` (rendered as `object`) by kstatus rules; or why it
/// cannot be told.
pub async fn live_health(
    resources: &Resources,
    id: &ObjectId,
    object: &Value,
) -> Result<Health, Unread> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let Some(resource) = resources.resolve(api_version, &id.kind).await else {
        return Err(Unread::NotServed);
    };
    match resources
        .api(&resource, &id.namespace)
        .get_opt(&id.name)
        .await
    {
        Ok(Some(obj)) => Ok(health(&serde_json::to_value(obj).unwrap_or(Value::Null))),
        Ok(None) => Err(Unread::NotFound),
        Err(e) => Err(Unread::Unreadable(super::brief(&e))),
    }
}

/// Write a tenant's health verdict onto its inventory's status. `Ok(false)`: nothing to write
/// (no inventory, or it already says so). A concurrent write makes it fail with a conflict
/// (the caller tries again).
pub async fn write_verdict(
    client: &kube::Client,
    namespace: &str,
    tenant: &str,
    verdict: &Verdict,
    now: &str,
) -> Result<bool, super::ClusterError> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::Api;
    let name = fief_core::objects::inventory_name(tenant);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let what = || format!("health status of ConfigMap/{namespace}/{name}");
    let Some(cm) = api
        .get_opt(&name)
        .await
        .map_err(|e| super::ClusterError::request(what(), e))?
    else {
        return Ok(false);
    };
    let version = cm.metadata.resource_version.clone();
    let value = serde_json::to_value(&cm).unwrap_or(Value::Null);
    let Ok(mut inv) = Inventory::from_configmap(&value) else {
        return Ok(false);
    };
    // A `Ready` the sync wrote (`Applied`) says nothing of health yet: a rollout that finishes
    // before a `WaitingForHealth` verdict is written still ends `Ready` with reason `Healthy`.
    let before = inv.status.clone();
    set_conditions(&mut inv.status, verdict, now);
    if inv.status == before {
        return Ok(false);
    }
    // Only the status changes: patch that key, guarded by the version read (a conflict is
    // retried by the caller), not the whole inventory.
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": version},
        "data": {DATA_STATUS: inv.status_data()},
    });
    super::inventory_store::patch_inventory(client, namespace, &name, &patch)
        .await
        .map_err(|e| super::ClusterError::request(what(), e))?;
    Ok(true)
}
