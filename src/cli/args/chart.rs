//! The arguments of `fief chart` (clap derive).
//!
//! In: `argv`. Out: [`ChartArgs`]. Pure.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The examples under `fief chart --help` and `fief chart update --help`.
const EXAMPLES: &str = "Examples:
  fief chart update .                       # lock the charts of ./components/*/component.yaml
  FIEF_CHART_CACHE=/var/cache/fief-charts fief chart update repo/
  git add fief.lock && git commit -m 'Lock metrics-server 3.12.2'";

/// `fief chart`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ChartArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ChartCommand,
}

/// `fief chart` subcommands.
#[derive(Debug, Subcommand)]
pub enum ChartCommand {
    /// Fetch every chart a component takes from a Helm repository or an OCI registry (at its
    /// exact `version`) into the chart cache and write `fief.lock` with the digest of each
    /// archive, as `helm dependency update` writes Chart.lock. Commit fief.lock: every load
    /// checks it, and a chart without an entry, at another version or with another digest is
    /// an error. Says which digests changed.
    #[command(after_help = EXAMPLES)]
    Update(ChartUpdateArgs),
}

/// `fief chart update`.
#[derive(Debug, Args)]
pub struct ChartUpdateArgs {
    /// Path to the tenants repo (a checkout); fief.lock is written at its root.
    pub repo: PathBuf,
}
