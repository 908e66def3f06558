//! The arguments of `fief agent` (clap derive).
//!
//! In: `argv`. Out: [`AgentArgs`]. Pure.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{ClusterArgs, parse_duration};

/// `fief agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Git URL of the tenants repo (https, ssh, git, file or a local path).
    #[arg(long)]
    pub repo: String,
    /// Branch to follow.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// Only tenants whose spec.cluster is this.
    #[arg(long, default_value = "default")]
    pub cluster: String,
    /// Fetch interval (e.g. 30s, 5m); up to 10 % jitter is added.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub interval: std::time::Duration,
    /// Where the git clone is cached.
    #[arg(long, default_value = "/var/cache/fief")]
    pub cache_dir: PathBuf,
    /// Address for the webhook, /healthz, /readyz and /metrics.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub listen: std::net::SocketAddr,
    /// File holding the push webhook's HMAC secret (without it the webhook is off).
    #[arg(long, value_name = "FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// age identity file that decrypts the repo's SOPS secrets (must exist when given).
    #[arg(long, value_name = "FILE")]
    pub age_key_file: Option<PathBuf>,
    /// File holding an https token for git (must exist when given).
    #[arg(long, value_name = "FILE")]
    pub git_token_file: Option<PathBuf>,
    /// Environment variable holding an https token for git.
    #[arg(long, value_name = "VAR")]
    pub git_token_env: Option<String>,
    /// SSH private key for git.
    #[arg(long, value_name = "FILE")]
    pub ssh_key_file: Option<PathBuf>,
    /// known_hosts file the git server's SSH host key is checked against.
    #[arg(long, value_name = "FILE")]
    pub known_hosts_file: Option<PathBuf>,
    /// Tenants synced at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Tenants of a shared change's rollout wave applied but not yet healthy at once (the
    /// rest of the wave waits its turn); the first sync, restarts and independent changes
    /// are never held.
    #[arg(long, default_value_t = 20)]
    pub max_in_flight: usize,
    /// How long a component without `health.timeout` may take to become healthy before its
    /// tenant is `Stalled`.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub health_timeout: std::time::Duration,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Run without a Lease (only one replica may run).
    #[arg(long)]
    pub no_leader_election: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long, default_value = "fief-system")]
    pub lease_namespace: String,
    /// Split the tenants into N shards (each a Lease in --lease-namespace) so every replica
    /// works on a fair share; replicas take over a stopped replica's shards. Every replica
    /// must run with the same N. 0 or 1: one leader does all the work.
    #[arg(
        long,
        default_value_t = 0,
        value_name = "N",
        conflicts_with = "no_leader_election"
    )]
    pub shards: u32,
    /// Full resync period: every tenant is compared with a fresh LIST (10 % jitter added).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub resync_interval: std::time::Duration,
    /// How long a git clone or fetch may take before it is reported as failed (it goes on in
    /// the background; syncs, drift repair and shutdown never wait for it).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub git_timeout: std::time::Duration,
    /// Serve a read-only web view (overview, tenant table, tenant pages) under /ui/ on
    /// --listen.
    #[arg(long)]
    pub web: bool,
    /// File holding a token the web view requires (`Authorization: Bearer`, or its login
    /// form); without it the view is open to whoever reaches the port.
    #[arg(long, value_name = "FILE", requires = "web")]
    pub web_token_file: Option<PathBuf>,
    /// How /metrics keeps tenant sync durations: `tenant`, a histogram per tenant (label
    /// `tenant`), or `fleet`, one histogram of every tenant's syncs without the label, for
    /// fleets whose per-tenant series would make each scrape megabytes.
    #[arg(long, value_enum, default_value_t = SyncDurations::Tenant)]
    pub sync_durations: SyncDurations,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

/// How the agent's /metrics keeps tenant sync durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SyncDurations {
    /// A histogram per tenant.
    Tenant,
    /// One histogram for the whole fleet.
    Fleet,
}

/// Log format of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}
