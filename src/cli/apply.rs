//! `fief apply`: one-shot sync of the repo's tenants into the cluster.
//!
//! In: [`ApplyArgs`] (`--env`: only those environments, pruned only in their namespaces;
//! see `core::scope`). Out: a progress line per tenant and a summary on stdout (or JSON),
//! errors on stderr, exit code 0 ok, 1 invalid tenants, 3 cluster failure, 4 a prune
//! held (mass-prune guard, empty render), 5 (with `--wait`) objects not healthy in time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;

use super::{
    ApplyArgs, CliError, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, EXIT_PRUNE_HELD, EXIT_UNHEALTHY,
    Format, env_scope, load_and_render_envs, load_repo_with, report_errors, resources, runtime,
};
use crate::cli::secrets::WithoutKey;
use crate::core::fleet::BatchRenders;
use crate::core::inputs::Hashes;
use crate::core::model::Repo;
use crate::core::pipeline;
use crate::core::render::TenantRender;
use crate::core::scope::EnvScope;
use crate::core::status::Outcome;
use crate::kube::Resources;
use crate::kube::counter::RequestStats;
use crate::kube::health::Unhealthy;
use crate::kube::sync::{PruneRelease, SyncOptions, TenantReport, sync_batched};

mod output;
mod wait;

use output::{json_summary, print_errors, print_progress, text_summary};

/// What `fief apply` syncs, read from the repo before it touches the cluster.
struct Prepared {
    /// Shared with the threads that render batches.
    repo: Arc<Repo>,
    /// Without --wait (which needs every render afterwards), tenants are rendered and synced a
    /// batch at a time, so memory holds one batch's objects.
    batched: bool,
    /// The tenants rendered up front (with --wait), in scope.
    renders: Arc<Vec<TenantRender>>,
    /// `--env`: only those environments are applied, and pruned only in their namespaces.
    scope: Arc<EnvScope>,
    /// Recorded in each synced tenant's status (see `core::inputs`).
    hashes: Arc<Hashes>,
    /// The tenants in scope.
    names: Vec<String>,
    options: SyncOptions,
    /// Every tenant file in the repo (inventories of others are orphaned).
    known: BTreeSet<String>,
    /// Tenants whose last render may stand in for a new one while their inputs are unchanged.
    reusable: BTreeMap<String, String>,
}

impl Prepared {
    /// Where the sync takes each batch's renders from: rendered as it comes, or (with --wait)
    /// `renders`, made up front.
    fn batch_renders(&self, renders: &Arc<Vec<TenantRender>>) -> BatchRenders {
        if self.batched {
            BatchRenders::from_repo(
                Arc::clone(&self.repo),
                Arc::clone(&self.scope),
                Arc::clone(&self.hashes),
            )
        } else {
            BatchRenders::made(Arc::clone(renders))
        }
    }
}

/// What the sync brought back.
struct Synced {
    /// One per tenant (suspended ones included), sorted by tenant.
    reports: Vec<TenantReport>,
    stats: RequestStats,
    /// With --wait: the objects not healthy in time, by tenant.
    unhealthy: BTreeMap<String, Vec<Unhealthy>>,
    /// Tenants whose line was printed as their sync finished.
    streamed: BTreeSet<String>,
    /// Tenants rendered by this run (all of them with --wait).
    rendered: usize,
}

/// `fief apply`.
pub fn apply_cmd(args: &ApplyArgs) -> Result<u8, CliError> {
    let prepared = prepare(args)?;
    let synced = runtime()?.block_on(sync_cluster(args, &prepared))?;
    let rendered = synced.rendered;
    print_errors(&synced);
    let out = match args.output {
        Format::Json => json_summary(args.wait, &synced, rendered),
        Format::Text => text_summary(args.wait, &synced, rendered, prepared.names.len()),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(exit_code(&synced))
}

/// Load the repo (and with --wait render it), and work out the tenants in scope and how they
/// are synced. A broken fief.yaml: every tenant's error on stderr, and [`CliError::Config`].
fn prepare(args: &ApplyArgs) -> Result<Prepared, CliError> {
    let batched = !args.wait;
    let (repo, mut renders) = if batched {
        (load_repo_with(&args.repo, WithoutKey::Fail)?, Vec::new())
    } else {
        load_and_render_envs(&args.repo, WithoutKey::Fail, &args.envs)?
    };
    let scope = Arc::new(env_scope(&repo, &args.repo.tenants, &args.envs)?);
    let hashes = Arc::new(crate::core::inputs::tenant_hashes(&repo));
    crate::core::inputs::stamp(&mut renders, &hashes);
    let repo = Arc::new(repo);
    let config = repo.config.as_ref().map_err(|_| CliError::Config);
    if config.is_err() {
        if batched {
            report_errors(&pipeline::render_all(&repo, &args.repo.tenants));
        } else {
            report_errors(&renders);
        }
    }
    let config = config?;
    let mut names: Vec<String> = if args.repo.tenants.is_empty() {
        repo.tenants.keys().cloned().collect()
    } else {
        args.repo.tenants.clone()
    };
    names.retain(|n| super::in_env_scope(&repo, n, &scope));
    renders.retain(|r| super::in_env_scope(&repo, &r.tenant, &scope));
    let options = SyncOptions {
        agent_namespace: config.agent_namespace.clone(),
        concurrency: args.concurrency,
        object_concurrency: 8,
        release: PruneRelease::None,
        guard: config.prune_guard,
        cluster: args.cluster_name.clone(),
        commit: None,
        progress: None,
        adopt: super::args::AdoptMode::sync_mode(args.adopt),
    };
    let known: BTreeSet<String> = repo.tenants.keys().cloned().collect();
    let reusable: BTreeMap<String, String> =
        pipeline::reuse_candidates(&repo, &names, &args.cluster_name)
            .into_iter()
            .filter_map(|t| {
                let hash = hashes.get(&t)?.clone();
                Some((t, hash))
            })
            .collect();
    Ok(Prepared {
        repo,
        batched,
        renders: Arc::new(renders),
        scope,
        hashes,
        names,
        options,
        known,
        reusable,
    })
}

/// Connect, leave suspended tenants alone, sync the others (printing each tenant's line as
/// it is done, for text output), publish their Events and (with --wait) wait for health.
async fn sync_cluster(args: &ApplyArgs, prepared: &Prepared) -> Result<Synced, CliError> {
    let (resources, counter) = resources(&args.cluster).await?;
    let mut options = prepared.options.clone();
    if args.allow_mass_prune {
        options.release = release(&resources).await;
    }
    // Suspended tenants (`fief suspend`) are left alone: not applied, not pruned.
    let suspended =
        suspended_tenants(&resources, &options.agent_namespace, &prepared.names).await?;
    let names: Vec<String> = prepared
        .names
        .iter()
        .filter(|n| !suspended.contains_key(*n))
        .cloned()
        .collect();
    let renders: Arc<Vec<TenantRender>> = if suspended.is_empty() {
        Arc::clone(&prepared.renders)
    } else {
        Arc::new(
            prepared
                .renders
                .iter()
                .filter(|r| !suspended.contains_key(&r.tenant))
                .cloned()
                .collect(),
        )
    };
    let total = if prepared.batched {
        names.len()
    } else {
        renders.len()
    };
    // Text output: each tenant's line as soon as it is done, and on a terminal a
    // progress line (done/total, elapsed) on stderr.
    let printer = (args.output == Format::Text).then(|| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        options.progress = Some(tx);
        tokio::spawn(print_progress(rx, total))
    });
    // Orphaned inventories are reported only when the whole repo is in scope.
    let orphans = args.repo.tenants.is_empty();
    let known = &prepared.known;
    let synced = Scope {
        names: &names,
        renders: &renders,
        orphans,
    };
    let batches = Arc::new(prepared.batch_renders(&renders));
    let reports = sync_tenants(&resources, prepared, &synced, &batches, &options).await;
    // The printer ends once the last sender is gone.
    options.progress = None;
    let streamed = match printer {
        Some(task) => task.await.unwrap_or_default(),
        None => BTreeSet::new(),
    };
    let mut reports = reports?;
    tenant_events(&resources, &options.agent_namespace, &reports).await;
    for (tenant, why) in suspended {
        let mut r = TenantReport::new(&tenant, Outcome::Suspended);
        r.suspended = Some(why);
        reports.push(r);
    }
    reports.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    let unhealthy = if args.wait {
        let waits = wait::Waits {
            resources: &resources,
            repo: &prepared.repo,
            options: &options,
            known,
            default: args.timeout,
        };
        wait::wait_and_apply_dependents(&waits, &renders, &mut reports).await
    } else {
        BTreeMap::new()
    };
    Ok(Synced {
        reports,
        stats: counter.stats(),
        unhealthy,
        streamed,
        rendered: batches.rendered(),
    })
}

/// The tenants a sync covers.
struct Scope<'a> {
    /// Not suspended, in scope.
    names: &'a [String],
    /// With --wait: their renders.
    renders: &'a Arc<Vec<TenantRender>>,
    /// Orphaned inventories are reported (the whole repo is in scope).
    orphans: bool,
}

/// Sync the tenants a batch at a time: each batch rendered as it comes, or (with --wait)
/// taken from the renders made up front.
async fn sync_tenants(
    resources: &Resources,
    prepared: &Prepared,
    scope: &Scope<'_>,
    batches: &Arc<BatchRenders>,
    options: &SyncOptions,
) -> Result<Vec<TenantReport>, crate::kube::ClusterError> {
    let (names, reusable) = if prepared.batched {
        (scope.names.to_vec(), prepared.reusable.clone())
    } else {
        let names = scope.renders.iter().map(|r| r.tenant.clone()).collect();
        (names, BTreeMap::new())
    };
    sync_batched(
        resources,
        &names,
        Arc::clone(batches),
        &reusable,
        &prepared.known,
        scope.orphans,
        options,
    )
    .await
}

/// `--allow-mass-prune`: the guard holds no tenant's prune, and each it would have held
/// records who released it (the API server's name for the caller, else `$USER`) and when.
async fn release(resources: &Resources) -> PruneRelease {
    let who = match crate::kube::tenant_flags::who_am_i(resources.client()).await {
        Some(who) => who,
        None => std::env::var("USER").unwrap_or_else(|_| "unknown".to_string()),
    };
    let at = crate::kube::sync::now_rfc3339();
    let note =
        crate::core::status::suspension_note(&who, &at, Some("fief apply --allow-mass-prune"));
    PruneRelease::All(note)
}

/// The exit code: a failure, then invalid tenants, then a held prune, then unhealthy objects.
fn exit_code(synced: &Synced) -> u8 {
    let reports = &synced.reports;
    let invalid = reports.iter().any(|r| r.outcome == Outcome::Invalid);
    let failed = reports
        .iter()
        .any(|r| !r.is_ok() && r.outcome != Outcome::Invalid);
    let held = reports.iter().any(TenantReport::prune_blocked);
    let sick = synced.unhealthy.values().any(|u| !u.is_empty());
    if failed {
        EXIT_EXTERNAL
    } else if invalid {
        EXIT_INVALID
    } else if held {
        EXIT_PRUNE_HELD
    } else if sick {
        EXIT_UNHEALTHY
    } else {
        EXIT_OK
    }
}

/// Status Events in the tenants' own namespaces for the syncs that changed something or
/// failed (none when nothing changed: no extra request). Their namespaces are read from their
/// inventories one at a time, in the order of the tenants' names, up to the last of them.
async fn tenant_events(resources: &Resources, agent_namespace: &str, reports: &[TenantReport]) {
    use crate::kube::tenant_events::{Audience, event_for, owned_namespaces, publish};
    let wanted: BTreeSet<&str> = reports
        .iter()
        .filter(|r| event_for(r, Audience::Tenant).is_some())
        .map(|r| r.tenant.as_str())
        .collect();
    let Some(last) = wanted.last().copied() else {
        return;
    };
    let mut walk = crate::kube::inventory_store::Walk::new(resources.client(), agent_namespace);
    let mut namespaces = BTreeMap::new();
    loop {
        match walk.next_upto(Some(last)).await {
            Ok(Some(one)) => {
                for (t, inv) in one.iter() {
                    if let (true, Ok(inv)) = (wanted.contains(t.as_str()), inv) {
                        namespaces.insert(t.clone(), owned_namespaces(inv));
                    }
                }
            }
            Ok(None) => break,
            Err(_) => return,
        }
    }
    publish(resources.client(), "fief-apply", reports, &namespaces).await;
}

/// The tenants in `names` whose inventory is marked suspended, with who/when/why.
async fn suspended_tenants(
    resources: &Resources,
    agent_namespace: &str,
    names: &[String],
) -> Result<BTreeMap<String, String>, CliError> {
    let flags = crate::kube::tenant_flags::load_flags(resources.client(), agent_namespace).await?;
    Ok(flags
        .into_iter()
        .filter_map(|(t, f)| Some((t, f.suspended?)))
        .filter(|(t, _)| names.contains(t))
        .collect())
}
