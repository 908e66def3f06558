//! `fief suspend` / `fief resume`: mark a tenant so that `apply` and the agent leave it alone
//! (for incidents), and clear the mark.
//!
//! In: [`SuspendArgs`] / [`ResumeArgs`]. Out: the `fief.dev/suspended` annotation set on (or
//! removed from) the tenant's inventory ConfigMap, one line on stdout; exit 0, 2 for a tenant
//! without an inventory (the known ones are named; when there are none, the namespace read and
//! how to name another), 3 when the cluster cannot be used. Only an existing inventory is
//! annotated: nothing is created, so nothing is written where fief has no inventory.

use super::agent_ns::{self, AgentNamespace};
use super::{CliError, ClusterArgs, EXIT_OK, ResumeArgs, SuspendArgs, runtime};
use crate::core::objects::inventory_name;
use crate::core::status::{ANNOTATION_SUSPENDED, suspension_note};
use crate::kube::tenant_flags::{annotate, get_flags, load_flags, who_am_i};

/// Field manager of the suspension annotation.
const MANAGER: &str = "fief-suspend";

pub(super) async fn client(args: &ClusterArgs) -> Result<kube::Client, CliError> {
    let (client, _) = crate::kube::connect(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.api_qps,
    )
    .await?;
    Ok(client)
}

/// A usage error naming the tenants that have an inventory in `ns`; when none has, the
/// namespace read, where that came from and how to name another.
pub(super) async fn unknown_tenant(
    client: &kube::Client,
    ns: &AgentNamespace,
    cluster: &ClusterArgs,
    tenant: &str,
) -> CliError {
    let known = match load_flags(client, &ns.name).await {
        Ok(flags) => flags.into_keys().collect::<Vec<_>>(),
        Err(e) => return CliError::from(e),
    };
    if !known.is_empty() {
        return CliError::Usage(format!(
            "no inventory for tenant {tenant} in namespace {} (known: {}); a tenant is known once `fief apply` or the agent has synced it",
            ns.name,
            known.join(", ")
        ));
    }
    let agent = match crate::kube::tenant_flags::presence(client, &ns.name).await {
        Ok(p) => p.agent,
        Err(e) => return CliError::from(e),
    };
    if agent {
        CliError::Usage(format!(
            "no inventory for tenant {tenant}: the agent in {ns} has recorded no tenant yet"
        ))
    } else {
        CliError::Usage(format!(
            "no inventory for tenant {tenant}: {}",
            agent_ns::nothing_here(ns, cluster)
        ))
    }
}

/// Who the caller is, as recorded in a note: the API server's answer, else `$USER`.
pub(super) async fn who(client: &kube::Client) -> String {
    match who_am_i(client).await {
        Some(u) => u,
        None => std::env::var("USER").unwrap_or_else(|_| "unknown".to_string()),
    }
}

/// `fief suspend -t TENANT [--reason R]`.
pub fn suspend_cmd(args: &SuspendArgs) -> Result<u8, CliError> {
    let ns = agent_ns::resolve(&args.agent_ns)?;
    runtime()?.block_on(async {
        let client = client(&args.cluster).await?;
        let who = who(&client).await;
        let note = suspension_note(
            &who,
            &crate::kube::sync::now_rfc3339(),
            args.reason.as_deref(),
        );
        let name = inventory_name(args.tenant.name());
        let found = annotate(
            &client,
            &ns.name,
            &name,
            &[(ANNOTATION_SUSPENDED, Some(&note))],
            MANAGER,
        )
        .await?;
        if !found {
            return Err(unknown_tenant(&client, &ns, &args.cluster, args.tenant.name()).await);
        }
        println!(
            "tenant {} suspended ({note}): `fief apply` and the agent leave it alone (no apply, drift repair or prune) until `fief resume -t {}`",
            args.tenant.name(), args.tenant.name()
        );
        Ok(EXIT_OK)
    })
}

/// `fief resume -t TENANT`.
pub fn resume_cmd(args: &ResumeArgs) -> Result<u8, CliError> {
    let ns = agent_ns::resolve(&args.agent_ns)?;
    runtime()?.block_on(async {
        let client = client(&args.cluster).await?;
        let name = inventory_name(args.tenant.name());
        let Some(flags) = get_flags(&client, &ns.name, &name).await? else {
            return Err(unknown_tenant(&client, &ns, &args.cluster, args.tenant.name()).await);
        };
        if flags.suspended.is_none() {
            println!(
                "tenant {} is not suspended; nothing to do",
                args.tenant.name()
            );
            return Ok(EXIT_OK);
        }
        annotate(
            &client,
            &ns.name,
            &name,
            &[(ANNOTATION_SUSPENDED, None)],
            MANAGER,
        )
        .await?;
        println!(
            "tenant {} resumed: the agent syncs it now (or run `fief apply`)",
            args.tenant.name()
        );
        Ok(EXIT_OK)
    })
}
