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
    Format, env_scope, env_scope_indexed, load_and_render_envs, load_indexed_with, report_errors,
    resources, runtime,
};
use crate::cli::secrets::WithoutKey;
use crate::core::fleet::Pass;
use crate::core::model::{Config, Repo};
use crate::core::pipeline;
use crate::core::scope::EnvScope;
use crate::core::status::Outcome;
use crate::kube::counter::RequestStats;
use crate::kube::health::Unhealthy;
use crate::kube::pass::{PassOptions, apply_pass};
use crate::kube::sync::{PruneRelease, SyncOptions, TenantReport};

mod output;
mod wait;

use output::{json_summary, print_errors, print_progress, text_summary};

/// What `fief apply` syncs, read from the repo before it touches the cluster.
struct Prepared {
    /// With --wait, the repo (the health waits read its components).
    repo: Option<Arc<Repo>>,
    /// The tenants in scope and where their renders come from: without --wait, the repo is
    /// indexed and each batch of tenants rendered as the sync asks for it, so memory holds
    /// the index and a few batches' objects; with --wait (which needs every render
    /// afterwards), the repo is loaded whole and rendered up front.
    pass: Pass,
    options: SyncOptions,
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
        Format::Text => text_summary(args.wait, &synced, rendered, prepared.pass.names.len()),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(exit_code(&synced))
}

/// Index the repo (with --wait: load and render it), and work out the pass: the tenants in
/// scope and how they are synced. A broken fief.yaml: every tenant's error on stderr, and
/// [`CliError::Config`].
fn prepare(args: &ApplyArgs) -> Result<Prepared, CliError> {
    if args.wait {
        return prepare_rendered(args);
    }
    let indexed = load_indexed_with(&args.repo, WithoutKey::Fail)?;
    let scope = Arc::new(env_scope_indexed(&indexed, &args.repo.tenants, &args.envs)?);
    let Some(config) = indexed.config() else {
        let mut renders = Vec::new();
        let _ = pipeline::render_indexed_batches(
            &indexed,
            &args.repo.tenants,
            &EnvScope::All,
            pipeline::BATCH,
            |batch| {
                renders.extend(batch);
                Ok::<(), std::convert::Infallible>(())
            },
        );
        report_errors(&renders);
        return Err(CliError::Config);
    };
    let options = sync_options(args, config);
    let (tenants, cluster) = (&args.repo.tenants, &args.cluster_name);
    let pass = Pass::indexed(Arc::new(indexed), tenants, scope, cluster);
    Ok(Prepared {
        repo: None,
        pass,
        options,
    })
}

/// [`prepare`] with --wait: the repo loaded whole and every tenant in scope rendered up front.
fn prepare_rendered(args: &ApplyArgs) -> Result<Prepared, CliError> {
    let (repo, renders) = load_and_render_envs(&args.repo, WithoutKey::Fail, &args.envs)?;
    let scope = Arc::new(env_scope(&repo, &args.repo.tenants, &args.envs)?);
    let Ok(config) = repo.config.as_ref() else {
        report_errors(&renders);
        return Err(CliError::Config);
    };
    let options = sync_options(args, config);
    let repo = Arc::new(repo);
    let (tenants, cluster) = (&args.repo.tenants, &args.cluster_name);
    let pass = Pass::new(Arc::clone(&repo), tenants, scope, cluster, Some(renders));
    Ok(Prepared {
        repo: Some(repo),
        pass,
        options,
    })
}

/// How each tenant is synced, from the flags and fief.yaml.
fn sync_options(args: &ApplyArgs, config: &Config) -> SyncOptions {
    SyncOptions {
        agent_namespace: config.agent_namespace.clone(),
        concurrency: args.concurrency,
        object_concurrency: 8,
        release: PruneRelease::None,
        guard: config.prune_guard,
        cluster: args.cluster_name.clone(),
        commit: None,
        progress: None,
        adopt: super::args::AdoptMode::sync_mode(args.adopt),
    }
}

/// Connect and run the pass (printing each tenant's line as it is done, for text output);
/// with --wait, wait for health.
async fn sync_cluster(args: &ApplyArgs, prepared: &Prepared) -> Result<Synced, CliError> {
    let (resources, counter) = resources(&args.cluster).await?;
    let mut options = PassOptions {
        sync: prepared.options.clone(),
        allow_mass_prune: args.allow_mass_prune,
        // Orphaned inventories are reported only when the whole repo is in scope.
        report_orphans: args.repo.tenants.is_empty(),
    };
    // Text output: each tenant's line as soon as it is done, and on a terminal a
    // progress line (done/total, elapsed) on stderr. The printer ends with the pass, which
    // holds the last sender.
    let printer = (args.output == Format::Text).then(|| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        options.sync.progress = Some(tx);
        tokio::spawn(print_progress(rx, prepared.pass.names.len()))
    });
    let passed = apply_pass(&resources, &prepared.pass, options).await;
    let streamed = match printer {
        Some(task) => task.await.unwrap_or_default(),
        None => BTreeSet::new(),
    };
    let (mut reports, options) = passed?;
    let unhealthy = if let Some(repo) = prepared.repo.as_deref() {
        let waits = wait::Waits {
            resources: &resources,
            repo,
            options: &options,
            known: &prepared.pass.known,
            default: args.timeout,
        };
        let suspended = |t: &str| {
            reports
                .binary_search_by(|r| r.tenant.as_str().cmp(t))
                .is_ok_and(|i| reports[i].outcome == Outcome::Suspended)
        };
        let renders: Vec<_> = prepared
            .pass
            .renders
            .made()
            .iter()
            .filter(|r| !suspended(&r.tenant))
            .cloned()
            .collect();
        wait::wait_and_apply_dependents(&waits, &renders, &mut reports).await
    } else {
        BTreeMap::new()
    };
    Ok(Synced {
        reports,
        stats: counter.stats(),
        unhealthy,
        streamed,
        rendered: prepared.pass.renders.rendered(),
    })
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
