//! `--max-in-flight` bounds how far a shared change's rollout goes through its wave (its
//! tenants applied but not yet healthy), never the first sync; and a tenant waiting for
//! health is sent only its changed object, and nothing on a restart.

use super::*;

#[test]
fn with_max_in_flight_5_a_shared_changes_wave_has_at_most_5_unhealthy_tenants_and_the_first_sync_is_not_bounded()
 {
    let agent_ns = common::unique("fief-hl2");
    let prefix = common::unique("fl");
    let tenants: Vec<String> = (0..50).map(|i| format!("{prefix}-{i:02}")).collect();
    let files: Vec<(String, String)> = tenants.iter().map(|t| tenant_file(t, &["web"])).collect();
    let mut files = repo(&agent_ns, "600s", &files);
    // One wave with every tenant: the shared change rolls out through it.
    files[0].1 = format!("agentNamespace: {agent_ns}\nrollout:\n  waves:\n    - {{name: all}}\n");
    let server = GitServer::new(&files);
    let namespaces: BTreeSet<String> = tenants.iter().map(|t| format!("{t}-prod")).collect();
    let agent = Agent::spawn(
        &server.url(),
        &[
            "--interval",
            "300s",
            "--max-in-flight",
            "5",
            "--concurrency",
            "16",
        ],
        &[],
    );

    // The first sync: 50 new tenants, all applied at once whatever their health.
    let hold = Duration::from_millis(800);
    let started = Instant::now();
    let first = roll_out_all(&namespaces, 1, hold);
    eprintln!("first sync: 50 tenants healthy in {:?}", started.elapsed());
    agent.wait_ready(Duration::from_secs(30));
    assert!(
        first > 5,
        "the first sync was held to the bound: at most {first} unhealthy at once"
    );

    // A shared change reaching all 50, rolled out through the wave.
    server.commit(
        &[(
            "components/web/varz.yaml".to_string(),
            "tag: \"2\"\n".to_string(),
        )],
        "web 2",
    );
    assert_eq!(agent.signed_push(), 202);
    let started = Instant::now();
    let second = roll_out_all(&namespaces, 2, hold);
    eprintln!(
        "shared change: 50 tenants healthy in {:?}",
        started.elapsed()
    );
    let agent_peak = agent.metric("fief_tenants_in_flight_peak", "");
    eprintln!(
        "most applied-but-unhealthy seen in the cluster: first sync {first}, change {second}; agent's peak {agent_peak}"
    );
    assert!(
        second <= 5,
        "more than 5 tenants of the change applied but unhealthy: {second}\n{}",
        agent.log()
    );
    assert!(
        second >= 3,
        "the bound was never approached ({second}): the test proves nothing"
    );
    assert_eq!(agent_peak, 5.0);
    wait_until("all 50 Ready", Duration::from_secs(20), || {
        agent.metric("fief_tenants_health", "state=\"ready\"") == 50.0
    });
    // The rollout sees its last tenants settle on its next step: the gauge follows.
    wait_until("nothing in flight", Duration::from_secs(10), || {
        agent.metric("fief_tenants_in_flight", "fief_tenants_in_flight ") == 0.0
    });
}

/// The notes of the Events in `ns`, oldest first.
fn event_notes(ns: &str) -> Vec<String> {
    let list = kubectl_json(&["get", "events.events.k8s.io", "-n", ns]).unwrap_or_default();
    let mut events: Vec<(String, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("eventTime"), s("note"))
        })
        .collect();
    events.sort();
    events.into_iter().map(|(_, note)| note).collect()
}

/// Writes the API server received for `tenant` (its namespace's objects and Events, and its
/// inventory) after the first `from` entries of the audit log.
fn tenant_writes(from: usize, tenant: &str, agent_ns: &str) -> Vec<common::audit::Write> {
    let ns = format!("{tenant}-prod");
    let inventory = format!("fief-tenant-{tenant}");
    common::audit::writes()
        .into_iter()
        .skip(from)
        .filter(|w| w.namespace == ns || (w.namespace == agent_ns && w.name == inventory))
        .collect()
}

#[test]
fn a_tenant_waiting_for_health_is_sent_only_its_changed_object_and_nothing_on_a_restart() {
    let agent_ns = common::unique("fief-hl3");
    let tenant = common::unique("waits");
    let ns = format!("{tenant}-prod");
    let mut files = repo(&agent_ns, "600s", &[tenant_file(&tenant, &["web", "cfg"])]);
    let config = |greeting: &str| {
        vec![
            (
                "components/cfg/varz.yaml".to_string(),
                format!("greeting: {greeting}\n"),
            ),
            (
                "components/cfg/templates/config.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  greeting: {{ values.greeting }}\n".to_string(),
            ),
        ]
    };
    files.extend(config("hello"));
    let server = GitServer::new(&files);
    let mut agent = Agent::start(&server.url(), &["--interval", "300s"]);
    wait_for_condition(
        &agent,
        &agent_ns,
        &tenant,
        "Reconciling",
        "WaitingForHealth",
        Duration::from_secs(10),
    );

    // One value changes: that ConfigMap, the inventory and an Event are written, nothing else.
    let mark = common::audit::writes().len();
    server.commit(&config("bonjour"), "one value");
    assert_eq!(agent.signed_push(), 202);
    wait_until("the change applied", Duration::from_secs(20), || {
        configmap_value(&ns, "cfg", "greeting").as_deref() == Some("bonjour")
    });
    std::thread::sleep(Duration::from_secs(3));
    let writes = tenant_writes(mark, &tenant, &agent_ns);
    let objects: Vec<String> = writes
        .iter()
        .filter(|w| w.namespace == ns && w.resource != "events")
        .map(|w| format!("{} {}/{}", w.verb, w.resource, w.name))
        .collect();
    assert_eq!(objects, ["patch configmaps/cfg"], "{writes:#?}");
    let last = event_notes(&ns).pop().unwrap_or_default();
    assert!(last.contains("0 created, 1 configured"), "{last}");
    assert!(!agent.log().contains("interrupted"), "{}", agent.log());
    assert_eq!(
        condition_of(&status(&agent_ns, &tenant), "Reconciling").1,
        "WaitingForHealth"
    );

    // A restart finds the sync finished: no write to the tenant at all.
    agent.kill();
    let mark = common::audit::writes().len();
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    std::thread::sleep(Duration::from_secs(3));
    let writes = tenant_writes(mark, &tenant, &agent_ns);
    assert!(writes.is_empty(), "{writes:#?}\n{}", agent.log());
    assert_eq!(
        condition_of(&status(&agent_ns, &tenant), "Reconciling").1,
        "WaitingForHealth"
    );
}
