//! Sync: apply each tenant's plan to the cluster, record its inventory, prune safely.
//!
//! In: rendered tenants, the previous inventories and the live objects (read once per sync).
//! Out: per tenant, in KEP-3659 order: a refusal of namespaces it would adopt, the inventory
//! recorded as union(old, desired) before any apply, server-side applies in stage order (a
//! placement after an ordered phase that is not done set aside: [`super::phases`]),
//! guarded deletes (held when an apply failed or a guard trips), the final inventory, and a
//! [`TenantReport`]. A tenant's failure never stops the others; an unchanged tenant sends no
//! mutating request. Debug builds carry a test-only crash hook (`FIEF_TEST_CRASH_AT`).

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{self, StreamExt};

use super::adopt::is_namespace;
use super::apply::apply_stages;
pub use super::hold::PruneRelease;
use super::hold::{prune_hold, record_hold};
use super::inventory_store::{delete_inventory, write_inventory};
use super::prune::prune_entries;
use super::status_access;
use super::{ClusterError, Resources};
use fief_core::condition::{ConditionType, Reason};
use fief_core::inventory::{Entry, Inventory, InventoryError};
use fief_core::model::{TenantState, is_dns_label};
use fief_core::plan::phase::PhaseHold;
use fief_core::plan::{self, Plan};
use fief_core::render::TenantRender;
pub use fief_core::status::TenantReport;
use fief_core::status::{self, Failure, Outcome, PruneHeld};

pub use super::observe::observe;

mod ctx;

pub use ctx::{Adopt, ClusterState, SyncOptions, now_rfc3339};
pub(super) use ctx::{Ctx, api_version, cluster_error, step_failure};

/// The outcome of a sync.
#[derive(Debug, Default)]
pub struct SyncResult {
    /// One report per tenant (and per orphaned inventory), sorted by tenant.
    pub reports: Vec<TenantReport>,
    /// Each synced tenant's inventory as it now stands in the cluster (`None`: deleted).
    pub inventories: BTreeMap<String, Option<Inventory>>,
}

/// Sync tenants (one-shot): observe the cluster, then [`sync_with`]. `renders` are the
/// tenants in scope; `known` is every tenant file in the repo, so inventories of tenants not
/// in it are reported as orphaned (only when `report_orphans`, i.e. the whole repo is in scope).
pub async fn sync(
    resources: &Resources,
    renders: &[TenantRender],
    known: &BTreeSet<String>,
    report_orphans: bool,
    options: &SyncOptions,
) -> Result<Vec<TenantReport>, ClusterError> {
    let state = observe(resources, renders, report_orphans, options).await?;
    let result = sync_with(resources, renders, &state, known, report_orphans, options).await;
    Ok(result.reports)
}

/// Sync tenants against an observed [`ClusterState`]. A tenant's failure is in its report;
/// it never stops the others.
pub async fn sync_with(
    resources: &Resources,
    renders: &[TenantRender],
    state: &ClusterState,
    known: &BTreeSet<String>,
    report_orphans: bool,
    options: &SyncOptions,
) -> SyncResult {
    let ctx = Ctx {
        resources,
        live: &state.live,
        options,
        now: now_rfc3339(),
    };
    let inventories = &state.inventories;
    let done: Vec<(TenantReport, Option<Option<Inventory>>)> = stream::iter(renders.iter())
        .map(|r| sync_one(&ctx, r, inventories))
        .buffer_unordered(options.concurrency.max(1))
        .inspect(|(report, _)| {
            if let Some(tx) = &options.progress {
                let _ = tx.send(report.clone());
            }
        })
        .collect()
        .await;
    let mut result = SyncResult::default();
    for (report, inv) in done {
        if let Some(inv) = inv {
            result.inventories.insert(report.tenant.clone(), inv);
        }
        result.reports.push(report);
    }
    if report_orphans {
        result
            .reports
            .extend(orphans(&ctx, inventories, known).await);
    }
    result.reports.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    result
}

/// Sync one rendered tenant against its inventory (if any): moved or skipped when another
/// cluster's ([`super::moved`]), refused when its name is invalid or its inventory
/// unreadable, else [`sync_tenant`].
/// Returns its report and (when synced) its inventory as it now stands.
pub(super) async fn sync_one(
    ctx: &Ctx<'_>,
    r: &TenantRender,
    inventories: &BTreeMap<String, Result<Inventory, InventoryError>>,
) -> (TenantReport, Option<Option<Inventory>>) {
    if let Some(to) = r.cluster.as_deref().filter(|c| *c != ctx.options.cluster) {
        return super::moved::moved_away(ctx, &r.tenant, to, inventories).await;
    }
    if !is_dns_label(&r.tenant) {
        // Its file is invalid (the render says why); no inventory can be named after it, and
        // nothing of it touches the cluster.
        let mut rep = TenantReport::new(&r.tenant, Outcome::Invalid);
        rep.errors = status::render_errors(r);
        if rep.errors.is_empty() {
            rep.fail(
                Failure::Render,
                format!(
                    "tenant name `{}` is not a DNS-1123 label; nothing applied",
                    r.tenant
                ),
            );
        }
        return (rep, None);
    }
    match inventories.get(&r.tenant) {
        Some(Err(e)) => {
            let mut rep = TenantReport::new(&r.tenant, Outcome::Failed);
            rep.fail(
                Failure::Inventory,
                format!("{e}; fix or delete the inventory ConfigMap (nothing applied or pruned)"),
            );
            (rep, None)
        }
        Some(Ok(inv)) => {
            let (rep, inv) = sync_tenant(ctx, r, Some(inv)).await;
            (rep, Some(inv))
        }
        None => {
            let (rep, inv) = sync_tenant(ctx, r, None).await;
            (rep, Some(inv))
        }
    }
}

/// Inventories of tenants not in `known` (their file left git): each marked `Orphaned` and
/// reported; their objects are left running.
pub(super) async fn orphans(
    ctx: &Ctx<'_>,
    inventories: &BTreeMap<String, Result<Inventory, InventoryError>>,
    known: &BTreeSet<String>,
) -> Vec<TenantReport> {
    let mut reports = Vec::new();
    for (tenant, inv) in inventories {
        if known.contains(tenant) {
            continue;
        }
        let mut rep = TenantReport::new(tenant, Outcome::Orphaned);
        if let Ok(inv) = inv {
            rep.counts.objects = inv.entries.len();
            let mut marked = inv.clone();
            marked.status.set_condition(
                ConditionType::Orphaned,
                true,
                Reason::TenantFileRemoved,
                "the tenant file is gone from git; objects are left running (set state: purged to delete them)",
                &ctx.now,
            );
            if let Err(e) = write_inventory(ctx, &marked, Some(inv)).await {
                rep.errors.push(cluster_error(Failure::Inventory, &e));
            }
        }
        reports.push(rep);
    }
    reports
}

pub use super::batched::{BATCH, sync_batched};

/// Test-only failure hook: with `FIEF_TEST_CRASH_AT` set to `after-union`, `after-apply` or
/// `after-prune`, the process aborts at that point of a tenant's sync, as a crash would. Only
/// in debug builds (the integration tests); a release build has no such hook.
fn crash_point(stage: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("FIEF_TEST_CRASH_AT").is_ok_and(|v| v == stage) {
        eprintln!("FIEF_TEST_CRASH_AT={stage}: aborting (test-only failure hook)");
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = stage;
}

/// Write the inventory as the tenant's failure (nothing applied); returns what stands.
async fn record_failure(
    ctx: &Ctx<'_>,
    mut inv: Inventory,
    prev: Option<&Inventory>,
    mut report: TenantReport,
) -> (TenantReport, Option<Inventory>) {
    report.outcome = Outcome::Failed;
    let message = report.first_error().unwrap_or_default().to_string();
    let reason = report
        .failure()
        .map_or(Reason::ApplyFailed, Failure::condition_reason);
    status::stall(&mut inv.status, reason, &message, &ctx.now);
    inv.status.last_error = Some(message);
    write_or_keep(ctx, inv, prev, report).await
}

/// Write `inv` over `prev`; returns the report and the inventory that stands (`prev` when the
/// write failed, its error in the report).
async fn write_or_keep(
    ctx: &Ctx<'_>,
    inv: Inventory,
    prev: Option<&Inventory>,
    mut report: TenantReport,
) -> (TenantReport, Option<Inventory>) {
    match write_inventory(ctx, &inv, prev).await {
        Ok(()) => (report, Some(inv)),
        Err(e) => {
            report.errors.push(cluster_error(Failure::Inventory, &e));
            (report, prev.cloned())
        }
    }
}

/// Sync one tenant; returns its report and its inventory as it now stands in the cluster
/// (`None`: there is none). Steps (KEP-3659 order): plan; refuse namespaces fief would adopt;
/// record union(old, desired) before any apply; apply stage by stage; prune unless an apply
/// failed or a guard holds it; record the final inventory and status. At every crash point
/// each live object fief made is in the recorded inventory.
async fn sync_tenant(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    prev: Option<&Inventory>,
) -> (TenantReport, Option<Inventory>) {
    let tenant = render.tenant.as_str();
    let mut report = TenantReport::new(tenant, Outcome::Applied);
    let mut inv = prev.cloned().unwrap_or_else(|| Inventory::new(tenant));
    inv.status.remove_condition(ConditionType::Orphaned);
    fief_core::status::moved::clear_moved(&mut inv);
    if !render.is_ok() {
        status::record_invalid(&mut inv, &mut report, render, &ctx.now);
        status_access::update(ctx, render, &mut inv, &mut report).await;
        return write_or_keep(ctx, inv, prev, report).await;
    }
    let release = ctx.options.release.for_tenant(tenant);
    let mut plan = plan::plan(
        render,
        prev,
        ctx.live,
        &ctx.options.guard,
        release.is_some(),
    );
    if plan.released {
        inv.status.prune_released = release.map(str::to_string);
    }
    super::depends::defer_dependents(ctx.resources, render, &mut plan).await;
    super::phases::gate_phases(ctx.resources, render, &mut plan).await;
    report.waiting.clone_from(&plan.waiting);
    report.phase_hold.clone_from(&plan.phase_hold);
    report.counts.unchanged = plan.unchanged.len();
    // A namespace this tenant has not recorded must not exist, or be labelled as this
    // tenant's, or be adopted (`--adopt`); other objects that exist are taken only by
    // `--adopt`, and (without `=force`) only when equal to the render.
    let owned = match super::adoption::check(ctx, render, &plan).await {
        Ok(owned) => owned,
        Err(e) => {
            report.errors.push(e);
            return record_failure(ctx, inv, prev, report).await;
        }
    };
    // Hooks that ended are recorded done with the union, and deleted once it is written.
    super::phases::record_ended(&plan, &mut inv);
    let changed_plan = plan.apply_count() > 0 || !plan.prune.is_empty() || !plan.ended.is_empty();
    if let Err(e) = record_union(ctx, &plan, &owned.created, &mut inv, prev).await {
        report.outcome = Outcome::Failed;
        report.fail(
            step_failure(Failure::Inventory, &e),
            format!("{e}; nothing applied or pruned"),
        );
        return (report, prev.cloned());
    }
    crash_point("after-union");
    let recorded = inv.clone();
    super::phases::delete_ended(ctx, &plan, &mut inv, &mut report).await;
    // A chart's crds/ CRDs: created when absent, before the first stage (in no inventory).
    super::chart_crds::create_absent(ctx, render, &mut report).await;
    apply_stages(ctx, render, &plan, &mut inv, &mut report).await;
    crash_point("after-apply");
    super::adoption::hand_over(ctx, render, &inv, &owned, &mut report).await;
    // A failed pre or post object fails the tenant; what is placed after it waits.
    if let Some(failed @ PhaseHold::Failed { .. }) = &plan.phase_hold {
        report.fail(Failure::Phase, failed.to_string());
    }
    let changed = report.counts.created + report.counts.configured > 0 || !plan.prune.is_empty();
    report.prune_held = prune_hold(&plan, &report);
    if report.prune_held.is_none() {
        prune_entries(ctx, tenant, &plan, &mut inv, &mut report).await;
    }
    crash_point("after-prune");
    // The API server's answers may quote what was rendered: a secret is named by its key.
    for e in &mut report.errors {
        e.message = render.secret_leaves.scrub(&e.message);
    }
    let purged = render.state == Some(TenantState::Purged);
    if purged && inv.entries.is_empty() && report.errors.is_empty() {
        return finish_purge(ctx, tenant, report, recorded).await;
    }
    if purged && report.prune_held.is_none() {
        report.prune_held = Some(PruneHeld::PurgeIncomplete {
            remaining: inv.entries.len(),
        });
    }
    record_hold(&plan, &mut inv, &report, &ctx.now);
    let changed = changed || changed_plan;
    record_final(ctx, render, inv, recorded, report, changed).await
}

/// Record union(old, desired) before anything is applied: objects not yet applied are
/// recorded with an empty live hash (a namespace noting whether fief creates it, from
/// `created`), so a crash leaves nothing live unrecorded. When every object is already
/// recorded (a change to existing objects, a prune), the recorded inventory is that union
/// already: no write, and `Reconciling=True` is not written either (a crash then leaves the
/// previous status and inputs, so the next sync renders the tenant and finishes it).
async fn record_union(
    ctx: &Ctx<'_>,
    plan: &Plan<'_>,
    created: &BTreeSet<String>,
    inv: &mut Inventory,
    prev: Option<&Inventory>,
) -> Result<(), ClusterError> {
    let adds = plan
        .stages
        .iter()
        .flatten()
        .any(|a| !inv.entries.contains_key(&a.object.id));
    if adds {
        status::mark_reconciling(inv, &ctx.now);
    }
    for a in plan.stages.iter().flatten() {
        let id = &a.object.id;
        if inv.entries.contains_key(id) {
            continue;
        }
        inv.entries.insert(
            id.clone(),
            Entry {
                id: id.clone(),
                component: a.object.component.clone(),
                api_version: api_version(&a.object.object),
                hash: String::new(),
                live: String::new(),
                resource_version: String::new(),
                uid: String::new(),
                managed: String::new(),
                created: is_namespace(&id.group, &id.kind).then(|| created.contains(&id.name)),
                pending: true,
                done: None,
            },
        );
    }
    write_inventory(ctx, inv, prev).await
}

/// A purged tenant with nothing left: revoke its status access and delete its inventory.
/// Returns the report and `None`, or `recorded` when either step failed.
async fn finish_purge(
    ctx: &Ctx<'_>,
    tenant: &str,
    mut report: TenantReport,
    recorded: Inventory,
) -> (TenantReport, Option<Inventory>) {
    report.outcome = Outcome::Purged;
    if let Err(e) = status_access::revoke(ctx, tenant).await {
        report.errors.push(cluster_error(Failure::Prune, &e));
        report.outcome = Outcome::Failed;
        return (report, Some(recorded));
    }
    match delete_inventory(ctx, tenant).await {
        Ok(()) => (report, None),
        Err(e) => {
            report.errors.push(cluster_error(Failure::Inventory, &e));
            (report, Some(recorded))
        }
    }
}

/// Record the tenant's final inventory and status over `recorded` (the union written before
/// the apply); `changed`: the sync changed (or meant to change) something. Returns the report
/// (failed when it holds an error) and the inventory that stands.
async fn record_final(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    mut inv: Inventory,
    recorded: Inventory,
    mut report: TenantReport,
    changed: bool,
) -> (TenantReport, Option<Inventory>) {
    status_access::update(ctx, render, &mut inv, &mut report).await;
    status::finish(
        &mut inv,
        &mut report,
        render,
        changed,
        &ctx.now,
        ctx.options.commit.as_deref(),
    );
    let written = inv != recorded;
    status::record_inputs(&mut inv, render, written);
    let stands = match write_inventory(ctx, &inv, Some(&recorded)).await {
        Ok(()) => inv,
        Err(e) => {
            report.errors.push(cluster_error(Failure::Inventory, &e));
            recorded
        }
    };
    if !report.errors.is_empty() {
        report.outcome = Outcome::Failed;
    }
    (report, Some(stands))
}
