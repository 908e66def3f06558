//! The component a tenant renders in one environment: the head's folder, the one its
//! component entry pins (`ref:`), or the one its environment's override pins
//! (`overrides.<env>.components.<c>.ref`), which wins.
//!
//! In: the [`Repo`] (with pinned folders read by [`crate::pins`]), the tenant, its component
//! as its entry resolved it, and an environment. Out: the entry, the folder key
//! (`name@ref` when pinned) and the parsed component to render; or the diagnostics of a
//! pinned folder that could not be read; and the two lookups the render makes of a tenant's
//! component (its entry, its override in an environment). Pure.

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Component, ComponentOverride, ComponentRef, Repo, Tenant, pinned_key};

/// What one component renders from in one environment.
pub(super) struct EnvComponent<'a> {
    /// The tenant's entry of the component (its `values`, `version`).
    pub(super) entry: Option<&'a ComponentRef>,
    /// The folder key: `name`, or `name@ref` when pinned.
    pub(super) dir: String,
    /// The component read from that folder.
    pub(super) component: &'a Component,
}

/// `component` (as the tenant's entry resolved it) in `env`: at the environment override's
/// `ref` when it sets one, else as the entry has it.
pub(super) fn env_component<'a>(
    repo: &'a Repo,
    tenant: &'a Tenant,
    component: &'a Component,
    env: &str,
) -> Result<EnvComponent<'a>, Vec<Diagnostic>> {
    let (entry, dir) = tenant_entry(tenant, component);
    let over = env_override(tenant, env, &component.name);
    let Some(git_ref) = over.and_then(|o| o.git_ref.as_deref()) else {
        return Ok(EnvComponent {
            entry,
            dir,
            component,
        });
    };
    let key = pinned_key(&component.name, git_ref);
    match repo.components.get(&key) {
        Some(Ok(at_ref)) => Ok(EnvComponent {
            entry,
            dir: key,
            component: at_ref,
        }),
        Some(Err(ds)) => Err(ds.clone()),
        // The repo was loaded without its pins (no git history to read them from).
        None => Err(vec![Diagnostic::new(
            repo.tenant_file(&tenant.metadata.name),
            None,
            Problem::PinnedRef {
                component: component.name.clone(),
                git_ref: git_ref.to_string(),
                detail: format!("environment `{env}`: the ref was not read"),
            },
        )]),
    }
}

/// A component's entry in the tenant file and its folder (`name@ref` when pinned).
pub(super) fn tenant_entry<'t>(
    tenant: &'t Tenant,
    component: &Component,
) -> (Option<&'t ComponentRef>, String) {
    let cref = tenant
        .spec
        .components
        .iter()
        .find(|c| c.name == component.name && c.git_ref == component.pinned)
        .map(|c| &**c);
    let dir = match &component.pinned {
        Some(r) => pinned_key(&component.name, r),
        None => component.name.clone(),
    };
    (cref, dir)
}

/// The tenant's override of `component` in `env`, if it has one.
pub(super) fn env_override<'t>(
    tenant: &'t Tenant,
    env: &str,
    component: &str,
) -> Option<&'t ComponentOverride> {
    tenant
        .spec
        .overrides
        .get(env)
        .and_then(|o| o.component(component))
}
