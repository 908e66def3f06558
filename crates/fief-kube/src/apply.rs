//! Apply: one object by server-side apply, as the tenant's identity for component objects;
//! waiting for a CRD to be Established.
//!
//! In: a planned [`Apply`]. Out: the object as the server returned it, or a [`ClusterError`]
//! naming it. Retries a fresh RoleBinding's 403 (the authorizer's cache lags); a 429 or 503 is
//! retried by kube's own retry layer under every request.

use std::time::Duration;

use kube::api::Patch;
use serde_json::Value;

use super::sync::{Ctx, api_version};
use super::{ClusterError, FIELD_MANAGER, send_as};
use fief_core::model::BASELINE;
use fief_core::plan::Apply;

/// How long a component object's 403 is retried after the baseline RBAC changed.
const FORBIDDEN_RETRY: Duration = Duration::from_secs(20);

/// Server-side apply one object; component objects go as `identity`.
pub(super) async fn apply_one(
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
pub(super) async fn wait_established(ctx: &Ctx<'_>, a: &Apply<'_>) -> Result<(), ClusterError> {
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
