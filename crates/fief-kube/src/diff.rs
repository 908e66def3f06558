//! Diff: what `fief apply` would change, without changing anything.
//!
//! In: rendered tenants (those of this cluster), inventories and live objects. Out: per
//! object a unified diff of the live object against a server-side dry-run sent as apply
//! sends the write (component objects as the tenant identity), or — when the caller cannot
//! dry-run (read-only rights) — against the rendered object, comparing the live object's
//! fields fief sets; every prune apply would do; errors (a refusal apply would hit) and
//! notes. Secrets redacted. Dry-run requests persist nothing.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::api::{Api, DynamicObject, Patch, PostParams};
use serde_json::{Value, json};
use similar::TextDiff;

use super::inventory_store::load_inventories;
use super::{ClusterError, FIELD_MANAGER, Resources, send_as};
use fief_core::inventory::Inventory;
use fief_core::model::BASELINE;
use fief_core::model::PruneGuard;
use fief_core::objects::{self, ObjectId};
use fief_core::plan;
use fief_core::redact::redact;
use fief_core::render::TenantRender;

/// One object's difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDiff {
    /// Tenant.
    pub tenant: String,
    /// The object.
    pub id: ObjectId,
    /// `create`, `update` or `delete`.
    pub action: &'static str,
    /// Unified diff text (redacted).
    pub text: String,
}

/// Metadata the server maintains; never part of a diff.
const SERVER_FIELDS: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

fn normalise(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in SERVER_FIELDS {
            meta.remove(f);
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

fn to_yaml(object: &Value) -> String {
    fief_core::yaml::to_string(&redact(object)).unwrap_or_default()
}

/// What `diff` found.
#[derive(Debug, Default)]
pub struct DiffOutcome {
    /// Per-object differences, in tenant order.
    pub diffs: Vec<ObjectDiff>,
    /// Failures (including applies the API server would refuse), one line each.
    pub errors: Vec<String>,
    /// One-line notes for people (client-side fallback, skipped tenants).
    pub notes: Vec<String>,
    /// Tenants with an inventory in the cluster and no tenant file in the repo, with the
    /// number of objects their inventory holds: `apply` reports them orphaned and prunes none.
    pub orphans: Vec<(String, usize)>,
}

/// How one object was compared.
enum Compared {
    /// By the API server (dry-run).
    Server(Option<ObjectDiff>),
    /// Client-side, and why.
    Client(Option<ObjectDiff>, String),
}

/// What diffing one tenant's objects shares.
struct DiffCtx<'a> {
    resources: &'a Resources,
    /// Namespaces whose baseline (Namespace, RBAC) this diff would create or change: the
    /// tenant identity's rights there do not exist yet.
    pending: BTreeSet<String>,
    /// Whether the caller may impersonate `fief-tenant`, by namespace.
    impersonate: HashMap<String, bool>,
}

/// Compute the differences for every tenant in scope (rendered cleanly, `spec.cluster` is
/// `cluster` or unset): updates and creates from a server-side dry-run (component objects as
/// the tenant identity, as apply sends them), and every prune apply would do (with a note
/// when `guard`, fief.yaml's mass-prune guard, would hold them). Objects the caller cannot
/// dry-run (read-only rights) are compared client-side, with a note.
pub async fn diff(
    resources: &Resources,
    renders: &[TenantRender],
    agent_namespace: &str,
    cluster: &str,
    guard: &PruneGuard,
) -> Result<DiffOutcome, ClusterError> {
    let mut outcome = DiffOutcome::default();
    let client = resources.client().clone();
    let inventories = match load_inventories(&client, agent_namespace).await {
        Ok(i) => i,
        Err(e) if e.status_code() == Some(404) => Default::default(),
        Err(e) => return Err(e),
    };
    let skipped: Vec<&str> = renders
        .iter()
        .filter(|r| r.cluster.as_deref().is_some_and(|c| c != cluster))
        .map(|r| r.tenant.as_str())
        .collect();
    if !skipped.is_empty() {
        outcome.notes.push(format!(
            "{} tenant(s) skipped: their spec.cluster is not `{cluster}` (apply skips them too): {}",
            skipped.len(),
            skipped.join(", ")
        ));
    }
    let scope: Vec<&TenantRender> = renders
        .iter()
        .filter(|r| r.is_ok() && !skipped.contains(&r.tenant.as_str()))
        .collect();
    // The kinds of the render and of the inventory: a kind the render no longer has may
    // still have objects to prune.
    let mut kinds = BTreeSet::new();
    for r in &scope {
        for o in &r.objects {
            kinds.insert((super::sync::api_version(&o.object), o.id.kind.clone()));
        }
        if let Some(Ok(inv)) = inventories.get(&r.tenant) {
            for e in inv.entries.values() {
                kinds.insert((e.api_version.clone(), e.id.kind.clone()));
            }
        }
    }
    let selector = super::observe::tenant_selector(renders);
    let (live, unreadable) = read_live(resources, &kinds, &selector, &mut outcome).await?;
    let mut client_side = 0;
    let mut not_compared = 0;
    let mut reasons = BTreeSet::new();
    for r in scope {
        let prev: Option<&Inventory> = inventories.get(&r.tenant).and_then(|i| i.as_ref().ok());
        let live_hashes = r
            .objects
            .iter()
            .filter_map(|o| {
                live.get(&o.id)
                    .map(|l| (o.id.clone(), plan::live_hash(&o.object, l)))
            })
            .collect();
        let p = plan::plan(r, prev, &live_hashes, &PruneGuard::default(), true);
        // What apply (without --allow-mass-prune) would do about these prunes.
        let guarded = plan::plan(r, prev, &live_hashes, guard, false);
        if let Some(hold) = guarded.hold.filter(|_| !p.prune.is_empty()) {
            outcome.notes.push(format!(
                "tenant `{}`: apply would hold the prunes shown: {hold}",
                r.tenant
            ));
        }
        let mut ctx = DiffCtx {
            resources,
            pending: pending_namespaces(&p),
            impersonate: HashMap::new(),
        };
        for a in p.stages.iter().flatten() {
            if unreadable.contains(&a.object.id.kind) {
                continue;
            }
            // Rendered without the age key: its values are unknown, so not compared.
            if live.contains_key(&a.object.id)
                && fief_core::secrets::holds_redacted_value(&a.object.object)
            {
                not_compared += 1;
                continue;
            }
            match object_diff(&mut ctx, r, a.object, live.get(&a.object.id)).await {
                Ok(Compared::Server(d)) => outcome.diffs.extend(d),
                Ok(Compared::Client(d, why)) => {
                    client_side += 1;
                    reasons.insert(why);
                    outcome.diffs.extend(d);
                }
                Err(e) => outcome.errors.push(format!("tenant `{}`: {e}", r.tenant)),
            }
        }
        for entry in &p.prune {
            let Some(current) = live.get(&entry.id) else {
                continue;
            };
            let keep = current["metadata"]["annotations"][objects::ANNOTATION_PRUNE] == "disabled";
            if keep || entry.created == Some(false) {
                continue;
            }
            let old = to_yaml(&normalise(current.clone()));
            outcome.diffs.push(ObjectDiff {
                tenant: r.tenant.clone(),
                id: entry.id.clone(),
                action: "delete",
                text: unified(&old, "", &entry.id),
            });
        }
    }
    if not_compared > 0 {
        outcome.notes.push(format!(
            "{not_compared} Secret(s) not compared: rendered without the age key, their values \
             are unknown (give --age-key-file, SOPS_AGE_KEY_FILE or SOPS_AGE_KEY to compare them)"
        ));
    }
    let rendered: BTreeSet<&str> = renders.iter().map(|r| r.tenant.as_str()).collect();
    outcome.orphans = inventories
        .iter()
        .filter(|(tenant, _)| !rendered.contains(tenant.as_str()))
        .map(|(tenant, inv)| {
            let objects = inv.as_ref().map_or(0, |i| i.entries.len());
            (tenant.clone(), objects)
        })
        .collect();
    if client_side > 0 {
        outcome.notes.push(format!(
            "{client_side} object(s) compared client-side (rendered against the live fields fief sets; \
             server defaults, admission and RBAC not predicted for them): {}",
            reasons.into_iter().collect::<Vec<_>>().join("; ")
        ));
    }
    Ok(outcome)
}

/// The live objects of these kinds matching `selector`, by identity (one LIST per kind). A
/// kind the caller may not list (403) is an error line of the outcome, and its objects are
/// left out of the diff (the kinds returned); other failures end the diff.
async fn read_live(
    resources: &Resources,
    kinds: &BTreeSet<(String, String)>,
    selector: &str,
    outcome: &mut DiffOutcome,
) -> Result<(HashMap<ObjectId, Value>, BTreeSet<String>), ClusterError> {
    let mut live = HashMap::new();
    let mut unreadable = BTreeSet::new();
    for (api_version, kind) in kinds {
        let Some(resource) = resources.resolve(api_version, kind).await else {
            continue;
        };
        match super::list_all(resources, &resource, selector).await {
            Ok(items) => {
                for item in items {
                    live.insert(super::live_id(&resource, &item), item);
                }
            }
            Err(kube::Error::Api(s)) if s.code == 403 => {
                unreadable.insert(kind.clone());
                outcome.errors.push(format!(
                    "cannot compare {kind} objects: list {kind} ({api_version}): the API server answered 403 Forbidden: {}; \
                     diff needs get/list on every kind fief applies",
                    s.message
                ));
            }
            Err(source) => {
                return Err(ClusterError::request(
                    format!("list {kind} ({api_version}) where {selector}"),
                    source,
                ));
            }
        }
    }
    Ok((live, unreadable))
}

/// Namespaces whose Namespace or baseline RBAC the plan applies.
fn pending_namespaces(p: &plan::Plan<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for a in &p.stages[0] {
        if a.object.id.kind == "Namespace" {
            out.insert(a.object.id.name.clone());
        }
    }
    for a in &p.stages[plan::STAGE_BASELINE_RBAC] {
        out.insert(a.object.id.namespace.clone());
    }
    out
}

/// Whether the caller may impersonate the tenant identity of `namespace` (one
/// SelfSubjectAccessReview per namespace).
async fn can_impersonate(ctx: &mut DiffCtx<'_>, namespace: &str) -> bool {
    if let Some(&known) = ctx.impersonate.get(namespace) {
        return known;
    }
    let review: SelfSubjectAccessReview = match serde_json::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "verb": "impersonate", "resource": "serviceaccounts",
            "namespace": namespace, "name": super::TENANT_SERVICE_ACCOUNT,
        }},
    })) {
        Ok(r) => r,
        Err(_) => return false,
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(ctx.resources.client().clone());
    let allowed = api
        .create(&PostParams::default(), &review)
        .await
        .ok()
        .and_then(|r| r.status)
        .is_some_and(|s| s.allowed);
    ctx.impersonate.insert(namespace.to_string(), allowed);
    allowed
}

async fn object_diff(
    ctx: &mut DiffCtx<'_>,
    render: &TenantRender,
    o: &fief_core::render::RenderedObject,
    live: Option<&Value>,
) -> Result<Compared, ClusterError> {
    let version = super::sync::api_version(&o.object);
    let resource = ctx.resources.require(&o.id, &version).await?;
    // List items carry no apiVersion/kind; take them from the rendered object.
    let before = live.cloned().map(|mut l| {
        if let Some(map) = l.as_object_mut() {
            map.insert("apiVersion".into(), Value::String(version.clone()));
            map.insert("kind".into(), Value::String(o.id.kind.clone()));
        }
        l
    });
    let component = o.component != BASELINE;
    let ns = render
        .namespaces
        .get(&o.env)
        .map(String::as_str)
        .unwrap_or(o.id.namespace.as_str());
    if component && !can_impersonate(ctx, ns).await {
        let why = format!(
            "the caller may not impersonate {}",
            super::tenant_identity("<namespace>")
        );
        return Ok(Compared::Client(client_side(render, o, before), why));
    }
    let identity = component.then(|| super::tenant_identity(ns));
    let api = ctx.resources.api(&resource, &o.id.namespace);
    let params = super::forced_apply(FIELD_MANAGER).dry_run();
    let request = kube::core::Request::new(api.resource_url()).patch(
        &o.id.name,
        &params,
        &Patch::Apply(&o.object),
    );
    let result: Result<DynamicObject, kube::Error> =
        send_as(ctx.resources.client(), request, identity.as_deref()).await;
    let after = match result {
        Ok(obj) => normalise(serde_json::to_value(obj).unwrap_or(Value::Null)),
        // The namespace does not exist yet (a new tenant): the object will be created as is.
        Err(kube::Error::Api(s)) if s.code == 404 && live.is_none() => normalise(o.object.clone()),
        // The tenant identity's rights come with this very apply (baseline RBAC pending).
        Err(kube::Error::Api(s)) if s.code == 403 && component && ctx.pending.contains(ns) => {
            let why = "the tenant identity's RoleBinding is not applied yet".to_string();
            return Ok(Compared::Client(client_side(render, o, before), why));
        }
        // The caller cannot write (a read-only user): dry-run is authorized as the write.
        Err(kube::Error::Api(s)) if s.code == 403 && !component => {
            let why = "the caller may not dry-run the baseline (read-only rights)".to_string();
            return Ok(Compared::Client(client_side(render, o, before), why));
        }
        Err(source) => {
            let who = identity.as_deref().unwrap_or("the caller");
            return Err(ClusterError::request(
                format!(
                    "dry-run apply {} (as {who}); apply would fail the same way",
                    o.id
                ),
                source,
            ));
        }
    };
    let before = before.map(normalise);
    if before.as_ref() == Some(&after) {
        return Ok(Compared::Server(None));
    }
    Ok(Compared::Server(Some(text_diff(
        render,
        o,
        before.as_ref(),
        &after,
    ))))
}

/// The rendered object against the live object projected on the fields fief sets.
fn client_side(
    render: &TenantRender,
    o: &fief_core::render::RenderedObject,
    live: Option<Value>,
) -> Option<ObjectDiff> {
    let after = normalise(o.object.clone());
    let before = live.map(|l| normalise(plan::projection(&o.object, &l)));
    if before.as_ref() == Some(&after) {
        return None;
    }
    Some(text_diff(render, o, before.as_ref(), &after))
}

fn text_diff(
    render: &TenantRender,
    o: &fief_core::render::RenderedObject,
    before: Option<&Value>,
    after: &Value,
) -> ObjectDiff {
    let old = before.map(to_yaml).unwrap_or_default();
    let new = to_yaml(after);
    let mut text = unified(&old, &new, &o.id);
    if old == new {
        text = format!("{} (Secret values differ; redacted)\n", o.id);
    }
    ObjectDiff {
        tenant: render.tenant.clone(),
        id: o.id.clone(),
        action: if before.is_some() { "update" } else { "create" },
        text,
    }
}

fn unified(old: &str, new: &str, id: &ObjectId) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("live/{id}"), &format!("rendered/{id}"))
        .to_string()
}

/// ANSI colours for a unified diff (for terminals).
pub fn colourise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let colour = if line.starts_with("+++") || line.starts_with("---") {
            "\x1b[1m"
        } else if line.starts_with('+') {
            "\x1b[32m"
        } else if line.starts_with('-') {
            "\x1b[31m"
        } else if line.starts_with("@@") {
            "\x1b[36m"
        } else {
            ""
        };
        if colour.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(colour);
            out.push_str(line.trim_end_matches('\n'));
            out.push_str("\x1b[0m\n");
        }
    }
    out
}
