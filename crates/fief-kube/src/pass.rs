//! One pass of `fief apply` over the fleet, from the cluster's side: the one call the command
//! makes into this crate on its way to the first PATCH.
//!
//! In: the core's [`Pass`] (the tenants in scope, where their renders come from, which may
//! stand unrendered, every tenant of the repo), the sync options and what the command asked:
//! whether the mass-prune guard is released (`--allow-mass-prune`) and whether orphaned
//! inventories are reported. Out: one [`TenantReport`] per tenant, suspended ones included,
//! sorted by name (each also sent on the options' progress channel as it is done); Events in
//! the tenants' namespaces for the syncs that changed something or failed. Suspended tenants
//! (`fief suspend`) are left alone: not rendered, applied or pruned.

use std::collections::{BTreeMap, BTreeSet};

use fief_core::fleet::Pass;
use fief_core::status::Outcome;

use super::sync::{PruneRelease, SyncOptions, TenantReport, now_rfc3339, sync_batched};
use super::tenant_events::{Audience, event_for, owned_namespaces, publish};
use super::{ClusterError, Resources};

/// What the command asked of a pass besides its tenants.
pub struct PassOptions {
    /// Every tenant's sync options (the progress channel included).
    pub sync: SyncOptions,
    /// `--allow-mass-prune`: the guard holds no prune; each one it would have held records who
    /// released it and when.
    pub allow_mass_prune: bool,
    /// Report inventories of no tenant in the repo (the whole repo is in scope).
    pub report_orphans: bool,
}

/// Run `pass` against the cluster (see the module docs). The options the syncs ran with come
/// back beside the reports (the release of the guard set), for the syncs that follow.
pub async fn apply_pass(
    resources: &Resources,
    pass: &Pass,
    mut options: PassOptions,
) -> Result<(Vec<TenantReport>, SyncOptions), ClusterError> {
    if options.allow_mass_prune {
        options.sync.release = release(resources).await;
    }
    let namespace = options.sync.agent_namespace.clone();
    let suspended = suspended(resources, &namespace, &pass.names).await?;
    let mut reports = Vec::with_capacity(pass.names.len());
    for (tenant, why) in suspended.iter() {
        let mut r = TenantReport::new(tenant, Outcome::Suspended);
        r.suspended = Some(why.clone());
        if let Some(tx) = &options.sync.progress {
            let _ = tx.send(r.clone());
        }
        reports.push(r);
    }
    let names: Vec<String> = pass
        .names
        .iter()
        .filter(|n| !suspended.contains_key(*n))
        .cloned()
        .collect();
    let synced = sync_batched(
        resources,
        &names,
        pass.renders.clone(),
        &pass.reusable,
        &pass.known,
        options.report_orphans,
        &options.sync,
    )
    .await?;
    events(resources, &namespace, &synced).await;
    reports.extend(synced);
    reports.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    options.sync.progress = None;
    Ok((reports, options.sync))
}

/// The guard released for every tenant, noted with who released it (the API server's name
/// for the caller, else `$USER`) and when.
async fn release(resources: &Resources) -> PruneRelease {
    let who = match super::tenant_flags::who_am_i(resources.client()).await {
        Some(who) => who,
        None => std::env::var("USER").unwrap_or_else(|_| "unknown".to_string()),
    };
    let note = fief_core::status::suspension_note(
        &who,
        &now_rfc3339(),
        Some("fief apply --allow-mass-prune"),
    );
    PruneRelease::All(note)
}

/// The tenants of `names` whose inventory is marked suspended, with who/when/why; the other
/// inventories' flags are dropped as they are listed.
async fn suspended(
    resources: &Resources,
    agent_namespace: &str,
    names: &[String],
) -> Result<BTreeMap<String, String>, ClusterError> {
    let names: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut out = BTreeMap::new();
    let client = resources.client();
    super::tenant_flags::each_flags(client, agent_namespace, |tenant, flags| {
        if let Some(note) = flags.suspended.filter(|_| names.contains(tenant.as_str())) {
            out.insert(tenant, note);
        }
    })
    .await?;
    Ok(out)
}

/// Status Events in the tenants' own namespaces for the syncs that changed something or
/// failed (none when nothing changed: no extra request). Their namespaces are read from their
/// inventories one at a time, in the order of the tenants' names, up to the last of them.
async fn events(resources: &Resources, agent_namespace: &str, reports: &[TenantReport]) {
    let wanted: BTreeSet<&str> = reports
        .iter()
        .filter(|r| event_for(r, Audience::Tenant).is_some())
        .map(|r| r.tenant.as_str())
        .collect();
    let Some(last) = wanted.last().copied() else {
        return;
    };
    let mut walk = super::inventory_store::Walk::new(resources.client(), agent_namespace);
    let mut namespaces = BTreeMap::new();
    loop {
        match walk.next_upto(Some(last)).await {
            Ok(Some(one)) => {
                for (t, inv) in one.iter() {
                    if let (true, Ok(inv)) = (wanted.contains(t.as_str()), inv) {
                        namespaces.insert(t.clone(), owned_namespaces(inv));
                    }
                }
            }
            Ok(None) => break,
            Err(_) => return,
        }
    }
    publish(resources.client(), "fief-apply", reports, &namespaces).await;
}
