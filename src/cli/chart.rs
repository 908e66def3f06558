//! `fief chart update REPO`: fetch the charts components take from repositories and write
//! `fief.lock`.
//!
//! In: a checkout of the tenants repo (components read at the head and at the git refs
//! tenants pin them to), the chart cache (`$FIEF_CHART_CACHE`, else the user's cache folder)
//! and the render helper, which fetches. Out: `REPO/fief.lock`, one line per chart on stdout
//! (a changed digest as a warning on stderr). Exit 0 when written, 1 when a chart cannot be
//! fetched (nothing is written then), 2 for a repo that cannot be read.

use std::io::Write;

use super::{CliError, EXIT_INVALID, EXIT_OK, write_err};
use crate::core::model::{ChartLock, LOCK_FILE};
use crate::source::charts::{self, ChartCache, LockChange};

/// `fief chart`.
pub fn chart_cmd(args: &super::ChartArgs) -> Result<u8, CliError> {
    match &args.command {
        super::ChartCommand::Update(update) => update_cmd(update),
    }
}

fn update_cmd(args: &super::ChartUpdateArgs) -> Result<u8, CliError> {
    let snapshot = crate::source::fs::read_dir(&args.repo)?;
    let old = charts::read_lock(&snapshot).unwrap_or_default();
    let repo = crate::source::checkout::load_unresolved(&args.repo, snapshot);
    let wanted = charts::wanted_charts(&repo.snapshot);
    let cache = ChartCache::from_env();
    let mut stderr = std::io::stderr().lock();
    let (lock, changes) = match charts::update_lock(&cache, &wanted, &old) {
        Ok(done) => done,
        Err(e) => {
            let _ = writeln!(stderr, "{} {e}", super::colour::error_prefix());
            let _ = writeln!(
                stderr,
                "hint: nothing was written; fix the chart's repository, name or version in component.yaml (or reach the repository) and run `fief chart update` again"
            );
            return Ok(EXIT_INVALID);
        }
    };
    let path = args.repo.join(LOCK_FILE);
    if lock == ChartLock::default() && !path.exists() {
        let _ = writeln!(
            stderr,
            "no component takes a chart from a repository; {LOCK_FILE} not written"
        );
        return Ok(EXIT_OK);
    }
    std::fs::write(&path, lock.to_yaml()).map_err(write_err(&path))?;
    let mut stdout = std::io::stdout().lock();
    for change in &changes {
        let (entry, note) = match change {
            LockChange::Added(e) => (e, "locked"),
            LockChange::Same(e) => (e, "unchanged"),
            LockChange::Changed { entry, was } => {
                let _ = writeln!(
                    stderr,
                    "warning: {}/{} {} was published again: its digest was {was}, now {} (check what changed before committing {LOCK_FILE})",
                    entry.repository, entry.name, entry.version, entry.digest
                );
                (entry, "changed")
            }
        };
        let _ = writeln!(
            stdout,
            "{note:9} {}/{} {} {}",
            entry.repository, entry.name, entry.version, entry.digest
        );
    }
    let _ = writeln!(
        stderr,
        "wrote {} ({} chart{}; cache: {})",
        path.display(),
        lock.charts.len(),
        if lock.charts.len() == 1 { "" } else { "s" },
        cache.dir().display()
    );
    Ok(EXIT_OK)
}
