//! Ordered phases in a sync: read the health of the objects placed before the tenant's first
//! changing placement (and of the pre or post objects with a delete policy not done yet), set
//! aside the placements that must wait, delete a changed pre or post Job before it is created
//! again, and delete the objects whose `helm.sh/hook-delete-policy` says so once they ended.
//!
//! In: a tenant's render and plan (or one planned [`Apply`]). Out: the plan with the
//! placements after the first one that is not done neither applied nor pruned, and
//! `Plan::phase_hold` saying what they wait for or which pre/post object failed
//! ([`fief_core::plan::phase::gate`]); for a changed Job, the old one deleted (background
//! propagation) and gone; for each object that ended (`Plan::ended`), its inventory entry
//! marked done ([`record_ended`], written with the union before anything is deleted, so a
//! crash never runs a finished hook again) and, by its policy, the object deleted
//! ([`delete_ended`]). Reads only when the tenant has pre or post objects and something
//! placed after them changes, or objects with a delete policy have not ended: one GET per
//! object, a few at a time.

use std::time::{Duration, Instant};

use kube::api::DeleteParams;

use super::health::read_health;
use super::sync::Ctx;
use super::{ClusterError, Resources, send_as};
use fief_core::inventory::Inventory;
use fief_core::plan::{Apply, Plan, phase};
use fief_core::render::TenantRender;
use fief_core::status::{Failure, TenantReport};

/// How long a deleted Job may take to be gone before its new version is created.
const GONE_WITHIN: Duration = Duration::from_secs(60);

/// Set aside the placements of `plan` that wait for earlier ones (see the module docs).
pub async fn gate_phases(resources: &Resources, render: &TenantRender, plan: &mut Plan<'_>) {
    let check = phase::to_check(render, plan);
    let health = read_health(resources, check).await;
    phase::gate(plan, render, &health);
}

/// Delete the live object of `a` (a pre or post Job whose content changed: its template
/// cannot change in place), as the tenant, and wait until it is gone.
pub(super) async fn recreate(
    ctx: &Ctx<'_>,
    a: &Apply<'_>,
    identity: Option<&str>,
) -> Result<(), ClusterError> {
    let id = &a.object.id;
    let version = super::sync::api_version(&a.object.object);
    let resource = ctx.resources.require(id, &version).await?;
    let api = ctx.resources.api(&resource, &id.namespace);
    let err = |what: &str, source| ClusterError::request(format!("{what} {id}"), source);
    let request =
        kube::core::Request::new(api.resource_url()).delete(&id.name, &DeleteParams::background());
    let deleted: Result<serde_json::Value, kube::Error> =
        send_as(ctx.resources.client(), request, identity).await;
    match deleted {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(err("delete (to create it again)", e)),
    }
    let started = Instant::now();
    loop {
        match api.get_opt(&id.name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) if started.elapsed() < GONE_WITHIN => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(Some(_)) => {
                return Err(ClusterError::Refused {
                    id: id.clone(),
                    reason: "the old Job is still being deleted after a minute; retried next sync",
                });
            }
            Err(e) => return Err(err("get (after delete)", e)),
        }
    }
}

/// Mark each object of `plan.ended` done in `inv` (see the module docs).
pub(super) fn record_ended(plan: &Plan<'_>, inv: &mut Inventory) {
    for ended in &plan.ended {
        if let Some(entry) = inv.entries.get_mut(&ended.id) {
            entry.done = Some(ended.done.clone());
        }
    }
}

/// Delete each object of `plan.ended` its policy deletes, as the tenant (background
/// propagation; one already gone is fine). An object that cannot be deleted is not done in
/// `inv` (the next sync reads it and tries again), and the error is the tenant's.
pub(super) async fn delete_ended(
    ctx: &Ctx<'_>,
    plan: &Plan<'_>,
    inv: &mut Inventory,
    report: &mut TenantReport,
) {
    for ended in plan.ended.iter().filter(|e| e.delete) {
        let Some(entry) = inv.entries.get(&ended.id) else {
            continue;
        };
        match delete_as_tenant(ctx, &entry.id, &entry.api_version).await {
            Ok(()) => report.ended.push(format!("{} ({})", entry.id, ended.done)),
            Err(e) => {
                if let Some(entry) = inv.entries.get_mut(&ended.id) {
                    entry.done = None;
                }
                report
                    .errors
                    .push(super::sync::cluster_error(Failure::Prune, &e));
            }
        }
    }
}

/// Delete object `id` (of `api_version`) as the tenant of its namespace; gone already is
/// fine.
async fn delete_as_tenant(
    ctx: &Ctx<'_>,
    id: &fief_core::objects::ObjectId,
    api_version: &str,
) -> Result<(), ClusterError> {
    let resource = ctx.resources.require(id, api_version).await?;
    let api = ctx.resources.api(&resource, &id.namespace);
    let request =
        kube::core::Request::new(api.resource_url()).delete(&id.name, &DeleteParams::background());
    let identity = super::tenant_identity(&id.namespace);
    let deleted: Result<serde_json::Value, kube::Error> =
        send_as(ctx.resources.client(), request, Some(&identity)).await;
    match deleted {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(ClusterError::request(
            format!("delete {id} (its helm.sh/hook-delete-policy)"),
            e,
        )),
    }
}
