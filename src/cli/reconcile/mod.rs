//! `fief reconcile`: ask the running agent, through the cluster, to fetch git and sync now,
//! wait for its answer, then for each tenant to stand where its status says.
//!
//! In: [`ReconcileArgs`]. Out: `fief.dev/requestedAt` set on the tenant's inventory ConfigMap
//! (with `--allow-mass-prune`, also `fief.dev/allowMassPrune`: who and when), or on
//! `fief-reconcile` for every tenant, written only into a namespace that holds a fief
//! inventory or agent; then, once the agent's `fief.dev/lastHandledReconcileAt` equals the
//! request, each tenant's standing from its inventory's status conditions ([`standing`]), one
//! line per tenant that is not Ready. Exit 0 when every tenant synced is Ready, 1 when one
//! failed (or the tenant is suspended, moved or orphaned), 2 for a tenant without an
//! inventory or a namespace without fief, 3 when the cluster cannot be used or the agent did
//! not answer in time, 4 when a prune is held, 5 when a tenant is not healthy (still waiting
//! when `--timeout` ran out, or judged unhealthy).

mod standing;

use std::time::{Duration, Instant};

use super::agent_ns::{self, AgentNamespace};
use super::suspend::{client, unknown_tenant, who};
use super::{CliError, EXIT_EXTERNAL, EXIT_INVALID, ReconcileArgs, runtime};
use crate::core::objects::inventory_name;
use crate::core::status::{
    ANNOTATION_ALLOW_MASS_PRUNE, ANNOTATION_REQUESTED_AT, RECONCILE_ALL, suspension_note,
};
use crate::kube::tenant_flags::{annotate, get_flags, now_precise, presence, request_all};
use standing::Answer;

/// Field manager of the request annotation.
const MANAGER: &str = "fief-reconcile";
/// How often the answer is looked for.
const POLL: Duration = Duration::from_millis(250);

/// `fief reconcile [--tenant T [--allow-mass-prune]] [--timeout 2m]`.
pub fn reconcile_cmd(args: &ReconcileArgs) -> Result<u8, CliError> {
    let ns = agent_ns::resolve(&args.agent_ns)?;
    runtime()?.block_on(run(args, &ns))
}

async fn run(args: &ReconcileArgs, ns: &AgentNamespace) -> Result<u8, CliError> {
    let client = client(&args.cluster).await?;
    let at = now_precise();
    let started = Instant::now();
    let deadline = started + args.timeout;
    let Some(configmap) = request(&client, args, ns, &at).await? else {
        return Ok(EXIT_INVALID);
    };
    let what = args
        .tenant
        .as_deref()
        .map_or("every tenant".to_string(), |t| format!("tenant {t}"));
    eprintln!("asked the agent in {ns} to fetch and sync {what} (requestedAt {at}); waiting");
    let Some(result) = answer(&client, &ns.name, &configmap, &at, deadline).await? else {
        eprintln!(
            "{} the agent did not answer within {}s (is it running and leading? `fief status` shows its view); the request stays recorded and is handled when it runs",
            super::colour::error_prefix(),
            args.timeout.as_secs()
        );
        return Ok(EXIT_EXTERNAL);
    };
    eprintln!("the agent answered: {result}");
    let standings = standing::settle(
        &client,
        &ns.name,
        args.tenant.as_deref(),
        deadline,
        args.timeout,
    )
    .await?;
    let single = args.tenant.is_some();
    let code = standing::exit_code(Answer::of(&result), &standings, single);
    let took = started.elapsed();
    print!(
        "{}",
        standing::report(&what, &result, &standings, code, single, took)
    );
    Ok(code)
}

/// Write the request; the ConfigMap that carries it, or `None` when nothing was asked (the
/// tenant is suspended). Every tenant: asked only when the namespace holds a fief inventory
/// or agent, so a wrong namespace gets no `fief-reconcile` ConfigMap.
async fn request(
    client: &kube::Client,
    args: &ReconcileArgs,
    ns: &AgentNamespace,
    at: &str,
) -> Result<Option<String>, CliError> {
    let Some(t) = &args.tenant else {
        if !presence(client, &ns.name).await?.any() {
            return Err(CliError::Usage(format!(
                "nothing asked: {}",
                agent_ns::nothing_here(ns, &args.cluster)
            )));
        }
        request_all(client, &ns.name, at, MANAGER).await?;
        return Ok(Some(RECONCILE_ALL.to_string()));
    };
    let name = inventory_name(t);
    let Some(flags) = get_flags(client, &ns.name, &name).await? else {
        return Err(unknown_tenant(client, ns, &args.cluster, t).await);
    };
    if let Some(why) = flags.suspended {
        eprintln!(
            "{} tenant {t} is suspended ({why}); nothing requested — `fief resume -t {t}` first",
            super::colour::error_prefix()
        );
        return Ok(None);
    }
    let release = if args.allow_mass_prune {
        Some(suspension_note(&who(client).await, at, None))
    } else {
        None
    };
    let mut annotations = vec![(ANNOTATION_REQUESTED_AT, Some(at))];
    if let Some(note) = &release {
        annotations.push((ANNOTATION_ALLOW_MASS_PRUNE, Some(note.as_str())));
        eprintln!("releasing the held mass prune of tenant {t} for this sync ({note})");
    }
    annotate(client, &ns.name, &name, &annotations, MANAGER).await?;
    Ok(Some(name))
}

/// The agent's answer to the request `at` on `configmap`, or `None` when `deadline` passed
/// first.
async fn answer(
    client: &kube::Client,
    namespace: &str,
    configmap: &str,
    at: &str,
    deadline: Instant,
) -> Result<Option<String>, CliError> {
    loop {
        let flags = get_flags(client, namespace, configmap)
            .await?
            .unwrap_or_default();
        if flags.handled_at.as_deref() == Some(at) {
            return Ok(Some(flags.result.unwrap_or_default()));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(POLL).await;
    }
}
