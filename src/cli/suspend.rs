//! `fief suspend` / `fief resume`: mark a tenant so that `apply` and the agent leave it alone
//! (for incidents), and clear the mark.
//!
//! In: [`SuspendArgs`] / [`ResumeArgs`]. Out: the `fief.dev/suspended` annotation set on (or
//! removed from) the tenant's inventory ConfigMap, one line on stdout; exit 0, 2 for a tenant
//! without an inventory (the known ones are named), 3 when the cluster cannot be used.

use super::{CliError, ClusterArgs, EXIT_OK, ResumeArgs, SuspendArgs, runtime};
use crate::core::objects::inventory_name;
use crate::core::status::{ANNOTATION_SUSPENDED, suspension_note};
use crate::kube::tenant_flags::{annotate, get_flags, load_flags, who_am_i};

/// Field manager of the suspension annotation.
const MANAGER: &str = "fief-suspend";

async fn client(args: &ClusterArgs) -> Result<kube::Client, CliError> {
    let (client, _) = crate::kube::connect(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.api_qps,
    )
    .await?;
    Ok(client)
}

/// A usage error naming the tenants that have an inventory in `namespace`.
pub(super) async fn unknown_tenant(
    client: &kube::Client,
    namespace: &str,
    tenant: &str,
) -> CliError {
    let known = match load_flags(client, namespace).await {
        Ok(flags) => flags.into_keys().collect::<Vec<_>>().join(", "),
        Err(e) => return CliError::from(e),
    };
    CliError::Usage(format!(
        "no inventory for tenant {tenant} in namespace {namespace} (known: {known}); a tenant is known once `fief apply` or the agent has synced it"
    ))
}

/// `fief suspend TENANT [--reason R]`.
pub fn suspend_cmd(args: &SuspendArgs) -> Result<u8, CliError> {
    let ns = super::agent_namespace(&args.agent_ns, &args.cluster);
    runtime()?.block_on(async {
        let client = client(&args.cluster).await?;
        let who = match who_am_i(&client).await {
            Some(u) => u,
            None => std::env::var("USER").unwrap_or_else(|_| "unknown".to_string()),
        };
        let note = suspension_note(
            &who,
            &crate::kube::sync::now_rfc3339(),
            args.reason.as_deref(),
        );
        let name = inventory_name(&args.tenant);
        let found = annotate(
            &client,
            &ns,
            &name,
            &[(ANNOTATION_SUSPENDED, Some(&note))],
            MANAGER,
        )
        .await?;
        if !found {
            return Err(unknown_tenant(&client, &ns, &args.tenant).await);
        }
        println!(
            "tenant {} suspended ({note}): `fief apply` and the agent leave it alone (no apply, drift repair or prune) until `fief resume {}`",
            args.tenant, args.tenant
        );
        Ok(EXIT_OK)
    })
}

/// `fief resume TENANT`.
pub fn resume_cmd(args: &ResumeArgs) -> Result<u8, CliError> {
    let ns = super::agent_namespace(&args.agent_ns, &args.cluster);
    runtime()?.block_on(async {
        let client = client(&args.cluster).await?;
        let name = inventory_name(&args.tenant);
        let Some(flags) = get_flags(&client, &ns, &name).await? else {
            return Err(unknown_tenant(&client, &ns, &args.tenant).await);
        };
        if flags.suspended.is_none() {
            println!("tenant {} is not suspended; nothing to do", args.tenant);
            return Ok(EXIT_OK);
        }
        annotate(
            &client,
            &ns,
            &name,
            &[(ANNOTATION_SUSPENDED, None)],
            MANAGER,
        )
        .await?;
        println!(
            "tenant {} resumed: the agent syncs it now (or run `fief apply`)",
            args.tenant
        );
        Ok(EXIT_OK)
    })
}
