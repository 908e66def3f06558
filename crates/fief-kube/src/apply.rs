//! Apply: one object by server-side apply, as the tenant's identity for component objects;
//! waiting for a CRD to be Established; a tenant's plan stage by stage (a changed pre or post
//! Job deleted before it is applied again).
//!
//! In: a planned [`Apply`] (or a tenant's [`Plan`]). Out: the object as the server returned
//! it, or a [`ClusterError`] naming it (for a plan: each applied object recorded in the
//! tenant's inventory, counts and errors in its report). Retries a fresh RoleBinding's 403 (the authorizer's cache lags); a 429 or 503 is
//! retried by kube's own retry layer under every request.

use std::time::Duration;

use futures::stream::{self, StreamExt};
use kube::api::Patch;
use serde_json::Value;

use super::sync::{Ctx, TenantReport, api_version, cluster_error};
use super::{ClusterError, FIELD_MANAGER, send_as};
use fief_core::inventory::{Entry, Inventory};
use fief_core::model::BASELINE;
use fief_core::plan::{self, Apply, Plan, phase};
use fief_core::render::TenantRender;
use fief_core::status::Failure;

/// How long a component object's 403 is retried after the baseline RBAC changed.
const FORBIDDEN_RETRY: Duration = Duration::from_secs(20);

/// Server-side apply one object; component objects go as `identity`.
async fn apply_one(
    ctx: &Ctx<'_>,
    a: &Apply<'_>,
    identity: &str,
    retry_forbidden: bool,
) -> Result<Value, ClusterError> {
    let o = a.object;
    let version = api_version(&o.object);
    let resource = ctx.resources.require(&o.id, &version).await?;
    if !resource.namespaced && o.component != BASELINE {
        return Err(ClusterError::Refused {
            id: o.id.clone(),
            reason: "the cluster says this kind is cluster-scoped; components may only create namespaced objects",
        });
    }
    let api = ctx.resources.api(&resource, &o.id.namespace);
    let params = super::forced_apply(FIELD_MANAGER);
    // Component objects go as the tenant's own ServiceAccount of the environment they were
    // rendered for, so the API server refuses whatever the render check might have missed.
    let identity = (o.component != BASELINE).then(|| identity.to_string());
    let mut forbidden = 0;
    let started = std::time::Instant::now();
    loop {
        let request = kube::core::Request::new(api.resource_url()).patch(
            &o.id.name,
            &params,
            &Patch::Apply(&o.object),
        );
        // Read straight into a JSON value (no typed detour): the caller hashes it.
        let result: Result<Value, kube::Error> =
            send_as(ctx.resources.client(), request, identity.as_deref()).await;
        match result {
            Ok(returned) => return Ok(returned),
            // A RoleBinding applied moments ago may not be in the authorizer's cache yet:
            // retry for up to FORBIDDEN_RETRY, then report the 403.
            Err(kube::Error::Api(s))
                if s.code == 403 && retry_forbidden && started.elapsed() < FORBIDDEN_RETRY =>
            {
                forbidden += 1;
                tokio::time::sleep(Duration::from_millis((100 * forbidden).min(1000))).await;
            }
            Err(source) => {
                let who = identity.as_deref().unwrap_or("the agent");
                return Err(ClusterError::request(
                    format!("apply {} (as {who})", o.id),
                    source,
                ));
            }
        }
    }
}

/// Wait (up to a minute) until a CRD is Established: a watch on it, through kube-runtime's
/// `await_condition`, so the answer comes with the event, not at the next poll.
async fn wait_established(ctx: &Ctx<'_>, a: &Apply<'_>) -> Result<(), ClusterError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::runtime::wait::{await_condition, conditions};
    let seconds = 60;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(ctx.resources.client().clone());
    let name = &a.object.id.name;
    let waited = tokio::time::timeout(
        Duration::from_secs(seconds),
        await_condition(api, name, conditions::is_crd_established()),
    )
    .await;
    match waited {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(ClusterError::request(
            format!("wait for {} to be Established", a.object.id),
            kube::Error::Service(Box::new(e)),
        )),
        Err(_) => Err(ClusterError::CrdTimeout {
            id: a.object.id.clone(),
            seconds,
        }),
    }
}

/// Apply the plan's stages in order (objects of a stage concurrently), recording each applied
/// object in `inv`; after the first stage, wait for new CRDs and refresh discovery.
pub(super) async fn apply_stages(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    plan: &Plan<'_>,
    inv: &mut Inventory,
    report: &mut TenantReport,
) {
    let mut rbac_changed = false;
    for (i, stage) in plan.stages.iter().enumerate() {
        // Component objects after a baseline RBAC change: the tenant identity's new rights
        // may take a moment to reach the authorizer, so their 403s are retried (bounded).
        rbac_changed |=
            i > plan::STAGE_BASELINE_RBAC && !plan.stages[plan::STAGE_BASELINE_RBAC].is_empty();
        // A changed pre or post Job is deleted first: its template cannot change in place.
        let recreated: std::collections::HashSet<&fief_core::objects::ObjectId> = stage
            .iter()
            .filter(|a| {
                let before = inv.entries.get(&a.object.id).map(|e| e.hash.as_str());
                phase::recreates(a, before)
            })
            .map(|a| &a.object.id)
            .collect();
        let recreated = &recreated;
        let results: Vec<(&Apply, Result<Value, ClusterError>)> = stream::iter(stage)
            .map(|a| async move {
                let ns = render
                    .namespaces
                    .get(&a.object.env)
                    .map(String::as_str)
                    .unwrap_or("");
                let identity = super::tenant_identity(ns);
                if recreated.contains(&a.object.id)
                    && let Err(e) = super::phases::recreate(ctx, a, Some(&identity)).await
                {
                    return (a, Err(e));
                }
                (a, apply_one(ctx, a, &identity, rbac_changed).await)
            })
            .buffer_unordered(ctx.options.object_concurrency.max(1))
            .collect()
            .await;
        let mut crds = Vec::new();
        for (a, result) in results {
            match result {
                Ok(returned) => {
                    if a.object.id.kind == "CustomResourceDefinition" {
                        crds.push(a);
                    }
                    record_applied(inv, a, &returned);
                    if a.existed {
                        report.counts.configured += 1;
                    } else {
                        report.counts.created += 1;
                    }
                }
                Err(e) => {
                    report.counts.failed += 1;
                    report.errors.push(cluster_error(Failure::Apply, &e));
                }
            }
        }
        if i == 0 && !crds.is_empty() {
            for crd in crds {
                if let Err(e) = wait_established(ctx, crd).await {
                    report.errors.push(cluster_error(Failure::Apply, &e));
                }
            }
            if let Err(e) = ctx.resources.refresh().await {
                report.errors.push(cluster_error(Failure::Apply, &e));
            }
        }
    }
}

/// Record an applied object in `inv` as the server `returned` it (keeping whether fief
/// created it, for a namespace, and whether a sync that has not completed added it).
fn record_applied(inv: &mut Inventory, a: &Apply<'_>, returned: &Value) {
    let id = a.object.id.clone();
    let created = inv.entries.get(&id).and_then(|e| e.created);
    let pending = inv.entries.get(&id).is_none_or(|e| e.pending);
    let meta_text = |key: &str| {
        returned["metadata"][key]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    inv.entries.insert(
        id.clone(),
        Entry {
            id,
            component: a.object.component.clone(),
            api_version: api_version(&a.object.object),
            hash: a.hash.clone(),
            live: plan::live_hash(&a.object.object, returned),
            resource_version: meta_text("resourceVersion"),
            uid: meta_text("uid"),
            managed: plan::managed_fingerprint(
                &returned["metadata"]["managedFields"],
                FIELD_MANAGER,
            ),
            created,
            pending,
            done: None,
        },
    );
}
