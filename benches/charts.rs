//! Helm chart benchmark: a synthetic repo of N tenants (default 1,000), each with one `kind:
//! helm` component of the metrics-server chart (tests/common/offline.rs
//! `metrics_server_chart()`, from its Go module zip), the replicas varying per tenant, rendered
//! and validated in memory through fief's own path (`render_all` with fief-render-helper
//! installed, as the CLI and the agent install it). In the same run:
//!
//! - the same fleet with the chart bumped before every run (a new chart version: a new key,
//!   the chart's files sent again to every helper process and loaded again);
//! - the synthetic templates fleet of the same size (tests/common/synth.rs);
//! - one tenant rendered alone, chart and templates (what a one-tenant values change costs
//!   before the apply, which is the same for both);
//! - `helm template` once per tenant for a SAMPLE of tenants (default 50), two at a time as a
//!   two-core machine runs them, extrapolated to N.
//!
//! Prints medians of RUNS runs (default 5; the first run, which starts the helper, is reported
//! on its own) of the wall time and of the CPU time of fief and its helper, and the helper's
//! RSS.
//!
//! Needs `$FIEF_RENDER_HELPER` (tools/build-render-helper.sh), `$FIEF_HELM_BIN`
//! (tools/build-helm.sh) and `go` (the chart's module download).
//!
//! `cargo bench --bench charts [-- TENANTS RUNS SAMPLE]`

#[path = "shared/chart_fleet.rs"]
mod chart_fleet;
#[path = "../tests/common/offline.rs"]
mod offline;
#[path = "../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the tests; the bench uses part of it
mod synth;

use chart_fleet::{VARZ, children, replicas, status_kib, write_chart_repo};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fief::core::model::Repo;
use fief::core::render::{Renderer, render_tenant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn load(dir: &Path) -> Repo {
    let snapshot = fief::source::fs::read_dir(dir).expect("read repo");
    Repo::load(Arc::new(snapshot))
}

/// Render and validate every tenant of `repo`: the wall time and the object count; panics on
/// a tenant that did not render cleanly.
fn render_fleet(repo: &Repo) -> (Duration, usize) {
    let t = Instant::now();
    let renders = fief::core::pipeline::render_all(repo, &[]);
    let wall = t.elapsed();
    if let Some(bad) = renders.iter().find(|r| !r.is_ok()) {
        panic!("tenant {} did not render: {:?}", bad.tenant, bad.errors);
    }
    (wall, renders.iter().map(|r| r.objects.len()).sum())
}

/// One tenant rendered alone, `times` times: the median.
fn render_one(repo: &Repo, tenant: &str, times: usize) -> Duration {
    let only = [tenant.to_string()];
    let mut walls = Vec::new();
    for _ in 0..times {
        let t = Instant::now();
        let renders = fief::core::pipeline::render_all(repo, &only);
        walls.push(t.elapsed());
        assert!(renders.iter().all(|r| r.is_ok()));
    }
    median(walls)
}

/// One tenant rendered alone by a helper started for it (the agent's first render after the
/// helper was ended for idleness: start, the chart's files sent and loaded, one render),
/// `times` times: the median.
fn render_one_cold(repo: &Repo, helper: &Path, tenant: &str, times: usize) -> Duration {
    let mut walls = Vec::new();
    for _ in 0..times {
        let fresh = Arc::new(fief::source::render_helper::HelperRenderer::at(
            helper.to_path_buf(),
        ));
        let renderer = Renderer::new(repo.snapshot.clone()).with_packages(fresh);
        let t = Instant::now();
        let out = render_tenant(&renderer, repo, tenant);
        walls.push(t.elapsed());
        assert!(out.errors.is_empty(), "{:?}", out.errors);
    }
    median(walls)
}

/// What `f` returns, and the CPU time of this process and its helpers while it ran.
fn with_cpu<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let before = cpu_and_helpers().0;
    let out = f();
    (out, cpu_and_helpers().0.saturating_sub(before))
}

/// CPU time (user + system) of this process and of its children still running (the
/// helpers), from /proc; and the children's RSS in KiB.
fn cpu_and_helpers() -> (Duration, u64) {
    let me = std::process::id();
    let mut ticks = stat_ticks(&format!("/proc/{me}/stat")).unwrap_or(0);
    let mut rss = 0;
    for pid in children(me) {
        ticks += stat_ticks(&format!("/proc/{pid}/stat")).unwrap_or(0);
        rss += status_kib(pid, "VmRSS:");
    }
    // The kernel counts in USER_HZ, 100 per second on Linux.
    (Duration::from_millis(ticks * 10), rss)
}

fn stat_ticks(path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    // Fields after the command's closing parenthesis: utime and stime are 12th and 13th.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// `helm template` once per tenant for the first `sample` tenants, two at a time: the wall
/// time of the sample.
fn helm_template_sample(helm: &Path, chart: &Path, sample: usize) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("varz.yaml"), VARZ).expect("write values");
    let run = |i: usize| {
        let values = dir.path().join(format!("values-{i}.yaml"));
        std::fs::write(&values, format!("replicas: {}\n", replicas(i))).expect("write values");
        let out = Command::new(helm)
            .args(["template", "metrics"])
            .arg(chart)
            .args(["--skip-tests", "--namespace"])
            .arg(format!("{}-prod", synth::tenant_name(i)))
            .arg("-f")
            .arg(dir.path().join("varz.yaml"))
            .arg("-f")
            .arg(&values)
            .output()
            .expect("run helm template");
        assert!(out.status.success(), "{}", offline::stderr(&out));
    };
    let t = Instant::now();
    std::thread::scope(|s| {
        let odd = s.spawn(|| (1..sample).step_by(2).for_each(run));
        (0..sample).step_by(2).for_each(run);
        odd.join().expect("helm template thread");
    });
    t.elapsed()
}

/// The bench's arguments: tenants, runs, helm sample.
fn args() -> (usize, usize, usize) {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let at = |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    (at(0, 1000), at(1, 5).max(2), at(2, 50).max(2))
}

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!("${name} is not set; see the top of benches/charts.rs"),
    }
}

fn main() {
    // `cargo test --all-targets` builds and runs bench targets too; only `cargo bench` (which
    // passes --bench) measures.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark compiled; run it with `cargo bench`");
        return;
    }
    let (tenants, runs, sample) = args();
    let helper = env_path("FIEF_RENDER_HELPER");
    let helm = env_path("FIEF_HELM_BIN");
    fief::core::render::package::install(Arc::new(
        fief::source::render_helper::HelperRenderer::at(helper.clone()),
    ));
    let chart = offline::metrics_server_chart();
    let charts_dir = tempfile::tempdir().expect("temp dir");
    write_chart_repo(charts_dir.path(), &chart, tenants, synth::tenant_name);
    let templates_dir = tempfile::tempdir().expect("temp dir");
    synth::write_repo(templates_dir.path(), tenants).expect("write synthetic repo");
    let charts = load(charts_dir.path());
    let templates = load(templates_dir.path());
    print_load("before");

    let fleets = render_fleets(&charts, &templates, charts_dir.path(), runs);
    let (_, helper_rss) = cpu_and_helpers();
    let one_chart = render_one(&charts, &synth::tenant_name(1), 51);
    let one_templates = render_one(&templates, &synth::tenant_name(1), 51);
    let one_cold = render_one_cold(&charts, &helper, &synth::tenant_name(1), 7);
    let helm_wall = helm_template_sample(&helm, &chart, sample);
    let helm_fleet = helm_wall.mul_f64(tenants as f64 / sample as f64);
    print_load("after");

    println!(
        "charts benchmark: {tenants} tenants, {} threads",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    fleets.print();
    println!(
        "  one tenant alone                chart {}, templates {} (ratio {:.2})",
        ms(one_chart),
        ms(one_templates),
        one_chart.as_secs_f64() / one_templates.as_secs_f64()
    );
    println!(
        "  one tenant alone, helper started for it: {}",
        ms(one_cold)
    );
    println!(
        "  helm template, {sample} tenants 2 at a time: {} -> {} for {tenants} (extrapolated); \
         fief is {:.1}x faster",
        ms(helm_wall),
        ms(helm_fleet),
        helm_fleet.as_secs_f64() / median(fleets.chart.0.clone()).as_secs_f64()
    );
    println!(
        "  (CPU: this process and its helper, user + system.) Helper RSS after: {} MiB",
        helper_rss / 1024
    );
}

/// Wall and CPU times of the runs of one fleet.
type Times = (Vec<Duration>, Vec<Duration>);

/// The fleets' runs: the chart fleet, the templates fleet, the chart fleet bumped.
struct Fleets {
    first: Duration,
    chart: Times,
    templates: Times,
    bumped: Times,
    chart_objects: usize,
    template_objects: usize,
}

/// The first run of the chart fleet, then `runs` runs of each fleet in turn.
fn render_fleets(charts: &Repo, templates: &Repo, charts_dir: &Path, runs: usize) -> Fleets {
    let (first, chart_objects) = render_fleet(charts);
    let mut fleets = Fleets {
        first,
        chart: Times::default(),
        templates: Times::default(),
        bumped: Times::default(),
        chart_objects,
        template_objects: 0,
    };
    let push = |times: &mut Times, ((wall, objects), cpu): ((Duration, usize), Duration)| {
        times.0.push(wall);
        times.1.push(cpu);
        objects
    };
    for run in 0..runs {
        push(&mut fleets.chart, with_cpu(|| render_fleet(charts)));
        fleets.template_objects = push(&mut fleets.templates, with_cpu(|| render_fleet(templates)));
        let bumped = bump(charts_dir, run);
        push(&mut fleets.bumped, with_cpu(|| render_fleet(&bumped)));
    }
    fleets
}

impl Fleets {
    fn print(&self) {
        let m = |t: &Times| (ms(median(t.0.clone())), ms(median(t.1.clone())));
        let (chart, chart_cpu) = m(&self.chart);
        println!(
            "  chart fleet render + validate   median {chart}, CPU {chart_cpu} ({} objects; \
             first run, starting the helper: {})",
            self.chart_objects,
            ms(self.first)
        );
        let (bumped, bumped_cpu) = m(&self.bumped);
        println!("  chart bumped, every tenant      median {bumped}, CPU {bumped_cpu}");
        let (templates, templates_cpu) = m(&self.templates);
        println!(
            "  templates fleet                 median {templates}, CPU {templates_cpu} ({} \
             objects)",
            self.template_objects
        );
    }
}

/// The chart fleet with the chart's version changed (`run` makes it new each time), read
/// again.
fn bump(dir: &Path, run: usize) -> Repo {
    let path = dir.join("components/metrics/chart/Chart.yaml");
    let text = std::fs::read_to_string(&path).expect("read Chart.yaml");
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("version:") {
                format!("version: 3.12.{}\n", 100 + run)
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&path, text).expect("write Chart.yaml");
    load(dir)
}

fn print_load(when: &str) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("  load average {when}: {}", load.trim());
}
