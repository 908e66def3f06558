//! The leader's writes and its Lease, against the real control plane, counted at the API
//! server (its audit log): a leader stopped past its term sends nothing once it resumes,
//! renewals keep the Lease under a tight request budget, and a burst of push webhooks costs at
//! most two fetches.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::agent::*;
use common::audit;
use common::cluster_cli::kubectl_ok as kubectl;

fn signal(agent: &Agent, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &agent.child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig}");
}

/// Tenants whose `app-config` ConfigMap says `greeting`.
fn greeted(names: &[String], greeting: &str) -> usize {
    names
        .iter()
        .filter(|t| {
            configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref()
                == Some(greeting)
        })
        .count()
}

fn lease_holder(ns: &str) -> String {
    kubectl_json(&["get", "lease", "-n", ns, "fief-agent"])
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn a_leader_stopped_past_its_lease_sends_no_write_after_the_new_leader_takes_over() {
    let agent_ns = common::unique("fief-fence");
    let names: Vec<String> = (0..20).map(|i| common::unique(&format!("f{i}"))).collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "one")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    kubectl(&["create", "namespace", &agent_ns]);
    audit::make_admin("replica-a");
    audit::make_admin("replica-b");
    let cp = common::control_plane();
    let (replica_a, replica_b) = (
        cp.kubeconfig_for("replica-a"),
        cp.kubeconfig_for("replica-b"),
    );
    let args = |kubeconfig: &std::path::Path, qps: &'static str| {
        vec![
            "--lease-namespace".to_string(),
            agent_ns.clone(),
            "--interval".into(),
            "300s".into(),
            "--concurrency".into(),
            "1".into(),
            "--api-qps".into(),
            qps.into(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
        ]
    };
    let old_args = args(&replica_a, "6");
    let old_args: Vec<&str> = old_args.iter().map(String::as_str).collect();
    let mut old = Agent::spawn(&server.url(), &old_args, &[("POD_NAME", "old".into())]);
    old.wait_ready(Duration::from_secs(120));
    assert_eq!(greeted(&names, "one"), names.len());

    // A commit every tenant takes, in flight when the leader is frozen.
    let changed: Vec<(String, String)> = names.iter().map(|n| tenant(n, "two")).collect();
    server.commit(&changed, "greet two");
    assert_eq!(old.signed_push(), 202);
    wait_until("the leader is mid-batch", Duration::from_secs(60), || {
        greeted(&names, "two") >= 2
    });
    signal(&old, "-STOP");
    let frozen_at = greeted(&names, "two");
    assert!(frozen_at < names.len(), "the batch ended before the stop");

    let new_args = args(&replica_b, "200");
    let new_args: Vec<&str> = new_args.iter().map(String::as_str).collect();
    let new = Agent::spawn(&server.url(), &new_args, &[("POD_NAME", "new".into())]);
    wait_until(
        "the standby takes the Lease",
        Duration::from_secs(60),
        || lease_holder(&agent_ns) == "new",
    );
    wait_until(
        "the new leader syncs the commit",
        Duration::from_secs(60),
        || greeted(&names, "two") == names.len(),
    );

    signal(&old, "-CONT");
    wait_until("the old leader exits", Duration::from_secs(20), || {
        !old.running()
    });
    assert!(
        old.log().contains("stopping every write") || old.log().contains("held by another"),
        "{}",
        old.log()
    );

    assert_the_old_leader_wrote_nothing_after_the_takeover(&agent_ns, &old, &new);
    // Nothing older replaced the new leader's work.
    assert_eq!(greeted(&names, "two"), names.len());
}

/// Counted at the API server: the old leader (`replica-a`) wrote before the new one (`replica-b`)
/// took the Lease in `agent_ns`, and nothing after.
fn assert_the_old_leader_wrote_nothing_after_the_takeover(
    agent_ns: &str,
    old: &Agent,
    new: &Agent,
) {
    let writes = audit::writes();
    let takeover = writes
        .iter()
        .filter(|w| w.user == "replica-b" && w.resource == "leases" && w.namespace == agent_ns)
        .map(|w| w.received_us)
        .min()
        .expect("the new leader wrote the Lease");
    let before = writes
        .iter()
        .filter(|w| w.user == "replica-a" && w.received_us < takeover)
        .count();
    assert!(before > 0, "the old leader wrote nothing at all");
    let late: Vec<_> = writes
        .iter()
        .filter(|w| w.user == "replica-a" && w.received_us >= takeover)
        .collect();
    assert!(
        late.is_empty(),
        "the old leader wrote after the takeover: {late:#?}\nold leader:\n{}\nnew leader:\n{}",
        old.log(),
        new.log()
    );
}

#[test]
fn a_leader_throttled_to_4_requests_a_second_keeps_its_lease_through_a_20_tenant_batch() {
    let agent_ns = common::unique("fief-qps");
    let names: Vec<String> = (0..20).map(|i| common::unique(&format!("q{i}"))).collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "one")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    kubectl(&["create", "namespace", &agent_ns]);
    fief_apply(&server.repo());
    let mut agent = Agent::spawn(
        &server.url(),
        &[
            "--lease-namespace",
            &agent_ns,
            "--interval",
            "300s",
            "--concurrency",
            "2",
            "--api-qps",
            "4",
        ],
        &[("POD_NAME", "throttled".into())],
    );
    agent.wait_ready(Duration::from_secs(120));
    let changed: Vec<(String, String)> = names.iter().map(|n| tenant(n, "two")).collect();
    server.commit(&changed, "greet two");
    assert_eq!(agent.signed_push(), 202);
    let took = wait_until("every tenant synced", Duration::from_secs(120), || {
        greeted(&names, "two") == names.len()
    });
    assert!(
        took > Duration::from_secs(10),
        "the batch took {took:?}: shorter than the renew deadline, so it proves nothing"
    );
    assert!(agent.running(), "{}", agent.log());
    assert!(!agent.log().contains("stepping down"), "{}", agent.log());
    assert_eq!(lease_holder(&agent_ns), "throttled");
    // Renewals went on through the batch: the Lease was written every few seconds.
    let renewals: Vec<i64> = audit::writes()
        .iter()
        .filter(|w| w.resource == "leases" && w.namespace == agent_ns && w.code == 200)
        .map(|w| w.received_us)
        .collect();
    let widest = renewals
        .windows(2)
        .map(|p| p[1] - p[0])
        .max()
        .unwrap_or(i64::MAX);
    assert!(
        renewals.len() >= 3 && widest < 8_000_000,
        "renewals {renewals:?} (widest gap {widest} µs)"
    );
}

#[test]
fn a_burst_of_40_webhooks_during_one_fetch_costs_at_most_two_fetches() {
    let agent_ns = common::unique("fief-burst");
    let t = common::unique("burst");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "one")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let fetches = || agent.metric("fief_git_fetches_total", "");
    let before = fetches();
    server.commit(&[tenant(&t, "two")], "two");
    std::thread::scope(|s| {
        for _ in 0..40 {
            s.spawn(|| assert_eq!(agent.signed_push(), 202));
        }
    });
    wait_until("the push is applied", Duration::from_secs(30), || {
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref() == Some("two")
    });
    std::thread::sleep(Duration::from_secs(2));
    let spent = fetches() - before;
    assert!(
        (1.0..=2.0).contains(&spent),
        "{spent} fetches for one burst"
    );
}

#[test]
fn an_agent_whose_fief_yaml_names_another_namespace_says_which_to_set() {
    let (agent_ns, other) = (common::unique("fief-mine"), common::unique("fief-other"));
    let t = common::unique("ns");
    let server = GitServer::new(&small_repo(&other, &[(&t, "one")]));
    kubectl(&["create", "namespace", &agent_ns]);
    let agent = Agent::spawn(
        &server.url(),
        &["--lease-namespace", &agent_ns, "--interval", "300s"],
        &[("POD_NAME", "mine".into())],
    );
    let expected = format!("set `agentNamespace: {agent_ns}` in fief.yaml");
    wait_until(
        "the agent names the namespace to set",
        Duration::from_secs(60),
        || agent.log().contains(&expected),
    );
}
