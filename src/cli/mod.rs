//! The command line: one module per command, the arguments, and the output formats.
//!
//! In: arguments and a repo path (and a cluster, for the cluster commands). Out: YAML, diffs
//! or summaries on stdout, diagnostics on stderr, and an exit code (0 ok, 1 invalid input or
//! differences, 2 usage, 3 cluster or git failure, 4 a held prune, 5 not healthy in time).
//!
//! This module declares the commands' modules, the error and exit codes, and dispatches;
//! what several commands share is in `repo` (the tenants repo loaded and rendered) and
//! `connect` (the cluster commands' runtime and client).

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
mod connect;
mod diff;
mod import;
mod init;
mod install;
mod notify;
pub mod output;
mod reconcile;
mod render;
mod repo;
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

use std::path::PathBuf;

pub use args::*;
use connect::{resources, runtime};
use repo::{env_scope, env_scope_indexed, load_indexed_with, write_err};
pub use repo::{
    load_and_render, load_and_render_envs, load_and_render_with, load_repo_with, render_repo,
    render_streamed, report_errors,
};

use crate::core::snapshot::SnapshotError;

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
