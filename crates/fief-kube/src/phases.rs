//! Ordered phases in a sync: read the health of the objects placed before the tenant's first
//! changing placement, set aside the placements that must wait, and delete a changed pre or
//! post Job before it is created again.
//!
//! In: a tenant's render and plan (or one planned [`Apply`]). Out: the plan with the
//! placements after the first one that is not done neither applied nor pruned, and
//! `Plan::phase_hold` saying what they wait for or which pre/post object failed
//! ([`fief_core::plan::phase::gate`]); for a changed Job, the old one deleted (background
//! propagation) and gone. Reads only when the tenant has pre or post objects and something
//! placed after them changes: one GET per object placed before, a few at a time.

use std::time::{Duration, Instant};

use kube::api::DeleteParams;

use super::health::read_health;
use super::sync::Ctx;
use super::{ClusterError, Resources, send_as};
use fief_core::plan::{Apply, Plan, phase};
use fief_core::render::TenantRender;

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
