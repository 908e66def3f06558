//! Hook delete policies: Helm's `helm.sh/hook-delete-policy` on a pre or post object — which
//! of them ran to their end in this sync, which to delete, and which the sync still waits for.
//!
//! In: a rendered object's annotations ([`delete_policy`]); for a sync, the tenant's placed
//! objects, its [`Plan`] (whose unchanged entries say which objects are [`Done`] already), the
//! health read of [`super::phase::to_check`]'s objects and the phase hold found so far. Out:
//! the [`Ended`] objects — done now, each to delete or keep by its policy — and, when nothing
//! else holds the sync, a [`PhaseHold::Waiting`] naming the objects with a policy that have
//! not ended yet, so the tenant is looked at again until they have. Pure.
//!
//! As Helm does, an object is deleted by `hook-succeeded` only once every object of its phase
//! is healthy (a ServiceAccount hook that a Job hook of the same phase runs as stays until the
//! Job completed), and by `hook-failed` as soon as it failed. A succeeded object is done
//! whatever its policy (`hook-failed` alone keeps it): a hook with a policy runs once per
//! rendered content. `before-hook-creation` is what fief does to every changed pre or post
//! Job ([`super::phase::recreates`]). Main objects and the baseline have no policy.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Plan;
pub use super::placement::{
    DeletePolicy, HELM_HOOK_DELETE_POLICY, delete_policy, deleted_when_healthy,
};
use super::placement::{Phase, PhaseHold, Placement, placement};
use crate::health::Health;
use crate::inventory::Done;
use crate::objects::ObjectId;
use crate::render::RenderedObject;

/// The delete policy of a rendered object placed pre or post; none for main objects, the
/// baseline and annotations that do not parse (the render refuses those).
pub fn policy_of(object: &RenderedObject) -> DeletePolicy {
    if placement(&object.component, &object.object) == Placement::MAIN {
        return DeletePolicy::default();
    }
    delete_policy(&object.object).unwrap_or_default()
}

/// A pre or post object this sync finds at its end: recorded [`Done`] in the inventory, and
/// deleted when `delete`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The object.
    pub id: ObjectId,
    /// How it ended.
    pub done: Done,
    /// Its policy deletes it.
    pub delete: bool,
}

/// What is known of each placed object's health in one sync: a done object by its record,
/// the others as read.
pub(super) struct Known<'a> {
    done: HashMap<ObjectId, Done>,
    health: &'a HashMap<ObjectId, Health>,
}

impl<'a> Known<'a> {
    /// The done entries among the plan's unchanged ones, and `health` as read.
    pub(super) fn new(plan: &Plan<'_>, health: &'a HashMap<ObjectId, Health>) -> Known<'a> {
        let done = plan
            .unchanged
            .iter()
            .filter_map(|e| Some((e.id.clone(), e.done.clone()?)))
            .collect();
        Known { done, health }
    }

    /// Whether the object is done already.
    pub(super) fn is_done(&self, id: &ObjectId) -> bool {
        self.done.contains_key(id)
    }

    /// The object's health: a done one's as recorded, another's as read (`None`: not read,
    /// or not found).
    pub(super) fn health(&self, id: &ObjectId) -> Option<Health> {
        match self.done.get(id) {
            Some(Done::Succeeded) => Some(Health::Current),
            Some(Done::Failed(why)) => Some(Health::Failed(why.clone())),
            None => self.health.get(id).cloned(),
        }
    }
}

/// The placed objects by placement, as [`super::phase`] groups them.
pub(super) type Placed<'a> = BTreeMap<Placement, Vec<&'a RenderedObject>>;

/// The phases (pre, post) whose objects with a policy are not all done, and none of whose
/// placements has something to apply: the health of all their objects is read, to tell
/// whether they ended.
pub(super) fn ending(
    placed: &Placed<'_>,
    busy: &BTreeSet<Placement>,
    plan: &Plan<'_>,
) -> Vec<Phase> {
    let done: BTreeSet<&ObjectId> = plan
        .unchanged
        .iter()
        .filter(|e| e.done.is_some())
        .map(|e| &e.id)
        .collect();
    [Phase::Pre, Phase::Post]
        .into_iter()
        .filter(|phase| !busy.iter().any(|p| p.phase == *phase))
        .filter(|phase| {
            placed
                .iter()
                .filter(|(p, _)| p.phase == *phase)
                .flat_map(|(_, objects)| objects)
                .any(|o| policy_of(o).any() && !done.contains(&o.id))
        })
        .collect()
}

/// The objects with a policy that end in this sync (see the module docs). A phase with
/// something applied, or set aside by `hold`, ends nothing by success.
pub(super) fn ended(
    placed: &Placed<'_>,
    busy: &BTreeSet<Placement>,
    known: &Known<'_>,
    hold: Option<&PhaseHold>,
) -> Vec<Ended> {
    let mut out = Vec::new();
    for phase in [Phase::Pre, Phase::Post] {
        let objects: Vec<&RenderedObject> = placed
            .iter()
            .filter(|(p, _)| p.phase == phase)
            .flat_map(|(_, objects)| objects.iter().copied())
            .collect();
        let settled = !busy.iter().any(|p| p.phase == phase)
            && !objects.iter().any(|o| hold.is_some_and(|h| h.holds(o)));
        let healthy = objects
            .iter()
            .all(|o| known.health(&o.id) == Some(Health::Current));
        for o in objects {
            let policy = policy_of(o);
            if !policy.any() || known.is_done(&o.id) {
                continue;
            }
            let done = match known.health(&o.id) {
                Some(Health::Failed(why)) if policy.failed => Done::Failed(why),
                Some(Health::Current) if settled && healthy => Done::Succeeded,
                _ => continue,
            };
            let delete = match done {
                Done::Succeeded => policy.succeeded,
                Done::Failed(_) => true,
            };
            out.push(Ended {
                id: o.id.clone(),
                done,
                delete,
            });
        }
    }
    out
}

/// With nothing else holding the sync: the objects with a policy that have not ended (see
/// [`ended`]) — applied in this sync, still running, or waiting for the rest of their phase —
/// as a hold that sets nothing aside, so the tenant is looked at again until they have.
pub(super) fn awaiting(
    placed: &Placed<'_>,
    plan: &Plan<'_>,
    known: &Known<'_>,
    ended: &[Ended],
) -> Option<PhaseHold> {
    let applied: BTreeSet<&ObjectId> = plan.stages.iter().flatten().map(|a| &a.object.id).collect();
    let mut on = Vec::new();
    for o in placed.values().flatten() {
        let policy = policy_of(o);
        if !policy.any() || known.is_done(&o.id) || ended.iter().any(|e| e.id == o.id) {
            continue;
        }
        let why = match known.health(&o.id) {
            _ if applied.contains(&o.id) => "applied in this sync, not yet healthy".to_string(),
            Some(Health::Current) if !policy.succeeded => continue,
            Some(Health::Current) => "healthy; waits for the rest of its phase".to_string(),
            Some(Health::InProgress(why) | Health::Failed(why)) => why,
            None => "not found".to_string(),
        };
        on.push(format!("{} ({why})", o.id));
    }
    (!on.is_empty()).then_some(PhaseHold::Waiting {
        after: Placement::LAST,
        held: None,
        on,
    })
}
