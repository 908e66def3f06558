//! The arguments of `fief import` (clap derive).
//!
//! In: `argv`. Out: [`ImportArgs`]. Pure.

use std::path::PathBuf;

use clap::Args;

use super::{ClusterArgs, Format};

/// The examples under `fief import --help`.
const EXAMPLES: &str = "Examples:
  fief import --from clusters/prod --from apps/ --out tenants-repo
  fief import --from fleet.yaml --out tenants-repo --format json
  fief import --from-cluster --context prod --out tenants-repo
  fief import --from appsets/ --checkout https://git.example.com/apps.git=../apps --out tenants-repo
  fief chart update tenants-repo && fief validate tenants-repo";

/// `fief import`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ImportArgs {
    /// A YAML file, or a folder read recursively (its `.yaml` and `.yml` files), holding Flux
    /// (HelmRelease, Kustomization, HelmRepository, GitRepository, OCIRepository) and Argo CD
    /// (Application, ApplicationSet) objects, and the ConfigMaps and cluster Secrets they
    /// name. Other Kubernetes objects are skipped. Repeat for more.
    #[arg(
        long = "from",
        value_name = "PATH",
        required_unless_present = "from_cluster"
    )]
    pub from: Vec<PathBuf>,
    /// Also read the Flux and Argo CD objects of the kubeconfig's cluster (list and get only):
    /// the kinds above, the ConfigMaps releases take values from, Secrets' key names (never
    /// their values) and Argo CD cluster Secrets' `name` and `server`. They are saved under
    /// DIR/import-source/, which the report's lines point into.
    #[arg(long)]
    pub from_cluster: bool,
    /// Cluster connection (with --from-cluster).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The folder to write the tenants repo into: it must be absent or empty (nothing is
    /// overwritten).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A checkout of a git repository an ApplicationSet's git generator reads, as
    /// `URL=DIR` (its folders and files become the generator's elements). Repeat for more.
    #[arg(long, value_name = "URL=DIR")]
    pub checkout: Vec<String>,
    /// Format of the report on stdout (IMPORT-REPORT.md in DIR is always Markdown).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}
