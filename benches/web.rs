//! Web view benchmark: how long the agent's `/ui/` pages take to answer.
//!
//! `cargo bench --bench web -- [TENANTS] [REQUESTS] [ROWS]` (defaults 1000 30 10000; TENANTS
//! 0 skips the cluster part).
//!
//! Against the real test control plane: a light repo of TENANTS tenants (six objects each,
//! `tests/common/synth.rs` `light_repo`) applied cold by `fief apply`, then an agent started
//! with `--web` on a commit where one tenant's template fails; once it is ready, REQUESTS
//! sequential GETs of each page (overview, the table's first page, the table filtered to the
//! failed tenant, the failing tenant's page, a healthy tenant's page), timed from the client
//! (median, p90, max).
//!
//! Without a cluster: ROWS synthetic tenants (a repo of that many tenant files, each with a
//! history entry) through the table's own code: building every row, and building them plus
//! selecting and rendering a page (what `/ui/tenants` does per request, and the overview's
//! row pass); and the agent's `/metrics` text at ROWS tenants, with a sync-duration histogram
//! per tenant and with one for the fleet (`--sync-durations fleet`).

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::agent::{Agent, GitServer, fief_apply};
use common::synth::{light_failing, light_repo};
use fief::agent::web::history::History;
use fief::agent::web::table::{Inputs, counts, rows};
use fief::agent::web::{View, render_table};
use fief::core::model::Repo;
use fief::core::snapshot::Snapshot;
use fief::core::status::{Failure, Outcome, TenantReport};

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn summary(name: &str, v: Vec<Duration>) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<44} median {:>7.2} ms   p90 {:>7.2} ms   max {:>7.2} ms",
        ms(percentile(v.clone(), 0.5)),
        ms(percentile(v.clone(), 0.9)),
        ms(percentile(v, 1.0)),
    );
}

/// `requests` timed GETs of `path`, each answered 200.
fn time_page(agent: &Agent, path: &str, requests: usize) -> Vec<Duration> {
    (0..requests)
        .map(|_| {
            let start = Instant::now();
            let (code, _) = agent.get(path).expect("the agent answers");
            let took = start.elapsed();
            assert_eq!(code, 200, "{path}");
            took
        })
        .collect()
}

fn against_the_cluster(tenants: usize, requests: usize) {
    let agent_ns = common::unique("fief-bweb");
    let prefix = common::unique("bw");
    let good = light_repo(&agent_ns, &prefix, tenants);
    let dir = tempfile::tempdir().unwrap();
    common::synth::write_files(dir.path(), &good).unwrap();
    let cold = Instant::now();
    fief_apply(dir.path());
    println!(
        "cold fief apply of {tenants} tenants: {:.1} s",
        cold.elapsed().as_secs_f64()
    );
    let server = GitServer::new(&good);
    let failing_i = tenants / 2;
    server.commit(&light_failing(&prefix, failing_i), "one tenant breaks");
    let agent = Agent::spawn(&server.url(), &["--interval", "1h", "--web"], &[]);
    agent.wait_ready(Duration::from_secs(600));
    let failing = format!("{prefix}-{failing_i:04}");
    common::util::wait_until("the failing sync", Duration::from_secs(120), || {
        agent
            .get(&format!("/ui/tenants/{failing}"))
            .is_some_and(|(_, b)| b.contains("badge s-failed"))
    });
    println!("\n{tenants} tenants, {requests} sequential requests per page:");
    let pages = [
        ("overview  /ui/", "/ui/".to_string()),
        ("table     /ui/tenants", "/ui/tenants".to_string()),
        (
            "table     /ui/tenants?state=failed",
            "/ui/tenants?state=failed".to_string(),
        ),
        ("tenant    failing tenant", format!("/ui/tenants/{failing}")),
        (
            "tenant    healthy tenant",
            format!("/ui/tenants/{prefix}-0001"),
        ),
    ];
    for (name, path) in pages {
        let _warm = time_page(&agent, &path, 2);
        summary(name, time_page(&agent, &path, requests));
    }
}

fn without_a_cluster(tenants: usize, requests: usize) {
    let files = light_repo("fief-system", "t", tenants);
    let repo = Repo::load(Arc::new(Snapshot::from_files(files)));
    let mut history = History::default();
    for (i, name) in repo.tenants.keys().enumerate() {
        let outcome = if i % 97 == 0 {
            Outcome::Failed
        } else {
            Outcome::Applied
        };
        let mut report = TenantReport::new(name, outcome);
        if outcome == Outcome::Failed {
            report.fail(Failure::Apply, "apply failed: the API server said no");
        }
        history.record(
            &report,
            "0123456789abcdef0123456789abcdef01234567",
            i as i64,
        );
    }
    let (verdicts, suspended, syncing, waves) = Default::default();
    let inputs = Inputs {
        tenants: Some(&repo.tenants),
        cluster: "default",
        history: &history,
        verdicts: &verdicts,
        suspended: &suspended,
        syncing: &syncing,
        waves: &waves,
        mine: None,
    };
    let view = View::new();
    println!("\n{tenants} synthetic tenants, no cluster, {requests} runs each:");
    let time = |f: &dyn Fn()| {
        (0..requests)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect::<Vec<_>>()
    };
    summary(
        "every row built (the overview's pass)",
        time(&|| {
            let r = rows(&inputs);
            assert_eq!(counts(&r).values().sum::<usize>(), tenants);
        }),
    );
    for query in ["", "state=failed", "q=t-00&sort=synced&page=3"] {
        let name = format!("rows + table page ?{query}");
        summary(
            &name,
            time(&|| {
                let r = rows(&inputs);
                let html = render_table(&view, &r, query, 0).expect("render");
                assert!(html.contains("tenants match"));
            }),
        );
    }
}

/// The agent's `/metrics` text at `tenants` tenants (each with one sync observed and its
/// ready gauge set), encoded `requests` times with each kind of sync-duration histogram.
fn metrics_scrape(tenants: usize, requests: usize) {
    use fief::agent::metrics::{Metrics, SyncDurations};
    println!("\n/metrics at {tenants} tenants, {requests} scrapes each:");
    for (name, durations) in [
        ("a histogram per tenant", SyncDurations::PerTenant),
        ("one histogram for the fleet", SyncDurations::Fleet),
    ] {
        let metrics = Metrics::new(durations);
        for i in 0..tenants {
            let tenant = format!("t-{i:05}");
            metrics.observe_tenant(&tenant, 0.02 + (i % 50) as f64 * 0.01);
            metrics.tenant_ready(&tenant, i % 97 != 0);
        }
        let mut size = 0;
        let times = (0..requests)
            .map(|_| {
                let start = Instant::now();
                size = metrics.encode(Default::default(), |_| {}).len();
                start.elapsed()
            })
            .collect();
        summary(&format!("scrape, {name} ({size} bytes)"), times);
    }
}

fn main() {
    // `cargo test --all-targets` builds and runs bench targets too; only `cargo bench` (which
    // passes --bench) measures.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark compiled; run it with `cargo bench`");
        return;
    }
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let tenants = args.first().copied().unwrap_or(1000);
    let requests = args.get(1).copied().unwrap_or(30);
    let rows = args.get(2).copied().unwrap_or(10_000);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "web bench: {tenants} tenants, {requests} requests, {rows} rows; load at start: {load}"
    );
    without_a_cluster(rows, requests);
    metrics_scrape(rows, requests);
    if tenants > 0 {
        against_the_cluster(tenants, requests);
    }
}
