//! Sync: apply each tenant's plan to the cluster, record its inventory, prune safely.
//!
//! In: rendered tenants, the previous inventories and the live objects (read once per sync).
//! Out: server-side applies in stage order, inventory writes (union of old and new before any
//! prune, the new set after), guarded deletes, and a [`TenantReport`] per tenant. A tenant's
//! failure never stops the others; an unchanged tenant sends no mutating request.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions};
use serde::Serialize;
use serde_json::{Value, json};

use super::{ClusterError, FIELD_MANAGER, Resources, list_all, live_id, send_as};
use crate::inventory::{Counts, Entry, Inventory, InventoryError, LABEL_APPLYSET_ID};
use crate::model::{BASELINE, TenantState};
use crate::objects::{self, ObjectId};
use crate::plan::{self, Apply, PruneGuard};
use crate::render::TenantRender;

/// How a sync runs.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// Namespace of the inventories.
    pub agent_namespace: String,
    /// Tenants synced at once.
    pub concurrency: usize,
    /// Requests in flight per tenant stage.
    pub object_concurrency: usize,
    /// Prune past the mass-prune guard.
    pub allow_mass_prune: bool,
    /// The guard from fief.yaml.
    pub guard: PruneGuard,
    /// Only tenants whose `spec.cluster` is this.
    pub cluster: String,
    /// The git commit being applied, recorded in the status of tenants it changes.
    pub commit: Option<String>,
}

/// What happened to one tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantReport {
    /// Tenant name.
    pub tenant: String,
    /// `applied`, `failed`, `invalid`, `purged`, `orphaned` or `skipped`.
    pub outcome: String,
    /// Counts of this sync.
    pub counts: Counts,
    /// Objects left in place although they left git (prune disabled, no longer ours).
    pub kept: Vec<String>,
    /// Why pruning was held back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prune_held: Option<String>,
    /// Errors.
    pub errors: Vec<String>,
}

impl TenantReport {
    fn new(tenant: &str, outcome: &str) -> TenantReport {
        TenantReport {
            tenant: tenant.to_string(),
            outcome: outcome.to_string(),
            ..Default::default()
        }
    }

    /// Whether the tenant synced without errors.
    pub fn is_ok(&self) -> bool {
        matches!(
            self.outcome.as_str(),
            "applied" | "purged" | "orphaned" | "skipped"
        ) && self.errors.is_empty()
    }
}

/// Current time, RFC 3339, for condition transitions.
pub fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

struct Ctx<'a> {
    resources: &'a Resources,
    live: &'a HashMap<ObjectId, String>,
    options: &'a SyncOptions,
    now: String,
}

/// What a sync needs to know about the cluster before it starts.
#[derive(Debug, Default)]
pub struct ClusterState {
    /// Every inventory in the agent namespace, by tenant.
    pub inventories: BTreeMap<String, Result<Inventory, InventoryError>>,
    /// For each live object fief manages: the hash of its fields fief sets
    /// ([`plan::live_hash`] against the desired object).
    pub live: HashMap<ObjectId, String>,
}

/// The outcome of a sync.
#[derive(Debug, Default)]
pub struct SyncResult {
    /// One report per tenant (and per orphaned inventory), sorted by tenant.
    pub reports: Vec<TenantReport>,
    /// Each synced tenant's inventory as it now stands in the cluster (`None`: deleted).
    pub inventories: BTreeMap<String, Option<Inventory>>,
}

/// Sync tenants (one-shot): observe the cluster, then [`sync_with`]. `renders` are the
/// tenants in scope; `known` is every tenant file in the repo, so inventories of tenants not
/// in it are reported as orphaned (only when `report_orphans`, i.e. the whole repo is in scope).
pub async fn sync(
    resources: &Resources,
    renders: &[TenantRender],
    known: &BTreeSet<String>,
    report_orphans: bool,
    options: &SyncOptions,
) -> Result<Vec<TenantReport>, ClusterError> {
    let state = observe(resources, renders, report_orphans, options).await?;
    let result = sync_with(resources, renders, &state, known, report_orphans, options).await;
    Ok(result.reports)
}

/// Read what a sync needs: the agent namespace (created if missing), the inventories, and the
/// live state of every kind the tenants in scope have or had (one LIST per kind).
pub async fn observe(
    resources: &Resources,
    renders: &[TenantRender],
    all_tenants: bool,
    options: &SyncOptions,
) -> Result<ClusterState, ClusterError> {
    let client = resources.client().clone();
    ensure_namespace(&client, &options.agent_namespace).await?;
    let inventories = load_inventories(&client, &options.agent_namespace).await?;
    let mut kinds: BTreeSet<(String, String)> = BTreeSet::new();
    for r in renders {
        for o in &r.objects {
            kinds.insert((api_version(&o.object), o.id.kind.clone()));
        }
        if let Some(Ok(inv)) = inventories.get(&r.tenant) {
            for e in inv.entries.values() {
                kinds.insert((e.api_version.clone(), e.id.kind.clone()));
            }
        }
    }
    // Name the tenants when they are few (the cluster may hold many more of other repos);
    // past that, one selector for all fief members keeps the URL short.
    let selector = if all_tenants && renders.len() > 200 {
        objects::LABEL_TENANT.to_string()
    } else {
        let names: Vec<&str> = renders.iter().map(|r| r.tenant.as_str()).collect();
        format!("{} in ({})", objects::LABEL_TENANT, names.join(","))
    };
    let objects = load_live(resources, &kinds, &selector).await?;
    let mut live = HashMap::new();
    for r in renders {
        for o in &r.objects {
            if let Some(l) = objects.get(&o.id) {
                live.insert(o.id.clone(), plan::live_hash(&o.object, l));
            }
        }
    }
    Ok(ClusterState { inventories, live })
}

/// Sync tenants against an observed [`ClusterState`]. A tenant's failure is in its report;
/// it never stops the others.
pub async fn sync_with(
    resources: &Resources,
    renders: &[TenantRender],
    state: &ClusterState,
    known: &BTreeSet<String>,
    report_orphans: bool,
    options: &SyncOptions,
) -> SyncResult {
    let ctx = Ctx {
        resources,
        live: &state.live,
        options,
        now: now_rfc3339(),
    };
    let inventories = &state.inventories;
    let done: Vec<(TenantReport, Option<Option<Inventory>>)> = stream::iter(renders.iter())
        .map(|r| {
            let ctx = &ctx;
            async move {
                if r.cluster
                    .as_deref()
                    .is_some_and(|c| c != ctx.options.cluster)
                {
                    return (TenantReport::new(&r.tenant, "skipped"), None);
                }
                match inventories.get(&r.tenant) {
                    Some(Err(e)) => {
                        let mut rep = TenantReport::new(&r.tenant, "failed");
                        rep.errors.push(format!(
                            "{e}; fix or delete the inventory ConfigMap (nothing applied or pruned)"
                        ));
                        (rep, None)
                    }
                    Some(Ok(inv)) => {
                        let (rep, inv) = sync_tenant(ctx, r, Some(inv)).await;
                        (rep, Some(inv))
                    }
                    None => {
                        let (rep, inv) = sync_tenant(ctx, r, None).await;
                        (rep, Some(inv))
                    }
                }
            }
        })
        .buffer_unordered(options.concurrency.max(1))
        .collect()
        .await;
    let mut result = SyncResult::default();
    for (report, inv) in done {
        if let Some(inv) = inv {
            result.inventories.insert(report.tenant.clone(), inv);
        }
        result.reports.push(report);
    }
    if report_orphans {
        for (tenant, inv) in inventories {
            if known.contains(tenant) {
                continue;
            }
            let mut rep = TenantReport::new(tenant, "orphaned");
            if let Ok(inv) = inv {
                rep.counts.objects = inv.entries.len();
                let mut marked = inv.clone();
                marked.status.set_condition(
                    "Orphaned",
                    true,
                    "TenantFileRemoved",
                    "the tenant file is gone from git; objects are left running (set state: purged to delete them)",
                    &ctx.now,
                );
                if let Err(e) = write_inventory(&ctx, &marked, Some(inv)).await {
                    rep.errors.push(e.to_string());
                }
            }
            result.reports.push(rep);
        }
    }
    result.reports.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    result
}

fn api_version(object: &Value) -> String {
    object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Create the agent namespace if it does not exist (one read when it does).
pub async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), ClusterError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let unreachable = |source| ClusterError::Unreachable {
        what: format!("reading namespace {name}"),
        source,
    };
    if api.get_opt(name).await.map_err(unreachable)?.is_some() {
        return Ok(());
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&ns),
    )
    .await
    .map_err(|source| ClusterError::Unreachable {
        what: format!("creating namespace {name}"),
        source,
    })?;
    Ok(())
}

/// Every inventory ConfigMap in the agent namespace, by tenant.
pub async fn load_inventories(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, Result<Inventory, InventoryError>>, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(&format!(
        "{LABEL_APPLYSET_ID},{}=fief",
        objects::LABEL_MANAGED_BY
    ));
    let list = api
        .list(&params)
        .await
        .map_err(|source| ClusterError::Unreachable {
            what: format!("listing inventories in {namespace}"),
            source,
        })?;
    let mut out = BTreeMap::new();
    for cm in list.items {
        let value = serde_json::to_value(&cm).unwrap_or(Value::Null);
        let tenant = cm
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(objects::LABEL_TENANT))
            .cloned()
            .unwrap_or_default();
        out.insert(tenant, Inventory::from_configmap(&value));
    }
    Ok(out)
}

/// Every object of these kinds matching `selector`, by identity (one LIST per kind).
pub async fn load_live(
    resources: &Resources,
    kinds: &BTreeSet<(String, String)>,
    selector: &str,
) -> Result<HashMap<ObjectId, Value>, ClusterError> {
    let mut live = HashMap::new();
    for (api_version, kind) in kinds {
        let Some(resource) = resources.resolve(api_version, kind).await else {
            continue;
        };
        let items = list_all(resources, &resource, selector)
            .await
            .map_err(|source| ClusterError::Unreachable {
                what: format!("listing {kind} ({api_version})"),
                source,
            })?;
        for item in items {
            live.insert(live_id(&resource, &item), item);
        }
    }
    Ok(live)
}

fn revision(render: &TenantRender) -> String {
    let hashes: Vec<String> = render
        .objects
        .iter()
        .map(|o| plan::content_hash(&o.object))
        .collect();
    objects::sha256_hex(hashes.join(",").as_bytes())[..16].to_string()
}

/// Sync one tenant; returns its report and its inventory as it now stands in the cluster
/// (`None`: there is none).
async fn sync_tenant(
    ctx: &Ctx<'_>,
    render: &TenantRender,
    prev: Option<&Inventory>,
) -> (TenantReport, Option<Inventory>) {
    let tenant = render.tenant.as_str();
    let mut report = TenantReport::new(tenant, "applied");
    let mut inv = prev.cloned().unwrap_or_else(|| Inventory::new(tenant));
    inv.status.conditions.retain(|c| c.type_ != "Orphaned");
    let now = ctx.now.as_str();
    if !render.is_ok() {
        report.outcome = "invalid".to_string();
        report.errors = render.errors.iter().map(|d| d.to_string()).collect();
        let message = format!(
            "{} error(s); first: {}",
            render.errors.len(),
            report.errors[0]
        );
        inv.status
            .set_condition("Ready", false, "RenderFailed", &message, now);
        inv.status
            .set_condition("Stalled", true, "RenderFailed", &message, now);
        inv.status.last_error = Some(message);
        return match write_inventory(ctx, &inv, prev).await {
            Ok(()) => (report, Some(inv)),
            Err(e) => {
                report.errors.push(e.to_string());
                (report, prev.cloned())
            }
        };
    }
    let plan = plan::plan(
        render,
        prev,
        ctx.live,
        &ctx.options.guard,
        ctx.options.allow_mass_prune,
    );
    report.counts.unchanged = plan.unchanged.len();
    let mut rbac_changed = false;
    for (i, stage) in plan.stages.iter().enumerate() {
        rbac_changed |= i == 2 && !plan.stages[1].is_empty();
        let results: Vec<(&Apply, Result<Value, ClusterError>)> = stream::iter(stage)
            .map(|a| async move {
                let ns = render
                    .namespaces
                    .get(&a.object.env)
                    .map(String::as_str)
                    .unwrap_or("");
                let identity = super::tenant_identity(ns);
                (a, apply_one(ctx, a, &identity, rbac_changed).await)
            })
            .buffer_unordered(ctx.options.object_concurrency.max(1))
            .collect()
            .await;
        let mut crds = Vec::new();
        for (a, result) in results {
            match result {
                Ok(returned) => {
                    let id = a.object.id.clone();
                    if id.kind == "CustomResourceDefinition" {
                        crds.push(a);
                    }
                    inv.entries.insert(
                        id.clone(),
                        Entry {
                            id,
                            component: a.object.component.clone(),
                            api_version: api_version(&a.object.object),
                            hash: a.hash.clone(),
                            live: plan::live_hash(&a.object.object, &returned),
                        },
                    );
                    if a.existed {
                        report.counts.configured += 1;
                    } else {
                        report.counts.created += 1;
                    }
                }
                Err(e) => {
                    report.counts.failed += 1;
                    report.errors.push(e.to_string());
                }
            }
        }
        if i == 0 && !crds.is_empty() {
            for crd in crds {
                if let Err(e) = wait_established(ctx, crd).await {
                    report.errors.push(e.to_string());
                }
            }
            if let Err(e) = ctx.resources.refresh().await {
                report.errors.push(e.to_string());
            }
        }
    }
    let changed = report.counts.created + report.counts.configured > 0 || !plan.prune.is_empty();
    if changed {
        inv.status.set_condition(
            "Reconciling",
            true,
            "Progressing",
            "applying and pruning",
            now,
        );
    }
    // Record union(old, new) before anything is pruned: a crash leaves nothing unrecorded.
    if let Err(e) = write_inventory(ctx, &inv, prev).await {
        report.outcome = "failed".to_string();
        report.errors.push(format!("{e}; nothing pruned"));
        return (report, prev.cloned());
    }
    let recorded = inv.clone();
    report.prune_held = plan.hold.as_ref().map(|h| h.to_string());
    let applyset = objects::tenant_applyset_id(tenant, &ctx.options.agent_namespace);
    // A namespace holding objects that are kept must stay (deleting it deletes them), and those
    // objects stay in the inventory so the namespace is held on every later sync too.
    let pruned_namespaces: BTreeSet<&str> = plan
        .prune
        .iter()
        .filter(|e| e.id.group.is_empty() && e.id.kind == "Namespace")
        .map(|e| e.id.name.as_str())
        .collect();
    let mut holding: BTreeSet<String> = BTreeSet::new();
    for entry in &plan.prune {
        let is_namespace = entry.id.group.is_empty() && entry.id.kind == "Namespace";
        if is_namespace && holding.contains(&entry.id.name) {
            report.kept.push(format!(
                "{}: holds objects that are kept; left in place",
                entry.id
            ));
            continue;
        }
        let held = pruned_namespaces.contains(entry.id.namespace.as_str());
        match prune_one(ctx, entry, tenant, &applyset).await {
            Ok(Pruned::Deleted) => {
                inv.entries.remove(&entry.id);
                report.counts.pruned += 1;
            }
            Ok(Pruned::Gone) => {
                inv.entries.remove(&entry.id);
            }
            Ok(Pruned::Kept(reason)) => {
                if held {
                    holding.insert(entry.id.namespace.clone());
                } else {
                    inv.entries.remove(&entry.id);
                }
                report.kept.push(format!("{}: {reason}", entry.id));
            }
            Err(e) => {
                holding.insert(entry.id.namespace.clone());
                report.counts.failed += 1;
                report.errors.push(e.to_string());
            }
        }
    }
    let purged = render.state == Some(TenantState::Purged);
    if purged && inv.entries.is_empty() && report.errors.is_empty() {
        report.outcome = "purged".to_string();
        return match delete_inventory(ctx, tenant).await {
            Ok(()) => (report, None),
            Err(e) => {
                report.errors.push(e.to_string());
                (report, Some(recorded))
            }
        };
    }
    if purged && report.prune_held.is_none() {
        report.prune_held = Some(format!(
            "purge incomplete: {} objects remain (kept by fief.dev/prune: disabled, or their namespace); delete them or remove the annotation",
            inv.entries.len()
        ));
    }
    finish_status(
        &mut inv,
        &mut report,
        render,
        changed,
        now,
        ctx.options.commit.as_deref(),
    );
    let stands = match write_inventory(ctx, &inv, Some(&recorded)).await {
        Ok(()) => inv,
        Err(e) => {
            report.errors.push(e.to_string());
            recorded
        }
    };
    if !report.errors.is_empty() {
        report.outcome = "failed".to_string();
    }
    (report, Some(stands))
}

fn finish_status(
    inv: &mut Inventory,
    report: &mut TenantReport,
    render: &TenantRender,
    changed: bool,
    now: &str,
    commit: Option<&str>,
) {
    report.counts.objects = inv.entries.len();
    let status = &mut inv.status;
    if changed || report.counts.failed > 0 || status.counts.objects != report.counts.objects {
        status.counts = report.counts.clone();
    }
    if changed {
        status.set_condition("Reconciling", false, "Done", "sync finished", now);
        if commit.is_some() {
            status.commit = commit.map(str::to_string);
        }
    }
    if let Some(first) = report.errors.first() {
        let message = format!("{} error(s); first: {first}", report.errors.len());
        status.set_condition("Ready", false, "ApplyFailed", &message, now);
        status.set_condition("Stalled", true, "ApplyFailed", &message, now);
        status.last_error = Some(message);
    } else if let Some(hold) = &report.prune_held {
        status.set_condition("Ready", false, "PruneHeld", hold, now);
        status.set_condition("Stalled", true, "PruneHeld", hold, now);
        status.last_error = Some(hold.clone());
    } else {
        let rev = revision(render);
        let message = format!("applied revision {rev}: {} objects", report.counts.objects);
        status.set_condition("Ready", true, "Applied", &message, now);
        status.set_condition("Stalled", false, "Applied", "", now);
        status.revision = rev;
        status.last_error = None;
    }
}

async fn apply_one(
    ctx: &Ctx<'_>,
    a: &Apply<'_>,
    identity: &str,
    retry_forbidden: bool,
) -> Result<Value, ClusterError> {
    let o = a.object;
    let version = api_version(&o.object);
    let resource = ctx.resources.require(&o.id, &version).await?;
    if !resource.namespaced && o.component != BASELINE {
        return Err(ClusterError::Refused {
            id: o.id.clone(),
            reason: "the cluster says this kind is cluster-scoped; components may only create namespaced objects",
        });
    }
    let api = ctx.resources.api(&resource, &o.id.namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    // Component objects go as the tenant's own ServiceAccount of the environment they were
    // rendered for, so the API server refuses whatever the render check might have missed.
    let identity = (o.component != BASELINE).then(|| identity.to_string());
    let mut attempt = 0;
    loop {
        let request = kube::core::Request::new(api.resource_url()).patch(
            &o.id.name,
            &params,
            &Patch::Apply(&o.object),
        );
        let result: Result<DynamicObject, kube::Error> =
            send_as(ctx.resources.client(), request, identity.as_deref()).await;
        match result {
            Ok(returned) => return Ok(serde_json::to_value(returned).unwrap_or(Value::Null)),
            // A RoleBinding created moments ago may not be in the authorizer's cache yet.
            Err(kube::Error::Api(s)) if s.code == 403 && retry_forbidden && attempt < 10 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
            }
            // The API server is shedding load: back off exponentially and try again.
            Err(kube::Error::Api(s)) if s.code == 429 && attempt < 8 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            Err(source) => {
                return Err(ClusterError::Object {
                    id: o.id.clone(),
                    what: "server-side apply failed",
                    source,
                });
            }
        }
    }
}

async fn wait_established(ctx: &Ctx<'_>, a: &Apply<'_>) -> Result<(), ClusterError> {
    let version = api_version(&a.object.object);
    let Some(resource) = ctx.resources.resolve(&version, &a.object.id.kind).await else {
        return Ok(());
    };
    let api = ctx.resources.api(&resource, "");
    let seconds = 60;
    for _ in 0..seconds * 4 {
        if let Ok(crd) = api.get(&a.object.id.name).await {
            let crd = serde_json::to_value(crd).unwrap_or(Value::Null);
            let established = crd["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            if established {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(ClusterError::CrdTimeout {
        id: a.object.id.clone(),
        seconds,
    })
}

enum Pruned {
    Deleted,
    Gone,
    Kept(&'static str),
}

async fn prune_one(
    ctx: &Ctx<'_>,
    entry: &Entry,
    tenant: &str,
    applyset: &str,
) -> Result<Pruned, ClusterError> {
    let resource = ctx.resources.require(&entry.id, &entry.api_version).await?;
    let api = ctx.resources.api(&resource, &entry.id.namespace);
    let object_err = |what, source| ClusterError::Object {
        id: entry.id.clone(),
        what,
        source,
    };
    let Some(live) = api
        .get_opt(&entry.id.name)
        .await
        .map_err(|e| object_err("reading before prune", e))?
    else {
        return Ok(Pruned::Gone);
    };
    let labels = live.metadata.labels.clone().unwrap_or_default();
    if labels.get(objects::LABEL_TENANT).map(String::as_str) != Some(tenant)
        || labels.get(objects::LABEL_PART_OF).map(String::as_str) != Some(applyset)
    {
        return Ok(Pruned::Kept(
            "no longer labelled as this tenant's; left in place",
        ));
    }
    let annotations = live.metadata.annotations.clone().unwrap_or_default();
    if annotations
        .get(objects::ANNOTATION_PRUNE)
        .map(String::as_str)
        == Some("disabled")
    {
        return Ok(Pruned::Kept("fief.dev/prune: disabled; left in place"));
    }
    let params = DeleteParams {
        preconditions: live.metadata.uid.clone().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    // Component objects are deleted as the tenant's ServiceAccount of their namespace.
    let identity = (!entry.component.is_empty() && entry.component != BASELINE)
        .then(|| super::tenant_identity(&entry.id.namespace));
    let request = kube::core::Request::new(api.resource_url()).delete(&entry.id.name, &params);
    let result: Result<serde_json::Value, kube::Error> =
        send_as(ctx.resources.client(), request, identity.as_deref()).await;
    match result {
        Ok(_) => Ok(Pruned::Deleted),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Pruned::Gone),
        Err(e) => Err(object_err("delete failed (kept in the inventory)", e)),
    }
}

/// Write the inventory unless it equals `previous` (steady state writes nothing).
async fn write_inventory(
    ctx: &Ctx<'_>,
    inv: &Inventory,
    previous: Option<&Inventory>,
) -> Result<(), ClusterError> {
    if previous == Some(inv) {
        return Ok(());
    }
    let ns = &ctx.options.agent_namespace;
    let cm = inv.to_configmap(ns);
    let name = objects::inventory_name(&inv.tenant);
    let api: Api<ConfigMap> = Api::namespaced(ctx.resources.client().clone(), ns);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&cm),
    )
    .await
    .map_err(|source| ClusterError::Unreachable {
        what: format!("writing inventory {ns}/{name}"),
        source,
    })?;
    Ok(())
}

async fn delete_inventory(ctx: &Ctx<'_>, tenant: &str) -> Result<(), ClusterError> {
    let ns = &ctx.options.agent_namespace;
    let name = objects::inventory_name(tenant);
    let api: Api<ConfigMap> = Api::namespaced(ctx.resources.client().clone(), ns);
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(ClusterError::Unreachable {
            what: format!("deleting inventory {ns}/{name}"),
            source,
        }),
    }
}
