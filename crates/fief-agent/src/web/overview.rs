//! The overview page: tenants by state, the last fetch, leadership, the health gate and the
//! rollout with its waves.
//!
//! In: the shared state (one pass over the fleet's rows, the fetch status, the rollout as
//! last published). Out: an [`OverviewView`] for the template.

use serde::Serialize;

use super::Web;
use super::table::{Row, State, counts};
use super::view::{ago, short};
use crate::Shared;
use fief_core::rollout::{Phase, Record};
use fief_source::revision::Revision;

/// Tenants listed under "needs attention" at most.
const ATTENTION: usize = 20;

/// The page's data.
#[derive(Debug, Serialize)]
pub(super) struct OverviewView {
    /// This agent's cluster.
    cluster: String,
    /// Tenants in all.
    total: usize,
    /// (state, tenants) in the order states are listed.
    counts: Vec<(&'static str, usize)>,
    /// The last fetched commit.
    commit: Option<String>,
    /// How long ago it was fetched.
    fetched: String,
    /// Why the last fetch failed.
    fetch_error: Option<String>,
    /// This replica holds the Lease.
    leading: bool,
    /// `/readyz`'s text.
    readiness: String,
    /// Tenants queued.
    queued: usize,
    /// Tenants applied and not yet judged healthy, and the bound.
    in_flight: usize,
    max_in_flight: usize,
    /// The rollout, if one ran since the agent started.
    rollout: Option<RolloutView>,
    /// fief.yaml `rollout.waves` as they split the fleet now: (wave, tenants), in order.
    declared: Vec<(String, usize)>,
    /// Failed and stalled tenants (the first few).
    attention: Vec<AttentionRow>,
    /// How many failed or stalled tenants there are in all.
    attention_total: usize,
}

/// The rollout.
#[derive(Debug, Serialize)]
struct RolloutView {
    commit: String,
    phase: &'static str,
    summary: String,
    reason: Option<String>,
    held: usize,
    started_at: String,
    updated_at: String,
    waves: Vec<WaveView>,
}

/// One wave of the rollout.
#[derive(Debug, Serialize)]
struct WaveView {
    number: usize,
    name: String,
    tenants: usize,
    /// `done`, `current`, `halted` or `waiting`.
    status: &'static str,
}

/// A tenant that needs attention.
#[derive(Debug, Serialize)]
struct AttentionRow {
    name: String,
    href: String,
    state: &'static str,
    error: Option<String>,
}

/// The overview as the agent knows it now.
pub(super) fn view(shared: &Shared, web: &Web) -> OverviewView {
    let held = super::fleet::Held::gather(shared, web);
    let rows = held.rows();
    let (leading, commit, fetch_error) = shared.report.leading_and_fetch();
    let fetched_at = shared
        .cluster
        .metrics()
        .last_fetch_unix
        .load(std::sync::atomic::Ordering::Relaxed);
    let gate = shared.gate.status_figures();
    let attention: Vec<&Row<'_>> = rows
        .iter()
        .filter(|r| matches!(r.state, State::Failed | State::Stalled))
        .collect();
    OverviewView {
        cluster: web.cluster.clone(),
        total: rows.len(),
        counts: counts(&rows)
            .into_iter()
            .map(|(s, n)| (s.as_str(), n))
            .collect(),
        commit,
        fetched: ago(crate::metrics::unix_now(), fetched_at),
        fetch_error,
        leading,
        readiness: shared.readiness().1,
        queued: shared.work.queue_len(),
        in_flight: gate.0,
        max_in_flight: gate.1,
        rollout: shared.rollout.read(|r| r.map(rollout)),
        declared: declared(held.rev.as_deref(), &rows),
        attention_total: attention.len(),
        attention: attention
            .into_iter()
            .take(ATTENTION)
            .map(|r| AttentionRow {
                name: r.name.to_string(),
                href: format!("/ui/tenants/{}", super::view::segment(&r.name)),
                state: r.state.as_str(),
                error: r.error.clone(),
            })
            .collect(),
    }
}

/// fief.yaml's waves in order (and the implicit last one), each with its tenants now.
fn declared(rev: Option<&Revision>, rows: &[Row<'_>]) -> Vec<(String, usize)> {
    let Some(config) = rev.and_then(|r| r.repo.config.as_ref().ok()?.rollout.as_ref()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, usize)> = config.waves.iter().map(|w| (w.name.clone(), 0)).collect();
    if !out.iter().any(|(n, _)| n == fief_core::rollout::REST) {
        out.push((fief_core::rollout::REST.to_string(), 0));
    }
    for w in rows.iter().filter_map(|r| r.wave.as_deref()) {
        if let Some((_, n)) = out.iter_mut().find(|(name, _)| name == w) {
            *n += 1;
        }
    }
    out
}

fn rollout(r: &Record) -> RolloutView {
    let waves = r
        .waves
        .iter()
        .enumerate()
        .map(|(i, w)| WaveView {
            number: i + 1,
            name: w.name.clone(),
            tenants: w.tenants.len(),
            status: match (r.phase, i.cmp(&r.wave)) {
                (Phase::Complete, _) | (_, std::cmp::Ordering::Less) => "done",
                (Phase::Halted, std::cmp::Ordering::Equal) => "halted",
                (_, std::cmp::Ordering::Equal) => "current",
                (_, std::cmp::Ordering::Greater) => "waiting",
            },
        })
        .collect();
    RolloutView {
        commit: short(&r.commit),
        phase: r.phase.as_str(),
        summary: r.summary(),
        reason: r.reason.clone(),
        held: r.held.len(),
        started_at: r.started_at.clone(),
        updated_at: r.updated_at.clone(),
        waves,
    }
}
