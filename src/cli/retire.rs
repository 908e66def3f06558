//! `fief retire`: finish moving a tenant to another cluster by deleting what it left on the
//! old one.
//!
//! In: [`RetireArgs`]: the repo, the tenant, the old cluster (name and connection) and the
//! new cluster's connection. Out: refused (exit 1, nothing deleted) unless the tenant file
//! names another cluster, the old cluster's inventory is marked `Moved`, and the new
//! cluster's inventory is Ready and settled; else every object the old
//! inventory records is deleted (as a purge deletes them) and then the inventory: exit 0, or
//! 3 when a delete failed (what remains stays recorded; run it again).

use super::secrets::WithoutKey;
use super::{CliError, ClusterArgs, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, RepoArgs, RetireArgs};
use crate::core::inventory::Inventory;
use crate::core::status::moved::{RetireRefusal, confirm_on_new, moved_to};
use crate::kube::inventory_store::get_inventories;

/// `fief retire REPO --tenant T --cluster OLD --kubeconfig ... --new-context ...`.
pub fn retire_cmd(args: &RetireArgs) -> Result<u8, CliError> {
    let repo_args = RepoArgs {
        repo: args.repo.clone(),
        tenants: vec![args.tenant.clone()],
        selector: None,
        age_key_file: None,
    };
    let repo = super::load_repo_with(&repo_args, WithoutKey::Never)?;
    let tenant = match repo.tenants.get(&args.tenant) {
        Some(Ok(t)) => t,
        _ => {
            return Err(CliError::Usage(format!(
                "the tenant file of {} does not parse (`fief validate` says why)",
                args.tenant
            )));
        }
    };
    let config = repo.config.as_ref().map_err(|_| CliError::Config)?;
    let namespace = config.agent_namespace.clone();
    if tenant.spec.cluster == args.cluster_name {
        return Ok(refuse(
            &args.tenant,
            &RetireRefusal::NotMoved {
                cluster: args.cluster_name.clone(),
            },
        ));
    }
    let new = ClusterArgs {
        kubeconfig: args
            .new_kubeconfig
            .clone()
            .or_else(|| args.cluster.kubeconfig.clone()),
        context: args.new_context.clone(),
        api_qps: args.cluster.api_qps,
    };
    super::runtime()?.block_on(async {
        let (resources, _) = super::resources(&args.cluster).await?;
        let old = match confirmed(args, resources.client(), &namespace, &new).await? {
            Ok(old) => old,
            Err(why) => return Ok(refuse(&args.tenant, &why)),
        };
        let report = crate::kube::moved::retire(&resources, &namespace, &old).await;
        for k in &report.kept {
            println!("{}: kept: {k}", args.tenant);
        }
        for e in &report.errors {
            eprintln!("{}: {e}", args.tenant);
        }
        if report.is_ok() {
            println!(
                "tenant {} retired on cluster {}: {} objects deleted, its inventory removed",
                args.tenant, args.cluster_name, report.counts.pruned
            );
            Ok(EXIT_OK)
        } else {
            eprintln!(
                "tenant {}: retire incomplete on cluster {}; what remains stays recorded (run it again)",
                args.tenant, args.cluster_name
            );
            Ok(EXIT_EXTERNAL)
        }
    })
}

/// The old cluster's inventory of the tenant, when it is marked `Moved` and the new cluster
/// (`new`) has the tenant Ready; else why not.
async fn confirmed(
    args: &RetireArgs,
    old_client: &kube::Client,
    namespace: &str,
    new: &ClusterArgs,
) -> Result<Result<Inventory, RetireRefusal>, CliError> {
    let cluster = args.cluster_name.clone();
    let Some(old) = read(old_client, namespace, &args.tenant).await? else {
        return Ok(Err(RetireRefusal::NoInventory { cluster }));
    };
    if moved_to(&old).is_none() {
        return Ok(Err(RetireRefusal::NotMarked { cluster }));
    }
    let (client, _) = crate::kube::connect(
        new.kubeconfig.as_deref(),
        new.context.as_deref(),
        new.api_qps,
    )
    .await?;
    let on_new = read(&client, namespace, &args.tenant).await?;
    Ok(confirm_on_new(on_new.as_ref()).map(|()| old))
}

/// The tenant's inventory in `namespace`, if there is one; an unreadable one is an error.
async fn read(
    client: &kube::Client,
    namespace: &str,
    tenant: &str,
) -> Result<Option<Inventory>, CliError> {
    let mut found = get_inventories(client, namespace, &[tenant.to_string()]).await?;
    match found.remove(tenant) {
        None => Ok(None),
        Some(Ok(inv)) => Ok(Some(inv)),
        Some(Err(e)) => Err(CliError::Usage(format!(
            "the inventory of {tenant} cannot be read: {e}"
        ))),
    }
}

/// Say why nothing is deleted; the exit code of a refusal.
fn refuse(tenant: &str, why: &RetireRefusal) -> u8 {
    eprintln!("fief retire {tenant}: refused: {why}; nothing deleted");
    EXIT_INVALID
}
