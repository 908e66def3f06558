//! Ordered phases: which of a tenant's objects are applied before the others (`pre`, such as a
//! database migration Job), after them (`post`), or with them (`main`), and how far this sync
//! may go through them.
//!
//! In: a rendered object's annotations — `fief.dev/phase`, or Helm's `helm.sh/hook` and
//! `helm.sh/hook-weight` — and, for a sync, the tenant's render, its [`Plan`] and the health of
//! the objects of the phases before the first one with something to apply or prune
//! ([`to_check`]). Out: each object's [`Placement`] (or that it is not rendered at all: test,
//! delete and rollback hooks), and the plan with every placement after the first one that is
//! not done set aside — neither applied nor pruned (the prune goes with `main`) — and
//! [`Plan::phase_hold`] saying what they wait for, or which pre/post object failed. Baseline
//! objects are never placed: they are the tenant's ground and always go first. Components
//! held for their dependencies ([`super::depends`], which runs first) are left out: neither
//! waited for nor holding anything. Pure.
//!
//! A placement is done when nothing of it is applied in this sync and each of its objects is
//! healthy by kstatus rules (a Job `Complete`); a `main` object of a component that does not
//! wait for health (`health.wait: false`) is done once applied. An object with a delete policy
//! that the inventory records [done](crate::inventory::Entry::done) is known by that record
//! and never read (it may be gone): succeeded, it is healthy; failed, it fails the tenant
//! until its content changes, wherever it is placed. Which such objects end in a sync, and the
//! hold while some have not ended, are [`super::hooks`]'s. Objects of one placement go
//! together, in the sync's stage order; placements go by phase, then weight (lower first).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::placement::placement;
pub use super::placement::{
    ANNOTATION_PHASE, Classified, HELM_HOOK, HELM_HOOK_WEIGHT, Phase, PhaseError, PhaseHold,
    Placement, classify,
};
use super::{Apply, Plan};
use crate::health::Health;
use crate::model::BASELINE;
use crate::objects::ObjectId;
use crate::render::{RenderedObject, TenantRender};

/// Where a rendered object goes: baseline objects and objects whose annotations do not
/// classify (the render refuses those) are main.
pub fn placement_of(object: &RenderedObject) -> Placement {
    placement(&object.component, &object.object)
}

/// Whether applying `a` must delete the live object first: a pre or post Job the previous
/// inventory has, whose rendered content differs from `previous_hash` (what was applied; empty
/// when a sync stopped before applying it) — a Job's template cannot be changed in place
/// (Helm's `before-hook-creation`). A Job new to the inventory is created, not deleted first.
pub fn recreates(a: &Apply<'_>, previous_hash: Option<&str>) -> bool {
    let id = &a.object.id;
    id.group == "batch"
        && id.kind == "Job"
        && a.existed
        && placement_of(a.object) != Placement::MAIN
        && previous_hash.is_some_and(|h| h != a.hash)
}

impl PhaseHold {
    /// Whether `object` is set aside by this hold.
    pub fn holds(&self, object: &RenderedObject) -> bool {
        object.component != BASELINE && placement_of(object) > self.after()
    }
}

/// Placed objects by placement.
type Placements<'a> = super::hooks::Placed<'a>;

/// The tenant's placed objects by placement, leaving out the baseline and the components this
/// sync holds for their dependencies (`dependsOn` orders first: a migration Job of a
/// component that depends on its database waits for the database, which it does not hold).
fn placements<'a>(render: &'a TenantRender, plan: &Plan<'_>) -> Placements<'a> {
    let mut out: BTreeMap<Placement, Vec<&RenderedObject>> = BTreeMap::new();
    let placed =
        |o: &&RenderedObject| o.component != BASELINE && !plan.waiting.contains_key(&o.component);
    for o in render.objects.iter().filter(placed) {
        out.entry(placement_of(o)).or_default().push(o);
    }
    out
}

/// Placements with something to apply in `plan` (and `main` when it prunes).
fn busy(plan: &Plan<'_>) -> BTreeSet<Placement> {
    let mut out: BTreeSet<Placement> = plan
        .stages
        .iter()
        .flatten()
        .filter(|a| a.object.component != BASELINE)
        .map(|a| placement_of(a.object))
        .collect();
    if !plan.prune.is_empty() {
        out.insert(Placement::MAIN);
    }
    out
}

/// The objects whose health this sync must know: those placed before the first placement
/// with something to apply or prune, and those of a pre or post phase with objects of a
/// delete policy that are not done yet ([`super::hooks::ending`]); never a done one (it may
/// be gone). Empty when the tenant has no pre or post objects, or nothing of it changes and
/// every object with a delete policy is done (then no object is read).
pub fn to_check<'a>(render: &'a TenantRender, plan: &Plan<'_>) -> Vec<&'a RenderedObject> {
    let busy = busy(plan);
    let first = busy.iter().next().copied();
    let placed = placements(render, plan);
    let ending = super::hooks::ending(&placed, &busy, plan);
    let unread = HashMap::new();
    let done = super::hooks::Known::new(plan, &unread);
    placed
        .into_iter()
        .filter(|(p, _)| first.is_some_and(|f| *p < f) || ending.contains(&p.phase))
        .flat_map(|(_, objects)| objects)
        .filter(|o| !done.is_done(&o.id))
        .collect()
}

/// Set aside every placement after the first one that is not done (see the module docs),
/// recording why in `plan.phase_hold`, and the objects with a delete policy that end in this
/// sync in `plan.ended` ([`super::hooks`]). `health` holds what is known of [`to_check`]'s
/// objects (absent: not found or not read); a done object is known by its record.
pub fn gate(plan: &mut Plan<'_>, render: &TenantRender, health: &HashMap<ObjectId, Health>) {
    let busy = busy(plan);
    let placed = placements(render, plan);
    let known = super::hooks::Known::new(plan, health);
    let mut hold = first_hold(&placed, &busy, render, &known);
    // A failure recorded (or read) past what the loop above looked at fails the tenant too.
    if let Some(failed) = first_failure(&placed, &busy, &known)
        && hold.as_ref().is_none_or(|h| failed.after() < h.after())
    {
        hold = Some(failed);
    }
    plan.ended = super::hooks::ended(&placed, &busy, &known, hold.as_ref());
    if hold.is_none() {
        hold = super::hooks::awaiting(&placed, plan, &known, &plan.ended);
    }
    let Some(hold) = hold else {
        return;
    };
    for stage in plan.stages.iter_mut() {
        stage.retain(|a| !hold.holds(a.object));
    }
    if hold.after() < Placement::MAIN {
        plan.prune.clear();
    }
    plan.phase_hold = Some(hold);
}

/// The first phase after `p` with something to apply (main when none).
fn held_after(busy: &BTreeSet<Placement>, p: Placement) -> Phase {
    busy.range((std::ops::Bound::Excluded(p), std::ops::Bound::Unbounded))
        .next()
        .map_or(Phase::Main, |n| n.phase)
}

/// The first placement before the last busy one that is not done, as a hold: busy itself
/// (applied in this sync), or waiting for or failed by its objects.
fn first_hold(
    placed: &Placements<'_>,
    busy: &BTreeSet<Placement>,
    render: &TenantRender,
    known: &super::hooks::Known<'_>,
) -> Option<PhaseHold> {
    let last = busy.iter().next_back().copied()?;
    for (p, objects) in placed.range(..last) {
        let held = held_after(busy, *p);
        if busy.contains(p) {
            let on = objects
                .iter()
                .map(|o| format!("{} (applied in this sync, not yet healthy)", o.id))
                .collect();
            return Some(PhaseHold::Waiting {
                after: *p,
                held: Some(held),
                on,
            });
        }
        if let Some(h) = not_done(*p, objects, render, known, held) {
            return Some(h);
        }
    }
    None
}

/// The first pre or post object not applied in this sync that failed (as recorded, or as
/// read), as a hold.
fn first_failure(
    placed: &Placements<'_>,
    busy: &BTreeSet<Placement>,
    known: &super::hooks::Known<'_>,
) -> Option<PhaseHold> {
    let unapplied = placed
        .iter()
        .filter(|(p, _)| **p != Placement::MAIN && !busy.contains(p));
    for (p, objects) in unapplied {
        for o in objects {
            if let Some(Health::Failed(reason)) = known.health(&o.id) {
                return Some(PhaseHold::Failed {
                    after: *p,
                    held: held_after(busy, *p),
                    object: o.id.to_string(),
                    reason,
                });
            }
        }
    }
    None
}

/// Why placement `p` (not applied in this sync) is not done, if it is not.
fn not_done(
    p: Placement,
    objects: &[&RenderedObject],
    render: &TenantRender,
    known: &super::hooks::Known<'_>,
    held: Phase,
) -> Option<PhaseHold> {
    let mut on = Vec::new();
    for o in objects {
        if p == Placement::MAIN && render.dependencies.unwaited.contains(&o.component) {
            continue;
        }
        match known.health(&o.id) {
            Some(Health::Current) => {}
            Some(Health::Failed(why)) if p != Placement::MAIN => {
                return Some(PhaseHold::Failed {
                    after: p,
                    held,
                    object: o.id.to_string(),
                    reason: why,
                });
            }
            Some(Health::Failed(why) | Health::InProgress(why)) => {
                on.push(format!("{} ({why})", o.id));
            }
            None => on.push(format!("{} (not found)", o.id)),
        }
    }
    (!on.is_empty()).then_some(PhaseHold::Waiting {
        after: p,
        held: Some(held),
        on,
    })
}
