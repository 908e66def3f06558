//! `fief agent`: start the in-cluster reconciler with the command line's settings.
//!
//! In: [`AgentArgs`]. Out: runs until SIGTERM; exit code 3 when it cannot start.

use super::{AgentArgs, CliError, EXIT_EXTERNAL, EXIT_OK, LogFormat, runtime};
use crate::agent::{self, AgentOptions};
use crate::source::git::GitAuth;

fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn read_secret(path: &std::path::Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| CliError::Usage(format!("{}: cannot read: {e}", path.display())))
}

/// `fief agent`.
pub fn agent_cmd(args: &AgentArgs) -> Result<u8, CliError> {
    init_logs(args.log_format);
    let token = match (&args.git_token_file, &args.git_token_env) {
        // The credential Secret is optional (public repos): a missing file is no token.
        (Some(f), _) if !f.exists() => {
            tracing::warn!(file = %f.display(), "git token file not found; fetching without a token");
            None
        }
        (Some(f), _) => Some(read_secret(f)?),
        (None, Some(var)) => Some(std::env::var(var).map_err(|_| {
            CliError::Usage(format!(
                "--git-token-env: environment variable {var} is not set"
            ))
        })?),
        (None, None) => None,
    };
    let webhook_secret = match &args.webhook_secret_file {
        Some(f) => Some(read_secret(f)?.into_bytes()),
        None => None,
    };
    let age_keys = match &args.age_key_file {
        // The key Secret is optional: without it, tenants that read secrets fail (never apply
        // placeholders).
        Some(f) if !f.exists() => {
            tracing::warn!(file = %f.display(), "age key file not found; tenants that read SOPS secrets will fail");
            None
        }
        Some(f) => Some(std::sync::Arc::new(
            crate::core::secrets::Keys::parse(&read_secret(f)?)
                .map_err(|e| CliError::Usage(format!("{}: {e}", f.display())))?,
        )),
        None => None,
    };
    let options = AgentOptions {
        repo: args.repo.clone(),
        branch: args.branch.clone(),
        cluster: args.cluster.clone(),
        interval: args.interval,
        resync_interval: args.resync_interval,
        git_timeout: args.git_timeout,
        cache_dir: args.cache_dir.clone(),
        listen: args.listen,
        webhook_secret,
        auth: GitAuth {
            token,
            ssh_key: args.ssh_key_file.clone(),
            known_hosts: args.known_hosts_file.clone(),
        },
        concurrency: args.concurrency,
        leader_election: !args.no_leader_election,
        lease_namespace: args.lease_namespace.clone(),
        kubeconfig: args.cluster_args.kubeconfig.clone(),
        context: args.cluster_args.context.clone(),
        api_qps: args.cluster_args.api_qps,
        age_keys,
        max_in_flight: args.max_in_flight,
        health_timeout: args.health_timeout,
    };
    let rt = runtime()?;
    let outcome = rt.block_on(agent::run(options));
    // A git call hanging on a blocking thread must not hold the exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => Ok(EXIT_OK),
        Err(e) => {
            tracing::error!(error = %e, "agent stopped");
            Ok(EXIT_EXTERNAL)
        }
    }
}
