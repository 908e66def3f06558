//! The agent under faults made on purpose, against the real control plane: a kind it cannot
//! list, git unreachable or hanging, the Lease taken away mid-batch, an interrupted sync, a
//! start on an applied cluster, its own writes seen by its watches, an include from outside
//! the component.

use crate::common;

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use common::agent::*;
use common::kubectl::Kubectl;

mod restarts;

fn kubectl_stdin(args: &[&str], input: &str) -> bool {
    Kubectl::admin().stdin(input).run(args).is_ok()
}

fn kubectl(args: &[&str]) -> bool {
    Kubectl::admin().run(args).is_ok()
}

/// Mutating requests the agent sent, from its metrics.
fn mutating(agent: &Agent) -> f64 {
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|v| agent.metric("fief_api_requests_total", &format!("verb=\"{v}\"")))
        .sum()
}

const LEASE_TEMPLATE: &str = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: app-lease\nspec:\n  holderIdentity: app\n";

#[test]
fn a_kind_the_agent_cannot_list_degrades_only_the_tenants_that_use_it() {
    // `no-leases` may do anything the agent needs, except anything in coordination.k8s.io.
    let user = "no-leases";
    let role = common::unique("fief-no-leases");
    grant_everything_but_leases(user, &role);
    let agent_ns = common::unique("fief-af1");
    let (plain, leasy) = (common::unique("plain"), common::unique("leasy"));
    let mut files = small_repo(&agent_ns, &[(&plain, "hi")]);
    files.push((
        "components/locks/templates/lease.yaml".into(),
        LEASE_TEMPLATE.into(),
    ));
    files.push((
        format!("tenants/{leasy}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {leasy}\nspec:\n  components:\n    - name: app\n      values: {{greeting: hi}}\n    - name: locks\n"
        ),
    ));
    let server = GitServer::new(&files);
    let cp = common::control_plane();
    let kubeconfig = cp.kubeconfig_for(user);
    let agent = Agent::start(
        &server.url(),
        &[
            "--interval",
            "300s",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
    );
    // The other tenant is synced, and readiness names the degraded one and why.
    assert_eq!(
        configmap_value(&format!("{plain}-prod"), "app-config", "greeting").as_deref(),
        Some("hi")
    );
    let (code, body) = agent.get("/readyz").unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(&leasy) && body.contains("Lease"), "{body}");
    the_degraded_tenant_is_reported_and_not_applied(&agent, &agent_ns, &leasy);
    // Every other tenant keeps syncing.
    server.commit(&[tenant(&plain, "again")], "change");
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "the other tenant still syncs",
        Duration::from_secs(20),
        || {
            configmap_value(&format!("{plain}-prod"), "app-config", "greeting").as_deref()
                == Some("again")
        },
    );
    kubectl(&["delete", "clusterrolebinding", &role]);
    kubectl(&["delete", "clusterrole", &role]);
}

/// Let `user` do anything the agent needs, except anything in coordination.k8s.io, through
/// the ClusterRole and ClusterRoleBinding `role`.
fn grant_everything_but_leases(user: &str, role: &str) {
    let rbac = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[
{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{{"name":"{role}"}},
  "rules":[{{"apiGroups":["","apps","rbac.authorization.k8s.io","events.k8s.io","apiextensions.k8s.io","networking.k8s.io","policy","batch","autoscaling"],"resources":["*"],"verbs":["*"]}},
           {{"nonResourceURLs":["*"],"verbs":["get"]}}]}},
{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{{"name":"{role}"}},
  "roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"{role}"}},
  "subjects":[{{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"{user}"}}]}}]}}"#
    );
    assert!(kubectl_stdin(&["apply", "-f", "-"], &rbac));
}

/// The tenant using a kind the agent cannot list is reported on itself (status, `/status`
/// and metric) as a cluster refusal, and nothing of it is applied.
fn the_degraded_tenant_is_reported_and_not_applied(agent: &Agent, agent_ns: &str, leasy: &str) {
    // Reported on the tenant itself: status and metric.
    let st = status(agent_ns, leasy);
    assert_eq!(condition(&st, "Ready"), "False", "{st}");
    let ready = st["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        ready["reason"], "ClusterAccessFailed",
        "a cluster refusal, not an invalid repo: {st}"
    );
    let (_, view) = agent.get("/status").unwrap();
    let view: serde_json::Value = serde_json::from_str(&view).unwrap();
    assert_eq!(view["tenants"][&leasy]["outcome"], "failed", "{view}");
    assert!(
        st["lastError"].as_str().unwrap_or("").contains("Lease"),
        "{st}"
    );
    assert_eq!(
        agent.metric("fief_tenant_ready", &format!("tenant=\"{leasy}\"")),
        0.0
    );
    assert_eq!(
        configmap_value(&format!("{leasy}-prod"), "app-config", "greeting"),
        None,
        "nothing of the degraded tenant is applied"
    );
}

#[test]
fn git_unreachable_at_start_is_reported_not_ready_and_retried_until_it_answers() {
    let agent_ns = common::unique("fief-af2");
    let t = common::unique("late");
    let mut server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    server.stop();
    let mut agent = Agent::spawn(&server.url(), &["--interval", "1s"], &[]);
    wait_until("not ready with the reason", Duration::from_secs(20), || {
        agent
            .get("/readyz")
            .is_some_and(|(c, b)| c == 503 && b.contains("git"))
    });
    std::thread::sleep(Duration::from_secs(3));
    assert!(agent.running(), "the agent exited: {}", agent.log());
    server.start();
    agent.wait_ready(Duration::from_secs(60));
    assert_eq!(
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref(),
        Some("hi")
    );
}

#[test]
fn a_git_server_that_never_answers_blocks_neither_drift_repair_nor_shutdown() {
    let agent_ns = common::unique("fief-af3");
    let t = common::unique("hang");
    let mut server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let mut agent = Agent::start(&server.url(), &["--interval", "1s", "--git-timeout", "2s"]);
    server.stop();
    // Accepts TCP and never answers.
    let listener = TcpListener::bind(("127.0.0.1", server.port)).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    wait_until(
        "the hanging fetch reported",
        Duration::from_secs(20),
        || agent.metric("fief_git_fetches_total", "failure") >= 1.0,
    );
    let ns = format!("{t}-prod");
    assert!(kubectl(&["delete", "configmap", "-n", &ns, "app-config"]));
    wait_until(
        "the deleted object recreated while git hangs",
        Duration::from_secs(10),
        || configmap_value(&ns, "app-config", "greeting").as_deref() == Some("hi"),
    );
    let took = agent.terminate(Duration::from_secs(10));
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
}

#[test]
fn losing_the_lease_mid_batch_stops_between_tenants() {
    let agent_ns = common::unique("fief-af4");
    let names: Vec<String> = (0..30).map(|i| common::unique(&format!("l{i}"))).collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "hi")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    assert!(kubectl(&["create", "namespace", &agent_ns]));
    let mut agent = Agent::spawn(
        &server.url(),
        &[
            "--lease-namespace",
            &agent_ns,
            "--interval",
            "300s",
            "--concurrency",
            "1",
            "--api-qps",
            "4",
        ],
        &[
            ("POD_NAME", "me".to_string()),
            ("RUST_LOG", "info".to_string()),
        ],
    );
    let inventories = || {
        Kubectl::admin()
            .run(&["get", "configmaps", "-n", &agent_ns, "-o", "name"])
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("configmap/fief-tenant-"))
            .count()
    };
    let start = std::time::Instant::now();
    while inventories() < 1 {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no tenant synced; log:\n{}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    another_replica_takes_the_lease(&agent_ns);
    wait_until("the agent stopped", Duration::from_secs(15), || {
        !agent.running()
    });
    assert!(agent.log().contains("Lease"), "{}", agent.log());
    // Stepping down does not release a Lease this replica no longer holds.
    let lease = Kubectl::admin()
        .json(&["get", "lease", "-n", &agent_ns, "fief-agent"])
        .expect("the Lease");
    assert_eq!(
        lease["spec"]["holderIdentity"],
        "someone-else",
        "the other replica's Lease was cleared:\n{}",
        agent.log()
    );
    let done = inventories();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(inventories(), done, "nothing synced after stopping");
    assert_no_write_after_the_takeover(&agent, &agent_ns, &names);
    assert!(
        done < names.len(),
        "the whole batch ran after the Lease was lost ({done} tenants)"
    );
}

/// Another replica takes the agent's Lease in `agent_ns` (held far into the future).
fn another_replica_takes_the_lease(agent_ns: &str) {
    // Another replica takes the Lease.
    Kubectl::admin().ok(&["get", "lease", "-n", agent_ns, "fief-agent"]);
    let patch = r#"{"spec":{"holderIdentity":"someone-else","leaseDurationSeconds":300,"renewTime":"2099-01-01T00:00:00.000000Z"}}"#;
    assert!(kubectl(&[
        "patch",
        "lease",
        "-n",
        agent_ns,
        "fief-agent",
        "--type",
        "merge",
        "-p",
        patch
    ]));
}

/// Counted at the API server: once the agent saw the other holder, it wrote nothing (a
/// request already on its way then may arrive a moment later).
fn assert_no_write_after_the_takeover(agent: &Agent, agent_ns: &str, names: &[String]) {
    // Counted at the API server: once the agent saw the other holder, it wrote nothing (a
    // request already on its way then may arrive a moment later).
    let log = agent.log();
    let noticed = log
        .lines()
        .find(|l| l.contains("held by another replica"))
        .and_then(|l| l.split_whitespace().next())
        .map(common::audit::micros)
        .expect("the agent logged the takeover");
    let late: Vec<_> = common::audit::writes()
        .into_iter()
        .filter(|w| !w.user_agent.starts_with("kubectl") && w.received_us > noticed + 100_000)
        .filter(|w| {
            w.namespace == agent_ns || names.iter().any(|n| w.namespace == format!("{n}-prod"))
        })
        .collect();
    assert!(
        late.is_empty(),
        "writes after stepping down: {late:#?}\n{log}"
    );
}
