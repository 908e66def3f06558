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

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Apply, Plan};
use crate::health::Health;
use crate::model::BASELINE;
use crate::objects::ObjectId;
use crate::render::{RenderedObject, TenantRender};

/// The annotation that places any object in a phase: `pre`, `main` or `post`.
pub const ANNOTATION_PHASE: &str = "fief.dev/phase";
/// Helm's hook annotation: its events, comma-separated.
pub const HELM_HOOK: &str = "helm.sh/hook";
/// Helm's hook weight: an integer, lower first (not a number: 0, as Helm reads it).
pub const HELM_HOOK_WEIGHT: &str = "helm.sh/hook-weight";

/// When an object is applied, relative to the tenant's other objects.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Applied first; the others wait until it is healthy (a Job: complete).
    Pre,
    /// The tenant's objects; pruning goes with them.
    #[default]
    Main,
    /// Applied once the main objects are applied and healthy.
    Post,
}

impl Phase {
    /// The phase as the annotation writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Pre => "pre",
            Phase::Main => "main",
            Phase::Post => "post",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an object goes: its phase and, within it, its weight (lower first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Placement {
    /// The phase.
    pub phase: Phase,
    /// Order within the phase (always 0 in `main`).
    pub weight: i64,
}

impl Placement {
    /// The placement of an object without phase annotations.
    pub const MAIN: Placement = Placement {
        phase: Phase::Main,
        weight: 0,
    };

    /// After every placement: a hold after it sets nothing aside.
    pub const LAST: Placement = Placement {
        phase: Phase::Post,
        weight: i64::MAX,
    };
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.phase {
            Phase::Main => write!(f, "main phase"),
            p => write!(f, "{p} phase (weight {})", self.weight),
        }
    }
}

/// What becomes of a rendered object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classified {
    /// Applied in this placement.
    Placed(Placement),
    /// Not rendered: a Helm hook that runs only on `helm test`, on delete or on rollback,
    /// which fief does not do.
    Skipped,
}

/// A phase annotation fief cannot follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseError {
    /// `fief.dev/phase` is not `pre`, `main` or `post`.
    #[error("`{0}` is not a phase: write pre, main or post")]
    UnknownPhase(String),
    /// `helm.sh/hook` names an event Helm does not have.
    #[error(
        "`{0}` is not a Helm hook event (pre-install, pre-upgrade, post-install, post-upgrade, \
         pre-delete, post-delete, pre-rollback, post-rollback, test)"
    )]
    UnknownHook(String),
    /// `helm.sh/hook` runs the object both before and after the others.
    #[error(
        "`{0}` runs the hook both before and after the other objects; fief applies an object \
         once: split it in two, or set fief.dev/phase"
    )]
    PreAndPost(String),
    /// `helm.sh/hook-delete-policy` names a policy Helm does not have.
    #[error(
        "`{0}` is not a hook delete policy (before-hook-creation, hook-succeeded, hook-failed)"
    )]
    UnknownDeletePolicy(String),
}

impl PhaseError {
    /// The annotation at fault, as a field path.
    pub fn field(&self) -> String {
        let key = match self {
            PhaseError::UnknownPhase(_) => ANNOTATION_PHASE,
            PhaseError::UnknownDeletePolicy(_) => super::hooks::HELM_HOOK_DELETE_POLICY,
            _ => HELM_HOOK,
        };
        format!("metadata.annotations.{key}")
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["annotations"][key].as_str()
}

/// Classify a rendered object by its annotations: `fief.dev/phase` first; else `helm.sh/hook`
/// (`pre-install`/`pre-upgrade` → pre, `post-install`/`post-upgrade` → post, a hook of
/// both install and upgrade being one object; only test, delete or rollback events →
/// [`Classified::Skipped`]); else main. The weight is `helm.sh/hook-weight`'s. A
/// `helm.sh/hook-delete-policy` must name known policies ([`super::hooks::delete_policy`]).
pub fn classify(object: &Value) -> Result<Classified, PhaseError> {
    super::hooks::delete_policy(object)?;
    let weight = annotation(object, HELM_HOOK_WEIGHT)
        .and_then(|w| w.trim().parse::<i64>().ok())
        .unwrap_or(0);
    let placed = |phase: Phase| {
        let weight = if phase == Phase::Main { 0 } else { weight };
        Ok(Classified::Placed(Placement { phase, weight }))
    };
    if let Some(value) = annotation(object, ANNOTATION_PHASE) {
        return match value.trim() {
            "pre" => placed(Phase::Pre),
            "main" => placed(Phase::Main),
            "post" => placed(Phase::Post),
            other => Err(PhaseError::UnknownPhase(other.to_string())),
        };
    }
    let Some(hook) = annotation(object, HELM_HOOK) else {
        return placed(Phase::Main);
    };
    let (mut pre, mut post, mut test) = (false, false, false);
    for event in hook.split(',').map(|e| e.trim().to_ascii_lowercase()) {
        match event.as_str() {
            "pre-install" | "pre-upgrade" => pre = true,
            "post-install" | "post-upgrade" => post = true,
            "test" | "test-success" => test = true,
            "pre-delete" | "post-delete" | "pre-rollback" | "post-rollback" => {}
            _ => return Err(PhaseError::UnknownHook(event)),
        }
    }
    match (pre, post) {
        // A test hook is skipped whatever else it lists, as `helm template --skip-tests` does.
        _ if test => Ok(Classified::Skipped),
        (true, true) => Err(PhaseError::PreAndPost(hook.to_string())),
        (true, false) => placed(Phase::Pre),
        (false, true) => placed(Phase::Post),
        (false, false) => Ok(Classified::Skipped),
    }
}

/// Where a rendered object goes: baseline objects and objects whose annotations do not
/// classify (the render refuses those) are main.
pub fn placement_of(object: &RenderedObject) -> Placement {
    if object.component == BASELINE {
        return Placement::MAIN;
    }
    match classify(&object.object) {
        Ok(Classified::Placed(p)) => p,
        _ => Placement::MAIN,
    }
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

/// Why a sync does not go past a placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseHold {
    /// Objects placed after `after` wait for these objects (`id (why)`); or, with nothing
    /// set aside (`held` none, `after` [`Placement::LAST`]), the sync waits for objects with a
    /// delete policy to end ([`super::hooks`]).
    Waiting {
        /// The last placement that may go on.
        after: Placement,
        /// The first phase set aside, if any.
        held: Option<Phase>,
        /// What it waits for.
        on: Vec<String>,
    },
    /// A pre or post object failed: the tenant fails; nothing placed after it goes on.
    Failed {
        /// The failed object's placement.
        after: Placement,
        /// The first phase set aside.
        held: Phase,
        /// The failed object.
        object: String,
        /// Why, as its status says (a Job: its `Failed` condition's reason and message).
        reason: String,
    },
}

impl PhaseHold {
    /// The last placement that may go on: objects placed after it are set aside.
    pub fn after(&self) -> Placement {
        match self {
            PhaseHold::Waiting { after, .. } | PhaseHold::Failed { after, .. } => *after,
        }
    }

    /// Whether `object` is set aside by this hold.
    pub fn holds(&self, object: &RenderedObject) -> bool {
        object.component != BASELINE && placement_of(object) > self.after()
    }
}

impl std::fmt::Display for PhaseHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PhaseHold::Waiting {
                held: Some(held),
                on,
                ..
            } => write!(f, "the {held} phase waits for {}", on.join(", ")),
            PhaseHold::Waiting { held: None, on, .. } => write!(
                f,
                "waits for {} to end (its helm.sh/hook-delete-policy deletes it then)",
                on.join(", ")
            ),
            PhaseHold::Failed {
                after,
                held,
                object,
                reason,
            } => write!(
                f,
                "{after}: {object}: {reason}; the {held} phase is not applied and nothing is pruned \
                 (change the object to run it again)"
            ),
        }
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
