//! The arguments of `fief retire` (clap derive).
//!
//! In: `argv`. Out: [`RetireArgs`]. Pure.

use std::path::PathBuf;

use clap::Args;

use super::ClusterArgs;

/// `fief retire`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("new").required(true).multiple(true).args(["new_kubeconfig", "new_context"])))]
pub struct RetireArgs {
    /// Path to the tenants repo (a checkout at the commit that moved the tenant).
    pub repo: PathBuf,
    /// The tenant that moved.
    #[arg(short = 't', long, value_name = "NAME", add = super::tenant::tenants())]
    pub tenant: String,
    /// The cluster it moved away from (its old `spec.cluster`), reached with --kubeconfig and
    /// --context.
    #[arg(long = "cluster", value_name = "NAME")]
    pub cluster_name: String,
    /// Connection to the old cluster, where its objects are deleted.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Kubeconfig file of the new cluster, read (never written) to confirm the tenant is
    /// Ready there (default: --kubeconfig's).
    #[arg(long, value_name = "FILE")]
    pub new_kubeconfig: Option<PathBuf>,
    /// Kubeconfig context of the new cluster (default: that kubeconfig's current context).
    #[arg(long, value_name = "NAME")]
    pub new_context: Option<String>,
}
