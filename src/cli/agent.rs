//! `fief agent`: start the in-cluster reconciler with the command line's settings.
//!
//! In: [`AgentArgs`]. Out: runs until SIGTERM; exit code 3 when it cannot start.
//!
//! Credential files (`--git-token-file`, `--ssh-key-file`, `--known-hosts-file`,
//! `--webhook-secret-file`, `--age-key-file`, `--web-token-file`) must exist when named: a missing one stops the
//! agent at start (exit code 2) with the flag, the file and what to do, before anything is
//! fetched or applied. A credential that is not there never silently means an anonymous fetch,
//! a webhook turned off or tenants failing on their secrets.

use super::{AgentArgs, CliError, EXIT_EXTERNAL, EXIT_OK, LogFormat, SyncDurations, runtime};
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

/// Every credential file named on the command line exists; else the error names the flag,
/// the file and what to do.
fn check_credential_files(args: &AgentArgs) -> Result<(), CliError> {
    let named = [
        (
            "--git-token-file",
            &args.git_token_file,
            "fief-git",
            "token",
        ),
        ("--ssh-key-file", &args.ssh_key_file, "fief-git", "ssh-key"),
        (
            "--known-hosts-file",
            &args.known_hosts_file,
            "fief-git",
            "known_hosts",
        ),
        (
            "--webhook-secret-file",
            &args.webhook_secret_file,
            "fief-webhook",
            "secret",
        ),
        (
            "--age-key-file",
            &args.age_key_file,
            "fief-age-key",
            "keys.txt",
        ),
        (
            "--web-token-file",
            &args.web_token_file,
            "fief-web",
            "token",
        ),
    ];
    let missing: Vec<String> = named
        .iter()
        .filter_map(|(flag, file, secret, key)| {
            let file = file.as_ref()?;
            (!file.is_file()).then(|| {
                format!(
                    "{flag} {}: no such file. In the cluster: create the Secret `{secret}` with key `{key}` (install guide, \"4. Credentials\"), or remove {flag} from the agent's arguments if you do not use this credential",
                    file.display()
                )
            })
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "refusing to start: {} credential file(s) missing (the agent never runs without a credential it was told to use):\n  {}",
        missing.len(),
        missing.join("\n  ")
    )))
}

/// `fief agent`.
pub fn agent_cmd(args: &AgentArgs) -> Result<u8, CliError> {
    init_logs(args.log_format);
    check_credential_files(args)?;
    let token = match (&args.git_token_file, &args.git_token_env) {
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
        Some(f) => Some(std::sync::Arc::new(
            crate::core::secrets::Keys::parse(&read_secret(f)?)
                .map_err(|e| CliError::Usage(format!("{}: {e}", f.display())))?,
        )),
        None => None,
    };
    let web = match (&args.web, &args.web_token_file) {
        (false, _) => None,
        (true, None) => Some(agent::web::WebOptions::default()),
        (true, Some(f)) => {
            let token = read_secret(f)?;
            if token.is_empty() {
                return Err(CliError::Usage(format!(
                    "--web-token-file {}: the file is empty; put the token in it",
                    f.display()
                )));
            }
            Some(agent::web::WebOptions {
                token: Some(token.into_bytes()),
            })
        }
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
        shards: args.shards,
        kubeconfig: args.cluster_args.kubeconfig.clone(),
        context: args.cluster_args.context.clone(),
        api_qps: args.cluster_args.api_qps,
        age_keys,
        max_in_flight: args.max_in_flight,
        health_timeout: args.health_timeout,
        web,
        sync_durations: match args.sync_durations {
            SyncDurations::Tenant => agent::metrics::SyncDurations::PerTenant,
            SyncDurations::Fleet => agent::metrics::SyncDurations::Fleet,
        },
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
