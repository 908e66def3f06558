//! Agent replicas: every healthy replica is Ready, the leader labels its Pod, SIGTERM hands
//! over at once, and replicas racing for a released Lease elect exactly one leader.

use super::*;
use crate::common::kubectl::Kubectl;

/// A Pod object for a replica (no kubelet needed: it only carries the leader label).
fn create_pod(ns: &str, name: &str) {
    let pod = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}","labels":{{"app.kubernetes.io/name":"fief-agent"}}}},"spec":{{"containers":[{{"name":"agent","image":"fief:test"}}]}}}}"#
    );
    wait_until("pod created", Duration::from_secs(30), || {
        Kubectl::admin()
            .stdin(&pod)
            .run(&["apply", "-f", "-"])
            .is_ok()
    });
}

fn leader_label(ns: &str, pod: &str) -> Option<String> {
    kubectl_json(&["get", "pod", "-n", ns, pod])?["metadata"]["labels"]["fief.dev/leader"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn every_healthy_replica_is_ready_the_leader_labels_its_pod_and_sigterm_hands_over_at_once() {
    let agent_ns = common::unique("fief-ag5");
    let lease_ns = agent_ns.clone();
    let t = common::unique("lease");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let _ = Kubectl::admin().run(&["create", "namespace", &lease_ns]);
    let (n1, n2) = (common::unique("replica"), common::unique("replica"));
    create_pod(&lease_ns, &n1);
    create_pod(&lease_ns, &n2);
    let start = |name: &str| {
        Agent::spawn(
            &server.url(),
            &["--lease-namespace", &lease_ns, "--interval", "1s"],
            &[
                ("POD_NAME", name.to_string()),
                ("POD_NAMESPACE", lease_ns.clone()),
            ],
        )
    };
    let mut first = start(&n1);
    let mut second = start(&n2);
    // Both replicas are Ready (rollout status and Deployment availability work).
    first.wait_ready(Duration::from_secs(90));
    second.wait_ready(Duration::from_secs(90));
    wait_until("a leader labelled", Duration::from_secs(30), || {
        leader_label(&lease_ns, &n1).is_some() || leader_label(&lease_ns, &n2).is_some()
    });
    let lease = kubectl_json(&["get", "lease", "-n", &lease_ns, "fief-agent"]).unwrap();
    let holder = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();
    let (leader, standby, leader_pod, standby_pod) = if holder == n1 {
        (&mut first, &mut second, &n1, &n2)
    } else {
        (&mut second, &mut first, &n2, &n1)
    };
    assert_eq!(leader_label(&lease_ns, leader_pod).as_deref(), Some("true"));
    assert_eq!(
        leader_label(&lease_ns, standby_pod),
        None,
        "only the leader is labelled"
    );
    assert!(standby.get("/readyz").unwrap().1.contains("standby"));
    // Both may have been Ready as standbys before either took the Lease: the leader applies
    // once it leads.
    wait_until("the leader applied", Duration::from_secs(30), || {
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref() == Some("hi")
    });
    // SIGTERM: the leader removes its label and releases the Lease; the standby takes over
    // at once, not after the Lease's 15 s.
    leader.terminate(Duration::from_secs(10));
    assert_eq!(
        leader_label(&lease_ns, leader_pod),
        None,
        "label removed on shutdown"
    );
    let took = wait_until(
        "the standby took over and labelled its Pod",
        Duration::from_secs(20),
        || leader_label(&lease_ns, standby_pod).as_deref() == Some("true"),
    );
    assert!(
        took < Duration::from_secs(8),
        "handover took {took:?}: the Lease was not released"
    );
    standby.wait_ready(Duration::from_secs(30));
    server.commit(&[tenant(&t, "after-handover")], "change");
    assert_eq!(standby.signed_push(), 202);
    wait_until("the new leader syncs", Duration::from_secs(20), || {
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref()
            == Some("after-handover")
    });
}

/// Three replicas started together on a Lease that was just released (the moment a planned
/// restart or an install creates): exactly one leads, and the term is not cut short by a
/// stale write of another replica (every Lease write carries the resourceVersion it read).
#[test]
fn replicas_racing_for_a_released_lease_elect_exactly_one_leader_that_keeps_it() {
    let lease_ns = common::unique("fief-race");
    let t = common::unique("race");
    let server = GitServer::new(&small_repo(&lease_ns, &[(&t, "hi")]));
    let _ = Kubectl::admin().run(&["create", "namespace", &lease_ns]);
    let released = format!(
        "{{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{{\"name\":\"fief-agent\",\"namespace\":\"{lease_ns}\"}},\"spec\":{{\"leaseTransitions\":3}}}}"
    );
    Kubectl::admin().stdin(&released).ok(&["create", "-f", "-"]);
    let names: Vec<String> = (0..3).map(|_| common::unique("racer")).collect();
    let mut agents: Vec<Agent> = names
        .iter()
        .map(|name| {
            Agent::spawn(
                &server.url(),
                &["--lease-namespace", &lease_ns, "--interval", "1s"],
                &[("POD_NAME", name.clone())],
            )
        })
        .collect();
    wait_until("the leader applied", Duration::from_secs(60), || {
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref() == Some("hi")
    });
    // Past two renewals: a term cut short would show as a replica that exited.
    std::thread::sleep(Duration::from_secs(12));
    let holder = |lease: &Value| lease["spec"]["holderIdentity"].as_str().map(str::to_string);
    let lease = kubectl_json(&["get", "lease", "-n", &lease_ns, "fief-agent"]).unwrap();
    let leader = holder(&lease).expect("a holder");
    let logs: Vec<String> = agents.iter().map(Agent::log).collect();
    for (agent, name) in agents.iter_mut().zip(&names) {
        assert!(agent.running(), "{name} exited:\n{}", agent.log());
    }
    let leading: Vec<&String> = names
        .iter()
        .zip(&logs)
        .filter(|(_, log)| log.contains("\"leading\"") || log.contains(" leading"))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        leading,
        vec![&leader],
        "exactly the holder led:\n{}",
        logs.join("\n")
    );
    assert!(
        logs.iter()
            .all(|l| !l.contains("Lease is lost") && !l.contains("stepping down")),
        "no term was cut short:\n{}",
        logs.join("\n")
    );
    assert_eq!(lease["spec"]["leaseTransitions"], 4, "one transition");
    for agent in &mut agents {
        agent.terminate(Duration::from_secs(10));
    }
}
