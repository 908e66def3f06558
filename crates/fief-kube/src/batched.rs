//! Batched sync: the whole repo's tenants, [`BATCH`] at a time, as one pipeline.
//!
//! In: the tenant names in scope and a function that renders some of them. Out: one
//! [`TenantReport`] per tenant (and per orphaned inventory), as [`super::sync::sync`] gives.
//! Past one batch, the metadata of the recorded objects is listed once for all tenants (one
//! paged metadata-only LIST per kind) while the first batch renders; each batch then reads
//! only the bodies of objects that moved. Rendering a batch (on a blocking thread) and reading
//! its live state overlap with the previous batch's last syncs, and tenants flow into one pool of
//! `concurrency` syncs with no barrier between batches; memory holds only the few batches in
//! flight. A tenant whose inventory recorded its current input hash, with a settled status
//! and every recorded object as fief left it (by that metadata pass), is not rendered at all:
//! a no-op pass renders nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::stream::{self, Stream, StreamExt};

use super::observe::{Prefetch, prefetch};
use super::sync::{ClusterState, Ctx, SyncOptions, TenantReport, now_rfc3339, orphans, sync_one};
use super::{ClusterError, Resources};
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::model::is_dns_label;
use fief_core::objects::{self, ObjectId};
use fief_core::render::TenantRender;
use fief_core::status;

/// Tenants rendered and observed at a time by [`sync_batched`].
pub const BATCH: usize = 50;

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
    renders: Vec<TenantRender>,
    live: HashMap<ObjectId, String>,
    /// Tenants whose last sync stands with no render (see `core::status::stands_unrendered`).
    unchanged: Vec<TenantReport>,
}

/// One tenant's turn in the pool.
enum Turn {
    Sync(Arc<Batch>, usize),
    Unchanged(Box<TenantReport>),
}

/// Render `names` on a blocking thread (none: nothing to render, not the whole repo).
async fn render_some<R>(render: &Arc<R>, names: Vec<String>) -> Vec<TenantRender>
where
    R: Fn(&[String]) -> Vec<TenantRender> + Send + Sync + 'static,
{
    if names.is_empty() {
        return Vec::new();
    }
    let render = Arc::clone(render);
    match tokio::task::spawn_blocking(move || render(&names)).await {
        Ok(renders) => renders,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled: only when the runtime shuts down, and then nothing is synced.
        Err(_) => Vec::new(),
    }
}

/// [`super::sync::sync`] a [`BATCH`] of tenants at a time: `render` renders the named
/// tenants (on a blocking thread); each batch is rendered, observed (live hashes of its
/// objects only) and its tenants synced, and dropped once they are done, so memory holds a
/// few batches' objects rather than the whole repo's. The next batches are rendered and
/// observed while the current one syncs. The inventories are read once. Orphans (when
/// `report_orphans`) are reported after the last batch. Reports sorted by tenant.
///
/// `reusable` names the tenants whose last successful render may stand in for a new one
/// (`core::pipeline::reuse_candidates`), with their current input hash: such a tenant whose
/// inventory recorded that hash, whose status is settled and whose recorded objects the
/// metadata pass finds exactly as fief left them is not rendered at all (its report says
/// every object unchanged). Every other tenant is rendered and synced.
pub async fn sync_batched<R>(
    resources: &Resources,
    names: &[String],
    render: R,
    reusable: &BTreeMap<String, String>,
    known: &BTreeSet<String>,
    report_orphans: bool,
    options: &SyncOptions,
) -> Result<Vec<TenantReport>, ClusterError>
where
    R: Fn(&[String]) -> Vec<TenantRender> + Send + Sync + 'static,
{
    let client = resources.client().clone();
    super::observe::ensure_namespace(&client, &options.agent_namespace).await?;
    let state = ClusterState {
        inventories: super::inventory_store::load_inventories(&client, &options.agent_namespace)
            .await?,
        live: HashMap::new(),
    };
    let inventories = &state.inventories;
    let batcher = Batcher {
        resources,
        names,
        reusable,
        inventories,
        selector: tenant_selector(names),
        prefetched: tokio::sync::OnceCell::new(),
        many: names.len() > BATCH,
        render: Arc::new(render),
    };
    let now = now_rfc3339();
    let batches = stream::iter(names.chunks(BATCH))
        .map(|chunk| batcher.batch(chunk))
        .buffered(BATCHES_AHEAD);
    // A failed read of a batch's live state stops the later batches; the sync ends with that
    // error, as one sync would.
    let failure: Mutex<Option<ClusterError>> = Mutex::new(None);
    let mut reports: Vec<TenantReport> = turns(batches, &failure)
        .map(|turn| take_turn(resources, options, inventories, now.clone(), turn))
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
    if report_orphans {
        let ctx = Ctx {
            resources,
            live: &state.live,
            options,
            now,
        };
        reports.extend(orphans(&ctx, inventories, known).await);
    }
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
struct Batcher<'a, R> {
    resources: &'a Resources,
    /// Every tenant in scope (the metadata pass covers them all).
    names: &'a [String],
    reusable: &'a BTreeMap<String, String>,
    inventories: &'a BTreeMap<String, Result<Inventory, InventoryError>>,
    selector: String,
    /// The metadata pass, made by the first batch that needs it.
    prefetched: tokio::sync::OnceCell<Prefetch>,
    /// More than one batch: the metadata pass is made for every batch.
    many: bool,
    render: Arc<R>,
}

impl<R> Batcher<'_, R>
where
    R: Fn(&[String]) -> Vec<TenantRender> + Send + Sync + 'static,
{
    /// Whether a tenant recorded its current inputs, so it may need no render: such tenants
    /// wait for the metadata pass; the others are rendered at once.
    fn may_stand(&self, t: &String) -> bool {
        self.reusable.get(t).is_some_and(
            |inputs| matches!(self.inventories.get(t), Some(Ok(inv)) if inv.status.inputs == *inputs),
        )
    }

    /// The metadata pass, when this batch needs it (more than one batch, or tenants that may
    /// stand unrendered); made once.
    async fn prefetch(&self, needed: bool) -> Result<Option<&Prefetch>, ClusterError> {
        if !self.many && !needed {
            return Ok(None);
        }
        self.prefetched
            .get_or_try_init(|| {
                prefetch(self.resources, self.inventories, self.names, &self.selector)
            })
            .await
            .map(Some)
    }

    /// Render and observe one chunk of tenants: those that must render while the metadata
    /// pass runs, then those the pass does not find exactly as fief left them.
    async fn batch(&self, chunk: &[String]) -> Result<Arc<Batch>, ClusterError> {
        let (maybe, must): (Vec<String>, Vec<String>) =
            chunk.iter().cloned().partition(|t| self.may_stand(t));
        let (mut renders, prefetch) = futures::join!(
            render_some(&self.render, must),
            self.prefetch(!maybe.is_empty())
        );
        let prefetch = prefetch?;
        let (unchanged, redo) = self.sort_out(maybe, prefetch);
        renders.extend(render_some(&self.render, redo).await);
        let live = super::observe::observe_live(
            self.resources,
            &renders,
            self.inventories,
            false,
            prefetch,
        )
        .await?;
        Ok(Arc::new(Batch {
            renders,
            live,
            unchanged,
        }))
    }

    /// Of the tenants that may stand unrendered: the reports of those whose last sync stands
    /// (by the metadata pass), and the names of the others, to render.
    fn sort_out(
        &self,
        maybe: Vec<String>,
        prefetch: Option<&Prefetch>,
    ) -> (Vec<TenantReport>, Vec<String>) {
        let mut unchanged = Vec::new();
        let mut redo = Vec::new();
        for t in maybe {
            let stands = match (self.inventories.get(&t), self.reusable.get(&t), prefetch) {
                (Some(Ok(inv)), Some(inputs), Some(p)) => {
                    status::stands_unrendered(inv, inputs, |e| p.unchanged(e))
                }
                _ => false,
            };
            match self.inventories.get(&t) {
                Some(Ok(inv)) if stands => unchanged.push(status::unchanged_report(inv)),
                _ => redo.push(t),
            }
        }
        (unchanged, redo)
    }
}

/// The batches' tenants as one stream of turns (each batch's unchanged tenants first). A
/// batch that failed ends the stream, its error kept in `failure`.
fn turns<'a>(
    batches: impl Stream<Item = Result<Arc<Batch>, ClusterError>> + 'a,
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
        .flat_map(|b| {
            let unchanged: Vec<Turn> = b
                .unchanged
                .iter()
                .cloned()
                .map(|r| Turn::Unchanged(Box::new(r)))
                .collect();
            let syncs = (0..b.renders.len()).map(move |i| Turn::Sync(Arc::clone(&b), i));
            stream::iter(unchanged.into_iter().chain(syncs))
        })
}

/// One tenant's turn: its report as it stands, or its sync against its batch's live state.
async fn take_turn(
    resources: &Resources,
    options: &SyncOptions,
    inventories: &BTreeMap<String, Result<Inventory, InventoryError>>,
    now: String,
    turn: Turn,
) -> TenantReport {
    let (b, i) = match turn {
        Turn::Unchanged(report) => return *report,
        Turn::Sync(b, i) => (b, i),
    };
    let ctx = Ctx {
        resources,
        live: &b.live,
        options,
        now,
    };
    sync_one(&ctx, &b.renders[i], inventories).await.0
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
