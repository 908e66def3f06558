//! The cluster benchmark at several fleet sizes, or for two fief builds, in one sitting.
//!
//! `FIEF_BENCH_SCALE=1 cargo bench --bench cluster -- 1000,10000 RUNS`: for each size, on a
//! control plane of its own, a cold `fief apply` (objects/s, peak RSS), the no-op `fief apply`
//! (median of RUNS: wall time, mutating requests, peak RSS), the agent's start to ready on
//! that applied cluster (with the mutating requests it sent), a one-tenant change through the
//! webhook (p50 over 10 changes, the agent's CPU per change), RUNS shared changes every
//! tenant takes (median of webhook to every tenant synced; after each, 5 s more to count any
//! sync or drift beyond one per tenant), and the agent's peak RSS. Out: one table, a column
//! per size and the ratio of the last to the first.
//!
//! `FIEF_BENCH_ONLY=cli`: only the `fief apply` figures. `FIEF_BENCH_SERVICES=headless`: the
//! synthetic repo's Services without cluster IPs (see [`headless_services`]).
//!
//! `FIEF_BENCH_BINS="before=PATH,after=PATH"` with one size: the same figures for each build,
//! builds taking turns for RUNS rounds (first and last in turn), each figure the median of its
//! rounds; the ratio is the last build's to the first's.
//!
//! Every run has its own tenant names and agent namespace, so an agent never sees another
//! run's inventories.

use super::*;
use phases::loadavg;

/// The control plane's processes, for the CPU they spend in a phase.
const CONTROL_PLANE: [&str; 3] = ["kube-apiserver", "etcd", "kube-controller"];

/// One run's figures, in the order of the table: (name, value, decimals shown).
struct Figures {
    tenants: usize,
    rows: Vec<(&'static str, f64, usize)>,
}

impl Figures {
    fn push(&mut self, what: &'static str, value: f64, digits: usize) {
        self.rows.push((what, value, digits));
    }

    /// Figure by figure, the median of `runs` (which all measured the same figures).
    fn median_of(runs: Vec<Figures>) -> Figures {
        let first = &runs[0];
        let rows = (0..first.rows.len())
            .map(|k| {
                let (what, _, digits) = first.rows[k];
                (
                    what,
                    median(runs.iter().map(|r| r.rows[k].1).collect()),
                    digits,
                )
            })
            .collect();
        Figures {
            tenants: first.tenants,
            rows,
        }
    }
}

/// Every size in TENANTS, each on a control plane of its own (started for it and stopped
/// after it), then the table. A LIST with a label selector costs the API server every object
/// of the kind it holds, so a size measured beside a fleet left by another would pay for
/// both.
pub fn run_fresh() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map(|a| a.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    let mut columns: Vec<(String, Figures)> = Vec::new();
    for n in sizes {
        let cp = common::own_control_plane();
        let bench = Bench::with(&cp);
        let secret = bench.work.path().join("secret");
        std::fs::write(&secret, SECRET).unwrap();
        row("   load average before this size", loadavg());
        let figures = one_size(&bench, n, bench.runs, &secret, &format!("s{n}"));
        columns.push((format!("{n} tenants"), figures));
        drop(bench);
        cp.stop();
    }
    report(&columns);
}

/// `FIEF_BENCH_BINS`: every build at the first size, taking turns on the one control plane,
/// then the table.
pub fn run(bench: &Bench, sizes: &[usize], runs: usize) {
    let secret = bench.work.path().join("secret");
    std::fs::write(&secret, SECRET).unwrap();
    if let Ok(bins) = std::env::var("FIEF_BENCH_BINS") {
        compare(bench, &bins, sizes[0], runs, &secret);
    }
}

/// `FIEF_BENCH_BINS`: each build in turn, `runs` rounds, at `tenants`.
fn compare(bench: &Bench, bins: &str, tenants: usize, runs: usize, secret: &Path) {
    let bins: Vec<(String, PathBuf)> = bins
        .split(',')
        .filter_map(|b| b.split_once('='))
        .map(|(label, path)| (label.to_string(), PathBuf::from(path)))
        .collect();
    let mut by: Vec<Vec<Figures>> = bins.iter().map(|_| Vec::new()).collect();
    for r in 0..runs.max(1) {
        // Every run leaves its tenants in the cluster, and an agent watches every fief object
        // in it, so a later run sees more: the builds take turns first and last (ABBA).
        let mut order: Vec<usize> = (0..bins.len()).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let (label, path) = &bins[i];
            set_fief_bin(path);
            row(&format!("   round {r}, {label}: load average"), loadavg());
            by[i].push(one_size(bench, tenants, 1, secret, &format!("{label}{r}")));
        }
    }
    let columns: Vec<(String, Figures)> = bins
        .into_iter()
        .zip(by)
        .map(|((label, _), runs)| {
            (
                format!("{label}, {tenants} tenants"),
                Figures::median_of(runs),
            )
        })
        .collect();
    report(&columns);
}

fn one_size(bench: &Bench, tenants: usize, runs: usize, secret: &Path, name: &str) -> Figures {
    let repo = bench.work.path().join(name);
    // The tenant files in folders of 100, as the docs suggest for thousands of tenants: a
    // commit then rewrites a folder of 100 entries, not one of every tenant (`cargo bench
    // --bench commit` measures both layouts).
    let mut files = synth::in_folders(synth::repo_files_named(tenants, name), 100);
    files.push((
        "fief.yaml".into(),
        format!("baseDomain: bench.example\nagentNamespace: fief-bench-{name}\n"),
    ));
    if std::env::var("FIEF_BENCH_SERVICES").is_ok_and(|v| v == "headless") {
        headless_services(&mut files);
    }
    synth::write_files(&repo, &files).unwrap();
    let mut f = Figures {
        tenants,
        rows: Vec::new(),
    };
    let plane_before = phases::process_cpu(&CONTROL_PLANE);
    let (secs, objects, _, rss) = fief_apply_rss(&repo, &bench.kubeconfig);
    let plane: Vec<f64> = phases::process_cpu(&CONTROL_PLANE)
        .iter()
        .zip(&plane_before)
        .map(|(a, b)| a - b)
        .collect();
    row(
        &format!("cold apply, {name}"),
        format!("{secs:.1} s, {objects} objects, {rss:.0} MiB"),
    );
    f.push("cold apply, wall s", secs, 1);
    f.push("cold apply, objects/s", objects as f64 / secs, 0);
    f.push("cold apply, peak RSS MiB", rss, 0);
    f.push("  fief CPU s", last_apply_cpu(), 1);
    f.push("  API server CPU s", plane[0], 1);
    f.push("  etcd CPU s", plane[1], 1);
    f.push("  controller-manager CPU s", plane[2], 1);
    let (mut wall, mut peak, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let (secs, _, sent, rss) = fief_apply_rss(&repo, &bench.kubeconfig);
        wall.push(secs);
        peak.push(rss);
        writes.push(sent as f64);
    }
    f.push("no-op apply, wall s", median(wall), 2);
    f.push("  fief CPU s", last_apply_cpu(), 2);
    f.push("  mutating requests", median(writes), 0);
    f.push("no-op apply, peak RSS MiB", median(peak), 0);
    if !bench.cli_only {
        agent_phases(bench, &repo, secret, name, runs, &mut f);
    }
    f
}

/// `FIEF_BENCH_SERVICES=headless`: every Service of the synthetic repo without a cluster IP.
/// The API server allocates a Service's cluster IP by listing every IPAddress it holds, so
/// its CPU per Service grows with the Services in the cluster; without cluster IPs, the
/// cold apply measures the rest of the control plane's cost, and fief's.
fn headless_services(files: &mut [(String, String)]) {
    const WEB: &str = "kind: Service\nmetadata:\n  name: web\nspec:\n";
    let web = files
        .iter_mut()
        .find(|(path, text)| path.starts_with("components/web/") && text.contains(WEB));
    let Some((_, text)) = web else {
        panic!("FIEF_BENCH_SERVICES=headless: the synthetic repo has no web Service");
    };
    *text = text.replace(WEB, &format!("{WEB}  clusterIP: None\n"));
}

/// The agent's start, one-tenant change and `runs` shared changes (medians) on the applied
/// repo.
fn agent_phases(
    bench: &Bench,
    repo: &Path,
    secret: &Path,
    name: &str,
    runs: usize,
    f: &mut Figures,
) {
    let base = bench.work.path().join(format!("git-{name}"));
    let served = phases::serve(repo, &base);
    let start = Instant::now();
    let agent = AgentProc::start(&served.url, &bench.kubeconfig, &base.join("cache"), secret);
    let ready = start.elapsed().as_secs_f64();
    let sent = phases::agent_mutating(&agent);
    row(
        &format!("agent start to ready, {name}"),
        format!("{ready:.1} s, {sent:.0} mutating"),
    );
    f.push("agent start to ready, s", ready, 2);
    f.push("  mutating requests at start", sent, 0);
    f.push("  agent peak RSS at ready, MiB", agent.peak_rss_mib(), 0);
    let (p50, cpu, _) =
        phases::one_tenant_changes(&bench.rt, &bench.client, &agent, &served, 10, "scale");
    f.push("one-tenant change, webhook to applied p50 ms", p50, 0);
    f.push("  agent CPU per change, ms", cpu * 1000.0, 1);
    // One shared change lasts seconds at 1,000 tenants, so a single one is at the mercy of
    // the machine's noise: the median of `runs`, each a different change.
    let (mut took, mut cpu, mut extra, mut drifts) = (Vec::new(), Vec::new(), 0.0, 0.0);
    let mut sent = Vec::new();
    for round in 0..runs.max(1) {
        let drift_before = agent.metric("fief_drift_detected_total");
        let syncs_before = agent.metric("fief_tenant_syncs_total");
        let requests_before = agent.requests();
        let (secs, agent_cpu) = phases::shared_change(&agent, &served, f.tenants, round);
        std::thread::sleep(Duration::from_secs(5));
        let more = agent.metric("fief_tenant_syncs_total") - syncs_before - f.tenants as f64;
        let drifted = agent.metric("fief_drift_detected_total") - drift_before;
        sent.push(but_posts(&requests_before, &agent.requests()) / f.tenants as f64);
        row(
            &format!("shared change {round}, {name}"),
            format!(
                "{secs:.1} s, agent CPU {agent_cpu:.1} s, {more:.0} syncs beyond one per tenant, {drifted:.0} drifts"
            ),
        );
        took.push(secs);
        cpu.push(agent_cpu);
        extra += more;
        drifts += drifted;
    }
    f.push("shared change, webhook to converged s", median(took), 1);
    f.push("  agent CPU s", median(cpu), 1);
    f.push(
        "  requests per tenant, POSTs (Events) aside",
        median(sent),
        2,
    );
    f.push("  syncs beyond one per tenant (all changes)", extra, 0);
    f.push("  drifts counted (all changes)", drifts, 0);
    let peak = agent.peak_rss_mib();
    f.push("agent peak RSS, whole run, MiB", peak, 0);
    f.push("  KiB per tenant", peak * 1024.0 / f.tenants as f64, 1);
}

/// The requests the agent sent between two readings of its per-verb counts, but its POSTs:
/// a shared change creates nothing but Events, which are sent behind the syncs.
fn but_posts(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> f64 {
    after
        .iter()
        .filter(|(verb, _)| verb.as_str() != "POST")
        .map(|(verb, n)| n - before.get(verb).copied().unwrap_or(0.0))
        .sum()
}

/// One Markdown table: a column per entry, then the last column's ratio to the first's.
fn report(columns: &[(String, Figures)]) {
    let (Some((_, first)), Some((_, last))) = (columns.first(), columns.last()) else {
        return;
    };
    let heads: Vec<&str> = columns.iter().map(|(h, _)| h.as_str()).collect();
    println!("\n| figure | {} | ratio |", heads.join(" | "));
    println!("|---|{}---|", "---|".repeat(columns.len()));
    for (k, (what, a, digits)) in first.rows.iter().enumerate() {
        let b = last.rows[k].1;
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, f)| format!("{:.digits$}", f.rows[k].1, digits = *digits))
            .collect();
        let ratio = if *a > 0.0 {
            format!("{:.2}", b / a)
        } else {
            "—".into()
        };
        println!("| {what} | {} | {ratio} |", cells.join(" | "));
    }
}
