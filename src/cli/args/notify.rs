//! The arguments of `fief notify` (clap derive): its one subcommand, `test`.
//!
//! In: `argv`. Out: [`NotifyArgs`]. Pure.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ClusterArgs;

/// The `Examples:` section of `fief notify --help` and `fief notify test --help`.
const TEST_EXAMPLES: &str = "Examples:
  fief notify test platform-slack               # a channel of ./fief.yaml (URL in a SOPS file)
  fief notify test acme-teams -t acme --repo ~/tenants --age-key-file ~/.fief/age.key
  fief notify test ops --kubeconfig ~/.kube/prod   # URL in a Secret of the agent's namespace";

/// `fief notify`.
#[derive(Debug, Args)]
#[command(after_help = TEST_EXAMPLES)]
pub struct NotifyArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: NotifyCommand,
}

/// `fief notify` subcommands.
#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Send one test message to a notification channel and say whether it was delivered.
    ///
    /// The channel's URL is read the way the agent reads it: from a SOPS file of the repo
    /// with the age key, or from a Secret of the agent's namespace through the kubeconfig.
    /// One line is printed: sent (the HTTP status) or why not, naming the channel and where
    /// its URL came from, never the URL. Exit 0 sent, 1 an unknown channel or a URL that
    /// cannot be read, 2 an unknown tenant, 3 the receiver refused the message or the
    /// receiver or the cluster cannot be reached.
    #[command(after_help = TEST_EXAMPLES)]
    Test(NotifyTestArgs),
}

/// `fief notify test`.
#[derive(Debug, Args)]
pub struct NotifyTestArgs {
    /// The channel's name: a platform channel of fief.yaml `notifications.providers`, or with
    /// --tenant one of that tenant's `spec.notifications`.
    pub channel: String,
    /// The tenant whose own channel it is (default: a platform channel of fief.yaml).
    #[arg(short = 't', long, value_name = "NAME")]
    pub tenant: Option<String>,
    /// Path to the tenants repo.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// age identity file that decrypts the channel's SOPS file (default: $SOPS_AGE_KEY_FILE,
    /// else $SOPS_AGE_KEY).
    #[arg(long, value_name = "FILE")]
    pub age_key_file: Option<PathBuf>,
    /// Cluster connection, for a channel whose URL is in a Secret (`secretKeyRef`), read in
    /// fief.yaml's `agentNamespace`.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
