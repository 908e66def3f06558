//! What `fief apply` prints: each tenant's line (as it finishes, with a progress line on a
//! terminal), errors on stderr, and the closing summary as text or JSON.
//!
//! In: tenant reports (one at a time while syncing, then all of them as [`Synced`]). Out:
//! lines on stdout and stderr, and the summary as a string.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use super::Synced;
use crate::cli::colour;
use crate::core::plan::depends::describe;
use crate::core::plan::phase::PhaseHold;
use crate::core::status::Outcome;
use crate::kube::counter::RequestStats;
use crate::kube::health::Unhealthy;
use crate::kube::sync::TenantReport;

/// Orphaned tenants printed one per line before they are summarised in one.
const ORPHANS_LISTED: usize = 5;

/// One tenant's line: its outcome and object counts, or why nothing was done; then a held
/// prune and kept objects, one indented line each.
fn progress_line(r: &TenantReport) -> String {
    let c = &r.counts;
    let on = colour::stdout();
    let mut line = format!(
        "{}: {} ({} created, {} configured, {} unchanged, {} pruned, {} failed)",
        r.tenant,
        // Problems stand out; success stays plain (scripts grep `t: applied` on a terminal too).
        match colour::style_of(r.outcome.as_str()) {
            Some(style) if style != colour::Style::Good =>
                colour::paint(on, style, r.outcome.as_str()),
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
            "{}: {} ({why}): nothing applied, repaired or pruned (`fief resume -t {}` to sync again)",
            r.tenant,
            colour::word(colour::stdout(), Outcome::Suspended.as_str()),
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
    // Held until what they wait for is healthy: applied by a later run (or `--wait`).
    if let Some(hold @ PhaseHold::Waiting { .. }) = &r.phase_hold {
        line.push_str(&format!("\n  waiting: {hold}"));
    }
    if !r.waiting.is_empty() {
        line.push_str(&format!("\n  waiting: {}", describe(&r.waiting)));
    }
    for k in &r.kept {
        line.push_str(&format!("\n  kept: {k}"));
    }
    for a in &r.adopted {
        line.push_str(&format!("\n  adopted: {a}"));
    }
    for e in &r.ended {
        line.push_str(&format!("\n  hook deleted: {e}"));
    }
    line
}

/// Each tenant's errors, blocking prune hold and unhealthy objects, on stderr.
pub(super) fn print_errors(synced: &Synced) {
    let mut stderr = std::io::stderr().lock();
    let error = colour::error_prefix();
    for r in &synced.reports {
        for e in &r.errors {
            let _ = writeln!(stderr, "{error} tenant `{}`: {e}", r.tenant);
        }
        if let Some(hold) = r.prune_held.as_ref().filter(|h| h.blocks()) {
            let _ = writeln!(stderr, "{error} tenant `{}`: prune held: {hold}", r.tenant);
        }
        for u in synced.unhealthy.get(&r.tenant).into_iter().flatten() {
            let what = if u.failed { "failed" } else { "not healthy" };
            let _ = writeln!(
                stderr,
                "{error} tenant `{}`: {what}: {}: {}",
                r.tenant, u.object, u.reason
            );
        }
    }
}

/// The `--output json` summary.
pub(super) fn json_summary(wait: bool, synced: &Synced, rendered: usize) -> String {
    #[derive(serde::Serialize)]
    struct Summary<'a> {
        tenants: &'a [TenantReport],
        /// Tenants rendered (the others' inputs and objects were as last applied).
        rendered: usize,
        requests: &'a RequestStats,
        #[serde(skip_serializing_if = "Option::is_none")]
        unhealthy: Option<&'a BTreeMap<String, Vec<Unhealthy>>>,
    }
    let summary = Summary {
        tenants: &synced.reports,
        rendered,
        requests: &synced.stats,
        unhealthy: wait.then_some(&synced.unhealthy),
    };
    let mut out = serde_json::to_string_pretty(&summary).unwrap_or_default();
    out.push('\n');
    out
}

/// The text summary: the lines of tenants not printed as they finished (orphans past a few
/// as one line), with --wait each tenant's health, then the totals. `in_scope`: tenants in
/// scope.
pub(super) fn text_summary(
    wait: bool,
    synced: &Synced,
    rendered: usize,
    in_scope: usize,
) -> String {
    let (reports, stats) = (&synced.reports, &synced.stats);
    let mut out = String::new();
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
    for r in reports {
        let summarised = orphans.len() > ORPHANS_LISTED && orphans.contains(&r.tenant.as_str());
        if summarised || synced.streamed.contains(&r.tenant) {
            continue;
        }
        out.push_str(&progress_line(r));
        out.push('\n');
    }
    if wait {
        for (tenant, bad) in &synced.unhealthy {
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
        "{}: {} ok, {} failed; objects: {} created, {} configured, {} unchanged, {} pruned, {} failed\n",
        super::super::words::count(reports.len(), "tenant"),
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
        "rendered {rendered} of {in_scope} tenants (the others: inputs and objects as last applied)\n",
    ));
    out
}

/// Print each tenant's line to stdout as its report arrives; on a terminal, keep a progress
/// line (done/total, elapsed) on stderr. Returns the tenants printed.
pub(super) async fn print_progress(
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
