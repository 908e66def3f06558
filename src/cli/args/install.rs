//! The arguments of the commands that set fief up: `install`, `check`, `uninstall`, `init` and
//! `schemas`.
//!
//! In: `argv` (through [`super::Cli`]). Out: the parsed argument structs. Pure.

use std::path::PathBuf;

use clap::Args;

use super::{ClusterArgs, parse_duration};

/// `fief install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The agent's namespace (its Lease, Secrets and the tenants' inventories live there).
    #[arg(short = 'n', long, default_value = "fief-system")]
    pub namespace: String,
    /// The agent's image (build it with `tools/build-image.sh fief` or the Dockerfile).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The tenants repo's git URL (https://..., ssh://git@host/org/repo.git or
    /// git@host:org/repo.git).
    #[arg(long, value_name = "URL")]
    pub repo: String,
    /// The branch to follow.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// How often the agent fetches (besides the push webhook).
    #[arg(long, default_value = "30s")]
    pub interval: String,
    /// Replicas of the agent (one leads, the others stand by; with --shards all work).
    #[arg(long, default_value_t = 2)]
    pub replicas: u32,
    /// Split the tenants into N shards so every replica works on a fair share (`fief agent
    /// --shards`); 0: one leader does all the work.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub shards: u32,
    /// How the agent's /metrics keeps tenant sync durations (`fief agent --sync-durations`).
    #[arg(long, value_enum, default_value_t = super::SyncDurations::Tenant)]
    pub sync_durations: super::SyncDurations,
    /// The `spec.cluster` of the tenants this agent owns.
    #[arg(long = "cluster-name", default_value = "default", value_name = "NAME")]
    pub cluster_name: String,
    /// An https token for the tenants repo (Secret fief-git, key token).
    #[arg(long, value_name = "FILE", conflicts_with = "ssh_key_file")]
    pub git_token_file: Option<PathBuf>,
    /// An SSH private key for the tenants repo (Secret fief-git, key ssh-key); needs
    /// --known-hosts-file.
    #[arg(long, value_name = "FILE")]
    pub ssh_key_file: Option<PathBuf>,
    /// known_hosts vouching for the git host's key (Secret fief-git, key known_hosts).
    #[arg(long, value_name = "FILE")]
    pub known_hosts_file: Option<PathBuf>,
    /// The push webhook's secret (Secret fief-webhook); without it the webhook is off.
    #[arg(long, value_name = "FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// age identities that decrypt the repo's SOPS files (Secret fief-age-key).
    #[arg(long, value_name = "FILE")]
    pub age_key_file: Option<PathBuf>,
    /// Helm's repository config with the credentials of private chart repositories, as `helm
    /// repo add --username --password` writes it (Secret fief-helm, key repositories.yaml).
    #[arg(long, value_name = "FILE")]
    pub helm_repositories_file: Option<PathBuf>,
    /// Helm's registry config with the logins of private OCI registries, as `helm registry
    /// login` writes it (Secret fief-helm, key config.json).
    #[arg(long, value_name = "FILE")]
    pub helm_registry_config_file: Option<PathBuf>,
    /// The agent container's CPU request (a Kubernetes quantity; `none` leaves it out).
    #[arg(long, default_value = "100m", value_name = "QUANTITY")]
    pub cpu_request: String,
    /// The agent container's memory request (`none` leaves it out).
    #[arg(long, default_value = "128Mi", value_name = "QUANTITY")]
    pub memory_request: String,
    /// The agent container's CPU limit (`none` leaves it out).
    #[arg(long, default_value = "1", value_name = "QUANTITY")]
    pub cpu_limit: String,
    /// The agent container's memory limit (`none` leaves it out).
    #[arg(long, default_value = "512Mi", value_name = "QUANTITY")]
    pub memory_limit: String,
    /// Also a NetworkPolicy admitting ingress to the agent's Pods only on port 8080 (webhook,
    /// health, metrics); egress stays open.
    #[arg(long)]
    pub network_policy: bool,
    /// Admit port 8080 only from namespaces with these labels (KEY=VALUE[,KEY=VALUE]; repeat
    /// for more namespaces). Without it, from anywhere.
    #[arg(long, value_name = "LABELS", requires = "network_policy")]
    pub network_policy_from_namespace: Vec<String>,
    /// Also a prometheus-operator ServiceMonitor scraping the leader's /metrics (needs the
    /// monitoring.coreos.com CRDs).
    #[arg(long)]
    pub service_monitor: bool,
    /// How often Prometheus scrapes (a Prometheus duration: 30s, 1m).
    #[arg(
        long,
        default_value = "30s",
        value_name = "DURATION",
        requires = "service_monitor"
    )]
    pub service_monitor_interval: String,
    /// A label of the ServiceMonitor (KEY=VALUE; repeat), for your Prometheus to select it by.
    #[arg(long, value_name = "KEY=VALUE", requires = "service_monitor")]
    pub service_monitor_label: Vec<String>,
    /// Also a prometheus-operator PrometheusRule with the agent's alerts (needs the
    /// monitoring.coreos.com CRDs).
    #[arg(long)]
    pub prometheus_rule: bool,
    /// A label of the PrometheusRule (KEY=VALUE; repeat), for your Prometheus to select it by.
    #[arg(long, value_name = "KEY=VALUE", requires = "prometheus_rule")]
    pub prometheus_rule_label: Vec<String>,
    /// How long a tenant may stay failed before FiefTenantNotReady fires (a Prometheus
    /// duration).
    #[arg(
        long,
        default_value = "15m",
        value_name = "DURATION",
        requires = "prometheus_rule"
    )]
    pub alert_tenant_not_ready_for: String,
    /// How long without a successful fetch before FiefRepoNotFetched fires (whole seconds).
    #[arg(
        long,
        default_value = "10m",
        value_name = "DURATION",
        requires = "prometheus_rule",
        value_parser = parse_duration
    )]
    pub alert_fetch_stale: std::time::Duration,
    /// How long every git fetch may fail before FiefGitFetchFailing fires (a Prometheus duration).
    #[arg(
        long,
        default_value = "10m",
        value_name = "DURATION",
        requires = "prometheus_rule"
    )]
    pub alert_fetch_failing_for: String,
    /// How long tenants may stay stalled on health before FiefTenantsStalled fires (a Prometheus duration).
    #[arg(
        long,
        default_value = "15m",
        value_name = "DURATION",
        requires = "prometheus_rule"
    )]
    pub alert_tenant_stalled_for: String,
    /// How long a rollout may stay halted before FiefRolloutHalted fires (a Prometheus duration).
    #[arg(
        long,
        default_value = "15m",
        value_name = "DURATION",
        requires = "prometheus_rule"
    )]
    pub alert_rollout_halted_for: String,
    /// How long prunes may stay held before FiefPruneHeld fires (a Prometheus duration).
    #[arg(
        long,
        default_value = "30m",
        value_name = "DURATION",
        requires = "prometheus_rule"
    )]
    pub alert_prune_held_for: String,
    /// Also a ConfigMap with the agent's Grafana dashboard, labelled `grafana_dashboard: "1"`
    /// for Grafana's dashboard sidecar.
    #[arg(long)]
    pub grafana_dashboard: bool,
    /// The namespace of the dashboard ConfigMap, when your Grafana sidecar watches only its
    /// own (default: the agent's).
    #[arg(long, value_name = "NS", requires = "grafana_dashboard")]
    pub grafana_dashboard_namespace: Option<String>,
    /// A label of the dashboard ConfigMap (KEY=VALUE; repeat), e.g. what your sidecar selects
    /// on; `grafana_dashboard=VALUE` replaces the default `1`.
    #[arg(long, value_name = "KEY=VALUE", requires = "grafana_dashboard")]
    pub grafana_dashboard_label: Vec<String>,
    /// Serve the agent's read-only web view under /ui/ on port 8080 (reach it with
    /// `kubectl port-forward svc/fief-agent 8080`).
    #[arg(long)]
    pub web: bool,
    /// A token the web view asks for (Secret fief-web, key token); without it the view is open
    /// to whoever reaches port 8080.
    #[arg(long, value_name = "FILE", requires = "web")]
    pub web_token_file: Option<PathBuf>,
    /// Print the manifests (without Secret values) instead of applying them.
    #[arg(long)]
    pub export: bool,
    /// Do not wait for the agent's rollout.
    #[arg(long)]
    pub no_wait: bool,
    /// How long to wait for the rollout.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `fief check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The namespace `fief install` would use.
    #[arg(short = 'n', long, default_value = "fief-system")]
    pub namespace: String,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `fief uninstall`.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// The agent's namespace.
    #[arg(short = 'n', long, default_value = "fief-system")]
    pub namespace: String,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `fief init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The folder to write the new tenants repo into (created when missing). Files that
    /// already exist there are never overwritten: init stops and names them.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The name of the first tenant (a DNS-1123 label).
    #[arg(short = 't', long, default_value = "example")]
    pub tenant: String,
}

/// `fief schemas`.
#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// The folder to write the JSON Schemas into (created when missing; existing schema files
    /// are replaced).
    #[arg(default_value = ".fief/schemas")]
    pub dir: PathBuf,
}
