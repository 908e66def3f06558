//! The heap harness: the agent's state at ready, and after a change every tenant takes,
//! measured per structure, in bytes per tenant.
//!
//! In: a size list (`FIEF_AGENT_HEAP`, tenant counts separated by commas; unset: one small
//! fleet, as a test that every per-object structure is measured). For each size, the synthetic
//! fleet the benchmarks use (`tests/common/synth.rs`, about 26 objects a tenant; its volume
//! claim, StatefulSet and Ingress made kinds the mock serves, [`served`]) is applied by
//! one agent of the test kit over the mock API server, then a second agent is started on the
//! applied cluster (as a restarted Pod) and turned until it is ready: every tenant taken from
//! the queue, every watch listed, the index task idle. Then the same again, with a change
//! to the component every tenant runs (the worker's values) synced by the started agent
//! before it is measured: every tenant rendered since the start, as after a shared change in
//! the scale benchmark. Out: per structure, the bytes its drop
//! frees on the test's thread (the unit tests' allocator counts each thread's live bytes:
//! [`crate::memory::counted`]), divided by the tenants; a table on stdout. The per-object maps
//! are dropped before the interner, so each counts its own table and values and the interner
//! counts the object ids they share. The last row is what stopping the agent frees besides:
//! the revision, the source's read cache, the tasks and the client.
//!
//! Bytes are the sizes asked of the allocator (not its size classes or free pages): they
//! depend on the code and the fleet, not on the machine or its load, so a debug build (faster
//! to build, slower to run) gives the figures too:
//!
//! `FIEF_AGENT_HEAP=1000,10000 cargo test -p fief-agent --release --lib heap -- --nocapture`
//!
//! A unit test, not a bench: the test kit and the structures measured are the crate's own,
//! and a bench would link the library with its own allocator, not the counting one.

#[path = "../../../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the tests and benchmarks; the harness uses part of it
mod synth;

use std::time::{Duration, Instant};

use crate::WatchState;
use crate::kit::Kit;
use crate::memory::counted::{freed, live};
use fief_kube::fixtures::Scenario;

/// The index's per-object maps, as the table names them and [`LiveIndex::drop_map`] does.
///
/// [`LiveIndex::drop_map`]: crate::parts::index::LiveIndex::drop_map
const MAPS: [(&str, &str); 2] = [
    ("index: desired shapes", "desired"),
    ("index: object records (live hash, baseline)", "objects"),
];

/// Rows that hold something per object of the fleet at ready.
const PER_OBJECT: [&str; 3] = [
    "index: object records (live hash, baseline)",
    "index task: objects known per kind",
    "index: object ids (interner)",
];

/// The row of each tenant's last sync attempt.
const ATTEMPTS: &str = "report: attempts";

/// One size's figures: per structure, bytes freed by its drop.
struct Measured {
    tenants: usize,
    objects: usize,
    rows: Vec<(&'static str, isize)>,
}

/// The synthetic fleet's postgres component with the two kinds the mock API server does not
/// serve made kinds it serves: the volume claim a ConfigMap, the StatefulSet a Deployment
/// (same names, same count of objects).
const PG: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: pg
data:
  password: {{ (tenant.name ~ namespace) | sha256 | b64encode }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pg-data
data:
  storage: {{ values.storage | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: pg
spec:
  clusterIP: None
  selector: {app: pg}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pg
spec:
  replicas: 1
  selector:
    matchLabels: {app: pg}
  template:
    metadata:
      labels: {app: pg}
    spec:
      containers:
        - name: pg
          image: "{{ values.image }}:{{ component.version }}"
"#;

/// The web component's Ingress, which the mock API server does not serve, as a Role of the
/// same name (a kind components may create that it serves).
const ROLE: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: web
rules: [{apiGroups: [""], resources: [configmaps], resourceNames: [web], verbs: [get]}]
"#;

/// The synthetic fleet's files with the kinds the mock API server does not serve
/// (`PersistentVolumeClaim`, `StatefulSet`, `Ingress`) made kinds it serves ([`PG`],
/// [`ROLE`]): the same objects per tenant, by name and count.
fn served(files: Vec<(String, String)>) -> Vec<(String, String)> {
    files
        .into_iter()
        .map(|(path, text)| match path.as_str() {
            "components/postgres/templates/pg.yaml" => (path, PG.to_string()),
            "components/web/templates/web.yaml" => {
                let kept = text.split("---\napiVersion: networking.k8s.io/v1").next();
                let web = format!("{}---\n{ROLE}", kept.unwrap_or_default());
                (path, web)
            }
            _ => (path, text),
        })
        .collect()
}

/// Turn `kit` until every tenant has been taken from the queue, every watch has listed and
/// the index task has taken in what the watches sent.
async fn until_ready(kit: &mut Kit, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(3600);
    loop {
        kit.turn().await;
        let listed = kit
            .shared
            .index
            .watches(|w| !w.is_empty() && w.values().all(|s| *s == WatchState::Synced));
        if listed && kit.shared.work.queue_len() == 0 {
            kit.shared.index.settled().await;
            return;
        }
        if Instant::now() > deadline {
            let queued = kit.shared.work.queue_len();
            let first = kit
                .shared
                .work
                .queue(|q| q.take_due(deadline))
                .first()
                .cloned();
            let attempt = first.as_deref().and_then(|t| kit.attempt(t));
            panic!("not ready: {what}: {queued} queued, the first's last attempt {attempt:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Commit a change to the worker component every one of the `tenants` runs and turn `kit`
/// until every tenant has synced it.
async fn shared_change(kit: &mut Kit, tenants: usize) {
    let change = "image: registry.example/worker\nqueues: [default, mail, shared]\n";
    kit.push(
        &[("components/worker/varz.yaml".into(), change.into())],
        &[],
    )
    .await;
    until_ready(kit, "the change every tenant takes").await;
    // The Events and health verdicts the syncs left are sent, the watches' events taken in
    // (a second, and two milliseconds a tenant).
    tokio::time::sleep(Duration::from_millis(1000 + 2 * tenants as u64)).await;
    kit.shared.index.settled().await;
}

/// Apply a fleet of `tenants`, start a second agent on it, and measure that agent at ready,
/// or (`changed`) after a change every tenant takes.
async fn measure(tenants: usize, changed: bool) -> Measured {
    let files = served(synth::repo_files(tenants));
    let started = Instant::now();
    let mut kit = Kit::start(&files, Scenario::new()).await;
    until_ready(&mut kit, "the cold apply").await;
    let applied = started.elapsed();
    let started = Instant::now();
    let mut kit = kit.restart().await;
    until_ready(&mut kit, "the start on the applied cluster").await;
    eprintln!(
        "{tenants} tenants: applied in {applied:.1?}, the second agent ready in {:.1?}",
        started.elapsed()
    );
    if changed {
        shared_change(&mut kit, tenants).await;
    }
    let (objects, _) = kit.shared.index.sizes();
    let shared = kit.shared.clone();
    let (index, gate, work) = (&shared.index, &shared.gate, &shared.work);
    let mut rows: Vec<_> = MAPS
        .iter()
        .map(|(name, map)| (*name, freed(|| index.drop_map(map))))
        .collect();
    let before = live();
    index.drop_kinds().await;
    rows.push(("index task: objects known per kind", before - live()));
    rows.extend([
        (
            "health gate: objects seen without a live hash, unhealthy",
            freed(|| gate.drop_state("objects")),
        ),
        ("health gate: tenants", freed(|| gate.drop_state("tenants"))),
        ("queue", freed(|| work.drop_state("queue"))),
        (
            "syncs in flight, last ended",
            freed(|| work.drop_state("syncs")),
        ),
        (ATTEMPTS, freed(|| shared.report.drop_tenants())),
    ]);
    let state = &mut kit.state;
    rows.extend([
        (
            "loop: inventories held",
            freed(|| drop(state.inventories.take())),
        ),
        (
            "loop: synced hashes, unsettled, evicted",
            freed(|| {
                drop(std::mem::take(&mut state.synced));
                drop(std::mem::take(&mut state.synced_rev));
                drop(std::mem::take(&mut state.unsettled));
                drop(std::mem::take(&mut state.evicted));
            }),
        ),
        (
            "index: object ids (interner)",
            freed(|| index.drop_map("ids")),
        ),
        (
            "metrics: per-tenant series",
            freed(|| {
                let metrics = shared.cluster.metrics();
                metrics.tenant_seconds.clear();
                metrics.tenant_ready.clear();
            }),
        ),
    ]);
    let server = kit.server.clone();
    let before = live();
    drop(shared);
    drop(kit);
    tokio::time::sleep(Duration::from_millis(500)).await;
    rows.push(("revision, read cache, tasks, client", before - live()));
    drop(server);
    Measured {
        tenants,
        objects,
        rows,
    }
}

/// The table of `sizes`: per structure, bytes per tenant at each size.
fn table(sizes: &[Measured]) -> String {
    let mut out = String::from("| structure |");
    for m in sizes {
        out += &format!(" {} tenants ({} objects) |", m.tenants, m.objects);
    }
    out += "\n|---|";
    out += &"---:|".repeat(sizes.len());
    let total = |m: &Measured| m.rows.iter().map(|(_, b)| b).sum::<isize>();
    for (i, (name, _)) in sizes[0].rows.iter().enumerate() {
        out += &format!("\n| {name} |");
        for m in sizes {
            out += &format!(" {:.0} |", m.rows[i].1 as f64 / m.tenants as f64);
        }
    }
    out += "\n| **total** |";
    for m in sizes {
        out += &format!(" **{:.0}** |", total(m) as f64 / m.tenants as f64);
    }
    out
}

#[tokio::test]
async fn the_agents_state_at_ready_and_after_a_shared_change_is_measured_per_structure() {
    let sizes: Vec<usize> = std::env::var("FIEF_AGENT_HEAP")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![20]);
    let mut measured = Vec::new();
    for n in sizes {
        measured.push(measure(n, false).await);
    }
    println!("bytes per tenant, the agent at ready\n{}", table(&measured));
    let mut changed = Vec::new();
    for n in measured.iter().map(|m| m.tenants) {
        changed.push(measure(n, true).await);
    }
    println!(
        "bytes per tenant, after a change every tenant takes\n{}",
        table(&changed)
    );
    for m in &changed {
        let attempts = m.rows.iter().find(|(n, _)| *n == ATTEMPTS).map(|r| r.1);
        assert!(
            attempts.is_some_and(|b| b > 0),
            "every tenant was synced by the change: its last attempt is held"
        );
    }
    measured.extend(changed);
    for m in &measured {
        assert!(m.objects >= 20 * m.tenants, "the fleet is applied");
        for (name, bytes) in m.rows.iter().filter(|(n, _)| PER_OBJECT.contains(n)) {
            assert!(*bytes > 0, "{name} holds the objects: {bytes}");
        }
    }
}

/// The repo as the agent holds it between commits, part by part, in bytes per tenant: the
/// files' text, the parsed repo (of which the parsed tenants), the cross-tenant index and the
/// input index, as the start's full read builds them ([`fief_source::revision`]). The
/// fleet is the size `FIEF_AGENT_HEAP` names last (unset: a small one).
#[test]
fn the_repo_the_agent_holds_is_measured_per_part() {
    use fief_core::inputs::InputIndex;
    use fief_core::model::Repo;
    use fief_core::snapshot::Snapshot;
    let n: usize = std::env::var("FIEF_AGENT_HEAP")
        .ok()
        .and_then(|v| v.split(',').next_back()?.trim().parse().ok())
        .unwrap_or(20);
    let at_start = live();
    let snapshot = Snapshot::from_files(served(synth::repo_files(n)));
    let read = live();
    let mut repo = Repo::load(std::sync::Arc::new(snapshot));
    let loaded = live();
    repo.across();
    let across = live();
    let (index, _) = InputIndex::update(&repo, None);
    let rows = [
        ("the snapshot: every file's path and text", read - at_start),
        ("the parsed repo", loaded - read),
        ("— of which the parsed tenants", {
            let tenants = std::mem::take(&mut repo.tenants);
            freed(|| drop(tenants))
        }),
        ("the cross-tenant index", across - loaded),
        ("the input index", freed(|| drop(index))),
    ];
    println!(
        "bytes per tenant, the repo the agent holds, {n} tenants\n| part | bytes |\n|---|---:|"
    );
    for (name, bytes) in rows {
        println!("| {name} | {} |", bytes / n as isize);
        assert!(bytes > 0, "{name} holds something per tenant");
    }
}
