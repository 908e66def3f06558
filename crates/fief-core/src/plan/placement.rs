//! The words of ordered phases and hook delete policies, as a rendered object's annotations
//! write them: where an object goes ([`Placement`]: its [`Phase`] and weight), whether it is
//! rendered at all ([`Classified`]), its [`DeletePolicy`], and why a sync stops at a placement
//! ([`PhaseHold`]).
//!
//! In: a rendered object's JSON (and its component's name). Out: those, or the
//! [`PhaseError`] of an annotation fief cannot follow. The render classifies with them and
//! drops what is not rendered; `phase.rs` and `hooks.rs` decide with them how far a sync
//! goes. Reads no render and no plan, so the render can use it. Pure.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::BASELINE;

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
            PhaseError::UnknownDeletePolicy(_) => HELM_HOOK_DELETE_POLICY,
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
/// `helm.sh/hook-delete-policy` must name known policies ([`delete_policy`]).
pub fn classify(object: &Value) -> Result<Classified, PhaseError> {
    delete_policy(object)?;
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

/// Where an object of `component` goes: baseline objects and objects whose annotations do not
/// classify (the render refuses those) are main.
pub fn placement(component: &str, object: &Value) -> Placement {
    if component == BASELINE {
        return Placement::MAIN;
    }
    match classify(object) {
        Ok(Classified::Placed(p)) => p,
        _ => Placement::MAIN,
    }
}

/// Helm's hook delete policy: `before-hook-creation`, `hook-succeeded` and/or `hook-failed`,
/// comma-separated.
pub const HELM_HOOK_DELETE_POLICY: &str = "helm.sh/hook-delete-policy";

/// When fief deletes a pre or post object after it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeletePolicy {
    /// `hook-succeeded`: once it and the rest of its phase are healthy.
    pub succeeded: bool,
    /// `hook-failed`: once it failed.
    pub failed: bool,
}

impl DeletePolicy {
    /// Whether the policy deletes the object after it ran, one way or the other.
    pub const fn any(self) -> bool {
        self.succeeded || self.failed
    }
}

/// The delete policy an object's annotation writes (none without the annotation).
pub fn delete_policy(object: &Value) -> Result<DeletePolicy, PhaseError> {
    let mut policy = DeletePolicy::default();
    let Some(text) = object["metadata"]["annotations"][HELM_HOOK_DELETE_POLICY].as_str() else {
        return Ok(policy);
    };
    for word in text.split(',').map(|w| w.trim().to_ascii_lowercase()) {
        match word.as_str() {
            "hook-succeeded" => policy.succeeded = true,
            "hook-failed" => policy.failed = true,
            "before-hook-creation" | "" => {}
            _ => return Err(PhaseError::UnknownDeletePolicy(word)),
        }
    }
    Ok(policy)
}

/// Whether a rendered object is one fief deletes once it (and its phase) succeeded: placed
/// pre or post by its annotations, with `hook-succeeded`. Not finding such an object after a
/// sync that saw it healthy means it succeeded.
pub fn deleted_when_healthy(object: &Value) -> bool {
    let placed = matches!(
        classify(object),
        Ok(Classified::Placed(p)) if p.phase != Phase::Main
    );
    placed && delete_policy(object).is_ok_and(|p| p.succeeded)
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
