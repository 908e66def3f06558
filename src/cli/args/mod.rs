//! The command line's arguments (clap derive): every command, flag and its help text.
//!
//! In: `argv`. Out: a parsed [`Cli`]. Pure.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod adopt;
mod agent;
mod chart;
mod examples;
mod import;
mod install;
mod notify;
mod retire;
mod spares;
mod tenant;

pub use adopt::AdoptMode;
pub use agent::{AgentArgs, LogFormat, SyncDurations};
pub use chart::{ChartArgs, ChartCommand, ChartUpdateArgs};
pub use import::ImportArgs;
pub use install::{CheckArgs, InitArgs, InstallArgs, SchemasArgs, UninstallArgs};
pub use notify::{NotifyArgs, NotifyCommand, NotifyTestArgs};
pub use retire::RetireArgs;
pub use spares::{AllocateArgs, GitArgs, SparesArgs};
pub use tenant::OneTenant;
use tenant::{environments, tenants};

/// `fief --version`: the crate version and the git commit it was built from.
pub const VERSION: &str = crate::core::VERSION;

/// fief: GitOps for multi-tenant Kubernetes, one tenant at a time.
#[derive(Debug, Parser)]
#[command(name = "fief", version = VERSION, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// Colour the output: auto (only on a terminal, and not when NO_COLOR is set), always,
    /// never.
    #[arg(long, global = true, value_enum, default_value_t = Colour::Auto, value_name = "WHEN")]
    pub color: Colour,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, shown under `fief --help` and in the CLI reference.
pub const EXIT_CODES: &str = "Exit codes:
  0  success
  1  invalid input (for `diff`: differences found; for `reconcile`: a tenant failed)
  2  usage error (unknown flag or tenant, missing repo, missing credential file, no fief in
     the agent namespace)
  3  cluster or git failure (for `reconcile`: no answer within --timeout)
  4  `apply`, `reconcile`: everything applied, but a prune git asks for was held (see the
     message)
  5  `apply --wait`, `install`, `reconcile`: applied, but not healthy or rolled out in time";

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a new tenants repo that validates and renders at once: fief.yaml, dev and prod
    /// environments, one component with a values schema, one tenant, a .sops.yaml to fill in,
    /// a CI workflow and the JSON Schemas editors use.
    #[command(after_help = examples::INIT)]
    Init(InitArgs),
    /// Write the JSON Schemas of the tenants-repo files (fief.yaml, tenant, component.yaml,
    /// environment) for editors; `fief init` writes them too.
    #[command(after_help = examples::SCHEMAS)]
    Schemas(SchemasArgs),
    /// Render tenants to Kubernetes objects (no cluster needed).
    #[command(after_help = examples::RENDER)]
    Render(RenderArgs),
    /// Render and validate tenants; print a summary per tenant (no cluster needed).
    #[command(after_help = examples::VALIDATE)]
    Validate(ValidateArgs),
    /// One-shot sync: server-side apply every tenant, record inventories, prune safely.
    #[command(after_help = examples::APPLY)]
    Apply(ApplyArgs),
    /// Show what `apply` would change (server-side dry-run); exit 1 when anything differs.
    #[command(after_help = examples::DIFF)]
    Diff(DiffArgs),
    /// Run the in-cluster reconciler: fetch git, sync changed tenants, repair drift.
    #[command(after_help = examples::AGENT)]
    Agent(Box<AgentArgs>),
    /// Print every tenant's status from its inventory in the cluster.
    #[command(after_help = examples::STATUS)]
    Status(StatusArgs),
    /// Set a component's version or git ref in chosen tenant files (a one-line change each,
    /// comments kept), print the diff, and optionally commit it: the fleet deploy tool, GitOps
    /// style.
    #[command(after_help = examples::BUMP)]
    Bump(BumpArgs),
    /// Top up the pool of spare tenants (fief.yaml `spares:`) in `tenants/`: new tenant files
    /// with random names, optionally committed and pushed. The agent applies them like any
    /// tenant.
    #[command(after_help = examples::SPARES)]
    Spares(SparesArgs),
    /// Turn one Ready spare tenant into a customer's tenant (owner, labels, values) and refill
    /// the pool, in one commit: the agent's next sync is a small change, not a cold start.
    #[command(after_help = examples::ALLOCATE)]
    Allocate(AllocateArgs),
    /// Write a tenants repo from Flux (HelmRelease, Kustomization and their sources) and Argo
    /// CD (Application, ApplicationSet) objects in YAML files: one component per chart or
    /// kustomization, one tenant per customer namespace, values split into layers, and a
    /// report (IMPORT-REPORT.md) of what could not be mapped and what to do. Secret data is
    /// never copied.
    Import(ImportArgs),
    /// Charts components take from Helm repositories and OCI registries: `fief chart update`
    /// fetches them and writes fief.lock with their digests.
    Chart(ChartArgs),
    /// Print a shell completion script (`fief completion bash > /etc/bash_completion.d/fief`).
    #[command(after_help = examples::COMPLETION)]
    Completion(CompletionArgs),
    /// Print the man page (roff) of fief and its commands.
    #[command(after_help = examples::MAN)]
    Man,
    /// Install the agent in a cluster: namespace, Secrets from the credential files, RBAC, the
    /// admission policy, Deployment and Service, server-side applied; then wait for its
    /// rollout. `--export` prints the YAML instead (Secrets named, never printed).
    #[command(after_help = examples::INSTALL)]
    Install(Box<InstallArgs>),
    /// Check a cluster before `fief install`: its version, the admission-policy API, and the
    /// current user's rights to create what install writes. Exit 0 all pass, 1 one fails.
    #[command(after_help = examples::CHECK)]
    Check(CheckArgs),
    /// Remove the agent from a cluster; its namespace, the inventories and every tenant object
    /// stay (tenants go on running, unmanaged).
    #[command(after_help = examples::UNINSTALL)]
    Uninstall(UninstallArgs),
    /// Print fief's version, the git commit it was built from and the tenants-repo format
    /// (the `apiVersion` its files must carry) it reads.
    #[command(after_help = examples::VERSION)]
    Version(VersionArgs),
    /// Suspend a tenant: `apply` and the agent leave it alone (no apply, drift repair or
    /// prune) until `fief resume`. Recorded on its inventory in the cluster.
    #[command(after_help = examples::SUSPEND)]
    Suspend(SuspendArgs),
    /// Resume a suspended tenant; the agent syncs it at once.
    #[command(after_help = examples::RESUME)]
    Resume(ResumeArgs),
    /// Ask the running agent to fetch git and sync now (a tenant or all), and wait until each
    /// tenant is Ready: exit 0 all Ready, 1 a tenant failed, 3 no answer within --timeout, 4
    /// a prune is held, 5 not healthy within --timeout (each tenant's reason printed).
    #[command(after_help = examples::RECONCILE)]
    Reconcile(ReconcileArgs),
    /// Finish moving a tenant to another cluster: once it is Ready there at this repo's
    /// inputs, delete what it left on the old cluster (its recorded objects, then its
    /// inventory). Refuses, deleting nothing, until then.
    #[command(after_help = examples::RETIRE)]
    Retire(RetireArgs),
    /// Notification channels: `fief notify test CHANNEL` sends one test message to a channel
    /// of fief.yaml (or a tenant's, with --tenant), its URL read the way the agent reads it,
    /// and prints whether the receiver took it (never the URL).
    Notify(NotifyArgs),
}

/// `fief version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// How a day-2 command finds the agent's namespace.
#[derive(Debug, Clone, Args)]
pub struct AgentNamespaceArgs {
    /// The agent's namespace, where the inventories are (default: `agentNamespace` of
    /// --repo's fief.yaml, else of ./fief.yaml, else fief-system; never the kubeconfig
    /// context's namespace).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// A tenants repo whose fief.yaml names the agent's namespace (`agentNamespace`), used
    /// unless -n names one.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
}

/// `fief suspend`.
#[derive(Debug, Args)]
pub struct SuspendArgs {
    /// The tenant.
    #[command(flatten)]
    pub tenant: OneTenant,
    /// Why (recorded with who and when; shown by `fief status`).
    #[arg(long)]
    pub reason: Option<String>,
    /// Where the agent runs.
    #[command(flatten)]
    pub agent_ns: AgentNamespaceArgs,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `fief resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The tenant.
    #[command(flatten)]
    pub tenant: OneTenant,
    /// Where the agent runs.
    #[command(flatten)]
    pub agent_ns: AgentNamespaceArgs,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `fief reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Only this tenant (default: every tenant).
    #[arg(short = 't', long, value_name = "NAME", add = tenants())]
    pub tenant: Option<String>,
    /// How long to wait, in all, for the agent's answer and then for the tenants to become
    /// Ready (a tenant still waiting for health then exits 5).
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Release the tenant's held mass prune for this sync (needs --tenant): recorded on its
    /// inventory with who and when, as `apply --allow-mass-prune` releases it for the CLI.
    #[arg(long, requires = "tenant")]
    pub allow_mass_prune: bool,
    /// Where the agent runs.
    #[command(flatten)]
    pub agent_ns: AgentNamespaceArgs,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `fief bump`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["tenants", "selector", "all", "percent"])))]
#[command(group(clap::ArgGroup::new("what").required(true).args(["version", "git_ref"])))]
pub struct BumpArgs {
    /// Path to the tenants repo (a checkout).
    pub repo: PathBuf,
    /// The component to bump.
    pub component: String,
    /// The version to set.
    #[arg(long)]
    pub version: Option<String>,
    /// The git ref (tag, branch or commit of the tenants repo) to pin the component to.
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,
    /// These tenants (repeatable).
    #[arg(short = 't', long = "tenant", value_name = "NAME", add = tenants())]
    pub tenants: Vec<String>,
    /// The tenants whose labels match (`tier=free`, `tier!=free`, `region`, `!beta`;
    /// comma-separated, all must hold), among those that use the component.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Every tenant that uses the component.
    #[arg(long)]
    pub all: bool,
    /// This share (1-100) of the tenants that use the component, chosen stably: raising it
    /// only adds tenants.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub percent: Option<u8>,
    /// Commit the changed tenant files (only those) with a message naming the tenants.
    #[arg(long)]
    pub commit: bool,
}

/// `fief completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `fief status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Only these tenants.
    #[arg(short = 't', long = "tenant", value_name = "NAME", add = tenants())]
    pub tenants: Vec<String>,
    /// Only the tenants whose labels match (`tier=free`, `tier!=free`, `region`, `!beta`),
    /// read from the tenant files of --repo (default: the current folder).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Where the agent runs.
    #[command(flatten)]
    pub agent_ns: AgentNamespaceArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Only tenants that are not `Ready` (for an incident: what is broken).
    #[arg(long)]
    pub not_ready: bool,
    /// The agent's HTTP address for its view (`http://HOST:PORT`); default: through the API
    /// server's proxy to the Service `fief-agent` in the agent's namespace.
    #[arg(long, value_name = "URL")]
    pub agent: Option<String>,
    /// Cluster connection.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `30s`, `5m`, `1h`, `250ms` or plain seconds (the one parser, in fief-core).
pub use crate::core::model::parse_duration;

/// Which cluster.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Client-side limit on API requests per second (429 answers are retried with backoff).
    #[arg(long, default_value_t = 1000)]
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
    /// Tenants synced at once (each with up to 8 requests in flight).
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Release held mass prunes: prune even when more would be deleted than fief.yaml's
    /// pruneGuard allows. Each tenant whose prune this releases records who and when.
    #[arg(long)]
    pub allow_mass_prune: bool,
    /// Only these environments (repeatable): apply their objects and prune only in their
    /// namespaces. Objects of the other environments (and cluster-scoped objects other than
    /// the chosen namespaces) are neither applied nor pruned, and stay in the inventory.
    #[arg(long = "env", value_name = "ENV", add = environments())]
    pub envs: Vec<String>,
    /// Output format of the summary.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// After applying, wait until each tenant's objects are healthy (kstatus rules) or the
    /// timeout passes; exit 5 when some are not. Components held for their dependencies
    /// (`dependsOn`), and objects held for an ordered phase before them (a `pre` Job), are
    /// applied as those become healthy.
    #[arg(long)]
    pub wait: bool,
    /// With `--wait`: how long to wait for a component whose component.yaml sets no
    /// `health.timeout`.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Take objects that already exist and no inventory records (made by Flux, Argo CD, Helm
    /// or kubectl), with no delete and no restart: `--adopt` takes those equal to the render
    /// (a tenant with one that differs is not applied), `--adopt=force` takes every one and
    /// sets it to the render. Another fief tenant's object is never taken. Run
    /// `fief diff --adopt` first.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "equal")]
    pub adopt: Option<AdoptMode>,
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
    /// Only tenants whose spec.cluster is this (as `apply`).
    #[arg(long = "cluster", default_value = "default", value_name = "NAME")]
    pub cluster_name: String,
    /// No cluster: compare the repo as it is at this git revision of its checkout (branch,
    /// tag, commit, `origin/main`) with the new one (`--to`, default the files in REPO).
    #[arg(long, value_name = "REF")]
    pub from: Option<String>,
    /// With `--from`: the new revision (default: the files as they are in REPO).
    #[arg(long, value_name = "REF", requires = "from")]
    pub to: Option<String>,
    /// Only these environments (repeatable): their objects, and against the cluster the
    /// prunes `apply --env` would do in their namespaces; other environments are not shown.
    #[arg(long = "env", value_name = "ENV", add = environments())]
    pub envs: Vec<String>,
    /// Output with `--from`: a summary then unified diffs (text), JSON, or Markdown for a
    /// pull-request comment.
    #[arg(short = 'o', long, value_enum, default_value_t = DiffFormat::Text)]
    pub output: DiffFormat,
    /// Show what `fief apply --adopt` would take: objects that exist and no inventory
    /// records, each equal to the render (listed, not a difference) or differing (its diff).
    #[arg(long, conflicts_with = "from")]
    pub adopt: bool,
}

/// Output of `fief diff --from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Summary, then unified diffs.
    Text,
    /// One JSON document.
    Json,
    /// Markdown for a pull-request comment.
    Markdown,
}

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Colour {
    /// When the stream is a terminal, NO_COLOR is unset or empty and TERM is not `dumb`.
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
    #[arg(short = 't', long = "tenant", value_name = "NAME", add = tenants())]
    pub tenants: Vec<String>,
    /// Only the tenants whose labels match (`tier=free`, `tier!=free`, `region`, `!beta`;
    /// comma-separated, all must hold), as if each were given with --tenant.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// age identity file that decrypts the repo's SOPS secrets (default: $SOPS_AGE_KEY_FILE).
    #[arg(long, value_name = "FILE")]
    pub age_key_file: Option<PathBuf>,
}

/// `fief render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Repo and tenants.
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Write `DIR/<tenant>/<namespace or _cluster>/<kind>.<name>.yaml` instead of stdout.
    ///
    /// DIR must be new, empty, or written by an earlier `render --out` (its list of files,
    /// `DIR/.fief-render`). The tenants are rendered a batch at a time into
    /// `DIR/.fief-render.staging/`; once every tenant rendered cleanly, the list names both
    /// renders' files, the files of the last list no longer rendered are deleted, the new ones
    /// moved into place and the list replaced (so an interrupted move leaves no file the next
    /// `render --out` does not know). A failed tenant, or an object whose path would leave DIR,
    /// leaves DIR as it was. Files fief did not write are never touched.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print Secrets' values instead of `<redacted>` (decrypts: needs the age key).
    #[arg(long)]
    pub show_secrets: bool,
    /// Only these environments (repeatable): the others are not rendered.
    #[arg(long = "env", value_name = "ENV", add = environments())]
    pub envs: Vec<String>,
    /// Format of the stream on stdout: a multi-document YAML stream, or one JSON `v1/List`.
    #[arg(short = 'o', long, value_enum, default_value_t = RenderFormat::Yaml, conflicts_with = "out")]
    pub output: RenderFormat,
    /// Print each component's values per environment instead of the objects, key by key,
    /// with the file and line of the layer that set it (`-o json`: one JSON array).
    #[arg(long, conflicts_with_all = ["out", "show_secrets"])]
    pub values: bool,
}

/// Output format of `fief render` on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    /// A multi-document YAML stream with `# Source:` comments.
    Yaml,
    /// One JSON object `{"apiVersion": "v1", "kind": "List", "items": [...]}`, as `kubectl get -o json`.
    Json,
}

/// `fief validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Repo and tenants.
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Only these environments (repeatable): the others are not rendered or checked.
    #[arg(long = "env", value_name = "ENV", add = environments())]
    pub envs: Vec<String>,
    /// Output format of the summary.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
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
