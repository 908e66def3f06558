//! The arguments of the spare-tenant commands: `spares` and `allocate`.
//!
//! In: `argv` (through [`super::Cli`]). Out: the parsed argument structs. Pure.

use std::path::PathBuf;

use clap::Args;

use super::{ClusterArgs, Format};

/// How the edited tenant files reach git.
#[derive(Debug, Args)]
pub struct GitArgs {
    /// Commit the tenant files written (only those), in one commit.
    #[arg(long)]
    pub commit: bool,
    /// After committing, `git push` the branch to its upstream (implies --commit).
    #[arg(long)]
    pub push: bool,
}

/// `fief spares`.
#[derive(Debug, Args)]
pub struct SparesArgs {
    /// Path to the tenants repo (a checkout).
    pub repo: PathBuf,
    /// Only list the pool and say how many spares are missing; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Committing and pushing.
    #[command(flatten)]
    pub git: GitArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// `fief allocate`.
#[derive(Debug, Args)]
pub struct AllocateArgs {
    /// Path to the tenants repo (a checkout).
    pub repo: PathBuf,
    /// The owner's contact e-mail.
    #[arg(long, value_name = "EMAIL")]
    pub owner_email: Option<String>,
    /// The owner's organisation.
    #[arg(long, value_name = "NAME")]
    pub organization: Option<String>,
    /// A label of the customer's tenant (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// A value of one of the spare's components: `COMPONENT.KEY=VALUE` (repeatable; VALUE is
    /// read as JSON when it is JSON, so `3` is a number and `true` a boolean, else as text).
    #[arg(long = "set", value_name = "COMPONENT.KEY=VALUE")]
    pub values: Vec<String>,
    /// Allocate this spare (default: the oldest Ready one the cluster reports).
    #[arg(long, value_name = "NAME")]
    pub spare: Option<String>,
    /// Do not ask the cluster which spares are Ready: take any spare in git.
    #[arg(long)]
    pub offline: bool,
    /// Committing and pushing.
    #[command(flatten)]
    pub git: GitArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Cluster connection (to find the Ready spares; the namespace is fief.yaml's
    /// `agentNamespace`).
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
