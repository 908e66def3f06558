//! The component a tenant renders in one environment: the head's folder, the one its
//! component entry pins (`ref:`), or the one its environment's override pins
//! (`overrides.<env>.components.<c>.ref`), which wins.
//!
//! In: the [`Repo`] (with pinned folders read by [`crate::pins`]), the tenant, its component
//! as its entry resolved it, and an environment. Out: the entry, the folder key
//! (`name@ref` when pinned) and the parsed component to render; or the diagnostics of a
//! pinned folder that could not be read. Pure.

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Component, ComponentRef, Repo, Tenant, pinned_key};

use super::tenant::{env_override, tenant_entry};

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
