//! `dependsOn` in a sync: read the health of what a changing component depends on, then set
//! aside the components whose dependencies are not applied and healthy yet.
//!
//! In: a tenant's render and plan. Out: the plan with those components' objects neither
//! applied nor pruned and `Plan::waiting` saying what each waits for
//! ([`fief_core::plan::depends::defer`]). Reads only, and only when a component with
//! dependencies has something to apply or prune: one GET per object of the components it
//! depends on, a few at a time.

use super::Resources;
use super::health::read_health;
use fief_core::plan::{Plan, depends};
use fief_core::render::TenantRender;

/// Set aside the components of `plan` whose dependencies are not ready (see the module docs).
pub async fn defer_dependents(resources: &Resources, render: &TenantRender, plan: &mut Plan<'_>) {
    let check = depends::to_check(render, plan);
    if check.is_empty() {
        return;
    }
    let objects = depends::objects_of(render, &check);
    let health = read_health(resources, objects).await;
    depends::defer(plan, render, &health);
}
