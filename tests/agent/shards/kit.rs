//! The shard tests' kit: sharded replicas, the fleet's greetings in one list, who holds each
//! shard, and who wrote what (the API server's audit log, by each replica's User-Agent).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use crate::common;
use crate::common::agent::*;
use crate::common::audit;
use crate::common::cluster_cli::kubectl_ok as kubectl;

pub const SHARDS: &str = "12";

pub fn signal(agent: &Agent, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &agent.child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig}");
}

/// A sharded replica named `name` (its Pod name, and so its User-Agent).
pub fn replica(server: &GitServer, agent_ns: &str, name: &str) -> Agent {
    Agent::spawn(
        &server.url(),
        &[
            "--lease-namespace",
            agent_ns,
            "--shards",
            SHARDS,
            "--interval",
            "300s",
            "--concurrency",
            "8",
            "--api-qps",
            "200",
        ],
        &[("POD_NAME", name.to_string())],
    )
}

/// Each tenant namespace's `app-config` greeting, in one list.
pub fn greetings() -> BTreeMap<String, String> {
    let list = kubectl_json(&[
        "get",
        "configmaps",
        "-A",
        "--field-selector",
        "metadata.name=app-config",
    ])
    .unwrap_or_default();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|cm| {
            Some((
                cm["metadata"]["namespace"].as_str()?.to_string(),
                cm["data"]["greeting"].as_str()?.to_string(),
            ))
        })
        .collect()
}

pub fn all_greet(names: &[String], greeting: &str) -> bool {
    not_greeting(names, greeting).is_empty()
}

/// The tenants of `names` whose `app-config` does not greet `greeting` now.
fn not_greeting<'a>(names: &'a [String], greeting: &str) -> Vec<&'a String> {
    let now = greetings();
    names
        .iter()
        .filter(|t| now.get(&format!("{t}-prod")).map(String::as_str) != Some(greeting))
        .collect()
}

/// Wait until every one of `names` greets `greeting`; past `timeout`, fail naming how many
/// do not yet (the first few of them) and each replica's last log lines.
pub fn wait_all_greet(names: &[String], greeting: &str, timeout: Duration, replicas: &[Agent]) {
    let start = std::time::Instant::now();
    loop {
        let behind = not_greeting(names, greeting);
        if behind.is_empty() {
            return;
        }
        if start.elapsed() > timeout {
            let tails: Vec<String> = replicas.iter().map(|r| r.log_tail(15)).collect();
            panic!(
                "timed out after {timeout:?}: {} of {} tenants do not greet {greeting:?} (first: {:?})\nreplicas' log tails:\n{}",
                behind.len(),
                names.len(),
                &behind[..behind.len().min(5)],
                tails.join("\n---\n")
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The replica that sent a write, by its User-Agent (`fief-agent/<version> (<name>)`).
pub fn sender(w: &audit::Write) -> Option<String> {
    let start = w.user_agent.find("fief-agent/")?;
    let rest = &w.user_agent[start..];
    let open = rest.find('(')?;
    let close = rest[open..].find(')')?;
    Some(rest[open + 1..open + close].to_string())
}

/// Tenant → the replicas that wrote its namespace's objects, from the writes received at or
/// after `since_us`.
pub fn writers(names: &[String], since_us: i64) -> BTreeMap<String, BTreeSet<String>> {
    let wanted: BTreeMap<String, &String> =
        names.iter().map(|t| (format!("{t}-prod"), t)).collect();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for w in audit::writes() {
        if w.received_us < since_us || w.verb == "get" {
            continue;
        }
        if let (Some(t), Some(r)) = (wanted.get(&w.namespace), sender(&w)) {
            out.entry(t.to_string()).or_default().insert(r);
        }
    }
    out
}

pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The shards each replica holds, from the shard Leases.
pub fn holders(agent_ns: &str) -> BTreeMap<String, String> {
    let list = kubectl_json(&[
        "get",
        "leases",
        "-n",
        agent_ns,
        "-l",
        "fief.dev/lease=shard",
    ])
    .unwrap_or_default();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let holder = l["spec"]["holderIdentity"].as_str()?;
            (!holder.is_empty()).then(|| {
                (
                    l["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    holder.to_string(),
                )
            })
        })
        .collect()
}

pub fn per_replica(h: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in h.values() {
        *m.entry(r.clone()).or_insert(0) += 1;
    }
    m
}

pub fn fleet(prefix: &str, n: usize) -> (String, Vec<String>, GitServer) {
    let agent_ns = common::unique(&format!("fief-{prefix}"));
    let names: Vec<String> = (0..n)
        .map(|i| common::unique(&format!("{prefix}{i}")))
        .collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "one")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    kubectl(&["create", "namespace", &agent_ns]);
    (agent_ns, names, server)
}

/// A tenant of component `app` in rollout ring `ring` with `values`.
pub fn ringed(name: &str, ring: &str, values: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{ring: {ring}}}\nspec:\n  components:\n    - name: app\n      values: {{{values}}}\n"
        ),
    )
}

/// Wait until the replicas hold `want` shards each (in the replicas' name order).
pub fn wait_split(agent_ns: &str, want: &[usize], timeout: Duration) {
    crate::common::util::wait_until(&format!("the shards split {want:?}"), timeout, || {
        per_replica(&holders(agent_ns))
            .values()
            .copied()
            .collect::<Vec<_>>()
            == want
    });
}

/// Two replicas named `names`, once every tenant greets "one" and each holds 6 shards.
pub fn two_replicas(
    server: &GitServer,
    agent_ns: &str,
    names: [&str; 2],
    tenants: &[String],
) -> (Agent, Agent) {
    let a = replica(server, agent_ns, names[0]);
    let b = replica(server, agent_ns, names[1]);
    crate::common::util::wait_until("every tenant applied", Duration::from_secs(120), || {
        all_greet(tenants, "one")
    });
    wait_split(agent_ns, &[6, 6], std::time::Duration::from_secs(60));
    (a, b)
}
