//! The agent's rows of the cluster benchmark: start to ready on a cluster applied by
//! `fief apply` and on one applied by the agent (with the mutating requests each start sent),
//! webhook-to-applied for one tenant (p50, and the agent's CPU seconds per change at the
//! large and the small size), a shared component change reaching every tenant (with the API
//! server's 429 answers meanwhile), and the agent's peak RSS.
//!
//! In: a repo of N tenants already applied by `fief apply`, and one of the small size (also
//! applied). Out: rows of the table. `FIEF_BENCH_AGENT_ONLY=1` runs only these phases (see
//! `main`).

use super::*;

/// CPU seconds a process has run so far, summed over its threads from
/// `/proc/<pid>/task/*/schedstat` (nanoseconds, brought up to date at every switch), not from
/// the tick-sampled `/proc/<pid>/stat` (10 ms ticks: a one-tenant change is one or two).
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// CPU seconds (user + system, clock ticks of 10 ms) of every process on the machine whose
/// name is one of `names`, summed per name: the control plane's share of a phase.
pub fn process_cpu(names: &[&str]) -> Vec<f64> {
    let mut out = vec![0.0; names.len()];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let Some(i) = names.iter().position(|n| *n == &stat[open + 1..close]) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let ticks = |k: usize| {
            fields
                .get(k)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        out[i] += (ticks(11) + ticks(12)) / 100.0;
    }
    out
}

/// The machine's load average (1, 5, 15 minutes).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// 429 answers of the API server so far.
async fn throttled(client: &kube::Client) -> f64 {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(req).await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{") && l.contains("code=\"429\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Mutating requests the agent sent (its own client counter).
pub fn agent_mutating(agent: &AgentProc) -> f64 {
    let r = agent.requests();
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|v| r.get(*v).copied().unwrap_or(0.0))
        .sum()
}

/// A repo served by git daemon, copied from an applied synth repo.
pub struct Served {
    pub repo: PathBuf,
    pub url: String,
    pub prefix: String,
    _daemon: Daemon,
}

pub fn serve(applied: &Path, base: &Path) -> Served {
    let repo = base.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    // A repo without an `environments/` folder (the chart fleet's) copies what it has.
    for entry in ["fief.yaml", "tenants", "components", "environments"]
        .into_iter()
        .filter(|e| applied.join(e).exists())
    {
        let _ = Command::new("cp")
            .arg("-r")
            .arg(applied.join(entry))
            .arg(&repo)
            .status();
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let port = free_port();
    let daemon = git_daemon(base, port);
    Served {
        repo,
        url: format!("git://127.0.0.1:{port}/repo"),
        prefix: applied.file_name().unwrap().to_string_lossy().to_string(),
        _daemon: daemon,
    }
}

/// Change one tenant's value `runs` times through the webhook; (median ms webhook to
/// applied, agent CPU seconds per change, the requests of the last change). The CPU is the
/// agent's over each change's window (push to applied, plus 500 ms for the sync's last
/// writes), less what it spends idle over windows as long with no change (after a start the
/// agent still settles; that is not the change's), divided by the changes.
pub fn one_tenant_changes(
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    agent: &AgentProc,
    served: &Served,
    runs: usize,
    tag: &str,
) -> (f64, f64, BTreeMap<String, f64>) {
    let tenant0 = format!("{}-00001", served.prefix);
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &format!("{tenant0}-prod"));
    let tenant_file = synth::tenant_file(&served.repo, &tenant0).unwrap();
    let original = std::fs::read_to_string(&tenant_file).unwrap();
    let (mut wall, mut busy, mut window) = (Vec::new(), 0.0, Duration::ZERO);
    let mut requests = BTreeMap::new();
    std::thread::sleep(Duration::from_secs(2));
    for i in 0..runs {
        let value = format!("{tag}-{i}");
        let text = original.replace(
            "    - name: worker\n",
            &format!("    - name: worker\n      values: {{queues: [{value}]}}\n"),
        );
        std::fs::write(&tenant_file, text).unwrap();
        git(&served.repo, &["commit", "-q", "-am", &value]);
        // The request counters come from /metrics, whose encoding at 1,000 tenants is itself
        // a few ms of CPU: read them well before the window.
        let before = agent.requests();
        std::thread::sleep(Duration::from_millis(300));
        let cpu_before = cpu_seconds(agent.child.id());
        let start = Instant::now();
        agent.push();
        rt.block_on(wait_value(&api, "worker", "QUEUES", &value));
        wall.push(start.elapsed().as_secs_f64());
        // Let the sync finish (final inventory write, Event) before reading CPU.
        std::thread::sleep(Duration::from_millis(500));
        window += start.elapsed();
        busy += cpu_seconds(agent.child.id()) - cpu_before;
        requests = delta(&before, &agent.requests());
    }
    let cpu_before = cpu_seconds(agent.child.id());
    std::thread::sleep(window);
    let idle = cpu_seconds(agent.child.id()) - cpu_before;
    // Summed over every change and divided: a single change is a few ms, close to the noise.
    let per_change = (busy - idle).max(0.0) / runs.max(1) as f64;
    (median(wall) * 1000.0, per_change, requests)
}

/// Run the agent phases. `big` and `small` are synth repos already applied by `fief apply`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    kubeconfig: &Path,
    work: &Path,
    big: &Path,
    small_repo: &Path,
    tenants: usize,
    small: usize,
    runs: usize,
    row: &mut dyn FnMut(&str, String),
) {
    let secret = work.join("secret");
    std::fs::write(&secret, SECRET).unwrap();
    row("   load average before the agent phases", loadavg());
    let served = serve(big, &work.join("git"));

    // Start to ready on a cluster applied by `fief apply`.
    let api_before = rt.block_on(apiserver_requests(client));
    let start = Instant::now();
    let agent = AgentProc::start(&served.url, kubeconfig, &work.join("cache"), &secret);
    let ready = start.elapsed().as_secs_f64();
    let sent = agent_mutating(&agent);
    let api = delta(&api_before, &rt.block_on(apiserver_requests(client)));
    row(
        &format!("7. agent start to ready, {tenants} tenants applied by `fief apply`"),
        format!(
            "{ready:.1} s, {sent:.0} mutating requests sent by the agent ({:.0} mutating in apiserver_request_total meanwhile, controller-manager included)",
            mutating(&api)
        ),
    );

    let (p50, cpu, requests) = one_tenant_changes(rt, client, &agent, &served, runs.max(10), "big");
    row(
        &format!("4. one tenant's value changed: webhook to applied, {tenants} tenants (p50)"),
        format!("{p50:.0} ms"),
    );
    row(
        &format!("12. agent CPU per one-tenant change, {tenants} tenants"),
        format!("{cpu:.3} s"),
    );
    row("   requests the agent sent for it", format!("{requests:?}"));

    shared_change_converges(rt, client, &agent, &served, tenants, row);
    row(
        &format!("6. agent peak RSS, {tenants} tenants"),
        agent.rss_report(),
    );
    drop(agent);

    // Start to ready on a cluster the agent applied itself.
    let api_before = rt.block_on(apiserver_requests(client));
    let start = Instant::now();
    let agent = AgentProc::start(&served.url, kubeconfig, &work.join("cache"), &secret);
    let ready = start.elapsed().as_secs_f64();
    let sent = agent_mutating(&agent);
    let api = delta(&api_before, &rt.block_on(apiserver_requests(client)));
    row(
        &format!("7'. agent start to ready, {tenants} tenants applied by the agent"),
        format!(
            "{ready:.1} s, {sent:.0} mutating requests sent by the agent ({:.0} mutating in apiserver_request_total meanwhile)",
            mutating(&api)
        ),
    );
    row(
        &format!("6'. agent peak RSS over a start, {tenants} tenants"),
        agent.rss_report(),
    );
    drop(agent);

    // The same one-tenant change at the small size: the CPU it costs must not grow with N.
    let served_small = serve(small_repo, &work.join("git-small"));
    let agent = AgentProc::start(
        &served_small.url,
        kubeconfig,
        &work.join("cache-small"),
        &secret,
    );
    let (p50, cpu, _) =
        one_tenant_changes(rt, client, &agent, &served_small, runs.max(10), "small");
    row(
        &format!("12. agent CPU per one-tenant change, {small} tenants"),
        format!("{cpu:.3} s (webhook to applied p50 {p50:.0} ms)"),
    );
    row(
        &format!("6. agent peak RSS, {small} tenants"),
        agent.rss_report(),
    );
    drop(agent);
    row("   load average after the agent phases", loadavg());
}

/// Phase 5, a shared component changes for every one of `tenants`: from the webhook to every
/// tenant synced, with the agent's and the control plane's CPU meanwhile and the 429s
/// answered.
fn shared_change_converges(
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    agent: &AgentProc,
    served: &Served,
    tenants: usize,
    row: &mut dyn FnMut(&str, String),
) {
    let throttled_before = rt.block_on(throttled(client));
    const CONTROL_PLANE: [&str; 3] = ["kube-apiserver", "etcd", "kube-controller"];
    let plane_before = process_cpu(&CONTROL_PLANE);
    let (took, cpu) = shared_change(agent, served, tenants, 0);
    let plane: Vec<f64> = process_cpu(&CONTROL_PLANE)
        .iter()
        .zip(&plane_before)
        .map(|(a, b)| a - b)
        .collect();
    let throttled = rt.block_on(throttled(client)) - throttled_before;
    row(
        &format!("5. shared component changed, {tenants} tenants: webhook to converged"),
        format!("{took:.1} s (agent CPU {cpu:.1} s), {throttled:.0} answers 429"),
    );
    row(
        "   CPU meanwhile: API server, etcd, controller-manager",
        format!("{:.1} s, {:.1} s, {:.1} s", plane[0], plane[1], plane[2]),
    );
}

/// `FIEF_BENCH_AGENT_HOLD=FILE`: for profiling the agent by hand. After the two `fief apply`
/// runs, serve both repos as git repos, write their URLs and the kubeconfig to `FILE` as shell
/// variables (`KUBECONFIG`, `BIG_URL`, `BIG_REPO`, `SMALL_URL`, `SMALL_REPO`) and keep the
/// control plane up until `FILE` is removed.
pub fn hold(file: &Path, kubeconfig: &Path, work: &Path, big: &Path, small_repo: &Path) {
    let served = serve(big, &work.join("git"));
    let served_small = serve(small_repo, &work.join("git-small"));
    let text = format!(
        "KUBECONFIG={}\nBIG_URL={}\nBIG_REPO={}\nSMALL_URL={}\nSMALL_REPO={}\n",
        kubeconfig.display(),
        served.url,
        served.repo.display(),
        served_small.url,
        served_small.repo.display()
    );
    std::fs::write(file, text).unwrap();
    println!(
        "holding the control plane until {} is removed",
        file.display()
    );
    while file.exists() {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Commit a change to the shared worker component (the `round`th, each one different) and
/// push it; (seconds from the webhook to `tenants` more syncs counted, the agent's CPU seconds
/// meanwhile).
pub fn shared_change(
    agent: &AgentProc,
    served: &Served,
    tenants: usize,
    round: usize,
) -> (f64, f64) {
    let syncs_before = agent.metric("fief_tenant_syncs_total");
    let change =
        format!("image: registry.example/worker\nqueues: [default, mail, shared-{round}]\n");
    std::fs::write(served.repo.join("components/worker/varz.yaml"), change).unwrap();
    git(&served.repo, &["commit", "-q", "-am", "shared"]);
    let cpu_before = cpu_seconds(agent.child.id());
    let start = Instant::now();
    agent.push();
    // Each scrape encodes every tenant's series, so its cost grows with the fleet: polled
    // every 100 ms per 1,000 tenants, the polls take the same share of the agent's CPU at
    // every size (polled at a fixed rate, they would grow with the fleet twice over: per
    // scrape and in the number of scrapes). The figure's resolution is that interval.
    let every = Duration::from_millis(100 * (tenants as u64).div_ceil(1000).max(1));
    while agent.metric("fief_tenant_syncs_total") < syncs_before + tenants as f64 {
        std::thread::sleep(every);
    }
    (
        start.elapsed().as_secs_f64(),
        cpu_seconds(agent.child.id()) - cpu_before,
    )
}
