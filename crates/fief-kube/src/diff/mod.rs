//! Diff: what `fief apply` would change, without changing anything.
//!
//! In: rendered tenants (those of this cluster), inventories and live objects. Out: per
//! object a unified diff of the live object against a server-side dry-run sent as apply
//! sends the write (component objects as the tenant identity), or — when the caller cannot
//! dry-run (read-only rights) — against the rendered object, comparing the live object's
//! fields fief sets; every prune apply would do; errors (a refusal apply would hit) and
//! notes. Secrets redacted. Dry-run requests persist nothing.
//!
//! Here: the diff of every tenant and its prunes; one object compared in `object`, the
//! diff's text in `text`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::inventory_store::load_inventories;
use super::{ClusterError, Resources};
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::model::PruneGuard;
use fief_core::objects::{self, ObjectId};
use fief_core::plan;
use fief_core::render::TenantRender;

mod adopt;
mod object;
mod text;

use object::{Compared, DiffCtx, object_diff, pending_namespaces};
pub(crate) use text::SERVER_FIELDS;
pub use text::colourise;
use text::{normalise, to_yaml, unified};

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

/// What `diff` found.
#[derive(Debug, Default)]
pub struct DiffOutcome {
    /// Per-object differences, in tenant order.
    pub diffs: Vec<ObjectDiff>,
    /// Failures (including applies the API server would refuse), one line each.
    pub errors: Vec<String>,
    /// One-line notes for people (client-side fallback, skipped tenants).
    pub notes: Vec<String>,
    /// With `adopt`: the objects `fief apply --adopt` would take with no change
    /// (`tenant: Kind/namespace/name (from managers)`).
    pub adoptable: Vec<String>,
    /// Tenants with an inventory in the cluster and no tenant file in the repo, with the
    /// number of objects their inventory holds: `apply` reports them orphaned and prunes none.
    pub orphans: Vec<(String, usize)>,
}

/// Compute the differences for every tenant in scope (rendered cleanly, `spec.cluster` is
/// `cluster` or unset): updates and creates from a server-side dry-run (component objects as
/// the tenant identity, as apply sends them), and every prune apply would do (with a note
/// when `guard`, fief.yaml's mass-prune guard, would hold them). Objects the caller cannot
/// dry-run (read-only rights) are compared client-side, with a note. With `adopt`, objects
/// that exist and no inventory records are compared as `fief apply --adopt` compares them
/// ([`adopt::adoption_diff`]).
pub async fn diff(
    resources: &Resources,
    renders: &[TenantRender],
    agent_namespace: &str,
    cluster: &str,
    guard: &PruneGuard,
    adopt: bool,
) -> Result<DiffOutcome, ClusterError> {
    let mut outcome = DiffOutcome::default();
    let client = resources.client().clone();
    let inventories = match load_inventories(&client, agent_namespace).await {
        Ok(i) => i,
        Err(e) if e.status_code() == Some(404) => Default::default(),
        Err(e) => return Err(e),
    };
    let skipped = skipped_tenants(renders, cluster, &mut outcome);
    let scope: Vec<&TenantRender> = renders
        .iter()
        .filter(|r| r.is_ok() && !skipped.contains(&r.tenant.as_str()))
        .collect();
    let kinds = kinds_of(&scope, &inventories);
    let selector = super::observe::tenant_selector(renders);
    let (live, unreadable) = read_live(resources, &kinds, &selector, &mut outcome).await?;
    let mut tally = Tally::default();
    for r in scope {
        let prev: Option<&Inventory> = inventories.get(&r.tenant).and_then(|i| i.as_ref().ok());
        let tenant = TenantDiff {
            resources,
            render: r,
            prev,
            live: &live,
            unreadable: &unreadable,
            adopt,
        };
        tenant.diff(guard, &mut outcome, &mut tally).await;
    }
    if tally.not_compared > 0 {
        outcome.notes.push(format!(
            "{} Secret(s) not compared: rendered without the age key, their values \
             are unknown (give --age-key-file, SOPS_AGE_KEY_FILE or SOPS_AGE_KEY to compare them)",
            tally.not_compared
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
    if tally.client_side > 0 {
        outcome.notes.push(format!(
            "{} object(s) compared client-side (rendered against the live fields fief sets; \
             server defaults, admission and RBAC not predicted for them): {}",
            tally.client_side,
            tally.reasons.into_iter().collect::<Vec<_>>().join("; ")
        ));
    }
    Ok(outcome)
}

/// The tenants another cluster's agent owns (their `spec.cluster` is not `cluster`), noted
/// in `outcome`: apply skips them, so diff does too.
fn skipped_tenants<'r>(
    renders: &'r [TenantRender],
    cluster: &str,
    outcome: &mut DiffOutcome,
) -> Vec<&'r str> {
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
    skipped
}

/// The kinds of the render and of the inventory: a kind the render no longer has may
/// still have objects to prune.
fn kinds_of(
    scope: &[&TenantRender],
    inventories: &BTreeMap<String, Result<Inventory, InventoryError>>,
) -> BTreeSet<(String, String)> {
    let mut kinds = BTreeSet::new();
    for r in scope {
        for o in &r.objects {
            kinds.insert((super::sync::api_version(&o.object), o.id.kind.clone()));
        }
        if let Some(Ok(inv)) = inventories.get(&r.tenant) {
            for e in inv.entries.values() {
                kinds.insert((e.api_version.clone(), e.id.kind.clone()));
            }
        }
    }
    kinds
}

/// What the notes of a diff count over every tenant.
#[derive(Default)]
struct Tally {
    /// Objects compared client-side.
    client_side: usize,
    /// Secrets not compared (rendered without the age key).
    not_compared: usize,
    /// Why objects were compared client-side.
    reasons: BTreeSet<String>,
}

/// One tenant in scope and what is known of the cluster.
struct TenantDiff<'a> {
    resources: &'a Resources,
    render: &'a TenantRender,
    prev: Option<&'a Inventory>,
    live: &'a HashMap<ObjectId, Value>,
    unreadable: &'a BTreeSet<String>,
    /// Compare objects that exist and no inventory records as `--adopt` would.
    adopt: bool,
}

impl TenantDiff<'_> {
    /// The tenant's updates, creates and prunes, added to `outcome`.
    async fn diff(&self, guard: &PruneGuard, outcome: &mut DiffOutcome, tally: &mut Tally) {
        let r = self.render;
        let live_hashes = r
            .objects
            .iter()
            .filter_map(|o| {
                self.live
                    .get(&o.id)
                    .map(|l| (o.id.clone(), plan::live_hash(&o.object, l)))
            })
            .collect();
        let p = plan::plan(r, self.prev, &live_hashes, &PruneGuard::default(), true);
        // What apply (without --allow-mass-prune) would do about these prunes.
        let guarded = plan::plan(r, self.prev, &live_hashes, guard, false);
        if let Some(hold) = guarded.hold.filter(|_| !p.prune.is_empty()) {
            outcome.notes.push(format!(
                "tenant `{}`: apply would hold the prunes shown: {hold}",
                r.tenant
            ));
        }
        let mut ctx = DiffCtx {
            resources: self.resources,
            pending: pending_namespaces(&p),
            impersonate: HashMap::new(),
        };
        for a in p.stages.iter().flatten() {
            if self.unreadable.contains(&a.object.id.kind) {
                continue;
            }
            // Rendered without the age key: its values are unknown, so not compared.
            if self.live.contains_key(&a.object.id)
                && fief_core::secrets::holds_redacted_value(&a.object.object)
            {
                tally.not_compared += 1;
                continue;
            }
            let live = self.live.get(&a.object.id);
            if self.adopt && live.is_none() && !a.existed {
                let adopted = adopt::adoption_diff(self.resources, r, a.object).await;
                match adopted {
                    Ok(adopt::Adoptable::NotFound) => {}
                    Ok(adopt::Adoptable::Found(d)) => {
                        outcome.diffs.extend(d);
                        continue;
                    }
                    Ok(adopt::Adoptable::Equal(managers)) => {
                        let from = if managers.is_empty() {
                            String::new()
                        } else {
                            format!(" (from {})", managers.join(", "))
                        };
                        outcome
                            .adoptable
                            .push(format!("{}: {}{from}", r.tenant, a.object.id));
                        continue;
                    }
                    Err(e) => {
                        let e = r.secret_leaves.scrub(&e.to_string());
                        outcome.errors.push(format!("tenant `{}`: {e}", r.tenant));
                        continue;
                    }
                }
            }
            match object_diff(&mut ctx, r, a.object, live).await {
                Ok(Compared::Server(d)) => outcome.diffs.extend(d),
                Ok(Compared::Client(d, why)) => {
                    tally.client_side += 1;
                    tally.reasons.insert(why);
                    outcome.diffs.extend(d);
                }
                Err(e) => {
                    // The API server's answer may quote what was rendered.
                    let e = r.secret_leaves.scrub(&e.to_string());
                    outcome.errors.push(format!("tenant `{}`: {e}", r.tenant));
                }
            }
        }
        self.prune_diffs(&p, outcome);
    }

    /// Every prune of the plan that apply would do, as a deletion.
    fn prune_diffs(&self, p: &plan::Plan<'_>, outcome: &mut DiffOutcome) {
        for entry in &p.prune {
            let Some(current) = self.live.get(&entry.id) else {
                continue;
            };
            let keep = current["metadata"]["annotations"][objects::ANNOTATION_PRUNE] == "disabled";
            if keep || entry.created == Some(false) {
                continue;
            }
            let old = to_yaml(&normalise(current.clone()));
            outcome.diffs.push(ObjectDiff {
                tenant: self.render.tenant.clone(),
                id: entry.id.clone(),
                action: "delete",
                text: unified(&old, "", &entry.id),
            });
        }
    }
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
