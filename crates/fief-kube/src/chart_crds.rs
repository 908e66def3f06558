//! A chart's `crds/`: the CustomResourceDefinitions of the tenant's charts created when absent,
//! as `helm install` creates them, before the plan's first stage; never updated or deleted
//! (as Helm, which neither upgrades nor deletes `crds/` CRDs), and recorded in no inventory,
//! so no tenant's prune removes a CRD another tenant's objects use.
//!
//! In: the render's [`TenantRender::chart_crds`]. Out: each absent one created (as the agent:
//! a CRD is cluster-scoped) and waited for until Established, then discovery refreshed; the
//! created ones counted in the report, failures in its errors (the sync goes on: objects of a
//! missing kind fail on their own, naming it).

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::runtime::wait::{await_condition, conditions};

use super::sync::{Ctx, cluster_error};
use super::{ClusterError, FIELD_MANAGER};
use fief_core::render::{RenderedObject, TenantRender};
use fief_core::status::{Failure, TenantReport};

/// How long a created CRD is waited for.
const ESTABLISHED_WAIT: Duration = Duration::from_secs(60);

/// Create the render's chart CRDs that the cluster lacks.
pub(super) async fn create_absent(ctx: &Ctx<'_>, render: &TenantRender, report: &mut TenantReport) {
    if render.chart_crds.is_empty() {
        return;
    }
    let api: Api<CustomResourceDefinition> = Api::all(ctx.resources.client().clone());
    let mut created = 0;
    for crd in &render.chart_crds {
        match create_one(&api, crd).await {
            Ok(true) => created += 1,
            Ok(false) => {}
            Err(e) => report.errors.push(cluster_error(Failure::Apply, &e)),
        }
    }
    report.counts.created += created;
    if created > 0
        && let Err(e) = ctx.resources.refresh().await
    {
        report.errors.push(cluster_error(Failure::Apply, &e));
    }
}

/// Create `crd` unless it exists (true: created, and Established).
async fn create_one(
    api: &Api<CustomResourceDefinition>,
    crd: &RenderedObject,
) -> Result<bool, ClusterError> {
    let name = &crd.id.name;
    let from = format!(
        "{} (from {} of component {})",
        crd.id, crd.source, crd.component
    );
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| ClusterError::request(format!("read {from}"), e))?;
    if existing.is_some() {
        return Ok(false);
    }
    let object: CustomResourceDefinition = serde_json::from_value(crd.object.clone())
        .map_err(|e| ClusterError::Client {
            what: format!("create {from}"),
            detail: format!(
                "not a CustomResourceDefinition of apiextensions.k8s.io/v1: {e}; fix the chart's crds/ file"
            ),
        })?;
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    };
    match api.create(&params, &object).await {
        Ok(_) => {}
        // Another tenant's sync created it meanwhile: it is there, which is all that counts.
        Err(kube::Error::Api(s)) if s.code == 409 => return Ok(false),
        Err(e) => return Err(ClusterError::request(format!("create {from}"), e)),
    }
    let waited = tokio::time::timeout(
        ESTABLISHED_WAIT,
        await_condition(api.clone(), name, conditions::is_crd_established()),
    )
    .await;
    match waited {
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) => Err(ClusterError::request(
            format!("wait for {from} to be Established"),
            kube::Error::Service(Box::new(e)),
        )),
        Err(_) => Err(ClusterError::CrdTimeout {
            id: crd.id.clone(),
            seconds: ESTABLISHED_WAIT.as_secs(),
        }),
    }
}
