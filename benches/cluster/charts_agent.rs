//! `FIEF_BENCH_CHARTS=1 cargo bench --bench cluster -- [TENANTS] [RUNS]`: the agent with a
//! fleet of chart tenants beside the same number of templates tenants, in one sitting on the
//! real test control plane.
//!
//! Both fleets are applied by `fief apply` (each with its own agent namespace), then served
//! by git daemon and run by an agent each, one after the other: its RSS once ready and
//! after RUNS one-tenant values changes (with the render helper's, which the chart agent
//! starts), and the webhook-to-applied time of those changes: the same change in both, a
//! tenant's `replicas` value, read back from its Deployment (one object written each).

use super::*;

use crate::chart_fleet::{children, status_kib, write_chart_repo};

/// A chart tenant's name.
fn chart_tenant(i: usize) -> String {
    format!("charts-{i:05}")
}

/// Run the comparison and print its rows.
pub fn run(bench: &Bench) {
    let (tenants, runs, kubeconfig) = (bench.tenants, bench.runs.max(5), &bench.kubeconfig);
    let work = bench.work.path();
    let charts = work.join("charts");
    write_chart_repo(
        &charts,
        &offline::metrics_server_chart(),
        tenants,
        chart_tenant,
    );
    offline::write_file(
        &charts,
        "fief.yaml",
        "baseDomain: bench.example\nagentNamespace: fief-bench-charts\n",
    );
    let templates = work.join("tpl0");
    let mut files = synth::repo_files_named(tenants, "tpl0");
    files.push((
        "fief.yaml".into(),
        "baseDomain: bench.example\nagentNamespace: fief-bench-templates\n".into(),
    ));
    synth::write_files(&templates, &files).unwrap();
    for (name, repo) in [("chart", &charts), ("templates", &templates)] {
        let (secs, objects, _) = fief_apply(repo, kubeconfig);
        row(
            &format!("   cold apply, {tenants} {name} tenants (fief apply)"),
            format!("{secs:.1} s, {objects} objects"),
        );
    }
    let secret = work.join("secret");
    std::fs::write(&secret, SECRET).unwrap();
    let chart = measure_chart(bench, &charts, &secret, runs);
    let tpl = measure_templates(bench, &templates, &secret, runs);
    row(
        "   of which resident now, anonymous + file-backed (agent; helper)",
        format!("chart {}; templates {}", chart.split, tpl.split),
    );
    row(
        &format!("   agent RSS, {tenants} tenants, chart vs templates (peak, agent + helper)"),
        format!(
            "{:.0} MiB vs {:.0} MiB ({:.2}×); ready: {:.0} vs {:.0} MiB",
            chart.peak,
            tpl.peak,
            chart.peak / tpl.peak,
            chart.ready,
            tpl.ready
        ),
    );
    row(
        &format!("   one-tenant values change, webhook to applied, {tenants} tenants (p50)"),
        format!(
            "chart {:.0} ms vs templates {:.0} ms ({:.2}×)",
            chart.change_ms,
            tpl.change_ms,
            chart.change_ms / tpl.change_ms
        ),
    );
}

/// What one fleet's agent measured.
struct AgentFigures {
    /// RSS once ready (agent + helper), MiB.
    ready: f64,
    /// Peak RSS over the changes (agent + helper's peak), MiB.
    peak: f64,
    /// Median webhook-to-applied time of a one-tenant change, ms.
    change_ms: f64,
    /// What is resident after the changes, anonymous and file-backed, agent then helper.
    split: String,
}

/// The agent's and its helpers' resident memory now, anonymous + file-backed, MiB.
fn split(agent: &AgentProc) -> String {
    let helpers = children(agent.child.id());
    let kib =
        |field: &str| helpers.iter().map(|p| status_kib(*p, field)).sum::<u64>() as f64 / 1024.0;
    format!(
        "{:.0} + {:.0} MiB; {:.0} + {:.0} MiB",
        agent.status_mib("RssAnon:"),
        agent.status_mib("RssFile:"),
        kib("RssAnon:"),
        kib("RssFile:")
    )
}

/// The agent's and its helpers' RSS now, and their peaks, MiB.
fn rss_with_helpers(agent: &AgentProc) -> (f64, f64) {
    let pid = agent.child.id();
    let helpers = children(pid);
    let now: u64 = helpers.iter().map(|p| status_kib(*p, "VmRSS:")).sum();
    let peak: u64 = helpers.iter().map(|p| status_kib(*p, "VmHWM:")).sum();
    (
        agent.status_mib("VmRSS:") + now as f64 / 1024.0,
        agent.peak_rss_mib() + peak as f64 / 1024.0,
    )
}

/// The chart fleet's agent: ready, then `runs` changes of tenant 1's replicas.
fn measure_chart(bench: &Bench, repo: &Path, secret: &Path, runs: usize) -> AgentFigures {
    measure(bench, repo, secret, runs, &chart_tenant(1), "git-charts")
}

/// The templates fleet's agent: ready, then `runs` changes of tenant 1's `web` replicas.
fn measure_templates(bench: &Bench, repo: &Path, secret: &Path, runs: usize) -> AgentFigures {
    measure(bench, repo, secret, runs, "tpl0-00001", "git-templates")
}

/// One fleet's agent, serving `repo` from `served_dir`: its RSS once ready, then `runs`
/// changes of `tenant`'s `{replicas: N}` value (its one Deployment's replicas, through the
/// chart's values or the template's alike), each timed from the push until the Deployment
/// asks for them.
fn measure(
    bench: &Bench,
    repo: &Path,
    secret: &Path,
    runs: usize,
    tenant: &str,
    served_dir: &str,
) -> AgentFigures {
    let work = bench.work.path();
    let served = phases::serve(repo, &work.join(served_dir));
    let agent = AgentProc::start(
        &served.url,
        &bench.kubeconfig,
        &work.join(format!("cache-{served_dir}")),
        secret,
    );
    let ready = rss_with_helpers(&agent).0;
    let file = served.repo.join(format!("tenants/{tenant}.yaml"));
    let original = std::fs::read_to_string(&file).unwrap();
    let api: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(bench.client.clone(), &format!("{tenant}-prod"));
    let mut walls = Vec::new();
    let mut peak: f64 = 0.0;
    for i in 0..runs {
        let replicas = 10 + i as i32;
        let text = original.replace(
            &format!("{{replicas: {}}}", crate::chart_fleet::replicas(1)),
            &format!("{{replicas: {replicas}}}"),
        );
        assert_ne!(text, original, "the tenant file sets its replicas");
        std::fs::write(&file, text).unwrap();
        git(
            &served.repo,
            &["commit", "-q", "-am", &format!("replicas {replicas}")],
        );
        std::thread::sleep(Duration::from_millis(300));
        let start = Instant::now();
        agent.push();
        bench.rt.block_on(wait_replicas(&api, replicas));
        walls.push(start.elapsed().as_secs_f64());
        peak = peak.max(rss_with_helpers(&agent).1);
        // The sync finishes (its inventory write, its Event) before the next change.
        std::thread::sleep(Duration::from_millis(500));
    }
    AgentFigures {
        ready,
        peak,
        change_ms: median(walls) * 1000.0,
        split: split(&agent),
    }
}

/// Wait until a Deployment of the namespace asks for `replicas`.
async fn wait_replicas(api: &Api<k8s_openapi::api::apps::v1::Deployment>, replicas: i32) {
    loop {
        if let Ok(list) = api.list(&Default::default()).await
            && list
                .items
                .iter()
                .any(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(replicas))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
