//! The command line: argument parsing and the `render` / `validate` commands.
//!
//! In: arguments and a repo path. Out: YAML or a summary on stdout, diagnostics on stderr,
//! and an exit code (0 ok, 1 invalid input, 2 usage, 3 cluster or git failure).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::Repo;
use crate::output;
use crate::render::{self, TenantRender};
use crate::snapshot::{Snapshot, SnapshotError};

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: invalid input (or, for `diff`, differences found).
pub const EXIT_INVALID: u8 = 1;
/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: cluster or git failure.
pub const EXIT_EXTERNAL: u8 = 3;

/// fief: GitOps for multi-tenant Kubernetes, one tenant at a time.
#[derive(Debug, Parser)]
#[command(name = "fief", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render tenants to Kubernetes objects (no cluster needed).
    Render(RenderArgs),
    /// Render and validate tenants; print a summary per tenant (no cluster needed).
    Validate(ValidateArgs),
    /// One-shot sync: server-side apply every tenant, record inventories, prune safely.
    Apply(ApplyArgs),
    /// Show what `apply` would change (server-side dry-run); exit 1 when anything differs.
    Diff(DiffArgs),
    /// Run the in-cluster reconciler: fetch git, sync changed tenants, repair drift.
    Agent(Box<AgentArgs>),
    /// Print every tenant's status from its inventory in the cluster.
    Status(StatusArgs),
}

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
    /// File holding an https token for git.
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
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Run without a Lease (only one replica may run).
    #[arg(long)]
    pub no_leader_election: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long, default_value = "fief-system")]
    pub lease_namespace: String,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

/// Log format of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// `fief status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only these tenants.
    #[arg(long = "tenant", value_name = "NAME")]
    pub tenants: Vec<String>,
    /// Namespace of the inventories.
    #[arg(long, default_value = "fief-system")]
    pub namespace: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `30s`, `5m`, `1h`, `250ms` or plain seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 30s, 5m or 1h"))?;
    match unit {
        "ms" => Ok(std::time::Duration::from_millis(n)),
        "s" => Ok(std::time::Duration::from_secs(n)),
        "m" => Ok(std::time::Duration::from_secs(n * 60)),
        "h" => Ok(std::time::Duration::from_secs(n * 3600)),
        _ => Err(format!(
            "`{text}`: unknown unit `{unit}` (use ms, s, m or h)"
        )),
    }
}

/// Which cluster.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Client-side limit on API requests per second (429 answers are retried with backoff).
    #[arg(long, default_value_t = 500)]
    pub api_qps: u32,
}

/// `fief apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Repo and tenants.
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Only tenants whose spec.cluster is this.
    #[arg(long = "cluster", default_value = "default", value_name = "NAME")]
    pub cluster_name: String,
    /// Tenants synced at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Prune even when more would be deleted than fief.yaml's pruneGuard allows.
    #[arg(long)]
    pub allow_mass_prune: bool,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// `fief diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Repo and tenants.
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Colour the diff: auto (when stdout is a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Colour::Auto)]
    pub color: Colour,
}

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Colour {
    /// When stdout is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Which tenants of which repo.
#[derive(Debug, Args)]
pub struct RepoArgs {
    /// Path to the tenants repo.
    pub repo: PathBuf,
    /// Only these tenants (repeatable); default all.
    #[arg(long = "tenant", value_name = "NAME")]
    pub tenants: Vec<String>,
}

/// `fief render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Repo and tenants.
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Write `DIR/<tenant>/<namespace or _cluster>/<kind>.<name>.yaml` instead of stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print Secrets' values instead of `<redacted>`.
    #[arg(long)]
    pub show_secrets: bool,
}

/// `fief validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Repo and tenants.
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// For scripts.
    Json,
}

/// Failures of a command that are not diagnostics of the repo.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
    /// The repo could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// Output could not be written.
    #[error("{path}: cannot write: {source}")]
    Write {
        /// The file or stream.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An object could not be serialized.
    #[error("cannot serialize output: {0}")]
    Serialize(String),
    /// The cluster could not be reached or used.
    #[error(transparent)]
    Cluster(Box<crate::cluster::ClusterError>),
    /// fief.yaml is invalid, so no tenant can be synced.
    #[error("fief.yaml is invalid; nothing applied")]
    Config,
}

impl From<crate::cluster::ClusterError> for CliError {
    fn from(e: crate::cluster::ClusterError) -> Self {
        CliError::Cluster(Box::new(e))
    }
}

impl CliError {
    /// The exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Snapshot(SnapshotError::Root { .. }) => EXIT_USAGE,
            CliError::Cluster(_) => EXIT_EXTERNAL,
            _ => EXIT_INVALID,
        }
    }
}

/// Run a parsed command; returns the exit code.
pub fn run(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Command::Render(args) => render_cmd(&args),
        Command::Validate(args) => validate_cmd(&args),
        Command::Apply(args) => crate::cli_cluster::apply_cmd(&args),
        Command::Diff(args) => crate::cli_cluster::diff_cmd(&args),
        Command::Agent(args) => crate::cli_cluster::agent_cmd(&args),
        Command::Status(args) => crate::cli_cluster::status_cmd(&args),
    }
}

/// Read, parse and render the repo; unknown `--tenant` names are a usage error.
pub fn render_repo(args: &RepoArgs) -> Result<Vec<TenantRender>, CliError> {
    load_and_render(args).map(|(_, renders)| renders)
}

/// Like [`render_repo`], also returning the parsed repo.
pub fn load_and_render(args: &RepoArgs) -> Result<(Repo, Vec<TenantRender>), CliError> {
    let snapshot = Arc::new(Snapshot::read_dir(&args.repo)?);
    let repo = Repo::load(snapshot);
    let unknown: Vec<&String> = args
        .tenants
        .iter()
        .filter(|t| !repo.tenants.contains_key(*t))
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        return Err(CliError::Usage(format!(
            "no tenant named {} in {}/tenants/ (known: {})",
            names.join(", "),
            args.repo.display(),
            repo.tenants.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let renders = render::render_all(&repo, &args.tenants);
    Ok((repo, renders))
}

/// Print every diagnostic on stderr; whether there were any.
pub fn report_errors(renders: &[TenantRender]) -> bool {
    let mut stderr = std::io::stderr().lock();
    let mut any = false;
    for r in renders {
        for d in &r.errors {
            any = true;
            let _ = writeln!(stderr, "error: {d}");
        }
    }
    any
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn render_cmd(args: &RenderArgs) -> Result<u8, CliError> {
    let renders = render_repo(&args.repo)?;
    match &args.out {
        None => {
            let text = output::stream(&renders, args.show_secrets).map_err(CliError::Serialize)?;
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .map_err(write_err(Path::new("<stdout>")))?;
        }
        Some(dir) => {
            for r in renders.iter().filter(|r| r.is_ok()) {
                for o in &r.objects {
                    let path = dir.join(output::out_path(&r.tenant, o));
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(write_err(parent))?;
                    }
                    let text = output::document(&r.tenant, o, args.show_secrets)
                        .map_err(CliError::Serialize)?;
                    std::fs::write(&path, text).map_err(write_err(&path))?;
                }
            }
        }
    }
    Ok(if report_errors(&renders) {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

fn validate_cmd(args: &ValidateArgs) -> Result<u8, CliError> {
    let renders = render_repo(&args.repo)?;
    let failed = report_errors(&renders);
    let mut out = String::new();
    match args.output {
        Format::Json => {
            let summary: Vec<_> = renders
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "tenant": r.tenant,
                        "ok": r.is_ok(),
                        "state": r.state,
                        "namespaces": r.namespaces.values().collect::<Vec<_>>(),
                        "objects": r.objects.len(),
                        "errors": r.errors.iter().map(|d| serde_json::json!({
                            "file": d.file, "line": d.line, "message": d.problem.to_string(),
                            "hint": d.problem.hint(),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            out.push_str(&serde_json::to_string_pretty(&summary).unwrap_or_default());
            out.push('\n');
        }
        Format::Text => {
            for r in &renders {
                if r.is_ok() {
                    out.push_str(&format!(
                        "{}: ok ({} namespaces, {} objects)\n",
                        r.tenant,
                        r.namespaces.len(),
                        r.objects.len()
                    ));
                } else {
                    out.push_str(&format!(
                        "{}: INVALID ({} errors)\n",
                        r.tenant,
                        r.errors.len()
                    ));
                }
            }
            let bad = renders.iter().filter(|r| !r.is_ok()).count();
            out.push_str(&format!(
                "{} tenants, {} valid, {} invalid\n",
                renders.len(),
                renders.len() - bad,
                bad
            ));
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(write_err(Path::new("<stdout>")))?;
    Ok(if failed { EXIT_INVALID } else { EXIT_OK })
}
