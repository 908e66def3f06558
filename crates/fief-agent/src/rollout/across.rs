//! A rollout across shards: every replica runs the waves over its own tenants, and no
//! replica releases the next wave before every other live replica's part of the current wave
//! is healthy.
//!
//! In: this replica's step over its own tenants of the current wave (other replicas' tenants
//! count as healthy here: their own replica judges them), and the other replicas' progress
//! as their membership Leases announce it ([`crate::shards::Ownership::peers_waiting`]). Out:
//! this replica's progress announced (commit, wave, whether its part is healthy; a replica
//! with nothing held announces that it is past every wave), and the step held at `Wait`
//! while another replica's part of the wave is not done. Every replica computes the same
//! waves from the same commit, so their wave numbers agree. Without shards nothing changes.

use fief_core::rollout::Step;

use super::super::{LoopState, Shared};
use super::Active;
use crate::shards::Progress;

/// The wave number a replica with nothing held announces: past every wave.
const PAST_EVERY_WAVE: usize = usize::MAX;

/// With shards, announce this replica's part of `active`'s current wave and hold a release
/// until every other live replica's part is done.
pub(super) fn barrier(shared: &Shared, active: &Active, step: Step) -> Step {
    let Some(own) = shared.shards.as_ref() else {
        return step;
    };
    let commit = active.target.commit.clone();
    let done = matches!(step, Step::Release(_) | Step::Complete);
    own.announce(Progress {
        commit: commit.clone(),
        wave: active.wave,
        done,
    });
    if !done {
        return step;
    }
    let waiting = own.peers_waiting(&commit, active.wave);
    if waiting.is_empty() {
        return step;
    }
    tracing::debug!(
        commit,
        wave = active.wave,
        replicas = ?waiting,
        "rollout: this replica's part of the wave is healthy; waiting for the others"
    );
    Step::Wait
}

/// With shards, announce that this replica holds nothing back at the head (no rollout, or
/// its rollout is complete).
pub(super) fn idle(shared: &Shared, state: &LoopState) {
    let (Some(own), Some(rev)) = (shared.shards.as_ref(), state.rev.as_ref()) else {
        return;
    };
    own.announce(Progress {
        commit: rev.commit.clone(),
        wave: PAST_EVERY_WAVE,
        done: true,
    });
}
