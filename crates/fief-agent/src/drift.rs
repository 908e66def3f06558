//! Drift: kube-runtime watches (with backoff) on the kinds fief manages, keeping the live
//! hashes the planner needs and queueing a tenant when a field fief owns is changed by hand
//! or a managed object is deleted.
//!
//! In: watch events of objects labelled `fief.dev/tenant` (each parsed with its version:
//! uid, resourceVersion, fief's `managedFields` fingerprint), the desired objects and the
//! drift baseline (what fief last applied). Out: the live-hash map, each kind's
//! [`WatchState`] (a kind that cannot be listed — e.g. 403 — is `Failed`, and only the
//! tenants using it are degraded), tenants pushed to the queue and the drift counter. A
//! desired object's live hash is computed from its shape; an object of a tenant verified and
//! not rendered since ([`super::verify`]), or whose render failed, has no shape and is judged
//! by its version: still the one fief applied, its recorded live hash stands; moved, it is
//! drift (and its live hash unknown, so the sync that fixes the render applies it again). Events on the
//! objects of a tenant being synced are fief's own writes: recorded, never counted or queued
//! as drift. After a relist (a watch gap), objects that changed or disappeared meanwhile are
//! compared with what was known and their tenants queued. Status-only changes hash the same.
//! A pre or post object its delete policy deleted once it ended is recorded done: neither its
//! deletion nor a change of it is drift (it is not applied again until its content changes).
//! Lists are read in pages of [`PAGE`], at most three kinds at once, each object parsed
//! without its `managedFields` ([`LiveObject`]); objects are held by their interned id.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::sync::Semaphore;

use super::desired::{Found, Id};
use super::{Shared, WatchState};
use fief_core::inventory::AppliedVersion;
use fief_core::objects::{self, ObjectId};
use fief_core::plan;
use fief_kube::live::LiveObject;
use fief_kube::{Resource, live_id};

/// The key of a kind's watch.
pub fn kind_key(resource: &Resource) -> String {
    format!(
        "{}/{}/{}",
        resource.api.group, resource.api.version, resource.api.kind
    )
}

/// Start a watch per resource not watched yet.
pub fn ensure_watches(shared: &Arc<Shared>, resources: Vec<Resource>) {
    let keyed = resources.into_iter().map(|r| (kind_key(&r), r)).collect();
    for (key, resource) in shared.index.claim_watches(keyed) {
        let shared = shared.clone();
        tokio::spawn(async move { watch(shared, resource, key).await });
    }
}

fn set_state(shared: &Shared, key: &str, state: WatchState) {
    shared.index.set_watch(key, state);
    shared.work.wake();
    shared.work.changed();
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

/// Watch one kind (objects with the tenant label) until shutdown: observe every change, and
/// after each relist, count what vanished during the gap as deleted.
async fn watch(shared: Arc<Shared>, resource: Resource, key: String) {
    let api: Api<LiveObject> = Api::all_with(shared.cluster.client().clone(), &resource.api);
    // Initial lists and relists are streamed (a watch with `sendInitialEvents`: the API
    // server sends each object from its cache as an event, no pages); an API server that
    // refuses that is listed in pages instead.
    let mut streaming = true;
    let mut relist = shared.index.relists();
    let mut kind = KindWatch {
        shared: &shared,
        resource: &resource,
        key: &key,
        synced_once: false,
        listing_since: None,
        known: HashSet::new(),
        seen: HashSet::new(),
    };
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
                    // Periodic resync: list afresh; the InitDone below diffs the two.
                    set_state(&shared, &key, WatchState::Listing);
                    break;
                }
                _ = shared.cluster.shutdown().cancelled() => return,
            };
            let Some(event) = event else { return };
            if let Next::Restart = kind.on_event(event, &mut streaming, &mut permit) {
                break;
            }
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

/// What the watch of one kind keeps between events.
struct KindWatch<'a> {
    shared: &'a Shared,
    resource: &'a Resource,
    key: &'a str,
    /// The first list is done.
    synced_once: bool,
    /// Objects of this kind the watch knows. Desired objects are held by their interned id
    /// (one allocation for the whole agent).
    known: HashSet<Id>,
    /// Objects seen in the list under way.
    seen: HashSet<Id>,
    /// When the list under way began (its objects may predate a sync that ended since).
    listing_since: Option<Instant>,
}

/// What the watch does after an event.
enum Next {
    /// Read the next event.
    Continue,
    /// Start a new watcher (paged lists instead of streamed ones).
    Restart,
}

impl KindWatch<'_> {
    /// Take one event of the watcher; `permit` (see [`LISTING`]) is given back when a list
    /// is done or fails.
    fn on_event(
        &mut self,
        event: Result<watcher::Event<LiveObject>, watcher::Error>,
        streaming: &mut bool,
        permit: &mut Option<tokio::sync::SemaphorePermit<'static>>,
    ) -> Next {
        let shared = self.shared;
        match event {
            Ok(watcher::Event::Init) => {
                self.seen.clear();
                self.listing_since = Some(Instant::now());
            }
            Ok(watcher::Event::InitApply(obj)) => {
                let (value, version) = obj.into_parts();
                let id = live_id(self.resource, &value);
                let seen = match (self.synced_once, self.listing_since) {
                    (true, Some(since)) => Seen::Listed(since),
                    _ => Seen::First,
                };
                let id = observe(shared, &id, &value, &version, seen)
                    .unwrap_or_else(|| shared.index.intern(&id));
                self.seen.insert(id);
            }
            Ok(watcher::Event::InitDone) => {
                if self.synced_once {
                    // A relist: what is gone was deleted during the gap.
                    let since = self.listing_since.unwrap_or_else(Instant::now);
                    for id in self.known.difference(&self.seen) {
                        deleted(shared, id, Seen::Listed(since));
                    }
                } else {
                    tracing::debug!(kind = self.key, "initial list done");
                }
                self.known = std::mem::take(&mut self.seen);
                self.known.shrink_to_fit();
                drop(permit.take());
                self.synced_once = true;
                set_state(shared, self.key, WatchState::Synced);
            }
            Ok(watcher::Event::Apply(obj)) => {
                let (value, version) = obj.into_parts();
                let id = live_id(self.resource, &value);
                let id = observe(shared, &id, &value, &version, Seen::Event)
                    .unwrap_or_else(|| shared.index.intern(&id));
                self.known.insert(id);
            }
            Ok(watcher::Event::Delete(obj)) => {
                let value = obj.into_body();
                let id = live_id(self.resource, &value);
                self.known.remove(&id);
                deleted(shared, &id, Seen::Event);
            }
            Err(e) if *streaming && streaming_refused(&e) => {
                tracing::info!(kind = self.key, error = %e, "streaming lists refused; listing in pages");
                *streaming = false;
                return Next::Restart;
            }
            Err(e) => {
                // A failing list (e.g. 403, retried with backoff) does not hold up the
                // other kinds' lists.
                drop(permit.take());
                failed(shared, self.resource, self.key, self.synced_once, &e);
            }
        }
        Next::Continue
    }
}

/// A watch error: before the first list it degrades the kind; after, the watcher relists with
/// backoff (and the relist diff repairs the gap).
fn failed(shared: &Shared, resource: &Resource, key: &str, synced_once: bool, e: &watcher::Error) {
    if synced_once {
        tracing::warn!(kind = key, error = %e, "watch error; relisting with backoff");
        return;
    }
    let reason = format!("cannot list/watch {}: {e}", resource.api.kind);
    if shared.index.watch_state(key) != Some(WatchState::Failed(reason.clone())) {
        tracing::error!(kind = key, error = %e, "cannot list/watch this kind; tenants using it are degraded; retrying with backoff");
    }
    set_state(shared, key, WatchState::Failed(reason));
}

/// How an object reached the watch: which of its changes may count as drift.
#[derive(Debug, Clone, Copy)]
enum Seen {
    /// In the first list: the baseline, never drift.
    First,
    /// In a relist that began at this instant: drift unless its tenant was synced since
    /// (the list may hold the object as it was before fief's own write).
    Listed(Instant),
    /// A watch event: the object as it is now.
    Event,
}

/// Whether a change seen as `seen` may be drift of `tenant`: not fief's own sync in flight,
/// and not a list older than the tenant's last sync.
fn may_drift(shared: &Shared, tenant: &str, seen: Seen) -> bool {
    match seen {
        Seen::First => false,
        Seen::Event => !shared.work.is_in_flight(tenant),
        Seen::Listed(since) => {
            !shared.work.is_in_flight(tenant)
                && shared.work.synced_at(tenant).is_none_or(|at| at < since)
        }
    }
}

/// A managed object is gone: forget its live hash; if it is desired and its tenant is not
/// being synced (fief's own prunes are not desired), count it and queue the tenant.
fn deleted(shared: &Shared, id: &ObjectId, seen: Seen) {
    shared.index.forget_live(id);
    if let Some(tenant) = shared.index.tenant_of(id) {
        shared.gate.gone(&tenant, id);
        if may_drift(shared, &tenant, seen) && !shared.index.is_done(id) {
            drifted(shared, &tenant, id, "managed object deleted");
        }
    }
}

/// Count a drift (a hand edit or deletion, never fief's own sync) and queue its tenant.
fn drifted(shared: &Shared, tenant: &str, id: &ObjectId, what: &str) {
    tracing::info!(tenant, object = %id, "drift: {what}; queueing a sync");
    shared.cluster.metrics().drift.inc();
    shared.work.enqueue_for(tenant, "drift");
}

/// Record the live hash of an object; queue its tenant when it drifted from what was applied
/// (and the change is not fief's own sync of that tenant). Returns the interned id of a
/// desired object, or of one judged by its version (none for an object fief does not know).
fn observe(
    shared: &Shared,
    id: &ObjectId,
    value: &Value,
    version: &AppliedVersion,
    seen: Seen,
) -> Option<Id> {
    let Some(Found {
        id: interned,
        tenant,
        shape,
    }) = shared.index.find_desired(id)
    else {
        return observe_version(shared, id, value, version, seen);
    };
    let hash = plan::live_digest(&shape, value);
    let recorded = shared.index.recorded_live(id);
    shared.index.set_live(interned.clone(), hash);
    shared.gate.observed(&tenant, &interned, Some(hash), value);
    if recorded.is_some_and(|r| r != hash)
        && may_drift(shared, &tenant, seen)
        && !shared.index.is_done(id)
    {
        drifted(shared, &tenant, id, "a field fief owns changed");
    }
    Some(interned)
}

/// An object the agent has no desired shape or recorded version for (its tenant's render
/// failed since the agent started, and its sync has not recorded it yet): no live hash can be
/// taken, but its health and version are told to the health gate, so a later sync that
/// leaves it as it is finds it current.
fn unknown(shared: &Shared, id: &ObjectId, value: &Value) {
    if let Some(tenant) = value["metadata"]["labels"][objects::LABEL_TENANT].as_str() {
        shared
            .gate
            .observed(tenant, &shared.index.intern(id), None, value);
    }
}

/// An object of a tenant with no desired shape (verified and not rendered since, or its
/// render failed): still the version fief applied, its recorded live hash stands; else its
/// live hash is unknown (a sync applies it again) and, on a live event, it is drift.
fn observe_version(
    shared: &Shared,
    id: &ObjectId,
    value: &Value,
    version: &AppliedVersion,
    seen: Seen,
) -> Option<Id> {
    let Some((interned, tenant, hash)) = shared.index.by_version(id, version) else {
        unknown(shared, id, value);
        return None;
    };
    match &hash {
        Some(h) => {
            shared.index.set_live(interned.clone(), *h);
        }
        None => {
            shared.index.forget_live(id);
        }
    }
    shared.gate.observed(&tenant, &interned, hash, value);
    if hash.is_none() && may_drift(shared, &tenant, seen) {
        drifted(
            shared,
            &tenant,
            id,
            "fief's fields changed since it was applied",
        );
    }
    Some(interned)
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;
