//! `fief apply`: one-shot sync of the repo's tenants into the cluster.
//!
//! In: [`ApplyArgs`] (`--env`: only those environments, pruned only in their namespaces;
//! see `core::scope`). Out: a progress line per tenant and a summary on stdout (or JSON),
//! errors on stderr, exit code 0 ok, 1 invalid tenants, 3 cluster failure, 4 a prune
//! held (mass-prune guard, empty render), 5 (with `--wait`) objects not healthy in time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use super::{
    ApplyArgs, CliError, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, EXIT_PRUNE_HELD, EXIT_UNHEALTHY,
    Format, env_scope, load_and_render_envs, load_repo_with, report_errors, resources, runtime,
};
use crate::cli::secrets::WithoutKey;
use crate::core::model::Repo;
use crate::core::pipeline;
use crate::core::render::TenantRender;
use crate::core::status::Outcome;
use crate::kube::Resources;
use crate::kube::counter::RequestStats;
use crate::kube::health::{Unhealthy, deadlines, wait_healthy};
use crate::kube::sync::{SyncOptions, TenantReport};

/// Orphaned tenants printed one per line before they are summarised in one.
const ORPHANS_LISTED: usize = 5;

fn progress_line(r: &TenantReport) -> String {
    let c = &r.counts;
    let on = super::colour::stdout();
    let mut line = format!(
        "{}: {} ({} created, {} configured, {} unchanged, {} pruned, {} failed)",
        r.tenant,
        // Problems stand out; success stays plain (scripts grep `t: applied` on a terminal too).
        match super::colour::style_of(r.outcome.as_str()) {
            Some(style) if style != super::colour::Style::Good =>
                super::colour::paint(on, style, r.outcome.as_str()),
            _ => r.outcome.to_string(),
        },
        c.created,
        c.configured,
        c.unchanged,
        c.pruned,
        c.failed
    );
    if let Some(why) = &r.suspended {
        return format!(
            "{}: {} ({why}): nothing applied, repaired or pruned (`fief resume {}` to sync again)",
            r.tenant,
            super::colour::word(super::colour::stdout(), Outcome::Suspended.as_str()),
            r.tenant
        );
    }
    if let (Outcome::Moved, Some(to)) = (r.outcome, &r.moved_to) {
        line = format!(
            "{}: moved to cluster {to}: {} objects left running here (`fief retire` deletes them once the tenant is Ready on {to})",
            r.tenant, c.objects
        );
    }
    if r.outcome == Outcome::Orphaned {
        line = format!(
            "{}: orphaned: tenant file removed from git; {} objects left running (set state: purged to delete)",
            r.tenant, c.objects
        );
    }
    if let Some(hold) = &r.prune_held {
        line.push_str(&format!("\n  prune held: {hold}"));
    }
    for k in &r.kept {
        line.push_str(&format!("\n  kept: {k}"));
    }
    line
}

/// `fief apply`.
#[allow(clippy::too_many_lines)]
pub fn apply_cmd(args: &ApplyArgs) -> Result<u8, CliError> {
    // Without --wait (which needs every render afterwards), tenants are rendered and synced a
    // batch at a time, so memory holds one batch's objects.
    let batched = !args.wait;
    let (repo, mut renders) = if batched {
        (load_repo_with(&args.repo, WithoutKey::Fail)?, Vec::new())
    } else {
        load_and_render_envs(&args.repo, WithoutKey::Fail, &args.envs)?
    };
    // `--env`: only those environments are applied, and pruned only in their namespaces.
    let scope = std::sync::Arc::new(env_scope(&repo, &args.repo.tenants, &args.envs)?);
    // Recorded in each synced tenant's status (see `core::inputs`).
    let hashes = std::sync::Arc::new(crate::core::inputs::tenant_hashes(&repo));
    crate::core::inputs::stamp(&mut renders, &hashes);
    // Shared with the threads that render batches.
    let repo = std::sync::Arc::new(repo);
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
        allow_mass_prune: args.allow_mass_prune,
        guard: config.prune_guard,
        cluster: args.cluster_name.clone(),
        commit: None,
        progress: None,
    };
    let known: BTreeSet<String> = repo.tenants.keys().cloned().collect();
    // Tenants rendered by this run (all of them with --wait).
    let rendered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(renders.len()));
    // Tenants whose last render may stand in for a new one while their inputs are unchanged.
    let reusable: BTreeMap<String, String> =
        pipeline::reuse_candidates(&repo, &names, &args.cluster_name)
            .into_iter()
            .filter_map(|t| {
                let hash = hashes.get(&t)?.clone();
                Some((t, hash))
            })
            .collect();
    let (reports, stats, unhealthy, streamed) = runtime()?.block_on(async {
        let (resources, counter) = resources(&args.cluster).await?;
        // Suspended tenants (`fief suspend`) are left alone: not applied, not pruned.
        let suspended = suspended_tenants(&resources, &options.agent_namespace, &names).await?;
        let names: Vec<String> = names
            .iter()
            .filter(|n| !suspended.contains_key(*n))
            .cloned()
            .collect();
        let active: Vec<TenantRender>;
        let renders: &[TenantRender] = if suspended.is_empty() {
            &renders
        } else {
            active = renders
                .iter()
                .filter(|r| !suspended.contains_key(&r.tenant))
                .cloned()
                .collect();
            &active
        };
        let total = if batched { names.len() } else { renders.len() };
        // Text output: each tenant's line as soon as it is done, and on a terminal a
        // progress line (done/total, elapsed) on stderr.
        let mut options = options;
        let printer = (args.output == Format::Text).then(|| {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            options.progress = Some(tx);
            tokio::spawn(print_progress(rx, total))
        });
        let reports = if batched {
            crate::kube::sync::sync_batched(
                &resources,
                &names,
                {
                    let repo = std::sync::Arc::clone(&repo);
                    let hashes = std::sync::Arc::clone(&hashes);
                    let rendered = std::sync::Arc::clone(&rendered);
                    let scope = std::sync::Arc::clone(&scope);
                    move |batch: &[String]| {
                        rendered.fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
                        let mut renders = pipeline::render_all_in(&repo, batch, &scope);
                        crate::core::inputs::stamp(&mut renders, &hashes);
                        renders
                    }
                },
                &reusable,
                &known,
                args.repo.tenants.is_empty(),
                &options,
            )
            .await
        } else {
            crate::kube::sync::sync(
                &resources,
                renders,
                &known,
                args.repo.tenants.is_empty(),
                &options,
            )
            .await
        };
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
            wait_for_health(&resources, &repo, renders, &reports, args.timeout).await
        } else {
            BTreeMap::new()
        };
        Ok::<_, CliError>((reports, counter.stats(), unhealthy, streamed))
    })?;
    let rendered = rendered.load(std::sync::atomic::Ordering::Relaxed);
    let mut out = String::new();
    let mut stderr = std::io::stderr().lock();
    let error = super::colour::error_prefix();
    for r in &reports {
        for e in &r.errors {
            let _ = writeln!(stderr, "{error} tenant `{}`: {e}", r.tenant);
        }
        if let Some(hold) = r.prune_held.as_ref().filter(|h| h.blocks()) {
            let _ = writeln!(stderr, "{error} tenant `{}`: prune held: {hold}", r.tenant);
        }
        for u in unhealthy.get(&r.tenant).into_iter().flatten() {
            let what = if u.failed { "failed" } else { "not healthy" };
            let _ = writeln!(
                stderr,
                "{error} tenant `{}`: {what}: {}: {}",
                r.tenant, u.object, u.reason
            );
        }
    }
    match args.output {
        Format::Json => {
            #[derive(serde::Serialize)]
            struct Summary<'a> {
                tenants: &'a [TenantReport],
                /// Tenants rendered (the others' inputs and objects were as last applied).
                rendered: usize,
                requests: RequestStats,
                #[serde(skip_serializing_if = "Option::is_none")]
                unhealthy: Option<&'a BTreeMap<String, Vec<Unhealthy>>>,
            }
            let summary = Summary {
                tenants: &reports,
                rendered,
                requests: stats,
                unhealthy: args.wait.then_some(&unhealthy),
            };
            out = serde_json::to_string_pretty(&summary).unwrap_or_default();
            out.push('\n');
        }
        Format::Text => {
            // Inventories without a tenant file here (other repos' tenants, or removed files)
            // are one summary line, not one line each.
            let orphans: Vec<&str> = reports
                .iter()
                .filter(|r| r.outcome == Outcome::Orphaned && r.errors.is_empty())
                .map(|r| r.tenant.as_str())
                .collect();
            if orphans.len() > ORPHANS_LISTED {
                out.push_str(&format!(
                    "{} tenants in the cluster have no tenant file in this repo (orphaned: left running; state: purged deletes): {} and {} more (fief status lists them)\n",
                    orphans.len(),
                    orphans[..ORPHANS_LISTED].join(", "),
                    orphans.len() - ORPHANS_LISTED
                ));
            }
            for r in &reports {
                let summarised =
                    orphans.len() > ORPHANS_LISTED && orphans.contains(&r.tenant.as_str());
                if summarised || streamed.contains(&r.tenant) {
                    continue;
                }
                out.push_str(&progress_line(r));
                out.push('\n');
            }
            if args.wait {
                for (tenant, bad) in &unhealthy {
                    let verdict = if bad.is_empty() {
                        "healthy"
                    } else {
                        "not healthy"
                    };
                    out.push_str(&format!("{tenant}: {verdict}\n"));
                }
            }
            let failed = reports.iter().filter(|r| !r.is_ok()).count();
            let total = |f: fn(&TenantReport) -> usize| reports.iter().map(f).sum::<usize>();
            out.push_str(&format!(
                "{} tenants: {} ok, {} failed; objects: {} created, {} configured, {} unchanged, {} pruned, {} failed\n",
                reports.len(),
                reports.len() - failed,
                failed,
                total(|r| r.counts.created),
                total(|r| r.counts.configured),
                total(|r| r.counts.unchanged),
                total(|r| r.counts.pruned),
                total(|r| r.counts.failed),
            ));
            out.push_str(&format!(
                "API requests: {} reads, {} mutating\n",
                stats.get,
                stats.mutating()
            ));
            out.push_str(&format!(
                "rendered {rendered} of {} tenants (the others: inputs and objects as last applied)\n",
                names.len()
            ));
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let invalid = reports.iter().any(|r| r.outcome == Outcome::Invalid);
    let failed = reports
        .iter()
        .any(|r| !r.is_ok() && r.outcome != Outcome::Invalid);
    let held = reports.iter().any(TenantReport::prune_blocked);
    let sick = unhealthy.values().any(|u| !u.is_empty());
    Ok(if failed {
        EXIT_EXTERNAL
    } else if invalid {
        EXIT_INVALID
    } else if held {
        EXIT_PRUNE_HELD
    } else if sick {
        EXIT_UNHEALTHY
    } else {
        EXIT_OK
    })
}

/// Status Events in the tenants' own namespaces for the syncs that changed something or
/// failed (none when nothing changed: no extra request).
async fn tenant_events(resources: &Resources, agent_namespace: &str, reports: &[TenantReport]) {
    use crate::kube::tenant_events::{event_for, owned_namespaces, publish};
    if !reports.iter().any(|r| event_for(r).is_some()) {
        return;
    }
    let Ok(inventories) =
        crate::kube::inventory_store::load_inventories(resources.client(), agent_namespace).await
    else {
        return;
    };
    let namespaces = inventories
        .iter()
        .filter_map(|(t, inv)| Some((t.clone(), owned_namespaces(inv.as_ref().ok()?))))
        .collect();
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

/// With `--wait`: every applied tenant's component objects, polled until healthy (tenants
/// concurrently); the objects that are not, by tenant.
async fn wait_for_health(
    resources: &Resources,
    repo: &Repo,
    renders: &[TenantRender],
    reports: &[TenantReport],
    default: std::time::Duration,
) -> BTreeMap<String, Vec<Unhealthy>> {
    let applied: BTreeSet<&str> = reports
        .iter()
        .filter(|r| r.outcome == Outcome::Applied && r.is_ok())
        .map(|r| r.tenant.as_str())
        .collect();
    let waits = renders
        .iter()
        .filter(|r| applied.contains(r.tenant.as_str()))
        .map(|r| async move {
            let limits = deadlines(repo, r, default);
            (r.tenant.clone(), wait_healthy(resources, r, &limits).await)
        });
    futures::future::join_all(waits).await.into_iter().collect()
}

/// Print each tenant's line to stdout as its report arrives; on a terminal, keep a progress
/// line (done/total, elapsed) on stderr. Returns the tenants printed.
async fn print_progress(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<TenantReport>,
    total: usize,
) -> BTreeSet<String> {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    let start = std::time::Instant::now();
    let mut printed = BTreeSet::new();
    while let Some(r) = rx.recv().await {
        if tty {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
        let _ = writeln!(std::io::stdout(), "{}", progress_line(&r));
        printed.insert(r.tenant);
        if tty {
            let _ = write!(
                std::io::stderr(),
                "[{}/{total}] {:.1}s",
                printed.len(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    if tty {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
    printed
}
