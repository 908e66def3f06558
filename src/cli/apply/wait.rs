//! `fief apply --wait`: wait for the applied objects' health, and apply the components that
//! waited for their dependencies once those are healthy.
//!
//! In: the synced tenants' renders and reports. Out: the objects not healthy in time, by
//! tenant, and the reports of the tenants synced again. A tenant whose components wait for
//! their dependencies (`dependsOn`), or whose later phases waited for an earlier one (a `pre`
//! Job), is synced again each time what it applied is healthy, until nothing of it waits,
//! something of it is not healthy, or it did not move on.

use std::collections::{BTreeMap, BTreeSet};

use crate::core::model::Repo;
use crate::core::plan::phase::{Placement, placement_of};
use crate::core::render::TenantRender;
use crate::core::status::Outcome;
use crate::kube::Resources;
use crate::kube::health::{Unhealthy, deadlines, wait_healthy};
use crate::kube::sync::{SyncOptions, TenantReport, sync};

/// Rounds of syncing again at most: levels of a dependency chain.
const MAX_ROUNDS: usize = 32;

/// What the waits need besides the renders and reports.
pub(super) struct Waits<'a> {
    pub(super) resources: &'a Resources,
    pub(super) repo: &'a Repo,
    pub(super) options: &'a SyncOptions,
    pub(super) known: &'a BTreeSet<String>,
    /// A component's health timeout when it sets none (`--timeout`).
    pub(super) default: std::time::Duration,
}

/// Wait for every applied tenant's health; sync again the tenants whose components waited
/// for dependencies (see the module docs), replacing their reports. The objects that are not
/// healthy, by tenant.
pub(super) async fn wait_and_apply_dependents(
    w: &Waits<'_>,
    renders: &[TenantRender],
    reports: &mut [TenantReport],
) -> BTreeMap<String, Vec<Unhealthy>> {
    let mut unhealthy = wait_for_health(w, renders, reports, None).await;
    // Each round applies at least one more level of the dependency order, or stops.
    for _ in 0..MAX_ROUNDS {
        let again: BTreeMap<&str, Progress> = reports
            .iter()
            .filter(|r| r.is_ok() && r.holds_back())
            .filter(|r| unhealthy.get(&r.tenant).is_none_or(Vec::is_empty))
            .map(|r| (r.tenant.as_str(), progress(r)))
            .collect();
        if again.is_empty() {
            break;
        }
        let subset: Vec<TenantRender> = renders
            .iter()
            .filter(|r| again.contains_key(r.tenant.as_str()))
            .cloned()
            .collect();
        let Ok(fresh) = sync(w.resources, &subset, w.known, false, w.options).await else {
            break;
        };
        let moved_on = fresh.iter().any(|r| {
            again
                .get(r.tenant.as_str())
                .is_none_or(|before| progress(r) < *before)
        });
        for f in &fresh {
            if let Some(r) = reports.iter_mut().find(|r| r.tenant == f.tenant) {
                *r = f.clone();
            }
        }
        let tenants: BTreeSet<String> = fresh.iter().map(|r| r.tenant.clone()).collect();
        let waited = wait_for_health(w, &subset, reports, Some(&tenants)).await;
        unhealthy.extend(waited);
        if !moved_on {
            break;
        }
    }
    unhealthy
}

/// How much of a tenant still waits: components held for their dependencies, then the last
/// placement its phase hold lets go, later being further on, none furthest (lower is further).
type Progress = (usize, Option<std::cmp::Reverse<Placement>>);

fn progress(r: &TenantReport) -> Progress {
    let after = r.phase_hold.as_ref().map(|h| std::cmp::Reverse(h.after()));
    (r.waiting.len(), after)
}

/// Every applied tenant's (of `only`, when given) component objects, polled until healthy
/// (tenants concurrently), leaving out the components its sync held for their dependencies
/// and the objects its phase hold set aside; the objects that are not, by tenant.
async fn wait_for_health(
    w: &Waits<'_>,
    renders: &[TenantRender],
    reports: &[TenantReport],
    only: Option<&BTreeSet<String>>,
) -> BTreeMap<String, Vec<Unhealthy>> {
    let applied: BTreeMap<&str, &TenantReport> = reports
        .iter()
        .filter(|r| r.outcome == Outcome::Applied && r.is_ok())
        .filter(|r| only.is_none_or(|o| o.contains(&r.tenant)))
        .map(|r| (r.tenant.as_str(), r))
        .collect();
    let waits = renders.iter().filter_map(|r| {
        let report = applied.get(r.tenant.as_str())?;
        let mut limits = deadlines(w.repo, r, w.default);
        for held in report.waiting.keys() {
            limits.insert(held.clone(), None);
        }
        // Objects a phase hold set aside were not applied: nothing of them to wait for. Pre
        // and post objects are waited for whatever their component's `health.wait`: what
        // comes after them waits for them.
        let hold = report.phase_hold.as_ref();
        let (phased, rest): (Vec<_>, Vec<_>) = r
            .objects
            .iter()
            .filter(|o| hold.is_none_or(|h| !h.holds(o)))
            .cloned()
            .partition(|o| placement_of(o) != Placement::MAIN);
        let phased = TenantRender {
            objects: phased,
            ..r.clone()
        };
        let rest = TenantRender {
            objects: rest,
            ..r.clone()
        };
        let forced: BTreeMap<String, Option<std::time::Duration>> = limits
            .iter()
            .map(|(c, l)| {
                let held = report.waiting.contains_key(c);
                (c.clone(), (!held).then(|| l.unwrap_or(w.default)))
            })
            .collect();
        Some(async move {
            let mut bad = wait_healthy(w.resources, &phased, &forced).await;
            bad.extend(wait_healthy(w.resources, &rest, &limits).await);
            (rest.tenant.clone(), bad)
        })
    });
    futures::future::join_all(waits).await.into_iter().collect()
}
