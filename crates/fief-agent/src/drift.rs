//! Drift: kube-runtime watches (with backoff) on the kinds fief manages, one task per kind,
//! each forwarding what it sees to the index task, which keeps the live hashes the planner
//! needs and queues a tenant when a field fief owns is changed by hand or a managed object is
//! deleted.
//!
//! In: watch events of objects labelled `fief.dev/tenant`, each parsed here with its id and
//! version (uid, resourceVersion, fief's `managedFields` fingerprint); the relist epoch.
//! Out: typed events ([`KindEvent`]) on the one feed into the index task ([`index_task`]),
//! in the order each watch saw them: a list begun (and when), its objects, its end; objects
//! applied or deleted; a relist; a failure (a kind that cannot be listed — e.g. 403 — is
//! `Failed`, and only the tenants using it are degraded). The watch tasks write nothing of the
//! index: the index task alone writes the live hashes and the watch states and takes the
//! drift decisions ([`judge`]): the tenants queued and the drift counter, and the health gate
//! told of each object seen or gone. A desired object's live hash is computed from its shape; an
//! object of a tenant verified and not rendered since ([`super::verify`]), or whose render
//! failed, has no shape and is judged by its version: still the one fief applied, its
//! recorded live hash stands; moved, it is drift (and its live hash unknown, so the sync that
//! fixes the render applies it again). Events on the objects of a tenant being synced are
//! fief's own writes: recorded, never counted or queued as drift. After a relist (a watch
//! gap), objects that changed or disappeared meanwhile are compared with what was known and
//! their tenants queued. Status-only changes hash the same. A pre or post object its delete
//! policy deleted once it ended is recorded done: neither its deletion nor a change of it is
//! drift (it is not applied again until its content changes). Lists are read in pages of
//! [`PAGE`], at most three kinds at once, each object parsed without its `managedFields`
//! ([`LiveObject`]); the feed is bounded, so a watch that runs ahead of the index task waits.

pub(crate) mod index_task;
mod judge;

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Semaphore;

use super::Shared;
use super::parts::index::feed::{Event, KindEvent, Observed};
use fief_core::objects;
use fief_kube::live::LiveObject;
use fief_kube::{Resource, live_id};

/// The key of a kind's watch.
pub fn kind_key(resource: &Resource) -> String {
    format!(
        "{}/{}/{}",
        resource.api.group, resource.api.version, resource.api.kind
    )
}

/// Start a watch per resource not watched yet (the index task counts each as listing until
/// its first list is done).
pub async fn ensure_watches(shared: &Arc<Shared>, resources: Vec<Resource>) {
    let mut keyed: std::collections::HashMap<String, Resource> =
        resources.into_iter().map(|r| (kind_key(&r), r)).collect();
    let keys = keyed.keys().cloned().collect();
    for key in shared.index.claim_watches(keys).await {
        if let Some(resource) = keyed.remove(&key) {
            let shared = shared.clone();
            tokio::spawn(async move { watch(shared, resource, key.into()).await });
        }
    }
}

/// Objects per page of a watch's list. A page is read whole before its objects are handed
/// on, so this bounds what one list holds at once (about 100 objects' JSON, not 500).
const PAGE: u32 = 100;

/// Kinds listed at once (the initial list and each relist); the others wait their turn, so
/// the pages in memory at once are a few, not one per kind.
static LISTING: Semaphore = Semaphore::const_new(3);

/// Whether a watch error says the API server does not take streaming lists
/// (`sendInitialEvents`: refused as invalid where the WatchList feature is off).
fn streaming_refused(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchStartFailed(kube::Error::Api(s)) if s.code == 422 || s.code == 400)
}

/// Watch one kind (objects with the tenant label) until shutdown, forwarding every event to
/// the index task; list afresh at each relist.
async fn watch(shared: Arc<Shared>, resource: Resource, key: Arc<str>) {
    let api: Api<LiveObject> = Api::all_with(shared.cluster.client().clone(), &resource.api);
    // Initial lists and relists are streamed (a watch with `sendInitialEvents`: the API
    // server sends each object from its cache as an event, no pages); an API server that
    // refuses that is listed in pages instead.
    let mut streaming = true;
    let mut relist = shared.index.relists();
    let send = |event| shared.index.send(Event::Kind(key.clone(), event));
    loop {
        // Held until this list is done (or fails): see [`LISTING`].
        let mut permit = tokio::select! {
            p = LISTING.acquire() => p.ok(),
            _ = shared.cluster.shutdown().cancelled() => return,
        };
        let mut stream = watcher(api.clone(), watch_config(streaming))
            .default_backoff()
            .boxed();
        loop {
            let event = tokio::select! {
                e = stream.next() => e,
                changed = relist.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // Periodic resync: list afresh; the index task diffs the two lists.
                    send(KindEvent::Relisting).await;
                    break;
                }
                _ = shared.cluster.shutdown().cancelled() => return,
            };
            let Some(event) = event else { return };
            let forward = match event {
                Err(e) if streaming && streaming_refused(&e) => {
                    tracing::info!(kind = &*key, error = %e, "streaming lists refused; listing in pages");
                    streaming = false;
                    break;
                }
                event => parse(&resource, event, &mut permit),
            };
            send(forward).await;
        }
    }
}

/// One event of the watcher as the index task takes it; `permit` (see [`LISTING`]) is given
/// back when a list is done or fails (a failing list, e.g. 403 retried with backoff, does not
/// hold up the other kinds' lists).
fn parse(
    resource: &Resource,
    event: Result<watcher::Event<LiveObject>, watcher::Error>,
    permit: &mut Option<tokio::sync::SemaphorePermit<'static>>,
) -> KindEvent {
    let observed = |obj: LiveObject| {
        let (value, version) = obj.into_parts();
        let id = live_id(resource, &value);
        Observed { id, value, version }
    };
    match event {
        Ok(watcher::Event::Init) => KindEvent::ListBegan(Instant::now()),
        Ok(watcher::Event::InitApply(obj)) => KindEvent::Listed(observed(obj)),
        Ok(watcher::Event::InitDone) => {
            drop(permit.take());
            KindEvent::ListDone
        }
        Ok(watcher::Event::Apply(obj)) => KindEvent::Applied(observed(obj)),
        Ok(watcher::Event::Delete(obj)) => KindEvent::Deleted(live_id(resource, &obj.into_body())),
        Err(e) => {
            drop(permit.take());
            KindEvent::Failed(format!("cannot list/watch {}: {e}", resource.api.kind))
        }
    }
}

/// The watcher's settings: objects with the tenant label, in pages of [`PAGE`], streamed
/// when the API server takes streaming lists.
fn watch_config(streaming: bool) -> watcher::Config {
    // Not the inventories (ApplySet parents, which carry the tenant label too): their
    // writes are fief's own and not drift, and each is the size of a tenant's whole
    // record, so watching them would stream every inventory at start and after each
    // sync.
    let c = watcher::Config::default()
        .labels(&format!(
            "{},!{}",
            objects::LABEL_TENANT,
            fief_core::inventory::LABEL_APPLYSET_ID
        ))
        .page_size(PAGE);
    if streaming { c.streaming_lists() } else { c }
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;
