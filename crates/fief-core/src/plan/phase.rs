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
//! wait for health (`health.wait: false`) is done once applied. Objects of one placement go
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
}

impl PhaseError {
    /// The annotation at fault, as a field path.
    pub fn field(&self) -> String {
        let key = match self {
            PhaseError::UnknownPhase(_) => ANNOTATION_PHASE,
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
/// [`Classified::Skipped`]); else main. The weight is `helm.sh/hook-weight`'s.
pub fn classify(object: &Value) -> Result<Classified, PhaseError> {
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
    /// Objects placed after `after` wait for these objects (`id (why)`).
    Waiting {
        /// The last placement that may go on.
        after: Placement,
        /// The first phase set aside.
        held: Phase,
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
            PhaseHold::Waiting { held, on, .. } => {
                write!(f, "the {held} phase waits for {}", on.join(", "))
            }
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

/// The tenant's placed objects by placement, leaving out the baseline and the components this
/// sync holds for their dependencies (`dependsOn` orders first: a migration Job of a
/// component that depends on its database waits for the database, which it does not hold).
fn placements<'a>(
    render: &'a TenantRender,
    plan: &Plan<'_>,
) -> BTreeMap<Placement, Vec<&'a RenderedObject>> {
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
/// with something to apply or prune. Empty when the tenant has no pre or post objects, or
/// nothing of it changes (then no object is read).
pub fn to_check<'a>(render: &'a TenantRender, plan: &Plan<'_>) -> Vec<&'a RenderedObject> {
    let Some(first) = busy(plan).into_iter().next() else {
        return Vec::new();
    };
    placements(render, plan)
        .into_iter()
        .filter(|(p, _)| *p < first)
        .flat_map(|(_, objects)| objects)
        .collect()
}

/// Set aside every placement after the first one that is not done (see the module docs),
/// recording why in `plan.phase_hold`. `health` holds what is known of [`to_check`]'s objects
/// (absent: not found or not read).
pub fn gate(plan: &mut Plan<'_>, render: &TenantRender, health: &HashMap<ObjectId, Health>) {
    let busy = busy(plan);
    let Some(last) = busy.iter().next_back().copied() else {
        return;
    };
    let placed = placements(render, plan);
    let mut hold = None;
    for (p, objects) in placed.range(..last) {
        let held = busy
            .range((std::ops::Bound::Excluded(*p), std::ops::Bound::Unbounded))
            .next()
            .map_or(Phase::Main, |n| n.phase);
        if busy.contains(p) {
            let on = objects
                .iter()
                .map(|o| format!("{} (applied in this sync, not yet healthy)", o.id))
                .collect();
            hold = Some(PhaseHold::Waiting {
                after: *p,
                held,
                on,
            });
            break;
        }
        if let Some(h) = not_done(*p, objects, render, health, held) {
            hold = Some(h);
            break;
        }
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

/// Why placement `p` (not applied in this sync) is not done, if it is not.
fn not_done(
    p: Placement,
    objects: &[&RenderedObject],
    render: &TenantRender,
    health: &HashMap<ObjectId, Health>,
    held: Phase,
) -> Option<PhaseHold> {
    let mut on = Vec::new();
    for o in objects {
        if p == Placement::MAIN && render.dependencies.unwaited.contains(&o.component) {
            continue;
        }
        match health.get(&o.id) {
            Some(Health::Current) => {}
            Some(Health::Failed(why)) if p != Placement::MAIN => {
                return Some(PhaseHold::Failed {
                    after: p,
                    held,
                    object: o.id.to_string(),
                    reason: why.clone(),
                });
            }
            Some(Health::Failed(why) | Health::InProgress(why)) => {
                on.push(format!("{} ({why})", o.id));
            }
            None => on.push(format!("{} (not found)", o.id)),
        }
    }
    (!on.is_empty()).then_some(PhaseHold::Waiting { after: p, held, on })
}
