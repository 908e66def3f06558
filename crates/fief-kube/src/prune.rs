//! Prune: delete one inventory entry that left git, if it is still this tenant's member
//! and not marked `fief.dev/prune: disabled`.
//!
//! In: an inventory [`Entry`] (or a tenant's whole prune plan). Out: [`Pruned`] or a
//! [`ClusterError`] (or the inventory and report updated). A uid precondition makes sure the
//! object deleted is the one that was checked.

use std::collections::BTreeSet;

use kube::api::{DeleteParams, Preconditions};

use super::sync::Ctx;
use super::{ClusterError, send_as};
use fief_core::inventory::{Entry, Inventory};
use fief_core::model::BASELINE;
use fief_core::objects;
use fief_core::plan::Plan;
use fief_core::status::{Failure, TenantReport};

/// What became of an entry to prune.
pub(super) enum Pruned {
    /// Deleted now.
    Deleted,
    /// Already gone.
    Gone,
    /// Left in place, and why.
    Kept(&'static str),
}

/// Delete one entry, as the tenant for component objects.
pub(super) async fn prune_one(
    ctx: &Ctx<'_>,
    entry: &Entry,
    tenant: &str,
    applyset: &str,
) -> Result<Pruned, ClusterError> {
    let resource = ctx.resources.require(&entry.id, &entry.api_version).await?;
    let api = ctx.resources.api(&resource, &entry.id.namespace);
    let object_err =
        |what: &str, source| ClusterError::request(format!("{what} {}", entry.id), source);
    let Some(live) = api
        .get_opt(&entry.id.name)
        .await
        .map_err(|e| object_err("get (before prune)", e))?
    else {
        return Ok(Pruned::Gone);
    };
    let labels = live.metadata.labels.clone().unwrap_or_default();
    if labels.get(objects::LABEL_TENANT).map(String::as_str) != Some(tenant)
        || labels.get(objects::LABEL_PART_OF).map(String::as_str) != Some(applyset)
    {
        return Ok(Pruned::Kept(
            "no longer labelled as this tenant's; left in place",
        ));
    }
    let annotations = live.metadata.annotations.clone().unwrap_or_default();
    if annotations
        .get(objects::ANNOTATION_PRUNE)
        .map(String::as_str)
        == Some("disabled")
    {
        return Ok(Pruned::Kept("fief.dev/prune: disabled; left in place"));
    }
    if super::adopt::is_namespace(&entry.id.group, &entry.id.kind) {
        let created = match entry.created {
            Some(created) => created,
            // Recorded by a version without the flag: created by fief only if fief is the
            // only field manager (a namespace made by anyone else names its maker).
            None => live
                .metadata
                .managed_fields
                .as_deref()
                .unwrap_or_default()
                .iter()
                .all(|m| m.manager.as_deref() == Some(super::FIELD_MANAGER)),
        };
        if !created {
            return Ok(Pruned::Kept(
                "namespace not created by fief (it existed before the tenant took it); left in place",
            ));
        }
    }
    let params = DeleteParams {
        preconditions: live.metadata.uid.clone().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    // Component objects are deleted as the tenant's ServiceAccount of their namespace.
    let identity = (!entry.component.is_empty() && entry.component != BASELINE)
        .then(|| super::tenant_identity(&entry.id.namespace));
    let request = kube::core::Request::new(api.resource_url()).delete(&entry.id.name, &params);
    let result: Result<serde_json::Value, kube::Error> =
        send_as(ctx.resources.client(), request, identity.as_deref()).await;
    match result {
        Ok(_) => Ok(Pruned::Deleted),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Pruned::Gone),
        Err(e) => Err(object_err("delete (kept in the inventory)", e)),
    }
}

/// Prune the plan's entries (workloads first, namespaces last), removing each deleted or gone
/// entry from `inv`. A namespace holding objects that are kept must stay (deleting it deletes
/// them), and those objects stay in the inventory so the namespace is held on every later
/// sync too.
pub(super) async fn prune_entries(
    ctx: &Ctx<'_>,
    tenant: &str,
    plan: &Plan<'_>,
    inv: &mut Inventory,
    report: &mut TenantReport,
) {
    let applyset = objects::tenant_applyset_id(tenant, &ctx.options.agent_namespace);
    let pruned_namespaces: BTreeSet<&str> = plan
        .prune
        .iter()
        .filter(|e| e.id.group.is_empty() && e.id.kind == "Namespace")
        .map(|e| e.id.name.as_str())
        .collect();
    let mut holding: BTreeSet<String> = BTreeSet::new();
    for entry in &plan.prune {
        let is_namespace = entry.id.group.is_empty() && entry.id.kind == "Namespace";
        if is_namespace && holding.contains(&entry.id.name) {
            report.kept.push(format!(
                "{}: holds objects that are kept; left in place",
                entry.id
            ));
            continue;
        }
        let held = pruned_namespaces.contains(entry.id.namespace.as_str());
        match prune_one(ctx, entry, tenant, &applyset).await {
            Ok(Pruned::Deleted) => {
                inv.entries.remove(&entry.id);
                report.counts.pruned += 1;
            }
            Ok(Pruned::Gone) => {
                inv.entries.remove(&entry.id);
            }
            Ok(Pruned::Kept(reason)) => {
                if held {
                    holding.insert(entry.id.namespace.clone());
                } else {
                    inv.entries.remove(&entry.id);
                }
                report.kept.push(format!("{}: {reason}", entry.id));
            }
            Err(e) => {
                holding.insert(entry.id.namespace.clone());
                report.counts.failed += 1;
                report
                    .errors
                    .push(super::sync::cluster_error(Failure::Prune, &e));
            }
        }
    }
}
