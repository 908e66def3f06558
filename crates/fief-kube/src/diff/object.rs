//! Comparing one rendered object with the cluster: a server-side dry-run sent as apply
//! sends the write, or, when the caller cannot dry-run it, the live object's fields fief sets.
//!
//! In: a tenant's render, one rendered object and its live form (if any). Out: its
//! [`ObjectDiff`] (none when equal), said to be compared by the server or client-side and
//! why, or the [`ClusterError`] apply would hit.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::api::{Api, DynamicObject, Patch, PostParams};
use serde_json::{Value, json};

use super::ObjectDiff;
use super::text::{normalise, text_diff};
use crate::{ClusterError, FIELD_MANAGER, Resources, send_as};
use fief_core::model::BASELINE;
use fief_core::plan;
use fief_core::render::TenantRender;

/// How one object was compared.
pub(super) enum Compared {
    /// By the API server (dry-run).
    Server(Option<ObjectDiff>),
    /// Client-side, and why.
    Client(Option<ObjectDiff>, String),
}

/// What diffing one tenant's objects shares.
pub(super) struct DiffCtx<'a> {
    pub(super) resources: &'a Resources,
    /// Namespaces whose baseline (Namespace, RBAC) this diff would create or change: the
    /// tenant identity's rights there do not exist yet.
    pub(super) pending: BTreeSet<String>,
    /// Whether the caller may impersonate `fief-tenant`, by namespace.
    pub(super) impersonate: HashMap<String, bool>,
}

/// Namespaces whose Namespace or baseline RBAC the plan applies.
pub(super) fn pending_namespaces(p: &plan::Plan<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for a in &p.stages[0] {
        if a.object.id.kind == "Namespace" {
            out.insert(a.object.id.name.clone());
        }
    }
    for a in &p.stages[plan::STAGE_BASELINE_RBAC] {
        out.insert(a.object.id.namespace.clone());
    }
    out
}

/// Whether the caller may impersonate the tenant identity of `namespace` (one
/// SelfSubjectAccessReview per namespace).
async fn can_impersonate(ctx: &mut DiffCtx<'_>, namespace: &str) -> bool {
    if let Some(&known) = ctx.impersonate.get(namespace) {
        return known;
    }
    let review: SelfSubjectAccessReview = match serde_json::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "verb": "impersonate", "resource": "serviceaccounts",
            "namespace": namespace, "name": crate::TENANT_SERVICE_ACCOUNT,
        }},
    })) {
        Ok(r) => r,
        Err(_) => return false,
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(ctx.resources.client().clone());
    let allowed = api
        .create(&PostParams::default(), &review)
        .await
        .ok()
        .and_then(|r| r.status)
        .is_some_and(|s| s.allowed);
    ctx.impersonate.insert(namespace.to_string(), allowed);
    allowed
}

/// One object compared: by a dry-run apply (as the tenant for component objects), or
/// client-side when the caller cannot impersonate the tenant or dry-run the baseline.
pub(super) async fn object_diff(
    ctx: &mut DiffCtx<'_>,
    render: &TenantRender,
    o: &fief_core::render::RenderedObject,
    live: Option<&Value>,
) -> Result<Compared, ClusterError> {
    let version = crate::sync::api_version(&o.object);
    let resource = ctx.resources.require(&o.id, &version).await?;
    // List items carry no apiVersion/kind; take them from the rendered object.
    let before = live.cloned().map(|mut l| {
        if let Some(map) = l.as_object_mut() {
            map.insert("apiVersion".into(), Value::String(version.clone()));
            map.insert("kind".into(), Value::String(o.id.kind.clone()));
        }
        l
    });
    let component = o.component != BASELINE;
    let ns = render
        .namespaces
        .get(&o.env)
        .map(String::as_str)
        .unwrap_or(o.id.namespace.as_str());
    if component && !can_impersonate(ctx, ns).await {
        let why = format!(
            "the caller may not impersonate {}",
            crate::tenant_identity("<namespace>")
        );
        return Ok(Compared::Client(client_side(render, o, before), why));
    }
    let identity = component.then(|| crate::tenant_identity(ns));
    let api = ctx.resources.api(&resource, &o.id.namespace);
    let params = crate::forced_apply(FIELD_MANAGER).dry_run();
    let request = kube::core::Request::new(api.resource_url()).patch(
        &o.id.name,
        &params,
        &Patch::Apply(&o.object),
    );
    let result: Result<DynamicObject, kube::Error> =
        send_as(ctx.resources.client(), request, identity.as_deref()).await;
    let after = match result {
        Ok(obj) => normalise(serde_json::to_value(obj).unwrap_or(Value::Null)),
        // The namespace does not exist yet (a new tenant): the object will be created as is.
        Err(kube::Error::Api(s)) if s.code == 404 && live.is_none() => normalise(o.object.clone()),
        // The tenant identity's rights come with this very apply (baseline RBAC pending).
        Err(kube::Error::Api(s)) if s.code == 403 && component && ctx.pending.contains(ns) => {
            let why = "the tenant identity's RoleBinding is not applied yet".to_string();
            return Ok(Compared::Client(client_side(render, o, before), why));
        }
        // The caller cannot write (a read-only user): dry-run is authorized as the write.
        Err(kube::Error::Api(s)) if s.code == 403 && !component => {
            let why = "the caller may not dry-run the baseline (read-only rights)".to_string();
            return Ok(Compared::Client(client_side(render, o, before), why));
        }
        Err(source) => {
            let who = identity.as_deref().unwrap_or("the caller");
            return Err(ClusterError::request(
                format!(
                    "dry-run apply {} (as {who}); apply would fail the same way",
                    o.id
                ),
                source,
            ));
        }
    };
    let before = before.map(normalise);
    if before.as_ref() == Some(&after) {
        return Ok(Compared::Server(None));
    }
    Ok(Compared::Server(Some(text_diff(
        render,
        o,
        before.as_ref(),
        &after,
    ))))
}

/// The rendered object against the live object projected on the fields fief sets.
fn client_side(
    render: &TenantRender,
    o: &fief_core::render::RenderedObject,
    live: Option<Value>,
) -> Option<ObjectDiff> {
    let after = normalise(o.object.clone());
    let before = live.map(|l| normalise(plan::projection(&o.object, &l)));
    if before.as_ref() == Some(&after) {
        return None;
    }
    Some(text_diff(render, o, before.as_ref(), &after))
}
