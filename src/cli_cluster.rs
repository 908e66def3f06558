//! The cluster commands of the CLI: `apply` and `diff`.
//!
//! In: parsed arguments. Out: a progress line per tenant and a summary (or diffs) on stdout,
//! errors on stderr, and the exit code (0 ok, 1 invalid input or differences, 3 cluster).

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};

use crate::agent::{self, AgentOptions};
use crate::cli::{
    AgentArgs, ApplyArgs, CliError, ClusterArgs, Colour, DiffArgs, EXIT_EXTERNAL, EXIT_INVALID,
    EXIT_OK, Format, LogFormat, StatusArgs, load_and_render, report_errors,
};
use crate::cluster::counter::{RequestCounter, RequestStats};
use crate::cluster::sync::{SyncOptions, TenantReport};
use crate::cluster::{self, Resources, diff};
use crate::git::GitAuth;
use crate::inventory::{Inventory, InventoryError};

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))
}

async fn resources(args: &ClusterArgs) -> Result<(Resources, RequestCounter), CliError> {
    let (client, counter) = cluster::connect(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.api_qps,
    )
    .await?;
    Ok((Resources::discover(client).await?, counter))
}

fn progress_line(r: &TenantReport) -> String {
    let c = &r.counts;
    let mut line = format!(
        "{}: {} ({} created, {} configured, {} unchanged, {} pruned, {} failed)",
        r.tenant, r.outcome, c.created, c.configured, c.unchanged, c.pruned, c.failed
    );
    if r.outcome == "orphaned" {
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
pub fn apply_cmd(args: &ApplyArgs) -> Result<u8, CliError> {
    let (repo, renders) = load_and_render(&args.repo)?;
    let config = repo.config.as_ref().map_err(|_| CliError::Config);
    if config.is_err() {
        report_errors(&renders);
    }
    let config = config?;
    let options = SyncOptions {
        agent_namespace: config.agent_namespace.clone(),
        concurrency: args.concurrency,
        object_concurrency: 8,
        allow_mass_prune: args.allow_mass_prune,
        guard: config.prune_guard,
        cluster: args.cluster_name.clone(),
        commit: None,
    };
    let known: BTreeSet<String> = repo.tenants.keys().cloned().collect();
    let (reports, stats) = runtime()?.block_on(async {
        let (resources, counter) = resources(&args.cluster).await?;
        let reports = cluster::sync::sync(
            &resources,
            &renders,
            &known,
            args.repo.tenants.is_empty(),
            &options,
        )
        .await?;
        Ok::<_, CliError>((reports, counter.stats()))
    })?;
    let mut out = String::new();
    let mut stderr = std::io::stderr().lock();
    for r in &reports {
        for e in &r.errors {
            let _ = writeln!(stderr, "error: tenant `{}`: {e}", r.tenant);
        }
    }
    match args.output {
        Format::Json => {
            #[derive(serde::Serialize)]
            struct Summary<'a> {
                tenants: &'a [TenantReport],
                requests: RequestStats,
            }
            let summary = Summary {
                tenants: &reports,
                requests: stats,
            };
            out = serde_json::to_string_pretty(&summary).unwrap_or_default();
            out.push('\n');
        }
        Format::Text => {
            for r in &reports {
                out.push_str(&progress_line(r));
                out.push('\n');
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
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let invalid = reports.iter().any(|r| r.outcome == "invalid");
    let failed = reports.iter().any(|r| !r.is_ok() && r.outcome != "invalid");
    Ok(if failed {
        EXIT_EXTERNAL
    } else if invalid {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// `fief diff`.
pub fn diff_cmd(args: &DiffArgs) -> Result<u8, CliError> {
    let (repo, renders) = load_and_render(&args.repo)?;
    let invalid = report_errors(&renders);
    let config = repo.config.as_ref().map_err(|_| CliError::Config)?;
    let (diffs, errors) = runtime()?.block_on(async {
        let (resources, _) = resources(&args.cluster).await?;
        Ok::<_, CliError>(diff::diff(&resources, &renders, &config.agent_namespace).await?)
    })?;
    let colour = match args.color {
        Colour::Always => true,
        Colour::Never => false,
        Colour::Auto => std::io::stdout().is_terminal(),
    };
    let mut out = String::new();
    for d in &diffs {
        out.push_str(&format!("# tenant {}: {} {}\n", d.tenant, d.action, d.id));
        out.push_str(&if colour {
            diff::colourise(&d.text)
        } else {
            d.text.clone()
        });
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let mut stderr = std::io::stderr().lock();
    for e in &errors {
        let _ = writeln!(stderr, "error: {e}");
    }
    Ok(if !errors.is_empty() {
        EXIT_EXTERNAL
    } else if invalid || !diffs.is_empty() {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn read_secret(path: &std::path::Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| CliError::Usage(format!("{}: cannot read: {e}", path.display())))
}

/// `fief agent`.
pub fn agent_cmd(args: &AgentArgs) -> Result<u8, CliError> {
    init_logs(args.log_format);
    let token = match (&args.git_token_file, &args.git_token_env) {
        // The credential Secret is optional (public repos): a missing file is no token.
        (Some(f), _) if !f.exists() => {
            tracing::warn!(file = %f.display(), "git token file not found; fetching without a token");
            None
        }
        (Some(f), _) => Some(read_secret(f)?),
        (None, Some(var)) => Some(std::env::var(var).map_err(|_| {
            CliError::Usage(format!(
                "--git-token-env: environment variable {var} is not set"
            ))
        })?),
        (None, None) => None,
    };
    let webhook_secret = match &args.webhook_secret_file {
        Some(f) => Some(read_secret(f)?.into_bytes()),
        None => None,
    };
    let options = AgentOptions {
        repo: args.repo.clone(),
        branch: args.branch.clone(),
        cluster: args.cluster.clone(),
        interval: args.interval,
        cache_dir: args.cache_dir.clone(),
        listen: args.listen,
        webhook_secret,
        auth: GitAuth {
            token,
            ssh_key: args.ssh_key_file.clone(),
            known_hosts: args.known_hosts_file.clone(),
        },
        concurrency: args.concurrency,
        leader_election: !args.no_leader_election,
        lease_namespace: args.lease_namespace.clone(),
        kubeconfig: args.cluster_args.kubeconfig.clone(),
        context: args.cluster_args.context.clone(),
        api_qps: args.cluster_args.api_qps,
    };
    match runtime()?.block_on(agent::run(options)) {
        Ok(()) => Ok(EXIT_OK),
        Err(e) => {
            tracing::error!(error = %e, "agent stopped");
            Ok(EXIT_EXTERNAL)
        }
    }
}

/// `fief status`.
pub fn status_cmd(args: &StatusArgs) -> Result<u8, CliError> {
    let inventories = runtime()?.block_on(async {
        let (client, _) = cluster::connect(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.api_qps,
        )
        .await?;
        Ok::<_, CliError>(cluster::sync::load_inventories(&client, &args.namespace).await?)
    })?;
    let selected: Vec<(&String, &Result<Inventory, InventoryError>)> = inventories
        .iter()
        .filter(|(t, _)| args.tenants.is_empty() || args.tenants.contains(t))
        .collect();
    let condition = |inv: &Inventory, t: &str| {
        inv.status
            .condition(t)
            .map(|c| c.status.clone())
            .unwrap_or_else(|| "Unknown".to_string())
    };
    let mut out = String::new();
    match args.output {
        Format::Json => {
            let rows: Vec<serde_json::Value> = selected
                .iter()
                .map(|(t, inv)| match inv {
                    Ok(inv) => serde_json::json!({"tenant": t, "status": inv.status}),
                    Err(e) => serde_json::json!({"tenant": t, "error": e.to_string()}),
                })
                .collect();
            out = serde_json::to_string_pretty(&rows).unwrap_or_default();
            out.push('\n');
        }
        Format::Text => {
            out.push_str(&format!(
                "{:<24} {:<8} {:<8} {:<10} {:<8} {:<12} {}\n",
                "TENANT", "READY", "STALLED", "REVISION", "OBJECTS", "COMMIT", "MESSAGE"
            ));
            for (t, inv) in &selected {
                match inv {
                    Ok(inv) => {
                        let message = inv
                            .status
                            .last_error
                            .clone()
                            .or_else(|| inv.status.condition("Ready").map(|c| c.message.clone()))
                            .unwrap_or_default();
                        let message = message.lines().next().unwrap_or("").to_string();
                        let orphan = inv
                            .status
                            .condition("Orphaned")
                            .is_some_and(|c| c.status == "True");
                        out.push_str(&format!(
                            "{:<24} {:<8} {:<8} {:<10} {:<8} {:<12} {}{}\n",
                            t,
                            condition(inv, "Ready"),
                            condition(inv, "Stalled"),
                            inv.status.revision.chars().take(10).collect::<String>(),
                            inv.entries.len(),
                            inv.status
                                .commit
                                .as_deref()
                                .unwrap_or("-")
                                .chars()
                                .take(12)
                                .collect::<String>(),
                            if orphan { "ORPHANED: " } else { "" },
                            message
                        ));
                    }
                    Err(e) => out.push_str(&format!("{t:<24} unreadable inventory: {e}\n")),
                }
            }
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let any_bad = selected.iter().any(|(_, inv)| {
        inv.as_ref()
            .map_or(true, |i| condition(i, "Ready") != "True")
    });
    Ok(if any_bad { EXIT_INVALID } else { EXIT_OK })
}
