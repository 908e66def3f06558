//! `fief reconcile`: ask the running agent, through the cluster, to fetch git and sync now,
//! and wait for its answer.
//!
//! In: [`ReconcileArgs`]. Out: `fief.dev/requestedAt` set on the tenant's inventory ConfigMap
//! (or on `fief-reconcile` for every tenant), then the agent's `fief.dev/reconcileResult`
//! once its `fief.dev/lastHandledReconcileAt` equals the request; exit 0 when every tenant
//! synced and is Ready, 1 when one failed (or the tenant is suspended), 2 for a tenant without
//! an inventory, 3 when the cluster cannot be used or the agent did not answer in time.

use std::time::{Duration, Instant};

use super::suspend::unknown_tenant;
use super::{CliError, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, ReconcileArgs, runtime};
use crate::core::objects::inventory_name;
use crate::core::status::{ANNOTATION_REQUESTED_AT, RECONCILE_ALL};
use crate::kube::tenant_flags::{annotate, get_flags, now_precise, request_all};

/// Field manager of the request annotation.
const MANAGER: &str = "fief-reconcile";
/// How often the answer is looked for.
const POLL: Duration = Duration::from_millis(250);

/// `fief reconcile [--tenant T] [--timeout 2m]`.
pub fn reconcile_cmd(args: &ReconcileArgs) -> Result<u8, CliError> {
    let namespace = super::agent_namespace(&args.agent_ns, &args.cluster);
    runtime()?.block_on(async {
        let (client, _) = crate::kube::connect(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.api_qps,
        )
        .await?;
        let ns = &namespace;
        let at = now_precise();
        let name = match &args.tenant {
            Some(t) => {
                let name = inventory_name(t);
                let Some(flags) = get_flags(&client, ns, &name).await? else {
                    return Err(unknown_tenant(&client, ns, t).await);
                };
                if let Some(why) = flags.suspended {
                    eprintln!(
                        "{} tenant {t} is suspended ({why}); nothing requested — `fief resume {t}` first",
                        super::colour::error_prefix()
                    );
                    return Ok(EXIT_INVALID);
                }
                annotate(
                    &client,
                    ns,
                    &name,
                    &[(ANNOTATION_REQUESTED_AT, Some(&at))],
                    MANAGER,
                )
                .await?;
                name
            }
            None => {
                request_all(&client, ns, &at, MANAGER).await?;
                RECONCILE_ALL.to_string()
            }
        };
        let what = args
            .tenant
            .as_deref()
            .map_or("every tenant".to_string(), |t| format!("tenant {t}"));
        eprintln!("asked the agent to fetch and sync {what} (requestedAt {at}); waiting");
        let started = Instant::now();
        loop {
            let flags = get_flags(&client, ns, &name).await?.unwrap_or_default();
            if flags.handled_at.as_deref() == Some(at.as_str()) {
                let result = flags.result.unwrap_or_default();
                let on = super::colour::stdout();
                let style = if result.starts_with("Ready") {
                    super::colour::Style::Good
                } else {
                    super::colour::Style::Bad
                };
                let cut = result.find(':').unwrap_or(result.len());
                let (word, rest) = result.split_at(cut);
                println!(
                    "{what}: {}{rest} ({:.1}s)",
                    super::colour::paint(on, style, word),
                    started.elapsed().as_secs_f64()
                );
                return Ok(if result.starts_with("Ready") {
                    EXIT_OK
                } else {
                    EXIT_INVALID
                });
            }
            if started.elapsed() >= args.timeout {
                eprintln!(
                    "{} the agent did not answer within {}s (is it running and leading? `fief status` shows its view); the request stays recorded and is handled when it runs",
                    super::colour::error_prefix(),
                    args.timeout.as_secs()
                );
                return Ok(EXIT_EXTERNAL);
            }
            tokio::time::sleep(POLL).await;
        }
    })
}
