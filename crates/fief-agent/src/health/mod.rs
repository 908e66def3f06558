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
//! watch has seen it at the version the sync applied (its live hash equals the one recorded
//! after apply, or its resourceVersion is the one the apply returned), so a status from
//! before the apply is never taken for the new version's. A stalled tenant is still watched:
//! it turns `Ready` when its objects become healthy.

mod report;
mod waited;
mod writer;

use waited::waited_objects;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::desired::{Ids, Key, Slots, key};
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

/// An object as the watches last saw it: two words (its health, when not current, is kept
/// apart: [`Tracker::unhealthy`]).
struct Seen {
    /// Its live hash, as [`Digest::short`] (0: not known).
    hash: u64,
    /// Its resourceVersion as a number (0: not a number).
    version: u64,
}

impl Seen {
    /// Whether this is the version a sync applied: the same live hash, or the same
    /// resourceVersion (an apply that changed nothing returns the version the watch saw,
    /// though the watch could not hash an object whose tenant was not rendered yet).
    fn is(&self, applied: &Applied) -> bool {
        self.hash == applied.live.short() || (self.version != 0 && self.version == applied.version)
    }
}

/// A resourceVersion as a number (0: absent or not a number; the API server's are).
fn version_number(resource_version: Option<&str>) -> u64 {
    resource_version.and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[derive(Default)]
struct Tracker {
    /// Health of desired objects as the watches last saw them, with their live hash (at the
    /// slots of the agent's interned ids: no copy of each id here, no hash table).
    /// The live hash is kept as [`Digest::short`] (0: not known, an object judged by a
    /// version that moved, or not rendered since the agent started): one entry per managed
    /// object, so it is kept small.
    live: Slots<Seen>,
    /// The health of the objects in `live` that are not [`Health::Current`] (the few that
    /// are converging or failed, with why); an object not here is current.
    unhealthy: HashMap<crate::desired::Id, Health>,
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
        self.unhealthy.get(id).cloned().unwrap_or(Health::Current)
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
    /// The agent's interner, whose ids `Tracker::live` is indexed by (a leaf lock, taken
    /// under the tracker's).
    ids: Ids,
}

/// What is told a tenant's new verdict.
type Listener = Box<dyn Fn(&str, &Verdict) + Send + Sync>;

fn lock(m: &Mutex<Tracker>) -> std::sync::MutexGuard<'_, Tracker> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gate {
    /// A gate whose rollouts keep at most `max` tenants applied-but-unsettled at once;
    /// components without a `health.timeout` wait `default_timeout`; objects are known by
    /// the ids of `ids`.
    pub fn new(max: usize, default_timeout: Duration, ids: Ids) -> Gate {
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

    /// A watch saw a desired object of `tenant` (its live hash against the desired object).
    pub fn observed(
        &self,
        tenant: &str,
        id: &super::desired::Id,
        hash: Option<Digest>,
        value: &Value,
    ) {
        let mut t = lock(&self.tracker);
        let seen = Seen {
            hash: hash.map_or(0, |h| h.short()),
            version: version_number(value["metadata"]["resourceVersion"].as_str()),
        };
        t.live.insert(id.clone(), seen);
        match health(value) {
            Health::Current => t.unhealthy.remove(id),
            other => t.unhealthy.insert(id.clone(), other),
        };
        if t.waiting
            .get(tenant)
            .is_some_and(|w| w.objects.contains_key(id as &dyn Key))
        {
            self.judge(&mut t, tenant);
        }
    }

    /// A desired object was deleted.
    pub fn gone(&self, tenant: &str, id: &ObjectId) {
        let mut t = lock(&self.tracker);
        if let Some(id) = self.ids.find(id) {
            t.live.remove(&id);
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
                drop(std::mem::take(&mut t.live));
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
        let objects: Vec<Waited> = {
            let ids = self.ids.lock();
            w.objects
                .iter()
                .map(|(id, applied)| Waited {
                    object: id.to_string(),
                    health: ids
                        .find(id)
                        .and_then(|interned| t.live.get(&interned))
                        .filter(|seen| seen.is(applied))
                        .map(|_| t.health(key(id))),
                    overdue: now >= applied.deadline,
                })
                .collect()
        };
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
