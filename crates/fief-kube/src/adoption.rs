//! Adoption of live objects (`fief apply --adopt`, `fief diff --adopt`): objects a tenant's
//! render holds that already exist in the cluster, made by another tool (Flux, Argo CD, Helm,
//! kubectl), and that no inventory records.
//!
//! In: one rendered object and the [`Adopt`] mode; for a sync, a tenant's plan. Out: what the
//! cluster holds under that name ([`Examined`]: nothing, this tenant's own object, another fief
//! tenant's, or a foreign object equal to the render or not — compared by a server-side
//! dry-run of fief's own apply against the live object, fief's labels aside); for a sync, the
//! objects to take or an [`AdoptionError`] (nothing of the tenant is applied); after the
//! apply, each taken object's other field managers and kubectl's last-applied annotation
//! removed, so fief alone owns the fields it sets and a field later removed from git is
//! removed from the object. Nothing is deleted or recreated: Pods keep running.

use std::collections::BTreeSet;

use kube::api::Patch;
use serde_json::{Value, json};

pub use super::sync::Adopt;
use super::sync::{Ctx, api_version, cluster_error, step_failure};
use super::{ClusterError, FIELD_MANAGER, Resources, send_as};
use fief_core::inventory::Inventory;
use fief_core::model::BASELINE;
use fief_core::objects::{self, ObjectId};
use fief_core::plan::Plan;
use fief_core::render::{RenderedObject, TenantRender};
use fief_core::status::{Failure, SyncError, TenantReport};

/// Field managers whose fields an adopted object hands to fief: the GitOps controllers and
/// Helm (`kustomize-controller`, `helm-controller`, `helm`, Argo CD's) and kubectl's
/// (`kubectl`, `kubectl-client-side-apply`, `kubectl-create`, …, `before-first-apply`).
/// Managers of a subresource (a status) and every other controller keep their fields.
pub fn is_handed_over(manager: &str) -> bool {
    const GITOPS: [&str; 6] = [
        "kustomize-controller",
        "helm-controller",
        "helm",
        "argocd-controller",
        "argocd-application-controller",
        "before-first-apply",
    ];
    GITOPS.contains(&manager) || manager == "kubectl" || manager.starts_with("kubectl-")
}

/// kubectl's client-side apply record, removed from an adopted object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What the cluster holds under a rendered object's name.
#[derive(Debug)]
pub enum Examined {
    /// Nothing: the object will be created.
    Absent,
    /// An object already labelled as this tenant's.
    Own,
    /// An object labelled as another fief tenant's: never taken.
    OtherTenant(String),
    /// An object made by something else, equal to the render (fief's labels aside).
    Equal {
        /// The field managers that hold it now (besides status writers).
        managers: Vec<String>,
    },
    /// An object made by something else that differs from the render.
    Differs {
        /// The field managers that hold it now.
        managers: Vec<String>,
        /// The live object (server-maintained fields removed).
        live: Value,
        /// What fief's apply would make of it (server-maintained fields removed).
        applied: Value,
    },
}

/// Why a tenant's objects may not be taken.
#[derive(Debug, thiserror::Error)]
pub enum AdoptionError {
    /// An object is labelled as another fief tenant's.
    #[error(
        "{id} exists and belongs to fief tenant `{owner}`; it is never taken by another tenant: \
         nothing of this tenant is applied or pruned (rename the object or remove it from one tenant)"
    )]
    OtherTenant {
        /// The object.
        id: ObjectId,
        /// The tenant its labels name.
        owner: String,
    },
    /// Objects exist and differ from the render.
    #[error(
        "{} object(s) exist and differ from the render, so --adopt does not take them and nothing of \
         this tenant is applied: {}; see `fief diff --adopt` and change the values until they are equal, \
         or take them as rendered with --adopt=force",
        ids.len(),
        ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Differ {
        /// The objects.
        ids: Vec<ObjectId>,
    },
    /// The cluster could not be read.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Read the live object under `o`'s name and compare it with fief's apply of `o`: a
/// server-side dry-run sent as the caller (the comparison needs no tenant rights; the real
/// apply is still sent as the tenant).
pub async fn examine(
    resources: &Resources,
    tenant: &str,
    o: &RenderedObject,
) -> Result<Examined, ClusterError> {
    let version = api_version(&o.object);
    // A kind the cluster does not serve yet (its CRD comes with this very apply) has no
    // object to take.
    let Some(resource) = resources.resolve(&version, &o.id.kind).await else {
        return Ok(Examined::Absent);
    };
    let api = resources.api(&resource, &o.id.namespace);
    let live = api
        .get_opt(&o.id.name)
        .await
        .map_err(|e| ClusterError::request(format!("get {}", o.id), e))?;
    let Some(live) = live else {
        return Ok(Examined::Absent);
    };
    let live = serde_json::to_value(live).unwrap_or(Value::Null);
    match live["metadata"]["labels"][objects::LABEL_TENANT].as_str() {
        Some(owner) if owner == tenant => return Ok(Examined::Own),
        Some(owner) => return Ok(Examined::OtherTenant(owner.to_string())),
        None => {}
    }
    let params = super::forced_apply(FIELD_MANAGER).dry_run();
    let request = kube::core::Request::new(api.resource_url()).patch(
        &o.id.name,
        &params,
        &Patch::Apply(&o.object),
    );
    let applied: Value = send_as(resources.client(), request, None)
        .await
        .map_err(|e| ClusterError::request(format!("dry-run apply {} to adopt it", o.id), e))?;
    let managers = managers_of(&live);
    let (live, applied) = (comparable(live), comparable(applied));
    if live == applied {
        return Ok(Examined::Equal { managers });
    }
    Ok(Examined::Differs {
        managers,
        live,
        applied,
    })
}

/// The field managers of an object's main resource (not its subresources).
fn managers_of(live: &Value) -> Vec<String> {
    let mut out: Vec<String> = live["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["subresource"].as_str().unwrap_or_default().is_empty())
        .filter_map(|m| m["manager"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// An object without what the server maintains, its status, fief's labels and annotations
/// and kubectl's apply record: what must match for an object to be taken with no change.
pub fn comparable(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in super::diff::SERVER_FIELDS {
            meta.remove(f);
        }
        for (key, fief_owned) in [
            ("labels", is_fief_label as fn(&str) -> bool),
            ("annotations", is_fief_annotation),
        ] {
            let Some(map) = meta.get_mut(key).and_then(Value::as_object_mut) else {
                continue;
            };
            map.retain(|k, _| !fief_owned(k));
            if map.is_empty() {
                meta.remove(key);
            }
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

/// The labels fief sets (`fief.dev/…`, the ApplySet's, and `app.kubernetes.io/managed-by`,
/// which fief sets to `fief` where a chart or a controller set its own).
fn is_fief_label(key: &str) -> bool {
    key.starts_with("fief.dev/")
        || [objects::LABEL_MANAGED_BY, objects::LABEL_PART_OF].contains(&key)
}

/// fief's own annotations (`fief.dev/…`) and kubectl's apply record.
fn is_fief_annotation(key: &str) -> bool {
    key.starts_with("fief.dev/") || key == LAST_APPLIED
}

/// What a tenant's plan may take of what exists.
#[derive(Debug, Default)]
pub(super) struct Owned {
    /// New namespaces that do not exist: fief creates them.
    pub(super) created: BTreeSet<String>,
    /// New namespaces that exist, taken by `--adopt`.
    namespaces: BTreeSet<String>,
    /// Other objects that exist, taken by `--adopt`.
    taken: Vec<ObjectId>,
}

/// Decide what the plan may take ([`super::adopt::check_new_namespaces`] and [`take`]); the
/// error (secrets scrubbed) when the tenant may not be applied: a refusal is
/// [`Failure::Apply`], a read the cluster forbids [`Failure::Forbidden`].
pub(super) async fn check(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    plan: &Plan<'_>,
) -> Result<Owned, SyncError> {
    let new = super::adopt::check_new_namespaces(ctx, &render.tenant, plan)
        .await
        .map_err(|e| match &e {
            super::adopt::AdoptError::Cluster(c) => cluster_error(Failure::Apply, c),
            _ => SyncError::new(Failure::Apply, e.to_string()),
        })?;
    let taken = take(ctx, render, plan).await.map_err(|e| {
        let failure = match &e {
            AdoptionError::Cluster(c) => step_failure(Failure::Apply, c),
            _ => Failure::Apply,
        };
        SyncError::new(failure, render.secret_leaves.scrub(&e.to_string()))
    })?;
    Ok(Owned {
        created: new.absent,
        namespaces: new.adopted,
        taken,
    })
}

/// The objects of a tenant's plan to take (`Adopt::Equal` or `Force`): every object the
/// inventory does not record that exists; none for `Adopt::Never`. Namespaces are decided by
/// [`super::adopt`]. Another tenant's object, or (for `Equal`) one that differs, is an error.
async fn take(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    plan: &Plan<'_>,
) -> Result<Vec<ObjectId>, AdoptionError> {
    if ctx.options.adopt == Adopt::Never {
        return Ok(Vec::new());
    }
    let mut taken = Vec::new();
    let mut differ = Vec::new();
    for a in plan.stages.iter().flatten() {
        let o = a.object;
        if a.existed || super::adopt::is_namespace(&o.id.group, &o.id.kind) {
            continue;
        }
        match examine(ctx.resources, &render.tenant, o).await? {
            Examined::Absent | Examined::Own => {}
            Examined::OtherTenant(owner) => {
                return Err(AdoptionError::OtherTenant {
                    id: o.id.clone(),
                    owner,
                });
            }
            Examined::Equal { .. } => taken.push(o.id.clone()),
            Examined::Differs { .. } if ctx.options.adopt == Adopt::Force => {
                taken.push(o.id.clone());
            }
            Examined::Differs { .. } => differ.push(o.id.clone()),
        }
    }
    if !differ.is_empty() {
        return Err(AdoptionError::Differ { ids: differ });
    }
    Ok(taken)
}

/// The taken objects and adopted namespaces that the apply reached (their inventory entry
/// has a live hash), with their component.
fn applied(inv: &Inventory, owned: &Owned) -> Vec<(ObjectId, String)> {
    let namespaces = owned.namespaces.iter().map(|name| ObjectId {
        group: String::new(),
        kind: "Namespace".to_string(),
        namespace: String::new(),
        name: name.clone(),
    });
    namespaces
        .chain(owned.taken.iter().cloned())
        .filter_map(|id| {
            let entry = inv.entries.get(&id).filter(|e| !e.live.is_empty())?;
            let component = entry.component.clone();
            Some((id, component))
        })
        .collect()
}

/// After the apply: remove the handed-over field managers ([`is_handed_over`]) and kubectl's
/// apply record from each taken object fief applied, and list them in the report. Sent as
/// apply sends (component objects as the tenant), guarded by the object's resourceVersion
/// and retried on a conflict. A failure is an error of the report (the object stays applied
/// and recorded).
pub(super) async fn hand_over(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    inv: &Inventory,
    owned: &Owned,
    report: &mut TenantReport,
) {
    let taken = applied(inv, owned);
    for (id, component) in &taken {
        let Some(o) = render.objects.iter().find(|o| &o.id == id) else {
            continue;
        };
        let ns = render
            .namespaces
            .get(&o.env)
            .map(String::as_str)
            .unwrap_or("");
        let identity = (component != BASELINE).then(|| super::tenant_identity(ns));
        if let Err(e) = hand_over_one(ctx.resources, o, identity.as_deref()).await {
            report.fail(
                step_failure(Failure::Apply, &e),
                format!(
                    "{e}; the object is applied and recorded, but the other tools' field managers \
                     still co-own it (remove them with `kubectl edit --show-managed-fields`)"
                ),
            );
        }
    }
    report.adopted = taken.iter().map(|(id, _)| id.to_string()).collect();
}

/// Remove the handed-over managers of one object: GET, then a merge patch that carries the
/// resourceVersion and replaces `metadata.managedFields` (up to three tries).
async fn hand_over_one(
    resources: &Resources,
    o: &RenderedObject,
    identity: Option<&str>,
) -> Result<(), ClusterError> {
    let version = api_version(&o.object);
    let resource = resources.require(&o.id, &version).await?;
    let api = resources.api(&resource, &o.id.namespace);
    let mut tries = 0;
    loop {
        tries += 1;
        let live = api
            .get(&o.id.name)
            .await
            .map_err(|e| ClusterError::request(format!("get {}", o.id), e))?;
        let live = serde_json::to_value(live).unwrap_or(Value::Null);
        let Some(patch) = hand_over_patch(&live) else {
            return Ok(());
        };
        let request = kube::core::Request::new(api.resource_url()).patch(
            &o.id.name,
            &kube::api::PatchParams::default(),
            &Patch::Merge(&patch),
        );
        let result: Result<Value, kube::Error> =
            send_as(resources.client(), request, identity).await;
        match result {
            Ok(_) => return Ok(()),
            // The object changed between the GET and the patch: read it again.
            Err(kube::Error::Api(s)) if s.code == 409 && tries < 3 => {}
            Err(e) => {
                return Err(ClusterError::request(
                    format!("hand {} over to fief (remove other field managers)", o.id),
                    e,
                ));
            }
        }
    }
}

/// The merge patch that removes the handed-over managers and the last-applied annotation
/// from `live`; it carries the live resourceVersion, so the server refuses it (409) when the
/// object changed since. `None` when there is nothing to remove.
pub fn hand_over_patch(live: &Value) -> Option<Value> {
    let fields = live["metadata"]["managedFields"].as_array()?;
    let kept: Vec<&Value> = fields
        .iter()
        .filter(|m| {
            let manager = m["manager"].as_str().unwrap_or_default();
            let subresource = m["subresource"].as_str().unwrap_or_default();
            !subresource.is_empty() || !is_handed_over(manager)
        })
        .collect();
    let annotated = live["metadata"]["annotations"][LAST_APPLIED].is_string();
    if kept.len() == fields.len() && !annotated {
        return None;
    }
    let mut metadata = json!({
        "resourceVersion": live["metadata"]["resourceVersion"],
        "managedFields": kept,
    });
    if annotated {
        metadata["annotations"] = json!({ LAST_APPLIED: null });
    }
    Some(json!({ "metadata": metadata }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitops_and_kubectl_managers_hand_over_and_other_controllers_keep_their_fields() {
        for m in [
            "kustomize-controller",
            "helm-controller",
            "helm",
            "argocd-controller",
            "kubectl-client-side-apply",
            "kubectl",
            "kubectl-edit",
            "before-first-apply",
        ] {
            assert!(is_handed_over(m), "{m}");
        }
        for m in [
            "fief",
            "kube-controller-manager",
            "cert-manager",
            "kubectlish",
        ] {
            assert!(!is_handed_over(m), "{m}");
        }
    }

    #[test]
    fn the_hand_over_patch_keeps_fief_and_status_writers_and_drops_the_apply_record() {
        let live = json!({"metadata": {
            "resourceVersion": "42",
            "annotations": {LAST_APPLIED: "{}"},
            "managedFields": [
                {"manager": "kustomize-controller", "operation": "Apply"},
                {"manager": "fief", "operation": "Apply"},
                {"manager": "kustomize-controller", "operation": "Update", "subresource": "status"},
                {"manager": "kube-controller-manager", "operation": "Update"},
            ],
        }});
        let patch = hand_over_patch(&live).unwrap();
        assert_eq!(patch["metadata"]["resourceVersion"], "42");
        let kept: Vec<&str> = patch["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["manager"].as_str().unwrap())
            .collect();
        assert_eq!(
            kept,
            ["fief", "kustomize-controller", "kube-controller-manager"]
        );
        assert_eq!(patch["metadata"]["annotations"][LAST_APPLIED], Value::Null);
        assert!(
            patch["metadata"]["annotations"]
                .as_object()
                .unwrap()
                .contains_key(LAST_APPLIED)
        );
        let mine = json!({"metadata": {"managedFields": [{"manager": "fief"}]}});
        assert!(hand_over_patch(&mine).is_none());
    }

    #[test]
    fn objects_compare_equal_whatever_fief_labels_and_server_fields_they_carry() {
        let live = json!({"metadata": {"name": "a", "resourceVersion": "1", "labels": {"app": "x", "app.kubernetes.io/managed-by": "Helm"}, "annotations": {LAST_APPLIED: "{}"}}, "spec": {"a": 1}, "status": {"b": 2}});
        let applied = json!({"metadata": {"name": "a", "resourceVersion": "2", "labels": {"app": "x", objects::LABEL_MANAGED_BY: "fief", objects::LABEL_TENANT: "t"}, "annotations": {"fief.dev/phase": "pre", LAST_APPLIED: "{}"}}, "spec": {"a": 1}});
        assert_eq!(comparable(live.clone()), comparable(applied));
        let changed = json!({"metadata": {"name": "a"}, "spec": {"a": 2}});
        assert_ne!(comparable(live), comparable(changed));
    }
}
