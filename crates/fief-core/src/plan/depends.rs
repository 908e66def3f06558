//! `dependsOn` between a tenant's components: which components wait in this sync.
//!
//! In: the tenant's [`Dependencies`] (from its render), its [`Plan`], and the health of the
//! live objects of the components others depend on. Out: the plan with the objects of every
//! component whose dependencies are not yet applied and healthy set aside — neither applied
//! nor pruned this sync — and, per such component, what it waits for
//! ([`Plan::waiting`]). A dependency is ready when none of its own dependencies holds it and
//! either its component does not wait for health (`health.wait: false`: applied, even in this
//! same sync, is ready) or nothing of it is applied in this sync and each of its objects is
//! current by kstatus rules. Independent components are never held. Pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Plan;
use crate::health::Health;
pub use crate::inventory::describe_waiting as describe;
pub use crate::model::Dependencies;
use crate::objects::ObjectId;
use crate::render::TenantRender;

/// Components with something to apply or prune in `plan`.
fn busy(plan: &Plan<'_>) -> BTreeSet<String> {
    let applies = plan.stages.iter().flatten().map(|a| &a.object.component);
    applies
        .chain(plan.prune.iter().map(|e| &e.component))
        .cloned()
        .collect()
}

/// The components whose objects' health this sync must know: every dependency, direct or not,
/// of a component with something to apply or prune. Empty when nothing that depends on
/// another component changes (then no object is read).
pub fn to_check(render: &TenantRender, plan: &Plan<'_>) -> BTreeSet<String> {
    let needs = &render.dependencies.needs;
    let mut todo: Vec<&String> = busy(plan)
        .iter()
        .filter_map(|c| needs.get(c))
        .flatten()
        .collect();
    let mut out = BTreeSet::new();
    while let Some(c) = todo.pop() {
        if out.insert(c.clone()) {
            todo.extend(needs.get(c).into_iter().flatten());
        }
    }
    out
}

/// The objects of `components` in `render`: what [`defer`] needs the health of.
pub fn objects_of<'a>(
    render: &'a TenantRender,
    components: &BTreeSet<String>,
) -> Vec<&'a crate::render::RenderedObject> {
    render
        .objects
        .iter()
        .filter(|o| components.contains(&o.component))
        .collect()
}

/// Set aside the objects of every component whose dependencies are not ready (see the module
/// docs); `health` holds what is known of the objects of [`to_check`]'s components (absent:
/// not found or not read). Records what each held component waits for in `plan.waiting`.
pub fn defer(plan: &mut Plan<'_>, render: &TenantRender, health: &HashMap<ObjectId, Health>) {
    let deps = &render.dependencies;
    if deps.needs.is_empty() {
        return;
    }
    let busy = busy(plan);
    let mut judged: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut waiting = BTreeMap::new();
    for component in &busy {
        let blockers: Vec<String> = deps
            .needs
            .get(component)
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let why = not_ready(d, render, &busy, health, &mut judged, 0)?;
                Some(format!("{d} ({why})"))
            })
            .collect();
        if !blockers.is_empty() {
            waiting.insert(component.clone(), blockers);
        }
    }
    for stage in plan.stages.iter_mut() {
        stage.retain(|a| !waiting.contains_key(&a.object.component));
    }
    plan.prune.retain(|e| !waiting.contains_key(&e.component));
    plan.waiting = waiting;
}

/// Why component `c` is not ready to be depended on, or `None` when it is (memoized in
/// `judged`; `depth` bounds the walk, cycles being validation errors).
fn not_ready(
    c: &str,
    render: &TenantRender,
    busy: &BTreeSet<String>,
    health: &HashMap<ObjectId, Health>,
    judged: &mut BTreeMap<String, Option<String>>,
    depth: usize,
) -> Option<String> {
    if let Some(known) = judged.get(c) {
        return known.clone();
    }
    let mut needs = render.dependencies.needs.get(c).into_iter().flatten();
    let why = if depth > 64 {
        Some("dependency chain too deep".to_string())
    } else if let Some(d) =
        needs.find(|d| not_ready(d, render, busy, health, judged, depth + 1).is_some())
    {
        Some(format!("waits for {d}"))
    } else if render.dependencies.unwaited.contains(c) {
        // Not waited on for health: applied (or applied in this same sync, first in the
        // render's dependency order) is ready.
        None
    } else if busy.contains(c) {
        Some("applied in this sync, not yet healthy".to_string())
    } else {
        render
            .objects
            .iter()
            .filter(|o| o.component == c)
            .find_map(|o| match health.get(&o.id) {
                Some(Health::Current) => None,
                Some(Health::InProgress(why)) | Some(Health::Failed(why)) => {
                    Some(format!("{}: {why}", o.id))
                }
                None => Some(format!("{}: not found", o.id)),
            })
    };
    judged.insert(c.to_string(), why.clone());
    why
}
