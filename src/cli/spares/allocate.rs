//! `fief allocate`: one Ready spare becomes a customer's tenant, and the pool is refilled, in
//! one commit.
//!
//! In: [`AllocateArgs`] (the customer's owner, labels and values), the repo's spares, and
//! (unless `--offline` or `--spare`) the spares' inventories in the cluster, to take a Ready
//! one. Out: the spare's tenant file rewritten as the customer's (same name, namespaces and
//! components: the agent's next sync changes little), new spare files up to `spares.count`,
//! the commit (and push) when asked, and the tenant's name on stdout.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use super::super::args::AllocateArgs;
use super::super::{CliError, EXIT_INVALID, EXIT_OK, Format, runtime};
use super::{check_git, commit, fill, load, pool, write};
use crate::core::condition::{Condition, ConditionType};
use crate::core::inventory::Inventory;
use crate::core::model::{Allocation, Owner, Repo, allocate, tenant_yaml};

/// `fief allocate`.
pub fn allocate_cmd(args: &AllocateArgs) -> Result<u8, CliError> {
    let (repo, spares) = load(&args.repo)?;
    let allocation = allocation(args)?;
    let candidates = pool(&repo);
    let chosen = match &args.spare {
        Some(name) if candidates.contains(name) => name.clone(),
        Some(name) => {
            return Err(CliError::Usage(format!(
                "`{name}` is not a spare in {} (spares: {})",
                args.repo.display(),
                list(&candidates)
            )));
        }
        None if candidates.is_empty() => {
            return Err(CliError::Usage(
                "no spare tenant in git; add them with `fief spares --commit`".to_string(),
            ));
        }
        None if args.offline => candidates[0].clone(),
        None => match ready_spare(args, &repo, &candidates)? {
            Ok(name) => name,
            Err(why) => {
                let mut stderr = std::io::stderr().lock();
                let _ = writeln!(stderr, "{} {why}", super::super::colour::error_prefix());
                return Ok(EXIT_INVALID);
            }
        },
    };
    check_git(&args.repo, &args.git)?;
    let Some(Ok(spare)) = repo.tenants.get(&chosen) else {
        return Err(CliError::Usage(format!("spare `{chosen}` does not parse")));
    };
    let customer = allocate(spare, &allocation).map_err(|e| CliError::Usage(e.to_string()))?;
    let path = args.repo.join(repo.tenant_file(&chosen));
    write(&path, &tenant_yaml(&customer).map_err(CliError::Serialize)?)?;
    let mut taken: BTreeSet<String> = repo.tenants.keys().cloned().collect();
    let missing = spares.count.saturating_sub(candidates.len() - 1);
    let added = fill(&args.repo, &spares, missing, &mut taken)?;
    let who = [&allocation.owner.organization, &allocation.owner.email]
        .into_iter()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or_else(|| "a customer".to_string());
    let message = format!(
        "Allocate spare tenant {chosen} to {who}; add {} spare(s)",
        added.len()
    );
    let mut files = vec![path];
    files.extend(added.iter().cloned());
    let commit_id = commit(&args.repo, &args.git, &files, &message)?;
    let added: Vec<String> = added
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let out = match args.output {
        Format::Json => {
            let v = serde_json::json!({"tenant": chosen, "added": added, "commit": commit_id});
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
        }
        Format::Text => format!(
            "allocated {chosen}\nadded spares: {}\n{}",
            list(&added),
            commit_id
                .map(|id| format!("committed {}\n", &id[..12.min(id.len())]))
                .unwrap_or_default()
        ),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(EXIT_OK)
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The customer's owner, labels and values from the flags.
fn allocation(args: &AllocateArgs) -> Result<Allocation, CliError> {
    let mut labels = BTreeMap::new();
    for l in &args.labels {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--label {l}: give KEY=VALUE")))?;
        labels.insert(k.to_string(), v.to_string());
    }
    let mut values: BTreeMap<String, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
    for s in &args.values {
        let bad = || CliError::Usage(format!("--set {s}: give COMPONENT.KEY=VALUE"));
        let (path, value) = s.split_once('=').ok_or_else(bad)?;
        let (component, key) = path.split_once('.').ok_or_else(bad)?;
        if component.is_empty() || key.is_empty() {
            return Err(bad());
        }
        let value = serde_json::from_str(value)
            .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
        values
            .entry(component.to_string())
            .or_default()
            .insert(key.to_string(), value);
    }
    Ok(Allocation {
        owner: Owner {
            email: args.owner_email.clone().unwrap_or_default(),
            organization: args.organization.clone().unwrap_or_default(),
        },
        labels,
        values,
    })
}

/// The spare Ready longest, from the spares' inventories in the agent namespace; or why
/// none can be taken.
fn ready_spare(
    args: &AllocateArgs,
    repo: &Repo,
    candidates: &[String],
) -> Result<Result<String, String>, CliError> {
    let ns = repo
        .config
        .as_ref()
        .map(|c| c.agent_namespace.clone())
        .map_err(|_| CliError::Config)?;
    let inventories = runtime()?.block_on(async {
        let (client, _) = crate::kube::connect(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.api_qps,
        )
        .await?;
        crate::kube::inventory_store::get_inventories(&client, &ns, candidates).await
    })?;
    let ready_since = |inv: &Inventory| {
        let ready = inv.status.condition(ConditionType::Ready)?;
        let stalled = inv
            .status
            .condition(ConditionType::Stalled)
            .is_some_and(Condition::is_true);
        (ready.is_true() && !stalled && inv.status.spare)
            .then(|| ready.last_transition_time.clone())
    };
    let mut ready: Vec<(String, &String)> = inventories
        .iter()
        .filter_map(|(name, inv)| Some((ready_since(inv.as_ref().ok()?)?, name)))
        .collect();
    ready.sort();
    if let Some((_, name)) = ready.first() {
        return Ok(Ok((*name).clone()));
    }
    let states: Vec<String> = candidates
        .iter()
        .map(|c| match inventories.get(c) {
            None => format!("{c} (not applied yet)"),
            Some(Err(_)) => format!("{c} (unreadable inventory)"),
            Some(Ok(_)) => format!("{c} (not Ready)"),
        })
        .collect();
    Ok(Err(format!(
        "no spare is Ready in {ns}: {}; wait for the agent, or take one anyway with --spare NAME or --offline",
        states.join(", ")
    )))
}
