//! `fief notify test CHANNEL`: send one test message to one notification channel, so a
//! person can see that its URL works before a tenant fails.
//!
//! In: [`NotifyArgs`]: the channel (a platform channel of fief.yaml, or a tenant's with
//! `--tenant`), the repo, the age key (a URL in a SOPS file) or the cluster connection (a URL
//! in a Secret of the agent's namespace). Out: one line — on stdout when the receiver took the
//! message (its HTTP status), on stderr when not (why); either names the channel and where its
//! URL came from, never the URL. Exit 0 sent, 1 an unknown channel or a URL that cannot be
//! read, 2 usage (an unknown tenant, no repo), 3 the receiver or the cluster cannot be reached
//! or the receiver refused the message.

use std::sync::Arc;

use super::{
    CliError, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, NotifyArgs, NotifyCommand, NotifyTestArgs,
    RepoArgs, runtime, secrets,
};
use crate::agent::notify::secret_url::{self, SecretUrl};
use crate::agent::notify::test_message;
use crate::core::model::{Channel, Repo, UrlSource, resolve_url};

/// `fief notify ...`.
pub fn notify_cmd(args: &NotifyArgs) -> Result<u8, CliError> {
    match &args.command {
        NotifyCommand::Test(a) => test_cmd(a),
    }
}

/// Why the message was not sent, and the exit code that says so.
struct NotSent {
    code: u8,
    why: String,
}

impl NotSent {
    fn input(why: impl Into<String>) -> NotSent {
        NotSent {
            code: EXIT_INVALID,
            why: why.into(),
        }
    }

    fn external(why: impl Into<String>) -> NotSent {
        NotSent {
            code: EXIT_EXTERNAL,
            why: why.into(),
        }
    }
}

/// `fief notify test CHANNEL [--tenant T]`.
fn test_cmd(args: &NotifyTestArgs) -> Result<u8, CliError> {
    let repo = Repo::load(Arc::new(crate::source::fs::read_dir(&args.repo)?));
    if repo.snapshot.get("fief.yaml").is_none() {
        return Err(CliError::Usage(format!(
            "{} is not a tenants repo: it has no fief.yaml; give its folder with --repo DIR",
            args.repo.display()
        )));
    }
    if let Some(t) = &args.tenant
        && !repo.tenants.contains_key(t)
    {
        return Err(CliError::Usage(format!(
            "no tenant named {t} in {}/tenants/ (known: {})",
            args.repo.display(),
            repo.tenants.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let channel = match find(&repo, args) {
        Ok(c) => c,
        Err(why) => return Ok(fail(&NotSent::input(why))),
    };
    let what = describe(&repo, args, channel);
    let outcome = runtime()?.block_on(send(&repo, args, channel));
    match outcome {
        Ok(status) => {
            println!("sent a test message to {what}: HTTP {status}");
            Ok(EXIT_OK)
        }
        Err(e) => Ok(fail(&NotSent {
            code: e.code,
            why: format!("{what}: not sent: {}", e.why),
        })),
    }
}

/// Print why on stderr; its exit code.
fn fail(e: &NotSent) -> u8 {
    eprintln!("{} {}", super::colour::error_prefix(), e.why);
    e.code
}

/// The channel `args` names, or why there is none (the channels there are named).
fn find<'r>(repo: &'r Repo, args: &NotifyTestArgs) -> Result<&'r Channel, String> {
    let (channels, place) = match &args.tenant {
        Some(t) => match repo.tenants.get(t) {
            Some(Ok(tenant)) => (&tenant.spec.notifications, format!("tenant {t}'s file")),
            _ => {
                return Err(format!(
                    "tenant {t}'s file does not parse: run `fief validate --tenant {t}`"
                ));
            }
        },
        None => match &repo.config {
            Ok(config) => (
                &config.notifications.providers,
                "fief.yaml notifications.providers".to_string(),
            ),
            Err(_) => return Err("fief.yaml does not parse: run `fief validate`".to_string()),
        },
    };
    if let Some(c) = channels.iter().find(|c| c.name == args.channel) {
        return Ok(c);
    }
    let names: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    let hint = crate::core::suggest::suggest(&args.channel, names.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let known = if names.is_empty() {
        "it has none".to_string()
    } else {
        format!("its channels: {}", names.join(", "))
    };
    let platform = if args.tenant.is_none() {
        "; a tenant's own channel needs --tenant"
    } else {
        ""
    };
    Err(format!(
        "no channel `{}` in {place}{hint}; {known}{platform}",
        args.channel
    ))
}

/// The channel, its type and where its URL comes from, for the one line printed.
fn describe(repo: &Repo, args: &NotifyTestArgs, channel: &Channel) -> String {
    let who = match &args.tenant {
        Some(t) => format!("channel `{}` of tenant {t}", channel.name),
        None => format!("platform channel `{}`", channel.name),
    };
    let from = match &channel.url {
        UrlSource::Secret(r) => format!("URL from key `{}` of {}", r.key, r.secret),
        UrlSource::Kube(r) => format!(
            "URL from {}",
            SecretUrl {
                namespace: agent_namespace(repo),
                r: r.clone(),
            }
        ),
        UrlSource::Plain => "URL in plain text".to_string(),
    };
    format!("{who} ({}, {from})", channel.provider)
}

/// fief.yaml's `agentNamespace`, where a channel's Secret is.
fn agent_namespace(repo: &Repo) -> String {
    repo.config
        .as_ref()
        .map(|c| c.agent_namespace.clone())
        .unwrap_or_default()
}

/// Read the channel's URL as the agent does, then send the test message; the HTTP status.
async fn send(repo: &Repo, args: &NotifyTestArgs, channel: &Channel) -> Result<u16, NotSent> {
    channel
        .url
        .allowed_for(args.tenant.as_deref())
        .map_err(|e| NotSent::input(e.to_string()))?;
    let url = match &channel.url {
        UrlSource::Kube(r) => {
            let at = SecretUrl {
                namespace: agent_namespace(repo),
                r: r.clone(),
            };
            let (client, _) = crate::kube::connect(
                args.cluster.kubeconfig.as_deref(),
                args.cluster.context.as_deref(),
                args.cluster.api_qps,
            )
            .await
            .map_err(|e| NotSent::external(e.to_string()))?;
            secret_url::read(&client, &at).await.map_err(|e| {
                let code = if e.transient() {
                    EXIT_EXTERNAL
                } else {
                    EXIT_INVALID
                };
                NotSent {
                    code,
                    why: e.to_string(),
                }
            })?
        }
        _ => decrypt(repo, args, &channel.url)?,
    };
    let tenant = args.tenant.as_deref();
    test_message::send(&channel.provider, &url, tenant, &channel.name)
        .await
        .map_err(|e| NotSent {
            code: if e.is_input() {
                EXIT_INVALID
            } else {
                EXIT_EXTERNAL
            },
            why: e.to_string(),
        })
}

/// The URL in the channel's SOPS file, decrypted with the age key of `args`.
fn decrypt(repo: &Repo, args: &NotifyTestArgs, url: &UrlSource) -> Result<String, NotSent> {
    let key_args = RepoArgs {
        repo: args.repo.clone(),
        tenants: Vec::new(),
        selector: None,
        age_key_file: args.age_key_file.clone(),
    };
    let keys = secrets::load_keys(&key_args)
        .map_err(|e| NotSent::input(e.to_string()))?
        .ok_or_else(|| {
            NotSent::input(
                "its URL is in a SOPS file and no age key was given: pass --age-key-file FILE, or set SOPS_AGE_KEY_FILE (a file) or SOPS_AGE_KEY (the key itself)",
            )
        })?;
    resolve_url(&repo.secrets, url, &keys).map_err(|e| NotSent::input(e.to_string()))
}
