//! Batched sync: the whole repo's tenants, [`BATCH`] at a time, as one pipeline.
//!
//! In: the tenant names in scope and a function that renders some of them. Out: one
//! [`TenantReport`] per tenant (and per orphaned inventory), as [`super::sync::sync`] gives.
//! The tenants go in the order of their names, and so do the inventories as they are listed
//! ([`Walk`]): each batch takes its tenants' inventories as it comes, marks the orphaned ones
//! it passes, and hands each tenant's inventory to its sync, which drops it once done. A pass
//! holds at most [`inventories_held_max`] inventories, whatever the fleet's size. Past one
//! batch, the metadata of the recorded objects is listed once per kind for all tenants (one
//! paged metadata-only LIST, the first time a batch needs that kind: [`Prefetch`]) while the
//! batch renders; each batch then reads only the bodies of objects that moved. Rendering a
//! batch (on a blocking thread) and reading its live state overlap with the previous batch's
//! last syncs, and tenants flow into one pool of `concurrency` syncs with no barrier between
//! batches; memory holds only the batches in flight, and each tenant's render only until its
//! sync ends. A tenant whose inventory recorded its current input hash, with a settled status
//! and every recorded object as fief left it (by that metadata pass), is not rendered at all:
//! a no-op pass renders nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::stream::{self, Stream, StreamExt};

use super::inventory_store::{Inventories, Walk};
use super::observe::Prefetch;
use super::sync::{Ctx, SyncOptions, TenantReport, now_rfc3339, orphans, sync_one};
use super::{ClusterError, Resources};
use fief_core::fleet::BatchRenders;
use fief_core::model::is_dns_label;
use fief_core::objects::{self, ObjectId};
use fief_core::render::TenantRender;
use fief_core::status;

/// Tenants rendered and observed at a time by [`sync_batched`]. The next batch is rendered
/// while the current one's last tenants sync, and each tenant's render is dropped when its
/// sync ends, so a pass holds the objects of the tenants syncing and of about one batch
/// besides; a small batch holds less at the same rate, since a cold pass waits on the API
/// server (a batch renders in a fraction of the time its tenants take to sync) and a no-op
/// pass renders nothing.
pub const BATCH: usize = 8;

/// The most inventories [`sync_batched`] holds at once with `concurrency` tenants syncing
/// at once: a batch's ([`BATCH`]) while it is made and its tenants wait for their turn, and
/// one for each tenant syncing (each is dropped when its sync ends), whatever the number of
/// tenants. A tenant rendered but not synced yet, or one that stands unrendered, holds none.
pub fn inventories_held_max(concurrency: usize) -> usize {
    BATCH + concurrency.max(1)
}

/// Batches in the making (rendered, then observed) at once: the next one starts once every
/// tenant of the current one is in the pool, while its last tenants sync. More look-ahead
/// did not make a 1,000-tenant no-op pass faster (it is render-bound) and held ~20 MiB more.
const BATCHES_AHEAD: usize = 1;

/// The longest label selector naming the tenants that a metadata LIST carries in its URL
/// (about 2,000 tenants of 14-character names). A request URL is at most 65,534 bytes (the
/// `http` crate's limit), and the query string encodes each `,` between names as `%2C`, so a
/// selector takes up to twice its length there. Past this, one selector for every fief
/// object lists each kind once: a LIST with a label selector costs the API server every
/// object of the kind it holds anyway, so more, shorter selectors would cost it more.
const SELECTOR_MAX: usize = 30 * 1024;

/// One rendered, observed batch; its tenants' syncs share it.
struct Batch {
    /// The batch's renders, until each goes to its tenant's turn.
    renders: Vec<TenantRender>,
    live: HashMap<ObjectId, String>,
    /// Tenants whose last sync stands with no render (see `core::status::stands_unrendered`).
    unchanged: Vec<TenantReport>,
    /// The batch's inventories, until each goes to its tenant's turn.
    inventories: Inventories,
}

/// One tenant's turn in the pool: a sync holds its tenant's render and inventory, both
/// dropped when it ends (the batch's live state stays until its last tenant's turn ends).
enum Turn {
    Sync(Arc<Batch>, Box<TenantRender>, Inventories),
    Unchanged(Box<TenantReport>),
}

/// Render `names` on a blocking thread (none: nothing to render, not the whole repo).
async fn render_some(renders: &Arc<BatchRenders>, names: Vec<String>) -> Vec<TenantRender> {
    if names.is_empty() {
        return Vec::new();
    }
    let renders = Arc::clone(renders);
    match tokio::task::spawn_blocking(move || renders.batch(&names)).await {
        Ok(renders) => renders,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled: only when the runtime shuts down, and then nothing is synced.
        Err(_) => Vec::new(),
    }
}

/// [`super::sync::sync`] a [`BATCH`] of tenants at a time, in the order of their names:
/// `renders` gives the named tenants' renders (on a blocking thread); each batch takes its
/// inventories from the walk over every inventory, is rendered, observed (live hashes of its
/// objects only) and its tenants synced, and dropped once they are done, so memory holds a
/// few batches' objects and at most [`inventories_held_max`] inventories rather than the
/// whole repo's. The next batches are rendered and observed while the current one syncs.
/// Orphans (when `report_orphans`) are marked as the walk passes them. Reports sorted by
/// tenant.
///
/// `reusable` names the tenants whose last successful render may stand in for a new one
/// (`core::pipeline::reuse_candidates`), with their current input hash: such a tenant whose
/// inventory recorded that hash, whose status is settled and whose recorded objects the
/// metadata pass finds exactly as fief left them is not rendered at all (its report says
/// every object unchanged). Every other tenant is rendered and synced.
pub async fn sync_batched(
    resources: &Resources,
    names: &[String],
    renders: Arc<BatchRenders>,
    reusable: &BTreeMap<String, String>,
    known: &BTreeSet<String>,
    report_orphans: bool,
    options: &SyncOptions,
) -> Result<Vec<TenantReport>, ClusterError> {
    let client = resources.client().clone();
    super::observe::ensure_namespace(&client, &options.agent_namespace).await?;
    // In the order the inventories are listed in, each tenant once.
    let mut names = names.to_vec();
    names.sort();
    names.dedup();
    let mut walk = Walk::new(&client, &options.agent_namespace);
    // Inventories that cannot be listed fail the pass before any tenant is synced.
    walk.peek().await?;
    let now = now_rfc3339();
    let selector = tenant_selector(&names);
    let batcher = Batcher {
        resources,
        options,
        now: now.clone(),
        reusable,
        prefetch: Prefetch::new(&selector),
        many: names.len() > BATCH,
        renders,
        walk: tokio::sync::Mutex::new(walk),
        known: report_orphans.then_some(known),
        orphaned: Mutex::new(Vec::new()),
        no_live: HashMap::new(),
    };
    let batches = stream::iter(names.chunks(BATCH))
        .map(|chunk| batcher.batch(chunk))
        .buffered(BATCHES_AHEAD);
    // A failed read of a batch's inventories or live state stops the later batches; the sync
    // ends with that error, as one sync would.
    let failure: Mutex<Option<ClusterError>> = Mutex::new(None);
    let mut reports: Vec<TenantReport> = turns(batches, &failure)
        .map(|turn| take_turn(resources, options, now.clone(), turn))
        .buffer_unordered(options.concurrency.max(1))
        .inspect(|report| {
            if let Some(tx) = &options.progress {
                let _ = tx.send(report.clone());
            }
        })
        .collect()
        .await;
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    batcher.rest().await?;
    reports.extend(batcher.orphaned.into_inner().unwrap_or_default());
    reports.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    Ok(reports)
}

/// The label selector of the metadata pass. Past one batch, the metadata of every kind is
/// listed once for all the tenants (while the first batch renders) rather than once per
/// batch. The selector names the tenants (about 12 KB at 1,000 tenants), so other repos' and
/// other tools' objects in the cluster are not listed; past [`SELECTOR_MAX`] bytes, every
/// object with the tenant label is.
fn tenant_selector(names: &[String]) -> String {
    let valid: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| is_dns_label(n))
        .collect();
    let named = format!("{} in ({})", objects::LABEL_TENANT, valid.join(","));
    if named.len() > SELECTOR_MAX {
        objects::LABEL_TENANT.to_string()
    } else {
        named
    }
}

/// What every batch of one [`sync_batched`] shares: it makes each [`Batch`].
struct Batcher<'a> {
    resources: &'a Resources,
    options: &'a SyncOptions,
    now: String,
    reusable: &'a BTreeMap<String, String>,
    /// The metadata pass, a kind at a time as batches need them.
    prefetch: Prefetch,
    /// More than one batch: the metadata pass is made for every batch.
    many: bool,
    /// The renders of each batch.
    renders: Arc<BatchRenders>,
    /// Every inventory, in the order of the tenants' names.
    walk: tokio::sync::Mutex<Walk>,
    /// Every tenant file in the repo, when orphans are reported.
    known: Option<&'a BTreeSet<String>>,
    /// The orphans' reports.
    orphaned: Mutex<Vec<TenantReport>>,
    /// Marking an orphan reads no live object.
    no_live: HashMap<ObjectId, String>,
}

impl Batcher<'_> {
    /// Whether a tenant recorded its current inputs, so it may need no render: such tenants
    /// wait for the metadata pass; the others are rendered at once.
    fn may_stand(&self, inventories: &Inventories, t: &String) -> bool {
        self.reusable.get(t).is_some_and(
            |inputs| matches!(inventories.get(t), Some(Ok(inv)) if inv.status.inputs == *inputs),
        )
    }

    /// The inventories of `chunk` (sorted, after every tenant of the batches before): taken
    /// from the walk up to its last tenant; those of other tenants on the way are marked
    /// orphaned ([`Batcher::orphan`]) or dropped.
    async fn read(&self, chunk: &[String]) -> Result<Inventories, ClusterError> {
        let mut mine = Inventories::new();
        let Some(last) = chunk.last() else {
            return Ok(mine);
        };
        let mut walk = self.walk.lock().await;
        while let Some(one) = walk.next_upto(Some(last)).await? {
            match one.keys().next() {
                Some(t) if chunk.binary_search(t).is_ok() => mine.append(one),
                _ => self.orphan(one).await,
            }
        }
        Ok(mine)
    }

    /// Mark an inventory orphaned when its tenant's file is gone from git and orphans are
    /// reported; otherwise (a tenant out of scope) it is only dropped.
    async fn orphan(&self, one: Inventories) {
        let Some(known) = self.known else { return };
        let ctx = Ctx {
            resources: self.resources,
            live: &self.no_live,
            options: self.options,
            now: self.now.clone(),
        };
        let reports = orphans(&ctx, &one, known).await;
        if let Ok(mut orphaned) = self.orphaned.lock() {
            orphaned.extend(reports);
        }
    }

    /// The inventories after the last tenant's, when orphans are reported.
    async fn rest(&self) -> Result<(), ClusterError> {
        if self.known.is_none() {
            return Ok(());
        }
        let mut walk = self.walk.lock().await;
        while let Some(one) = walk.next().await? {
            self.orphan(one).await;
        }
        Ok(())
    }

    /// Read, render and observe one chunk of tenants: those that must render while the
    /// metadata pass lists the kinds their inventories record, then those the pass does not
    /// find exactly as fief left them.
    async fn batch(&self, chunk: &[String]) -> Result<Batch, ClusterError> {
        let inventories = self.read(chunk).await?;
        let (maybe, must): (Vec<String>, Vec<String>) = chunk
            .iter()
            .cloned()
            .partition(|t| self.may_stand(&inventories, t));
        let prefetch = (self.many || !maybe.is_empty()).then_some(&self.prefetch);
        let listed = async {
            let Some(p) = prefetch else { return Ok(()) };
            let recorded = inventories
                .values()
                .filter_map(|i| i.as_ref().ok())
                .flat_map(|i| i.entries.values());
            p.ensure(self.resources, recorded).await
        };
        let (mut renders, listed) = futures::join!(render_some(&self.renders, must), listed);
        listed?;
        let (unchanged, redo) = self.sort_out(&inventories, maybe, prefetch);
        renders.extend(render_some(&self.renders, redo).await);
        let live =
            super::observe::observe_live(self.resources, &renders, &inventories, false, prefetch)
                .await?;
        Ok(Batch {
            renders,
            live,
            unchanged,
            inventories,
        })
    }

    /// Of the tenants that may stand unrendered: the reports of those whose last sync stands
    /// (by the metadata pass), and the names of the others, to render.
    fn sort_out(
        &self,
        inventories: &Inventories,
        maybe: Vec<String>,
        prefetch: Option<&Prefetch>,
    ) -> (Vec<TenantReport>, Vec<String>) {
        let mut unchanged = Vec::new();
        let mut redo = Vec::new();
        for t in maybe {
            let stands = match (inventories.get(&t), self.reusable.get(&t), prefetch) {
                (Some(Ok(inv)), Some(inputs), Some(p)) => {
                    status::stands_unrendered(inv, inputs, |e| p.unchanged(e))
                }
                _ => false,
            };
            match inventories.get(&t) {
                Some(Ok(inv)) if stands => unchanged.push(status::unchanged_report(inv)),
                _ => redo.push(t),
            }
        }
        (unchanged, redo)
    }
}

/// The batches' tenants as one stream of turns (each batch's unchanged tenants first, each
/// sync with its tenant's inventory; those of the unchanged ones are dropped). A batch that
/// failed ends the stream, its error kept in `failure`.
fn turns<'a>(
    batches: impl Stream<Item = Result<Batch, ClusterError>> + 'a,
    failure: &'a Mutex<Option<ClusterError>>,
) -> impl Stream<Item = Turn> + 'a {
    batches
        .scan((), |(), batch| {
            let next = match batch {
                Ok(b) => Some(b),
                Err(e) => {
                    if let Ok(mut f) = failure.lock() {
                        f.get_or_insert(e);
                    }
                    None
                }
            };
            futures::future::ready(next)
        })
        .flat_map(|mut b| {
            let mut inventories = std::mem::take(&mut b.inventories);
            let unchanged = std::mem::take(&mut b.unchanged)
                .into_iter()
                .map(|r| Turn::Unchanged(Box::new(r)));
            let renders = std::mem::take(&mut b.renders);
            let b = Arc::new(b);
            let syncs: Vec<Turn> = renders
                .into_iter()
                .map(|r| {
                    let inventory = inventories.take(&r.tenant);
                    Turn::Sync(Arc::clone(&b), Box::new(r), inventory)
                })
                .collect();
            stream::iter(unchanged.chain(syncs).collect::<Vec<_>>())
        })
}

/// One tenant's turn: its report as it stands, or its sync against its batch's live state.
async fn take_turn(
    resources: &Resources,
    options: &SyncOptions,
    now: String,
    turn: Turn,
) -> TenantReport {
    let (b, render, inventory) = match turn {
        Turn::Unchanged(report) => return *report,
        Turn::Sync(b, render, inventory) => (b, render, inventory),
    };
    let ctx = Ctx {
        resources,
        live: &b.live,
        options,
        now,
    };
    sync_one(&ctx, &render, &inventory).await.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The selector's length in a query string (`form_urlencoded`: letters, digits and `*-._`
    /// as they are, a space as `+`, every other byte as `%XX`).
    fn encoded_len(s: &str) -> usize {
        s.bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' | b' ' => 1,
                _ => 3,
            })
            .sum()
    }

    #[test]
    fn the_metadata_selector_always_fits_in_a_request_url() {
        for len in [1, 14, 63] {
            for count in [10, 1_000, 2_000, 2_100, 4_000, 5_000, 20_000] {
                let names: Vec<String> = (0..count)
                    .map(|i| format!("{i:0len$}").chars().rev().take(len).collect())
                    .collect();
                let selector = tenant_selector(&names);
                assert!(
                    encoded_len(&selector) + 1024 < 65_534,
                    "{count} names of {len}: {} bytes encoded",
                    encoded_len(&selector)
                );
            }
        }
    }

    #[test]
    fn a_fleet_that_fits_is_named_and_a_larger_one_is_selected_by_the_tenant_label() {
        let names: Vec<String> = (0..100).map(|i| format!("tenant-{i:05}")).collect();
        assert!(tenant_selector(&names).starts_with("fief.dev/tenant in (tenant-00000,"));
        let names: Vec<String> = (0..10_000).map(|i| format!("tenant-{i:05}")).collect();
        assert_eq!(tenant_selector(&names), "fief.dev/tenant");
    }
}
