//! Rollout benchmark: how long a healthy shared change takes to reach every tenant through the
//! agent with fief.yaml `rollout.waves` (canary 5 tenants, then 10 %, then the rest), beside
//! the same change without waves, on the real test control plane, measured in the same run.
//!
//! `cargo bench --bench rollout -- [TENANTS] [RUNS]` (defaults 100 5). Each run commits a new
//! greeting to the shared component's varz, sends the signed push webhook and times until every
//! tenant's ConfigMap carries it. The objects are ConfigMaps (healthy once applied), so the
//! figure is the cost of the waves themselves: a wave is released once the one before is
//! synced and judged, not after a bake time.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::agent::{Agent, GitServer};

fn repo(agent_ns: &str, prefix: &str, tenants: usize, waves: bool) -> Vec<(String, String)> {
    let rollout = if waves {
        "rollout:\n  waves:\n    - {name: canary, selector: {ring: canary}}\n    - {name: early, percent: 10}\n    - {name: rest}\n"
    } else {
        ""
    };
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n{rollout}"),
        ),
        (
            "components/app/varz.yaml".to_string(),
            "greeting: g0\n".to_string(),
        ),
        (
            "components/app/templates/app.yaml".to_string(),
            common::agent::APP.to_string(),
        ),
    ];
    for i in 0..tenants {
        let name = format!("{prefix}-{i:04}");
        let ring = if i < 5 { "canary" } else { "other" };
        files.push((
            format!("tenants/{name}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{ring: {ring}}}\nspec:\n  components:\n    - name: app\n"
            ),
        ));
    }
    files
}

/// Tenants of `prefix` whose app-config says `greeting`.
fn reached(prefix: &str, greeting: &str) -> usize {
    let Some(list) = common::agent::kubectl_json(&[
        "get",
        "configmap",
        "-A",
        "--field-selector",
        "metadata.name=app-config",
    ]) else {
        return 0;
    };
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|cm| {
            cm["metadata"]["namespace"]
                .as_str()
                .is_some_and(|ns| ns.starts_with(prefix))
                && cm["data"]["greeting"] == greeting
        })
        .count()
}

struct Setup {
    server: GitServer,
    agent: Agent,
    prefix: String,
}

fn setup(tenants: usize, waves: bool) -> Setup {
    let agent_ns = common::unique(if waves { "fief-bw" } else { "fief-bn" });
    let prefix = common::unique(if waves { "bw" } else { "bn" });
    let server = GitServer::new(&repo(&agent_ns, &prefix, tenants, waves));
    let agent = Agent::spawn(&server.url(), &["--interval", "1h"], &[]);
    agent.wait_ready(Duration::from_secs(600));
    Setup {
        server,
        agent,
        prefix,
    }
}

fn one_change(s: &Setup, tenants: usize, greeting: &str) -> Duration {
    s.server.commit(
        &[(
            "components/app/varz.yaml".to_string(),
            format!("greeting: {greeting}\n"),
        )],
        greeting,
    );
    let start = Instant::now();
    assert_eq!(s.agent.signed_push(), 202, "webhook accepted");
    while reached(&s.prefix, greeting) < tenants {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "not every tenant reached {greeting}; agent log:\n{}",
            s.agent.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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
    let tenants = args.first().copied().unwrap_or(100);
    let runs = args.get(1).copied().unwrap_or(5);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("rollout bench: {tenants} tenants, {runs} runs; load at start: {load}");
    let with = setup(tenants, true);
    let without = setup(tenants, false);
    let (mut w, mut n) = (Vec::new(), Vec::new());
    for run in 0..runs {
        // Alternate, so both see the same machine.
        let g = format!("g{}", run + 1);
        w.push(one_change(&with, tenants, &g).as_secs_f64());
        n.push(one_change(&without, tenants, &g).as_secs_f64());
    }
    let (mw, mn) = (median(w.clone()), median(n.clone()));
    println!("| shared change to all {tenants} tenants | median of {runs} | runs (s) |");
    println!("|---|---|---|");
    println!("| with 3 waves (canary 5, 10 %, rest) | {mw:.2} s | {w:.2?} |");
    println!("| without waves | {mn:.2} s | {n:.2?} |");
    println!("| ratio with / without | {:.2}x | |", mw / mn);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load at end: {load}");
}
