//! Health gating in the agent: after a tenant is applied, its objects are judged by kstatus
//! rules ([`fief_core::health`]) from the events of the watches the agent already runs (no
//! polling). Waiting for health never holds up an apply: a tenant is synced as soon as it is
//! due, whatever other tenants' health. The in-flight bound (`--max-in-flight`) is kept here
//! but applied by the rollout of a shared change ([`crate::rollout`]), which releases a wave's
//! tenants at most that many unsettled at once; the gate only reports the rollout's count.
//!
//! In: the start of each tenant's sync, each sync's result (the live hashes it applied, the
//! components' `health:` settings), watch events of desired objects (their live hash and
//! health) and deletions, and the rollout's count of its tenants in flight. Out: the tenant's
//! verdict — `Reconciling` while waiting, `Ready` once every waited-on object is current,
//! `Stalled` naming the unhealthy objects when one failed or its component's `health.timeout`
//! passed — written onto its inventory status by one writer task, each tenant's state for the
//! rollout, and the figures for `/metrics` and `/status`. An object counts only once the
//! watch has seen it at the version the sync applied (the live hash the watches computed last,
//! which the index holds, is the one recorded after apply; or, for an object they could not
//! hash, its resourceVersion is the one the apply returned), so a status from before the
//! apply is never taken for the new version's. A stalled tenant is still watched:
//! it turns `Ready` when its objects become healthy.

mod report;
mod unhealthy;
mod waited;
mod writer;

use waited::waited_objects;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::desired::{Id, Ids, Key, key};
use fief_core::digest::Digest;
use fief_core::health::{Health, Verdict, Waited, health, verdict};
use fief_core::model::Repo;
use fief_core::objects::ObjectId;
use fief_core::render::TenantRender;
use fief_kube::sync::SyncResult;

/// One object a tenant waits for: the version its sync applied, and until when.
struct Applied {
    /// The live hash recorded after the apply.
    live: Digest,
    /// The resourceVersion the apply returned, as a number (0: not known).
    version: u64,
    /// When the object's wait runs out.
    deadline: Instant,
}

/// A tenant applied and not yet judged.
struct Waiting {
    /// Each waited-on object with the version its sync applied.
    objects: BTreeMap<ObjectId, Applied>,
    /// Which sync this is (timers of older syncs are ignored).
    sync: u64,
    /// When the wait began.
    since: Instant,
}

/// How long a tenant waits before `Reconciling` is written: objects that are healthy at
/// once (ConfigMaps, RBAC, an unchanged Deployment) cost no status write.
const GRACE: Duration = Duration::from_secs(1);

/// Whether the watches saw an object at the version a sync applied (so its health as they
/// last saw it is the applied version's): by the live hash the watches computed last
/// (`watched`, from the index's record), or, for an object they last saw without a hash
/// (its tenant not rendered since the agent started, or fief's fields changed since it was
/// applied), by its resourceVersion (`unhashed`: the low half), which an apply that changed
/// nothing returns as the watch saw it. Resource versions that differ by a multiple of 2^32
/// are never both live at once.
fn seen_at(unhashed: Option<u32>, watched: Option<Digest>, applied: &Applied) -> bool {
    match unhashed {
        Some(version) => version != 0 && version == applied.version as u32,
        None => watched == Some(applied.live),
    }
}

/// A lookup of the live hash the watches computed last for an object (none while a sync's
/// write is not reported yet): [`crate::parts::index::LiveIndex::watched`].
pub type Watched = Box<dyn Fn(&Id) -> Option<Digest> + Send + Sync>;

/// A resourceVersion as a number (0: absent or not a number; the API server's are).
fn version_number(resource_version: Option<&str>) -> u64 {
    resource_version.and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[derive(Default)]
struct Tracker {
    /// The objects the watches last saw without a live hash, with the low half of their
    /// resourceVersion (see [`seen_at`]): the few of tenants not rendered since the agent
    /// started, or changed since fief applied them. The others' live hashes are the index's
    /// ([`Gate::watched`]): nothing is kept here per object.
    unhashed: HashMap<Id, u32>,
    /// The health of the objects seen that are not [`Health::Current`] (the few that are
    /// converging or failed, with why); an object not here is current.
    unhealthy: unhealthy::Unhealthy,
    /// Tenants waiting for health (and stalled ones, still watched).
    waiting: BTreeMap<String, Waiting>,
    /// Each judged tenant's current verdict.
    verdicts: BTreeMap<String, Verdict>,
    /// What the writer last wrote per tenant.
    written: BTreeMap<String, Verdict>,
    /// Tenants being synced now (the writer leaves their status to the sync).
    syncing: BTreeSet<String>,
    /// Tenants whose inventory may hold a verdict other than `Ready` written by the writer
    /// (a later `Ready` must then be written; otherwise the sync's own `Ready` stands).
    dirty: BTreeSet<String>,
    /// Tenants whose last sync set something aside to apply once what it waits for is
    /// healthy (`dependsOn`, an ordered phase): not done for a rollout until it is applied.
    held: BTreeSet<String>,
    /// The tenant whose verdict the writer is writing now, if any.
    writing: Option<writer::Writing>,
    /// Sync counter.
    seq: u64,
}

impl Tracker {
    /// The health the watches last saw of an object in `live`.
    fn health(&self, id: &dyn Key) -> Health {
        self.unhealthy.get(id)
    }
}

/// The health gate: the tracker, the status writer's queue, and the in-flight bound a
/// rollout applies.
pub struct Gate {
    /// `--max-in-flight`: a rollout's tenants applied and not yet settled at once.
    max: usize,
    /// The rollout's tenants applied (or released to be) and not yet settled.
    in_flight: AtomicUsize,
    default_timeout: Duration,
    peak: AtomicUsize,
    tracker: Mutex<Tracker>,
    writes: mpsc::UnboundedSender<String>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    /// The agent namespace (where the inventories are), set by each batch.
    namespace: Mutex<String>,
    /// Told every change of a tenant's verdict (the notifications), set once at start.
    listener: std::sync::OnceLock<Listener>,
    /// The agent's interner (a leaf lock, taken under the tracker's).
    ids: Ids,
    /// The live hash the watches computed last for an object (takes the index's records
    /// lock under the tracker's; never under the interner's).
    watched: Watched,
}

/// What is told a tenant's new verdict.
type Listener = Box<dyn Fn(&str, &Verdict) + Send + Sync>;

fn lock(m: &Mutex<Tracker>) -> std::sync::MutexGuard<'_, Tracker> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gate {
    /// A gate whose rollouts keep at most `max` tenants applied-but-unsettled at once;
    /// components without a `health.timeout` wait `default_timeout`; objects are known by
    /// the ids of `ids`, their live hashes as the watches computed them by `watched`.
    pub fn new(max: usize, default_timeout: Duration, ids: Ids, watched: Watched) -> Gate {
        let max = max.max(1);
        let (writes, receiver) = mpsc::unbounded_channel();
        Gate {
            max,
            in_flight: AtomicUsize::new(0),
            default_timeout,
            peak: AtomicUsize::new(0),
            tracker: Mutex::new(Tracker::default()),
            writes,
            receiver: Mutex::new(Some(receiver)),
            namespace: Mutex::new(String::new()),
            listener: std::sync::OnceLock::new(),
            ids,
            watched,
        }
    }

    /// Tell `f` every change of a tenant's verdict (set once; a second call is ignored).
    /// It is called with the gate's lock held, so it must not block.
    pub fn on_verdict(&self, f: impl Fn(&str, &Verdict) + Send + Sync + 'static) {
        let _ = self.listener.set(Box::new(f));
    }

    /// The rollout's tenants applied (or released to be) and not yet judged healthy or
    /// stalled, as the rollout last counted them.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The bound on [`Self::in_flight`] (`--max-in-flight`).
    pub fn max_in_flight(&self) -> usize {
        self.max
    }

    /// The rollout counted `n` of its tenants in flight.
    pub fn set_in_flight(&self, n: usize) {
        self.in_flight.store(n, Ordering::Relaxed);
        self.peak.fetch_max(n, Ordering::Relaxed);
    }

    /// `tenant`'s sync starts: never waits (another tenant's health never holds up an
    /// apply). Its verdict is left to the sync until [`Self::after_sync`].
    pub fn admit(&self, tenant: &str) -> Permit {
        lock(&self.tracker).syncing.insert(tenant.to_string());
        Permit(())
    }

    /// A watch saw a desired object of `tenant`: `hashed` when it took its live hash,
    /// otherwise its resourceVersion is kept. `index` records what the watch took in the
    /// index (its live hash, or that none is known); it runs after the health is taken in and
    /// before the tenant is judged, outside the gate's lock. So a judgement in between sees the
    /// new health with the version before it, never the other way round: with the old live
    /// hash an object counts only if that hash is the applied version's, and then the new
    /// health (a status update of that version) is the one to take.
    pub fn observed(
        &self,
        tenant: &str,
        id: &Id,
        hashed: bool,
        value: &Value,
        index: impl FnOnce(),
    ) {
        let waited = {
            let mut t = lock(&self.tracker);
            if hashed {
                t.unhashed.remove(id);
            } else {
                let version = version_number(value["metadata"]["resourceVersion"].as_str());
                t.unhashed.insert(id.clone(), version as u32);
            }
            t.unhealthy.set(id, health(value));
            t.waiting
                .get(tenant)
                .is_some_and(|w| w.objects.contains_key(id as &dyn Key))
        };
        index();
        if waited {
            self.judge(&mut lock(&self.tracker), tenant);
        }
    }

    /// A desired object was deleted.
    pub fn gone(&self, tenant: &str, id: &ObjectId) {
        let mut t = lock(&self.tracker);
        if let Some(id) = self.ids.find(id) {
            t.unhashed.remove(&id);
        }
        t.unhealthy.remove(key(id));
        if t.waiting
            .get(tenant)
            .is_some_and(|w| w.objects.contains_key(id))
        {
            self.judge(&mut t, tenant);
        }
    }

    /// After `render`'s sync: wait for its component objects (those of components with
    /// `health.wait` unset or true) at the live hashes the sync recorded; judge at once from
    /// what the watches know; arm the timeouts. A failed sync leaves the status the sync
    /// wrote.
    pub fn after_sync(
        self: &Arc<Self>,
        repo: Option<&Repo>,
        render: &TenantRender,
        result: &SyncResult,
        _started: Permit,
    ) {
        let tenant = render.tenant.as_str();
        let ok = result.reports.iter().any(|r| {
            r.tenant == tenant && r.is_ok() && r.outcome == fief_core::status::Outcome::Applied
        });
        let held = result
            .reports
            .iter()
            .any(|r| r.tenant == tenant && r.holds_back());
        let mut t = lock(&self.tracker);
        t.syncing.remove(tenant);
        if let Some(w) = t.writing.as_mut().filter(|w| w.tenant == tenant) {
            w.synced = true;
        }
        if held {
            t.held.insert(tenant.to_string());
        } else {
            t.held.remove(tenant);
        }
        // The sync may have written its own status: the next verdict is judged afresh.
        t.written.remove(tenant);
        t.verdicts.remove(tenant);
        let inventory = result.inventories.get(tenant).and_then(Option::as_ref);
        let (Some(repo), Some(inv), true) = (repo, inventory, ok) else {
            t.waiting.remove(tenant);
            return;
        };
        let limits = fief_kube::health::deadlines(repo, render, self.default_timeout);
        let now = Instant::now();
        let previous = t.waiting.remove(tenant);
        let (objects, deadlines, all_kept) =
            waited_objects(render, inv, &limits, previous.as_ref(), now);
        t.seq += 1;
        let sync = t.seq;
        if objects.is_empty() && !t.dirty.contains(tenant) {
            t.waiting.remove(tenant);
            return;
        }
        t.waiting.insert(
            tenant.to_string(),
            Waiting {
                objects,
                sync,
                since: match &previous {
                    Some(w) if all_kept => w.since,
                    _ => now,
                },
            },
        );
        self.judge(&mut t, tenant);
        drop(t);
        self.arm_timeouts(tenant, deadlines, sync);
    }

    /// Judge `tenant` again at each of `deadlines`, unless a later sync replaced sync `sync`.
    fn arm_timeouts(self: &Arc<Self>, tenant: &str, deadlines: BTreeSet<Instant>, sync: u64) {
        for at in deadlines {
            let gate = self.clone();
            let tenant = tenant.to_string();
            tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                let mut t = lock(&gate.tracker);
                if t.waiting.get(&tenant).is_some_and(|w| w.sync == sync) {
                    gate.judge(&mut t, &tenant);
                }
            });
        }
    }

    /// Where `tenant` stands for a rollout: waiting for health or for what its last sync set
    /// aside (held for a dependency or an ordered phase), stalled (why), or done (healthy, or
    /// nothing of it is waited on).
    pub fn rollout_state(&self, tenant: &str) -> fief_core::rollout::TenantState {
        use fief_core::rollout::TenantState;
        let t = lock(&self.tracker);
        if t.syncing.contains(tenant) {
            return TenantState::Waiting;
        }
        match t.verdicts.get(tenant) {
            Some(Verdict::Stalled(objects)) => TenantState::Failed(format!(
                "Stalled: {}",
                objects
                    .iter()
                    .map(|(o, why)| format!("{o}: {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            _ if t.waiting.contains_key(tenant) || t.held.contains(tenant) => TenantState::Waiting,
            _ => TenantState::Healthy,
        }
    }

    /// Drop what the gate keeps per object (`objects`) or per tenant (`tenants`), for the heap
    /// harness to measure what it held.
    #[cfg(test)]
    pub(crate) fn drop_state(&self, part: &str) {
        let mut t = lock(&self.tracker);
        match part {
            "objects" => {
                drop(std::mem::take(&mut t.unhashed));
                drop(std::mem::take(&mut t.unhealthy));
            }
            "tenants" => drop(std::mem::take(&mut *t)),
            other => panic!("no part {other}"),
        }
    }

    /// A tenant left git (purged) or was not synced: forget it.
    pub fn forget(&self, tenant: &str) {
        let mut t = lock(&self.tracker);
        t.waiting.remove(tenant);
        t.verdicts.remove(tenant);
        t.written.remove(tenant);
        t.dirty.remove(tenant);
        t.held.remove(tenant);
    }

    /// Judge a waiting tenant; `Ready` ends the wait (a `Stalled` one is still watched); a
    /// changed verdict is queued for the writer.
    fn judge(&self, t: &mut Tracker, tenant: &str) {
        let now = Instant::now();
        let Some(w) = t.waiting.get(tenant) else {
            return;
        };
        // The interned ids first: the index's lock is never taken under the interner's.
        let interned: Vec<Option<Id>> = {
            let ids = self.ids.lock();
            w.objects.keys().map(|id| ids.find(id)).collect()
        };
        let objects: Vec<Waited> = w
            .objects
            .iter()
            .zip(interned)
            .map(|((id, applied), interned)| Waited {
                object: id.to_string(),
                health: interned
                    .filter(|i| seen_at(t.unhashed.get(i).copied(), (self.watched)(i), applied))
                    .map(|_| t.health(key(id))),
                overdue: now >= applied.deadline,
            })
            .collect();
        let v = verdict(&objects);
        if v == Verdict::Ready {
            t.waiting.remove(tenant);
        }
        if t.verdicts.get(tenant) != Some(&v) {
            tracing::info!(tenant, health = v.name(), detail = ?v, "tenant health");
            if let Some(f) = self.listener.get() {
                f(tenant, &v);
            }
            let quiet = v == Verdict::Ready && !t.dirty.contains(tenant);
            if quiet {
                // The sync's own status (Ready=True) stands: nothing to write.
                t.written.insert(tenant.to_string(), v.clone());
            }
            t.verdicts.insert(tenant.to_string(), v);
            if !quiet {
                let _ = self.writes.send(tenant.to_string());
            }
        }
    }
}

/// A tenant's sync under way, from [`Gate::admit`] to [`Gate::after_sync`].
pub struct Permit(());

#[cfg(test)]
mod tests;

#[cfg(test)]
#[path = "gate_tests.rs"]
mod gate_tests;
