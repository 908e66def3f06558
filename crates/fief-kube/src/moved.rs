//! Moved tenants: on the cluster a tenant left (its file now names another one), mark its
//! inventory `Moved` and leave its objects running; `fief retire` then deletes them.
//!
//! In: a tenant whose `spec.cluster` is not this sync's cluster and its inventory here (if
//! any); or, to retire, that inventory. Out: a [`TenantReport`] with outcome `moved` (the
//! inventory marked `Moved=True`, `Ready=False`, nothing applied or deleted), `skipped` when
//! the cluster has no inventory of it; or, retired, every recorded object deleted as a purge
//! deletes them (only members labelled as this tenant's, workloads first, namespaces last)
//! and then the inventory.

use std::collections::{BTreeMap, HashMap};

use super::Resources;
use super::inventory_store::{delete_inventory, write_inventory};
use super::prune::prune_entries;
use super::status_access;
use super::sync::{Ctx, SyncOptions, cluster_error, now_rfc3339};
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::model::{PruneGuard, TenantState};
use fief_core::plan;
use fief_core::render::TenantRender;
use fief_core::status::moved::mark_moved;
use fief_core::status::{Failure, Outcome, PruneHeld, TenantReport};

/// A tenant whose file names cluster `to`, not this one: `moved` when this cluster has its
/// inventory (marked `Moved`, written when that changed), else `skipped`. Returns the report
/// and, when written, the inventory as it now stands.
pub(super) async fn moved_away(
    ctx: &Ctx<'_>,
    tenant: &str,
    to: &str,
    inventories: &BTreeMap<String, Result<Inventory, InventoryError>>,
) -> (TenantReport, Option<Option<Inventory>>) {
    let Some(Ok(inv)) = inventories.get(tenant) else {
        return (TenantReport::new(tenant, Outcome::Skipped), None);
    };
    let mut report = TenantReport::new(tenant, Outcome::Moved);
    report.moved_to = Some(to.to_string());
    report.counts.objects = inv.entries.len();
    report.counts.unchanged = inv.entries.len();
    let mut marked = inv.clone();
    if !mark_moved(&mut marked, to, &ctx.now) {
        return (report, None);
    }
    match write_inventory(ctx, &marked, Some(inv)).await {
        Ok(()) => (report, Some(Some(marked))),
        Err(e) => {
            report.errors.push(cluster_error(Failure::Inventory, &e));
            report.outcome = Outcome::Failed;
            (report, None)
        }
    }
}

/// Delete what a moved tenant left on this cluster: every object its inventory records (the
/// purge path: only members still labelled as this tenant's; `fief.dev/prune: disabled`
/// objects and namespaces fief did not create are kept), the tenant's status access, then the
/// inventory. Outcome `purged` when all of it is gone; else `failed`, with what remains
/// recorded in the inventory (a second run finishes it).
pub async fn retire(resources: &Resources, agent_namespace: &str, inv: &Inventory) -> TenantReport {
    let options = SyncOptions {
        agent_namespace: agent_namespace.to_string(),
        concurrency: 1,
        object_concurrency: 8,
        release: super::sync::PruneRelease::None,
        guard: PruneGuard::default(),
        cluster: String::new(),
        commit: None,
        progress: None,
        adopt: Default::default(),
    };
    let live = HashMap::new();
    let ctx = Ctx {
        resources,
        live: &live,
        options: &options,
        now: now_rfc3339(),
    };
    let tenant = inv.tenant.as_str();
    // A purged render: nothing desired, so the plan prunes every recorded entry in order.
    let render = TenantRender {
        tenant: tenant.to_string(),
        state: Some(TenantState::Purged),
        ..Default::default()
    };
    let plan = plan::plan(&render, Some(inv), &live, &options.guard, true);
    let mut report = TenantReport::new(tenant, Outcome::Purged);
    let mut left = inv.clone();
    prune_entries(&ctx, tenant, &plan, &mut left, &mut report).await;
    if left.entries.is_empty() && report.errors.is_empty() {
        let done = match status_access::revoke(&ctx, tenant).await {
            Ok(()) => delete_inventory(&ctx, tenant)
                .await
                .map_err(|e| cluster_error(Failure::Inventory, &e)),
            Err(e) => Err(cluster_error(Failure::Prune, &e)),
        };
        if let Err(e) = done {
            report.errors.push(e);
            report.outcome = Outcome::Failed;
        }
        return report;
    }
    report.outcome = Outcome::Failed;
    report.prune_held = Some(PruneHeld::PurgeIncomplete {
        remaining: left.entries.len(),
    });
    left.status.counts.objects = left.entries.len();
    if let Err(e) = write_inventory(&ctx, &left, Some(inv)).await {
        report.errors.push(cluster_error(Failure::Inventory, &e));
    }
    report
}
