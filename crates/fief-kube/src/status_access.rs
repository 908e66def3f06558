//! Status access: lets a tenant's own people read its status without rights in the agent
//! namespace.
//!
//! In: a tenant and its status readers (its admins, operators and viewers; a `group:NAME`
//! entry is a group). Out: in the agent namespace, a Role `fief-status-<tenant>` that may
//! `get` exactly that tenant's inventory ConfigMap (which holds its status) and a RoleBinding
//! of the same name to the readers, server-side applied; or both deleted when the tenant has
//! no readers or is purged. Nothing else in the agent namespace becomes readable: another
//! tenant's inventory, the flags and the Lease stay forbidden to them.

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};

use super::sync::Ctx;
use super::{ClusterError, FIELD_MANAGER};
use fief_core::inventory::Inventory;
use fief_core::objects;
use fief_core::render::TenantRender;
use fief_core::status::{Failure, TenantReport};

/// Name of the tenant's status Role and RoleBinding.
pub fn name(tenant: &str) -> String {
    format!("fief-status-{tenant}")
}

/// The RBAC subject of one access entry (`group:NAME` is a group, anything else a user).
fn subject(entry: &str) -> Subject {
    let (kind, name) = match entry.strip_prefix("group:") {
        Some(group) => ("Group", group),
        None => ("User", entry),
    };
    Subject {
        api_group: Some("rbac.authorization.k8s.io".to_string()),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: None,
    }
}

fn metadata(tenant: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name(tenant)),
        namespace: Some(namespace.to_string()),
        labels: Some(
            [
                (objects::LABEL_MANAGED_BY.to_string(), "fief".to_string()),
                (objects::LABEL_TENANT.to_string(), tenant.to_string()),
            ]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}

/// The Role and RoleBinding granting `readers` read access to `tenant`'s status.
pub fn objects_for(tenant: &str, namespace: &str, readers: &[String]) -> (Role, RoleBinding) {
    let role = Role {
        metadata: metadata(tenant, namespace),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".to_string()]),
            resource_names: Some(vec![objects::inventory_name(tenant)]),
            verbs: vec!["get".to_string()],
            ..PolicyRule::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: metadata(tenant, namespace),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_string()),
            kind: "Role".to_string(),
            name: name(tenant),
        },
        subjects: Some(readers.iter().map(|r| subject(r)).collect()),
    };
    (role, binding)
}

/// Make `tenant`'s status readable by exactly `readers` (none: by nobody).
pub(super) async fn grant(
    ctx: &Ctx<'_>,
    tenant: &str,
    readers: &[String],
) -> Result<(), ClusterError> {
    if readers.is_empty() {
        return revoke(ctx, tenant).await;
    }
    let ns = ctx.options.agent_namespace.as_str();
    let client = ctx.resources.client().clone();
    let (role, binding) = objects_for(tenant, ns, readers);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let failed = |kind: &str, source| {
        ClusterError::request(format!("apply {kind}/{ns}/{}", name(tenant)), source)
    };
    Api::<Role>::namespaced(client.clone(), ns)
        .patch(&name(tenant), &params, &Patch::Apply(&role))
        .await
        .map_err(|e| failed("Role", e))?;
    Api::<RoleBinding>::namespaced(client, ns)
        .patch(&name(tenant), &params, &Patch::Apply(&binding))
        .await
        .map_err(|e| failed("RoleBinding", e))?;
    Ok(())
}

/// Grant the readers `render` names when they differ from those `inv` records, and record
/// them; when the grant fails the old one stands, `inv` keeps it (so the next sync tries
/// again) and the error is the tenant's. A render whose tenant file did not parse changes
/// nothing.
pub(super) async fn update(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    inv: &mut Inventory,
    report: &mut TenantReport,
) {
    let Some(readers) = &render.status_readers else {
        return;
    };
    if *readers == inv.status.status_readers {
        return;
    }
    match grant(ctx, &render.tenant, readers).await {
        Ok(()) => inv.status.status_readers = readers.clone(),
        Err(e) => report
            .errors
            .push(super::sync::cluster_error(Failure::Apply, &e)),
    }
}

/// Delete `tenant`'s status Role and RoleBinding; missing ones are fine.
pub(super) async fn revoke(ctx: &Ctx<'_>, tenant: &str) -> Result<(), ClusterError> {
    let ns = ctx.options.agent_namespace.as_str();
    let client = ctx.resources.client().clone();
    let dp = DeleteParams::default();
    let binding = Api::<RoleBinding>::namespaced(client.clone(), ns)
        .delete(&name(tenant), &dp)
        .await
        .map(drop);
    if let Some(e) = failure(binding, "RoleBinding", ns, tenant) {
        return Err(e);
    }
    let role = Api::<Role>::namespaced(client, ns)
        .delete(&name(tenant), &dp)
        .await
        .map(drop);
    failure(role, "Role", ns, tenant).map_or(Ok(()), Err)
}

/// A delete's failure, if it failed (already gone is done).
fn failure(
    result: Result<(), kube::Error>,
    kind: &str,
    ns: &str,
    tenant: &str,
) -> Option<ClusterError> {
    match result {
        Ok(()) => None,
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(source) => Some(ClusterError::request(
            format!("delete {kind}/{ns}/{}", name(tenant)),
            source,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_reads_only_the_tenants_own_inventory() {
        let (role, binding) = objects_for("acme", "fief-system", &["alice".into()]);
        let rules = role.rules.unwrap_or_default();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].verbs, vec!["get".to_string()]);
        assert_eq!(
            rules[0].resource_names,
            Some(vec![objects::inventory_name("acme")])
        );
        assert_eq!(binding.role_ref.name, "fief-status-acme");
    }

    #[test]
    fn group_entries_bind_groups_and_others_bind_users() {
        let (_, binding) = objects_for(
            "acme",
            "fief-system",
            &["group:acme-devs".into(), "bob".into()],
        );
        let subjects = binding.subjects.unwrap_or_default();
        assert_eq!(
            subjects
                .iter()
                .map(|s| (s.kind.as_str(), s.name.as_str()))
                .collect::<Vec<_>>(),
            vec![("Group", "acme-devs"), ("User", "bob")]
        );
    }
}
