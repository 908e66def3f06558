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

use super::inventory_store::{Inventories, Walk};
use super::{ClusterError, Resources};
use fief_core::inventory::Inventory;
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
///
/// The tenants are compared in the order of their names, each with its inventory as the walk
/// over every inventory reaches it ([`Walk`]): one inventory is held at a time. What each
/// tenant gives is kept in its place, so the outcome lists the tenants in `renders`' order.
pub async fn diff(
    resources: &Resources,
    renders: &[TenantRender],
    agent_namespace: &str,
    cluster: &str,
    guard: &PruneGuard,
    adopt: bool,
) -> Result<DiffOutcome, ClusterError> {
    let mut outcome = DiffOutcome::default();
    let mut previous = Previous::new(resources.client(), agent_namespace, renders).await?;
    let skipped = skipped_tenants(renders, cluster, &mut outcome);
    let scope: Vec<&TenantRender> = renders
        .iter()
        .filter(|r| r.is_ok() && !skipped.contains(&r.tenant.as_str()))
        .collect();
    let mut live = Live::new(resources, super::observe::tenant_selector(renders));
    live.read(&kinds_of(&scope)).await?;
    let mut order: Vec<usize> = (0..scope.len()).collect();
    order.sort_by(|a, b| scope[*a].tenant.cmp(&scope[*b].tenant));
    let mut parts: Vec<DiffOutcome> = scope.iter().map(|_| DiffOutcome::default()).collect();
    let mut tally = Tally::default();
    for i in order {
        let r = scope[i];
        let prev = previous.of(&r.tenant).await?;
        // A kind the render no longer has may still have objects to prune.
        if let Some(inv) = prev {
            let recorded = inv
                .entries
                .values()
                .map(|e| (e.api_version.clone(), e.id.kind.clone()))
                .collect();
            live.read(&recorded).await?;
        }
        let tenant = TenantDiff {
            resources,
            render: r,
            prev,
            live: &live.objects,
            unreadable: &live.unreadable,
            adopt,
        };
        tenant.diff(guard, &mut parts[i], &mut tally).await;
    }
    outcome.orphans = previous.rest().await?;
    outcome.errors.extend(live.errors.into_values());
    for part in parts {
        outcome.diffs.extend(part.diffs);
        outcome.errors.extend(part.errors);
        outcome.notes.extend(part.notes);
        outcome.adoptable.extend(part.adoptable);
    }
    tally.notes(&mut outcome);
    Ok(outcome)
}

/// The inventories, taken in the order of their tenants as the tenants in scope are compared:
/// the one compared now, and of the others only the orphans' names and sizes.
struct Previous {
    /// None: the agent namespace does not exist (no inventory).
    walk: Option<Walk>,
    /// The inventory of the tenant compared now.
    held: Inventories,
    /// Every rendered tenant: the inventory of any other is an orphan's.
    rendered: BTreeSet<String>,
    /// Tenants with an inventory and no tenant file, with the objects it holds.
    orphans: Vec<(String, usize)>,
}

impl Previous {
    /// Start the walk over the inventories of `namespace`.
    async fn new(
        client: &kube::Client,
        namespace: &str,
        renders: &[TenantRender],
    ) -> Result<Previous, ClusterError> {
        let mut walk = Walk::new(client, namespace);
        let walk = match walk.peek().await {
            Ok(_) => Some(walk),
            Err(e) if e.status_code() == Some(404) => None,
            Err(e) => return Err(e),
        };
        Ok(Previous {
            walk,
            held: Inventories::new(),
            rendered: renders.iter().map(|r| r.tenant.clone()).collect(),
            orphans: Vec::new(),
        })
    }

    /// The inventory of `tenant` (after every tenant asked for before), if it has a readable
    /// one; the one held before is dropped.
    async fn of(&mut self, tenant: &str) -> Result<Option<&Inventory>, ClusterError> {
        if !self.held.contains_key(tenant) {
            self.held = Inventories::new();
            while let Some(one) = self.next(Some(tenant)).await? {
                self.held = one;
            }
        }
        Ok(self.held.get(tenant).and_then(|i| i.as_ref().ok()))
    }

    /// The next inventory up to `last`'s, noting (and dropping) the orphans on the way.
    async fn next(&mut self, last: Option<&str>) -> Result<Option<Inventories>, ClusterError> {
        let Some(walk) = self.walk.as_mut() else {
            return Ok(None);
        };
        while let Some(one) = walk.next_upto(last).await? {
            let Some((tenant, inv)) = one.iter().next() else {
                continue;
            };
            if Some(tenant.as_str()) == last {
                return Ok(Some(one));
            }
            if !self.rendered.contains(tenant) {
                let objects = inv.as_ref().map_or(0, |i| i.entries.len());
                self.orphans.push((tenant.clone(), objects));
            }
        }
        Ok(None)
    }

    /// The orphans, once every inventory is read.
    async fn rest(mut self) -> Result<Vec<(String, usize)>, ClusterError> {
        self.held = Inventories::new();
        while self.next(None).await?.is_some() {}
        Ok(self.orphans)
    }
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

/// The kinds of the render.
fn kinds_of(scope: &[&TenantRender]) -> BTreeSet<(String, String)> {
    let mut kinds = BTreeSet::new();
    for r in scope {
        for o in &r.objects {
            kinds.insert((super::sync::api_version(&o.object), o.id.kind.clone()));
        }
    }
    kinds
}

/// The live objects of the kinds read so far (each read once, when a tenant first needs it).
struct Live<'a> {
    resources: &'a Resources,
    selector: String,
    /// By identity.
    objects: HashMap<ObjectId, Value>,
    /// Kinds the caller may not list.
    unreadable: BTreeSet<String>,
    /// Kinds read (or refused).
    read: BTreeSet<(String, String)>,
    /// Why a kind could not be compared, by kind: first among the outcome's errors, in the
    /// order of the kinds.
    errors: BTreeMap<(String, String), String>,
}

impl<'a> Live<'a> {
    fn new(resources: &'a Resources, selector: String) -> Live<'a> {
        Live {
            resources,
            selector,
            objects: HashMap::new(),
            unreadable: BTreeSet::new(),
            read: BTreeSet::new(),
            errors: BTreeMap::new(),
        }
    }

    /// Read the kinds of `kinds` not read yet ([`read_live`]).
    async fn read(&mut self, kinds: &BTreeSet<(String, String)>) -> Result<(), ClusterError> {
        let new: BTreeSet<(String, String)> = kinds.difference(&self.read).cloned().collect();
        if new.is_empty() {
            return Ok(());
        }
        let (objects, unreadable) =
            read_live(self.resources, &new, &self.selector, &mut self.errors).await?;
        self.objects.extend(objects);
        self.unreadable.extend(unreadable);
        self.read.extend(new);
        Ok(())
    }
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

impl Tally {
    /// The notes of what the tally counted, after the tenants' own.
    fn notes(self, outcome: &mut DiffOutcome) {
        if self.not_compared > 0 {
            outcome.notes.push(format!(
                "{} Secret(s) not compared: rendered without the age key, their values \
                 are unknown (give --age-key-file, SOPS_AGE_KEY_FILE or SOPS_AGE_KEY to compare them)",
                self.not_compared
            ));
        }
        if self.client_side > 0 {
            outcome.notes.push(format!(
                "{} object(s) compared client-side (rendered against the live fields fief sets; \
                 server defaults, admission and RBAC not predicted for them): {}",
                self.client_side,
                self.reasons.into_iter().collect::<Vec<_>>().join("; ")
            ));
        }
    }
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
/// kind the caller may not list (403) is an error line in `errors`, and its objects are
/// left out of the diff (the kinds returned); other failures end the diff.
async fn read_live(
    resources: &Resources,
    kinds: &BTreeSet<(String, String)>,
    selector: &str,
    errors: &mut BTreeMap<(String, String), String>,
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
                errors.insert((api_version.clone(), kind.clone()), format!(
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
