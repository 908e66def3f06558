//! The command line: one module per command, the arguments, and the output formats.
//!
//! In: arguments and a repo path (and a cluster, for the cluster commands). Out: YAML, diffs
//! or summaries on stdout, diagnostics on stderr, and an exit code (0 ok, 1 invalid input or
//! differences, 2 usage, 3 cluster or git failure, 4 a held prune, 5 not healthy in time).

mod agent;
mod agent_ns;
mod apply;
mod args;
mod bump;
mod chart;
pub mod colour;
mod compare;
pub mod complete;
mod completion;
mod diff;
mod import;
mod init;
mod install;
mod notify;
pub mod output;
mod reconcile;
mod render;
mod report;
mod retire;
pub mod secrets;
mod selector;
mod spares;
mod status;
mod suspend;
mod validate;
mod values;
mod version;
mod words;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use args::*;

use crate::core::model::Repo;
use crate::core::pipeline;
use crate::core::render::TenantRender;
use crate::core::scope::EnvScope;
use crate::core::snapshot::{Snapshot, SnapshotError};
use crate::kube::Resources;
use crate::kube::counter::RequestCounter;

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: invalid input (or, for `diff`, differences found).
pub const EXIT_INVALID: u8 = 1;
/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: cluster or git failure.
pub const EXIT_EXTERNAL: u8 = 3;
/// Exit code (`apply`, `reconcile`): everything applied, but a prune git asks for was held
/// (mass-prune guard, empty render); the objects that left git still run until a person acts.
pub const EXIT_PRUNE_HELD: u8 = 4;
/// Exit code (`apply --wait`, `reconcile`): applied, but some objects did not become healthy
/// in time.
pub const EXIT_UNHEALTHY: u8 = 5;

/// Failures of a command that are not diagnostics of the repo.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
    /// The repo could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A git revision of the checkout could not be read.
    #[error(transparent)]
    Git(#[from] crate::source::git::GitError),
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
    /// The cluster could not be reached or used. Printed as its one line, without the
    /// client error chain behind it (which repeats it).
    #[error("{0}")]
    Cluster(Box<crate::kube::ClusterError>),
    /// fief.yaml is invalid, so no tenant can be synced.
    #[error("fief.yaml is invalid; nothing applied")]
    Config,
    /// `git push` failed (the commit stands).
    #[error("git push: {0}")]
    Push(String),
}

impl From<crate::kube::ClusterError> for CliError {
    fn from(e: crate::kube::ClusterError) -> Self {
        CliError::Cluster(Box::new(e))
    }
}

impl CliError {
    /// The exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Snapshot(SnapshotError::Root { .. }) => EXIT_USAGE,
            CliError::Cluster(_) => EXIT_EXTERNAL,
            CliError::Git(
                crate::source::git::GitError::NotACheckout { .. }
                | crate::source::git::GitError::NoIdentity { .. }
                | crate::source::git::GitError::BadRevision { .. },
            ) => EXIT_USAGE,
            CliError::Git(_) | CliError::Push(_) => EXIT_EXTERNAL,
            _ => EXIT_INVALID,
        }
    }
}

/// Run a parsed command; returns the exit code.
pub fn run(cli: Cli) -> Result<u8, CliError> {
    colour::set(cli.color);
    match cli.command {
        Command::Init(args) => init::init_cmd(&args),
        Command::Schemas(args) => init::schemas_cmd(&args),
        Command::Render(mut args) => {
            selector::apply_selector(&mut args.repo)?;
            if args.values {
                values::values_cmd(&args)
            } else {
                render::render_cmd(&args)
            }
        }
        Command::Validate(mut args) => {
            selector::apply_selector(&mut args.repo)?;
            validate::validate_cmd(&args)
        }
        Command::Apply(mut args) => {
            selector::apply_selector(&mut args.repo)?;
            apply::apply_cmd(&args)
        }
        Command::Diff(mut args) => {
            selector::apply_selector(&mut args.repo)?;
            diff::diff_cmd(&args)
        }
        Command::Agent(args) => agent::agent_cmd(&args),
        Command::Status(args) => status::status_cmd(&args),
        Command::Bump(args) => bump::bump_cmd(&args),
        Command::Spares(args) => spares::spares_cmd(&args),
        Command::Allocate(args) => spares::allocate_cmd(&args),
        Command::Chart(args) => chart::chart_cmd(&args),
        Command::Import(args) => import::import_cmd(&args),
        Command::Completion(args) => completion::completion_cmd(&args),
        Command::Man => completion::man_cmd(),
        Command::Version(args) => version::version_cmd(&args),
        Command::Install(args) => install::install_cmd(&args),
        Command::Uninstall(args) => install::uninstall_cmd(&args),
        Command::Check(args) => install::check::check_cmd(&args),
        Command::Suspend(args) => suspend::suspend_cmd(&args),
        Command::Resume(args) => suspend::resume_cmd(&args),
        Command::Reconcile(args) => reconcile::reconcile_cmd(&args),
        Command::Retire(args) => retire::retire_cmd(&args),
        Command::Notify(args) => notify::notify_cmd(&args),
    }
}

/// Read, parse and render the repo; unknown `--tenant` names are a usage error. Secrets are
/// decrypted with the configured age key; without one, tenants that read them fail.
pub fn render_repo(args: &RepoArgs) -> Result<Vec<TenantRender>, CliError> {
    load_and_render(args).map(|(_, renders)| renders)
}

/// Like [`render_repo`], also returning the parsed repo.
pub fn load_and_render(args: &RepoArgs) -> Result<(Repo, Vec<TenantRender>), CliError> {
    load_and_render_with(args, secrets::WithoutKey::Fail)
}

/// Like [`load_and_render`], choosing what happens to secrets without a key.
pub fn load_and_render_with(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
) -> Result<(Repo, Vec<TenantRender>), CliError> {
    let repo = load_repo_with(args, without_key)?;
    let renders = pipeline::render_all(&repo, &args.tenants);
    Ok((repo, renders))
}

/// The repo of [`load_and_render_with`], loaded and unlocked but not rendered.
pub fn load_repo_with(args: &RepoArgs, without_key: secrets::WithoutKey) -> Result<Repo, CliError> {
    let mut repo = load_with_pins(&args.repo, crate::source::fs::read_dir(&args.repo)?);
    if repo.tenants.is_empty() && repo.snapshot.get("fief.yaml").is_none() {
        // A CI gate pointed at the wrong folder must fail, not pass on zero tenants.
        return Err(CliError::Usage(format!(
            "{} is not a tenants repo: it has no fief.yaml and no tenants/*.yaml. Give the \
             folder that holds fief.yaml, or create a repo with `fief init`.",
            args.repo.display()
        )));
    }
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
    secrets::unlock(&mut repo, args, without_key)?;
    Ok(repo)
}

/// Load a repo, with the components tenants pin to git refs read from `checkout`'s own git
/// history (a ref that cannot be read fails only the tenants that pin it).
pub fn load_with_pins(checkout: &Path, mut snapshot: Snapshot) -> Repo {
    // The charts fief.lock names, from the chart cache (fetched once when missing).
    crate::source::charts::shared().resolve(&mut snapshot);
    load_with_pins_unresolved(checkout, snapshot)
}

/// [`load_with_pins`] without the charts of fief.lock (`fief chart update`, which writes it).
pub fn load_with_pins_unresolved(checkout: &Path, snapshot: Snapshot) -> Repo {
    let repo = Repo::load(Arc::new(snapshot));
    let wanted = crate::core::pins::pins(&repo);
    if wanted.is_empty() {
        return repo;
    }
    let pinned: Vec<_> = wanted
        .into_iter()
        .map(|(component, git_ref)| {
            let at = crate::source::git::snapshot_at(checkout, &git_ref)
                .map(|(s, _)| s)
                .map_err(|e| e.to_string());
            (component, git_ref, at)
        })
        .collect();
    Repo::load(Arc::new(crate::core::pins::with_pins(
        &repo.snapshot,
        &pinned,
    )))
}

/// Print every diagnostic on stderr, one repeated in many tenants once; whether there were any.
pub fn report_errors(renders: &[TenantRender]) -> bool {
    report::report_errors(renders)
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// The scope of `--env` for the tenants `tenants` (empty: all) of `repo`: an environment none
/// of them has is a usage error with a did-you-mean (a typo would otherwise show, apply and
/// prune nothing).
fn env_scope(repo: &Repo, tenants: &[String], envs: &[String]) -> Result<EnvScope, CliError> {
    let Ok(config) = repo.config.as_ref() else {
        // fief.yaml is broken: every tenant fails to render, which says why.
        return Ok(EnvScope::of(envs));
    };
    let known: BTreeSet<String> = repo
        .tenants
        .iter()
        .filter(|(name, _)| tenants.is_empty() || tenants.contains(name))
        .filter_map(|(_, t)| t.as_ref().ok())
        .flat_map(|t| crate::core::render::namespaces(config, t).into_keys())
        .collect();
    if let Some(unknown) = envs.iter().find(|e| !known.contains(*e)) {
        let hint = crate::core::suggest::suggest(unknown, known.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "--env {unknown}: no tenant has this environment{hint}; they have: {}",
            known.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(EnvScope::of(envs))
}

/// Whether tenant `name` has an environment `scope` includes: a tenant without one is left
/// out of an `--env` apply (nothing of it would change). A tenant file or fief.yaml that does
/// not parse counts as in scope, so its errors are reported.
fn in_env_scope(repo: &Repo, name: &str, scope: &EnvScope) -> bool {
    match (&repo.config, repo.tenants.get(name)) {
        (Ok(config), Some(Ok(t))) => crate::core::render::namespaces(config, t)
            .keys()
            .any(|e| scope.includes(e)),
        _ => true,
    }
}

/// [`load_and_render_with`] for the environments `envs` only (all when empty), checked by
/// [`env_scope`].
pub fn load_and_render_envs(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
    envs: &[String],
) -> Result<(Repo, Vec<TenantRender>), CliError> {
    let repo = load_repo_with(args, without_key)?;
    let scope = env_scope(&repo, &args.tenants, envs)?;
    let renders = pipeline::render_all_in(&repo, &args.tenants, &scope);
    Ok((repo, renders))
}

/// [`load_and_render_envs`] a batch of tenants at a time ([`pipeline::BATCH`]): `each` sees
/// every batch's renders in tenant order, then their objects are dropped. Out: every render
/// without its objects (names, namespaces, errors: what the error report and summaries
/// read), so memory holds one batch's objects, not the fleet's.
pub fn render_streamed(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
    envs: &[String],
    mut each: impl FnMut(&[TenantRender]) -> Result<(), CliError>,
) -> Result<Vec<TenantRender>, CliError> {
    let repo = load_repo_with(args, without_key)?;
    let scope = env_scope(&repo, &args.tenants, envs)?;
    let mut done: Vec<TenantRender> = Vec::with_capacity(repo.tenants.len());
    pipeline::render_batches_in(&repo, &args.tenants, &scope, pipeline::BATCH, |batch| {
        each(&batch)?;
        done.extend(batch.into_iter().map(|r| TenantRender {
            objects: Vec::new(),
            ..r
        }));
        Ok::<(), CliError>(())
    })?;
    Ok(done)
}

/// A tokio runtime for the cluster commands.
fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))
}

async fn resources(args: &ClusterArgs) -> Result<(Resources, RequestCounter), CliError> {
    let (client, counter) = crate::kube::connect(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.api_qps,
    )
    .await?;
    Ok((Resources::discover(client).await?, counter))
}
