//! Shards across replicas, against the real control plane, with writes counted at the API
//! server (its audit log, by each replica's User-Agent): every tenant is written by exactly
//! one replica, a replica added takes a fair share and writes nothing that did not change, a
//! killed replica's tenants resume on the others and take a commit pushed meanwhile, and a
//! replica stopped past its Leases writes nothing once it resumes.

use crate::common;
mod kit;

use std::collections::{BTreeMap, BTreeSet};

use std::time::{Duration, Instant};

use common::agent::*;
use common::audit;
use common::cluster_cli::kubectl_ok as kubectl;
use common::util::wait_until;
use kit::*;

#[test]
fn three_replicas_share_300_tenants_each_written_by_one_and_a_fourth_takes_a_quarter_without_writes_and_a_killed_ones_resume_elsewhere()
 {
    let (agent_ns, names, server) = fleet("sh", 300);
    let start = now_us();
    let mut replicas: Vec<Agent> = ["r0", "r1", "r2"]
        .iter()
        .map(|n| replica(&server, &agent_ns, n))
        .collect();
    // Generous: the agent suite runs its tests side by side on one control plane.
    wait_all_greet(&names, "one", Duration::from_secs(420), &replicas);
    wait_split(&agent_ns, &[4, 4, 4], Duration::from_secs(60));
    each_tenant_is_written_by_one_replica_with_a_fair_share_each(&names, start);
    let after =
        a_fourth_replica_takes_a_quarter_without_writes(&server, &agent_ns, &names, &mut replicas);
    a_killed_replicas_shards_resume_elsewhere(&server, &agent_ns, &names, &mut replicas, &after);
}

/// Counted at the API server since `start`: every tenant was written, each by one replica,
/// and each of the three replicas wrote a fair share.
fn each_tenant_is_written_by_one_replica_with_a_fair_share_each(names: &[String], start: i64) {
    let by = writers(names, start);
    assert_eq!(by.len(), names.len(), "every tenant was written");
    let shared: Vec<_> = by.iter().filter(|(_, r)| r.len() != 1).collect();
    assert!(
        shared.is_empty(),
        "tenants written by more than one replica: {shared:?}"
    );
    let mut load: BTreeMap<String, usize> = BTreeMap::new();
    for r in by.values().flatten() {
        *load.entry(r.clone()).or_insert(0) += 1;
    }
    assert_eq!(load.len(), 3, "every replica works: {load:?}");
    assert!(
        load.values().all(|n| *n >= 50),
        "a fair share each: {load:?}"
    );
}

/// A fourth replica takes a quarter of the shards and writes no tenant object; the shard
/// holders after.
fn a_fourth_replica_takes_a_quarter_without_writes(
    server: &GitServer,
    agent_ns: &str,
    names: &[String],
    replicas: &mut Vec<Agent>,
) -> BTreeMap<String, String> {
    // A fourth replica takes a quarter of the shards and writes no tenant object (once the
    // others have settled: none of their writes, health verdicts included, for 3 s).
    wait_until("the replicas settle", Duration::from_secs(90), || {
        let last = audit::writes()
            .iter()
            .filter(|w| {
                let ours = sender(w).is_some_and(|r| ["r0", "r1", "r2"].contains(&r.as_str()));
                ours && w.resource != "leases"
            })
            .map(|w| w.received_us)
            .max()
            .unwrap_or(0);
        now_us() - last > 3_000_000
    });
    let before = holders(agent_ns);
    let scaled = now_us();
    replicas.push(replica(server, agent_ns, "r3"));
    wait_split(agent_ns, &[3, 3, 3, 3], Duration::from_secs(90));
    let after = holders(agent_ns);
    let moved = after
        .iter()
        .filter(|(s, r)| before.get(*s) != Some(r))
        .count();
    assert_eq!(
        moved, 3,
        "a quarter of the 12 shards moved: {before:?} → {after:?}"
    );
    wait_until("r3 is ready on its shards", Duration::from_secs(60), || {
        replicas[3]
            .get("/status")
            .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
            .is_some_and(|s| {
                s["shards"]["ready"]
                    .as_array()
                    .is_some_and(|r| r.len() == 3)
            })
    });
    std::thread::sleep(Duration::from_secs(3));
    let late = writers(names, scaled);
    let detail: Vec<String> = audit::writes()
        .iter()
        .filter(|w| w.received_us >= scaled && w.namespace.ends_with("-prod"))
        .take(5)
        .map(|w| {
            format!(
                "{} {} {}/{} by {}",
                w.verb, w.resource, w.namespace, w.name, w.user_agent
            )
        })
        .collect();
    assert!(
        late.is_empty(),
        "tenant objects written after the scale-up: {late:?}\n{detail:#?}\n{}",
        replicas[3].log()
    );
    after
}

/// r1 is killed: its shards (as held `after` the scale-up) go to the others within the
/// lease duration, and a commit pushed meanwhile lands on every tenant.
fn a_killed_replicas_shards_resume_elsewhere(
    server: &GitServer,
    agent_ns: &str,
    names: &[String],
    replicas: &mut [Agent],
    after: &BTreeMap<String, String>,
) {
    // r1 is killed: its shards go to the others, and a commit pushed meanwhile lands.
    let killed_shards: Vec<String> = after
        .iter()
        .filter(|(_, r)| *r == "r1")
        .map(|(s, _)| s.clone())
        .collect();
    replicas[1].kill();
    let killed = Instant::now();
    let changed: Vec<(String, String)> = names.iter().map(|n| tenant(n, "two")).collect();
    server.commit(&changed, "greet two");
    assert_eq!(replicas[0].signed_push(), 202);
    wait_until(
        "the others hold every shard",
        Duration::from_secs(40),
        || {
            let h = holders(agent_ns);
            h.len() == 12
                && killed_shards
                    .iter()
                    .all(|s| h.get(s).is_some_and(|r| r != "r1"))
        },
    );
    let took = killed.elapsed();
    wait_until(
        "the commit reaches every tenant",
        Duration::from_secs(90),
        || all_greet(names, "two"),
    );
    assert!(
        took <= Duration::from_secs(15 + 10),
        "the killed replica's shards were taken within the lease duration (+ ticks): {took:?}"
    );
    let log = |i: usize| replicas[i].log();
    assert!(!log(0).contains("panicked"), "{}", log(0));
}

#[test]
fn a_replica_stopped_past_its_leases_writes_nothing_once_it_resumes() {
    let (agent_ns, names, server) = fleet("st", 40);
    let (a, b) = two_replicas(&server, &agent_ns, ["sa", "sb"], &names);
    signal(&a, "-STOP");
    let stopped = now_us();
    let changed: Vec<(String, String)> = names.iter().map(|n| tenant(n, "two")).collect();
    server.commit(&changed, "greet two");
    assert_eq!(b.signed_push(), 202);
    wait_until("b takes every shard", Duration::from_secs(45), || {
        per_replica(&holders(&agent_ns)).get("sb") == Some(&12)
    });
    wait_until(
        "b syncs the commit everywhere",
        Duration::from_secs(60),
        || all_greet(&names, "two"),
    );
    signal(&a, "-CONT");
    let mut a = a;
    wait_until("the stopped replica exits", Duration::from_secs(30), || {
        !a.running()
    });
    let late: Vec<_> = audit::writes()
        .into_iter()
        .filter(|w| w.received_us >= stopped && sender(w).as_deref() == Some("sa"))
        .collect();
    assert!(
        late.is_empty(),
        "the stopped replica wrote after it resumed: {late:#?}\n{}",
        a.log()
    );
    assert!(all_greet(&names, "two"), "nothing older replaced b's work");
}

/// The component of the wave test: a ConfigMap with the greeting.
const WAVE_TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";

#[test]
fn a_rollout_wave_spans_shards_a_tenant_failing_on_one_replica_holds_the_next_wave_on_every_replica()
 {
    let agent_ns = common::unique("fief-shw");
    let p = common::unique("shw");
    let name = |kind: &str, i: usize| format!("{p}-{kind}{i}");
    let canary: Vec<String> = (0..2).map(|i| name("c", i)).collect();
    let early: Vec<String> = (0..4).map(|i| name("e", i)).collect();
    let rest: Vec<String> = (0..12).map(|i| name("r", i)).collect();
    let files = wave_repo(&agent_ns, &canary, &early, &rest);
    let server = GitServer::new(&files);
    kubectl(&["create", "namespace", &agent_ns]);
    let a = replica(&server, &agent_ns, "wa");
    let b = replica(&server, &agent_ns, "wb");
    let all: Vec<String> = canary.iter().chain(&early).chain(&rest).cloned().collect();
    wait_until("every tenant applied", Duration::from_secs(120), || {
        all_greet(&all, "g1")
    });
    wait_split(&agent_ns, &[6, 6], Duration::from_secs(60));
    the_last_wave_is_on_both_replicas(&agent_ns, &rest);
    // A shared change e0 cannot render: the canaries take it, the last wave is held everywhere.
    let extra = WAVE_TEMPLATE.replacen(
        "greeting: {{ values.greeting | quote }}\n",
        "greeting: {{ values.greeting | quote }}\n  extra: {{ values.extra | quote }}\n",
        1,
    );
    server.commit(
        &[
            (
                "components/app/varz.yaml".to_string(),
                "greeting: g2\n".to_string(),
            ),
            ("components/app/templates/app.yaml".to_string(), extra),
        ],
        "g2 with extra",
    );
    assert_eq!(a.signed_push(), 202);
    wait_until(
        "the canaries take the change",
        Duration::from_secs(60),
        || all_greet(&canary, "g2"),
    );
    wait_until(
        "the healthy early tenants take it",
        Duration::from_secs(60),
        || all_greet(&early[1..], "g2"),
    );
    std::thread::sleep(Duration::from_secs(8));
    let now = greetings();
    let released: Vec<&String> = rest
        .iter()
        .filter(|t| now.get(&format!("{t}-prod")).map(String::as_str) != Some("g1"))
        .collect();
    assert!(
        released.is_empty(),
        "the last wave went on while e0 failed: {released:?}\n{}\n{}",
        a.log(),
        b.log()
    );

    // The fix completes the rollout on both replicas.
    server.commit(&[ringed(&early[0], "early", "extra: x")], "e0 gets extra");
    assert_eq!(b.signed_push(), 202);
    wait_until(
        "every tenant takes the change",
        Duration::from_secs(90),
        || all_greet(&all, "g2"),
    );
}

/// The repo of the wave test: two waves by the `ring` label, the `app` component, and the
/// tenants; e0 alone lacks `extra`, so the shared change of the test is invalid for it.
fn wave_repo(
    agent_ns: &str,
    canary: &[String],
    early: &[String],
    rest: &[String],
) -> Vec<(String, String)> {
    let mut files = waves(agent_ns, WAVE_TEMPLATE);
    files.extend(canary.iter().map(|t| ringed(t, "canary", "extra: x")));
    // e0 alone lacks `extra`: the shared change below is invalid for it.
    files.push(ringed(&early[0], "early", ""));
    files.extend(early[1..].iter().map(|t| ringed(t, "early", "extra: x")));
    files.extend(rest.iter().map(|t| ringed(t, "other", "extra: x")));
    files
}

/// The tenants of the last wave are on both replicas (by the shard Leases).
fn the_last_wave_is_on_both_replicas(agent_ns: &str, rest: &[String]) {
    let shards = holders(agent_ns);
    let holder_of = |t: &str| {
        let s = fief_core::shard::shard_of(t, 12);
        shards
            .get(&format!("fief-shard-{s}-of-12"))
            .cloned()
            .unwrap_or_default()
    };
    let rest_on: BTreeSet<String> = rest.iter().map(|t| holder_of(t)).collect();
    assert_eq!(
        rest_on.len(),
        2,
        "the last wave has tenants on both replicas"
    );
}

#[test]
fn a_replica_stopped_with_sigterm_hands_its_shards_to_the_other_at_once() {
    let (agent_ns, names, server) = fleet("sg", 30);
    let (mut a, b) = two_replicas(&server, &agent_ns, ["ga", "gb"], &names);
    let took = a.terminate(Duration::from_secs(30));
    assert!(took < Duration::from_secs(15), "a exits promptly: {took:?}");
    let handed = Instant::now();
    wait_until("b holds every shard", Duration::from_secs(15), || {
        per_replica(&holders(&agent_ns)).get("gb") == Some(&12)
    });
    assert!(
        handed.elapsed() < Duration::from_secs(8),
        "taken at once, not after the Leases expired: {:?}",
        handed.elapsed()
    );
    assert!(a.log().contains("handed the shard back"), "{}", a.log());
    // b takes a change for every tenant, including those a held.
    let changed: Vec<(String, String)> = names.iter().map(|n| tenant(n, "two")).collect();
    server.commit(&changed, "greet two");
    assert_eq!(b.signed_push(), 202);
    wait_until("b syncs every tenant", Duration::from_secs(60), || {
        all_greet(&names, "two")
    });
}
