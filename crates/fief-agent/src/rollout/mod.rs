//! Progressive rollouts in the agent: a change that reaches tenants through shared inputs
//! (a component's templates or varz, an environment file, the baseline, fief.yaml) goes
//! through fief.yaml's `rollout.waves`, one wave at a time, each waiting until its tenants
//! are healthy; an unhealthy or failed tenant halts it. Within a wave, at most
//! `--max-in-flight` of its tenants are applied and not yet settled at once ([`bound`]); the
//! others of the wave are held like a later wave's until a place frees.
//!
//! In: each new revision with the tenants whose input hash changed, each tenant's last synced
//! revision, the sync attempts and the health gate's verdicts. Out: the tenants to queue now
//! (a tenant's own change — its tenant file or own secret file — and new tenants at once, the
//! first wave of the rest, up to the bound), the revision each tenant renders at (a held tenant stays at the
//! commit it was last synced at, drift repair included), more of the current wave as its
//! released tenants settle, the next wave released when the current one is healthy, the
//! count of tenants in flight for the health gate's figures, and the rollout [`Record`] for `/status`, `/metrics` and the
//! `fief-rollout` ConfigMap. A new commit replaces the rollout: tenants already at the old
//! target and held ones alike go through the new one's waves from the first.
//!
//! Here: beginning, advancing and recording a rollout; taking one up again after a restart in
//! `restore`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

mod across;
mod bound;
mod restore;
mod state;

pub(super) use restore::restore;
pub(crate) use state::RolloutState;

use super::{LoopState, Shared};
use crate::metrics::{Metrics, StateLabel, gauge_value};
use fief_core::rollout::{
    Member, Phase, Record, Step, TenantState, Wave, assign, next_wave, own_change, plan, step,
};
use fief_core::status::Outcome;
use fief_source::revision::Revision;

/// A rollout under way (or finished: kept for status until the next one).
pub(super) struct Active {
    /// The revision being rolled out.
    target: Arc<Revision>,
    /// The waves with the tenants this rollout changes.
    waves: Vec<Wave>,
    /// The waves with every tenant in them: a wave is done when all are healthy.
    members: Vec<Wave>,
    wave_of: HashMap<String, usize>,
    /// The wave released last (index).
    wave: usize,
    /// The tenants of that wave released so far (the others of it are held: [`bound`]).
    released: BTreeSet<String>,
    /// Where it stands.
    phase: Phase,
    reason: Option<String>,
    started_at: String,
    updated_at: String,
}

impl Active {
    /// Whether `tenant` is held: in a wave not released yet, or in the current wave and not
    /// released yet (the in-flight bound).
    pub(super) fn holds(&self, tenant: &str) -> bool {
        self.phase != Phase::Complete
            && self.wave_of.get(tenant).is_some_and(|w| {
                *w > self.wave || (*w == self.wave && !self.released.contains(tenant))
            })
    }

    /// Release more of the current wave: as many as the bound `max` leaves places for once
    /// the released tenants not settled yet are counted. Returns the tenants to queue and
    /// how many of the wave are in flight.
    fn release(&mut self, max: usize, unsettled: impl Fn(&str) -> bool) -> (Vec<String>, usize) {
        let Some(wave) = self.waves.get(self.wave) else {
            return (Vec::new(), 0);
        };
        let r = bound::release(&wave.tenants, &self.released, max, unsettled);
        self.released.extend(r.now.iter().cloned());
        (r.now, r.in_flight)
    }
}

/// The revision `tenant` renders at: the one it was last synced at while a rollout holds it,
/// else the head.
pub(super) fn revision_for(state: &LoopState, tenant: &str) -> Option<Arc<Revision>> {
    if let Some(active) = &state.rollout
        && active.holds(tenant)
        && let Some(rev) = state.synced_rev.get(tenant)
    {
        return Some(rev.clone());
    }
    state.rev.clone()
}

/// Each tenant's labels (a tenant file that does not parse has none).
fn labels_of(rev: &Revision) -> BTreeMap<String, BTreeMap<String, String>> {
    rev.repo
        .tenants
        .iter()
        .map(|(t, p)| {
            let l = p
                .as_ref()
                .map(|p| p.metadata.labels.clone())
                .unwrap_or_default();
            (t.clone(), l)
        })
        .collect()
}

/// Take a new revision: start a rollout when fief.yaml declares waves and `changed` tenants
/// changed through shared inputs; return the tenants to queue now (of the first wave, `max`
/// at most: the in-flight bound).
pub(super) fn begin(
    state: &mut LoopState,
    rev: &Arc<Revision>,
    changed: Vec<String>,
    max: usize,
) -> Vec<String> {
    let config = rev
        .repo
        .config
        .as_ref()
        .ok()
        .and_then(|c| c.rollout.clone());
    if state.rev.is_none()
        && state
            .rollout
            .as_ref()
            .is_some_and(|a| a.target.commit == rev.commit)
    {
        // Restored at start ([`restore`]) on the commit it rolls out: go on with it.
        return changed;
    }
    let known = state.rev.is_some() || !state.synced_rev.is_empty();
    let Some(config) = config.filter(|_| known) else {
        state.rollout = None;
        return changed;
    };
    // Unchanged since its last sync (possible at start), its own change, or a new tenant:
    // now. The rest changed through shared inputs: rolled out in waves.
    let (mut now, rolled): (Vec<String>, Vec<String>) =
        changed
            .into_iter()
            .partition(|t| match state.synced_rev.get(t) {
                None => true,
                Some(from) => {
                    from.hashes.get(t) == rev.hashes.get(t) || own_change(&from.repo, &rev.repo, t)
                }
            });
    if rolled.is_empty() {
        // Nothing is held any more: a rollout under way is over.
        if let Some(a) = state
            .rollout
            .as_mut()
            .filter(|a| a.phase != Phase::Complete)
        {
            a.phase = Phase::Complete;
            a.reason = None;
            a.updated_at = fief_kube::sync::now_rfc3339();
        }
        return now;
    }
    let labels = labels_of(rev);
    let rolled: BTreeSet<String> = rolled.into_iter().collect();
    let waves = plan(&config, &labels, &rolled);
    let members = assign(&config, &labels);
    let wave_of: HashMap<String, usize> = waves
        .iter()
        .enumerate()
        .flat_map(|(i, w)| w.tenants.iter().map(move |t| (t.clone(), i)))
        .collect();
    let first = next_wave(&members, 0).unwrap_or(0);
    let at = fief_kube::sync::now_rfc3339();
    tracing::info!(
        commit = rev.commit,
        tenants = rolled.len(),
        waves = waves.len(),
        wave = waves[first].name,
        "rollout started"
    );
    let mut active = Active {
        target: rev.clone(),
        waves,
        members,
        wave_of,
        wave: first,
        released: BTreeSet::new(),
        phase: Phase::Progressing,
        reason: None,
        started_at: at.clone(),
        updated_at: at,
    };
    // Nothing of the new rollout is applied yet: the first `max` of its wave go now.
    now.extend(active.release(max, |_| true).0);
    state.rollout = Some(active);
    now
}

/// Where `tenant` of the current wave stands ([`fief_core::rollout::tenant_state`]): its
/// suspension, whether the rollout changes it, whether it is synced at the rollout's input
/// hash, its last sync attempt and its health. A tenant the rollout does not change still
/// halts it when its last attempt failed or was invalid at that hash (broken before).
fn tenant_state(shared: &Shared, state: &LoopState, active: &Active, tenant: &str) -> TenantState {
    let target = &active.target;
    let failure = shared
        .report
        .attempt(tenant)
        .filter(|a| a.error.is_some() || matches!(a.outcome, Outcome::Failed | Outcome::Invalid))
        .map(|a| {
            let why = format!(
                "sync {}: {}",
                a.outcome,
                a.error.as_deref().unwrap_or_default()
            );
            (a.commit == target.commit, why)
        });
    let at_target = target
        .hashes
        .get(tenant)
        .is_some_and(|h| state.synced.get(tenant) == Some(h));
    fief_core::rollout::tenant_state(Member {
        suspended: super::requests::is_suspended(shared, tenant),
        changed: active.wave_of.contains_key(tenant),
        at_target,
        failure,
        health: shared.gate.rollout_state(tenant),
    })
}

/// Release more of the current wave as its released tenants settle (the in-flight bound),
/// halted or not: a halt holds the later waves. Tells the health gate how many are in
/// flight (none without a rollout under way).
fn fill(shared: &Shared, state: &mut LoopState) {
    let Some(active) = state
        .rollout
        .as_ref()
        .filter(|a| a.phase != Phase::Complete)
    else {
        shared.gate.set_in_flight(0);
        return;
    };
    let unsettled: BTreeSet<String> = active
        .released
        .iter()
        .filter(|t| {
            shared.owns(t)
                && matches!(
                    tenant_state(shared, state, active, t),
                    TenantState::Pending | TenantState::Waiting
                )
        })
        .cloned()
        .collect();
    let Some(active) = state.rollout.as_mut() else {
        return;
    };
    let (now, in_flight) = active.release(shared.gate.max_in_flight(), |t| unsettled.contains(t));
    shared.gate.set_in_flight(in_flight);
    queue(shared, &now);
}

/// Queue `tenants` for the rollout at once.
fn queue(shared: &Shared, tenants: &[String]) {
    if tenants.is_empty() {
        return;
    }
    let at = Instant::now();
    shared.work.queue(|q| {
        for t in tenants {
            q.push_for(t, at, "rollout");
        }
    });
    shared.work.wake();
}

/// Move the rollout on: release more of the current wave as the bound allows, the next wave
/// when the current one is healthy, halt on a failed tenant (and resume if it turns
/// healthy). Returns whether it is still waiting on health (the caller looks again soon).
pub(super) fn advance(shared: &Shared, state: &mut LoopState) -> bool {
    fill(shared, state);
    let Some(active) = state
        .rollout
        .as_ref()
        .filter(|a| a.phase != Phase::Complete)
    else {
        across::idle(shared, state);
        return false;
    };
    let target = active.target.clone();
    // With shards, another replica judges its own tenants (see [`across`]).
    let s = step(&active.members, active.wave, |t| {
        if shared.owns(t) {
            tenant_state(shared, state, active, t)
        } else {
            TenantState::Healthy
        }
    });
    let s = across::barrier(shared, active, s);
    let Some(active) = state.rollout.as_mut() else {
        return false;
    };
    let now = fief_kube::sync::now_rfc3339();
    match s {
        Step::Wait => {
            if active.phase == Phase::Halted {
                // Not failed any more, not done yet: progressing again.
                active.phase = Phase::Progressing;
                active.reason = None;
                active.updated_at = now;
            }
            true
        }
        Step::Halt(tenant, why) => {
            let reason = format!(
                "wave {} \"{}\": tenant {tenant}: {why}",
                active.wave + 1,
                active.waves[active.wave].name
            );
            if active.reason.as_deref() != Some(reason.as_str()) {
                tracing::warn!(
                    commit = target.commit,
                    wave = active.waves[active.wave].name,
                    tenant,
                    reason = why,
                    "rollout halted; the later waves stay at their last synced commit"
                );
                active.phase = Phase::Halted;
                active.reason = Some(reason);
                active.updated_at = now;
            }
            true
        }
        Step::Release(i) => {
            active.wave = i;
            active.released.clear();
            active.phase = Phase::Progressing;
            active.reason = None;
            active.updated_at = now;
            tracing::info!(
                commit = target.commit,
                wave = active.waves[i].name,
                tenants = active.waves[i].tenants.len(),
                "rollout: next wave released"
            );
            let (now, in_flight) = active.release(shared.gate.max_in_flight(), |_| true);
            shared.gate.set_in_flight(in_flight);
            queue(shared, &now);
            true
        }
        Step::Complete => {
            active.phase = Phase::Complete;
            active.reason = None;
            active.updated_at = now;
            // Every tenant settled: nothing of the rollout is in flight any more.
            shared.gate.set_in_flight(0);
            tracing::info!(commit = target.commit, "rollout complete");
            false
        }
    }
}

/// The rollout as a [`Record`] (held tenants with the commit they stay at).
pub(super) fn record(state: &LoopState) -> Option<Record> {
    let a = state.rollout.as_ref()?;
    let held = a
        .wave_of
        .keys()
        .filter(|t| a.holds(t))
        .map(|t| {
            let commit = state
                .synced_rev
                .get(t)
                .map(|r| r.commit.clone())
                .unwrap_or_default();
            (t.clone(), commit)
        })
        .collect();
    Some(Record {
        commit: a.target.commit.clone(),
        phase: a.phase,
        wave: a.wave,
        waves: a.waves.clone(),
        reason: a.reason.clone(),
        held,
        started_at: a.started_at.clone(),
        updated_at: a.updated_at.clone(),
    })
}

/// Set the rollout's gauges: current wave (1-based, 0 when none), number of waves, halted
/// (0/1) and tenants by state (`updated`, `pending`, `held`).
pub(super) fn export(metrics: &Metrics, record: Option<&Record>) {
    let (wave, waves, halted, held, total, done) = match record {
        Some(r) => {
            let total: usize = r.waves.iter().map(|w| w.tenants.len()).sum();
            let done: usize = if r.phase == Phase::Complete {
                total
            } else {
                r.waves.iter().take(r.wave).map(|w| w.tenants.len()).sum()
            };
            let halted = r.phase == Phase::Halted;
            (r.wave + 1, r.waves.len(), halted, r.held.len(), total, done)
        }
        None => (0, 0, false, 0, 0, 0),
    };
    let pending = total.saturating_sub(done + held);
    metrics.rollout_wave.set(gauge_value(wave));
    metrics.rollout_waves.set(gauge_value(waves));
    metrics.rollout_halted.set(i64::from(halted));
    for (state, n) in [("updated", done), ("pending", pending), ("held", held)] {
        let label = StateLabel { state };
        metrics
            .rollout_tenants
            .get_or_create(&label)
            .set(gauge_value(n));
    }
}

/// Publish the record when it changed: `/status`, `/metrics` and the `fief-rollout`
/// ConfigMap. Writes run on tasks one at a time, each writing the latest record (so a slow
/// earlier write never lands after a later one); a failed write is retried on the main
/// loop's next turn.
pub(super) fn publish(shared: &Arc<Shared>, state: &LoopState, namespace: &str) {
    let notify = shared.report.notifier();
    let published = shared
        .rollout
        .publish(record(state), |old, new| notify.rollout(old, new));
    if !published || shared.shards.is_some() {
        // With shards, each replica's record covers its own tenants: shown in its `/status`,
        // not kept.
        return;
    }
    let sh = shared.clone();
    let ns = namespace.to_string();
    tokio::spawn(async move { sh.rollout.write(sh.cluster.client(), &ns).await });
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
