//! The kinds the rendered tenants use, and the watches behind them: which tenants cannot be
//! synced now because a kind they use cannot be listed or watched.
//!
//! In: the renders of a chunk, the agent's watches. Out: per kind the tenants using it; the
//! watches started (and their first lists awaited, bounded); per tenant why it is degraded;
//! a degraded tenant's render turned into a failed one (nothing applied or pruned).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::super::{Shared, WatchState, drift};
use super::LIST_WAIT;
use fief_core::diagnostic::{Diagnostic, Problem};
use fief_core::render::TenantRender;
use fief_kube::Resources;

/// Watch every kind the renders use; wait (bounded) for their initial lists. Returns, per
/// tenant, why it cannot be synced now (a kind it uses cannot be watched).
pub(super) async fn watch_kinds(
    shared: &Arc<Shared>,
    resources: &Resources,
    kinds: &BTreeMap<(String, String), BTreeSet<String>>,
    stop: &CancellationToken,
) -> BTreeMap<String, String> {
    let mut keys: Vec<(String, &BTreeSet<String>)> = Vec::new();
    let mut to_watch = Vec::new();
    for ((v, k), tenants) in kinds {
        if let Some(resource) = resources.resolve(v, k).await {
            keys.push((drift::kind_key(&resource), tenants));
            to_watch.push(resource);
        }
    }
    drift::ensure_watches(shared, to_watch).await;
    shared
        .work
        .wait_for(Instant::now() + LIST_WAIT, stop, || {
            shared.index.watches(|watches| {
                !keys
                    .iter()
                    .any(|(k, _)| watches.get(k) == Some(&WatchState::Listing))
            })
        })
        .await;
    shared.index.watches(|watches| {
        let mut degraded = BTreeMap::new();
        for (k, tenants) in keys {
            let why = match watches.get(&k) {
                Some(WatchState::Failed(why)) => why.clone(),
                Some(WatchState::Listing) => {
                    format!("{k}: the initial list did not finish in time")
                }
                _ => continue,
            };
            for t in tenants {
                degraded.entry(t.clone()).or_insert_with(|| why.clone());
            }
        }
        degraded
    })
}

/// A degraded tenant's render becomes a failed one: its status says why (a cluster-access
/// failure, not an invalid repo), and nothing is applied or pruned.
pub(super) fn degrade(render: &mut TenantRender, why: &str, file: String) {
    render.objects.clear();
    render.errors.push(
        Diagnostic::new(
            file,
            None,
            Problem::ClusterAccess {
                detail: why.to_string(),
            },
        )
        .for_tenant(&render.tenant),
    );
}

/// The kinds (apiVersion, kind) the renders use, with the tenants using each.
pub(super) fn kinds_of(
    renders: &[TenantRender],
    into: &mut BTreeMap<(String, String), BTreeSet<String>>,
) {
    for r in renders {
        for o in &r.objects {
            let v = o.object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            into.entry((v, o.id.kind.clone()))
                .or_default()
                .insert(r.tenant.clone());
        }
    }
}

/// Record why `tenants` are degraded now (those not in `degraded` are not).
pub(super) fn set_degraded(
    shared: &Shared,
    tenants: &[String],
    degraded: &BTreeMap<String, String>,
) {
    shared.report.set_degraded(tenants, degraded);
}
