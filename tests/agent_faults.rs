//! The agent under faults made on purpose, against the real control plane: a kind it cannot
//! list, git unreachable or hanging, the Lease taken away mid-batch, an interrupted sync, a
//! start on an applied cluster, its own writes seen by its watches, an include from outside
//! the component.

mod common;

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::agent::*;

fn kubectl_stdin(args: &[&str], input: &str) -> bool {
    let mut child = common::control_plane()
        .kubectl_admin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait().unwrap().success()
}

fn kubectl(args: &[&str]) -> bool {
    common::control_plane()
        .kubectl_admin()
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
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
    // `carol` may do anything the agent needs, except anything in coordination.k8s.io.
    let user = "carol";
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
        let out = common::control_plane()
            .kubectl_admin()
            .args(["get", "configmaps", "-n", &agent_ns, "-o", "name"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
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
    let lease = common::control_plane()
        .kubectl_admin()
        .args(["get", "lease", "-n", &agent_ns, "fief-agent", "-o", "json"])
        .output()
        .unwrap();
    let lease: serde_json::Value = serde_json::from_slice(&lease.stdout).unwrap();
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
    let now = common::control_plane()
        .kubectl_admin()
        .args(["get", "lease", "-n", agent_ns, "fief-agent", "-o", "json"])
        .output()
        .unwrap();
    assert!(now.status.success());
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

#[test]
fn a_tenant_left_reconciling_by_an_interrupted_sync_is_finished_on_the_next_start() {
    let agent_ns = common::unique("fief-af5");
    let t = common::unique("unsettled");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    // The agent dies (abort, as SIGKILL would) right after the union write of its first sync.
    let mut crashed = Agent::spawn(
        &server.url(),
        &["--interval", "300s"],
        &[("FIEF_TEST_CRASH_AT", "after-union".to_string())],
    );
    wait_until("the agent crashed", Duration::from_secs(60), || {
        !crashed.running()
    });
    assert!(
        crashed.log().contains("FIEF_TEST_CRASH_AT"),
        "{}",
        crashed.log()
    );
    let st = status(&agent_ns, &t);
    assert_eq!(condition(&st, "Reconciling"), "True", "{st}");
    assert_eq!(
        configmap_value(&format!("{t}-prod"), "app-config", "greeting"),
        None,
        "the crash came before the applies"
    );
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let st = status(&agent_ns, &t);
    assert_eq!(condition(&st, "Reconciling"), "False", "{st}");
    assert_eq!(condition(&st, "Ready"), "True", "{st}");
    assert!(st["commit"].as_str().is_some_and(|c| c.len() == 40), "{st}");
    assert_eq!(
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref(),
        Some("hi")
    );
    drop(agent);
}

#[test]
fn a_start_on_an_applied_cluster_sends_no_mutating_request() {
    let agent_ns = common::unique("fief-af6");
    let names: Vec<String> = (0..60).map(|i| common::unique(&format!("s{i}"))).collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "hi")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    // Applied by `fief apply` (more tenants than the old 50-tenant batch).
    fief_apply(&server.repo());
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(mutating(&agent), 0.0, "after fief apply: {}", agent.log());
    drop(agent);
    // Applied by the agent itself.
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(mutating(&agent), 0.0, "after the agent: {}", agent.log());
}

#[test]
fn fiefs_own_applies_are_not_drift_and_a_deletion_is() {
    let agent_ns = common::unique("fief-af7");
    let t = common::unique("own");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let ns = format!("{t}-prod");
    let before = agent.log().matches(" synced ").count();
    server.commit(&[tenant(&t, "changed")], "change");
    assert_eq!(agent.signed_push(), 202);
    wait_until("applied", Duration::from_secs(20), || {
        configmap_value(&ns, "app-config", "greeting").as_deref() == Some("changed")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(agent.metric("fief_drift_detected_total", ""), 0.0);
    let syncs = agent.log().matches(" synced ").count() - before;
    assert_eq!(syncs, 1, "one sync for one change: {}", agent.log());
    assert!(kubectl(&["delete", "configmap", "-n", &ns, "app-extra"]));
    wait_until("the deletion repaired", Duration::from_secs(10), || {
        configmap_value(&ns, "app-extra", "k").is_some()
    });
    assert_eq!(agent.metric("fief_drift_detected_total", ""), 1.0);
}

#[test]
fn a_change_to_a_file_included_from_another_component_is_applied() {
    let agent_ns = common::unique("fief-af8");
    let t = common::unique("incl");
    let mut files = small_repo(&agent_ns, &[(&t, "hi")]);
    files.retain(|(p, _)| !p.starts_with("components/app/templates"));
    files.push((
        "components/app/templates/app.yaml".into(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {% include \"components/lib/templates/_snippet.tpl\" %}\n".into(),
    ));
    files.push(("components/lib/templates/_snippet.tpl".into(), "one".into()));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let ns = format!("{t}-prod");
    assert_eq!(
        configmap_value(&ns, "app-config", "greeting").as_deref(),
        Some("one")
    );
    server.commit(
        &[("components/lib/templates/_snippet.tpl".into(), "two".into())],
        "shared",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "the include's change applied",
        Duration::from_secs(20),
        || configmap_value(&ns, "app-config", "greeting").as_deref() == Some("two"),
    );
}

#[test]
fn the_periodic_full_resync_applies_what_no_watch_or_hash_saw() {
    let agent_ns = common::unique("fief-af9");
    let t = common::unique("resync");
    let mut files = small_repo(&agent_ns, &[(&t, "hi")]);
    files.retain(|(p, _)| !p.starts_with("components/app/templates"));
    // A template name computed at render time: not in the tenant's input hash.
    files.push((
        "components/app/templates/app.yaml".into(),
        "{% set part = \"components/lib/templates/_\" ~ \"snippet.tpl\" %}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {% include part %}\n".into(),
    ));
    files.push(("components/lib/templates/_snippet.tpl".into(), "one".into()));
    let server = GitServer::new(&files);
    let agent = Agent::start(
        &server.url(),
        &["--interval", "300s", "--resync-interval", "4s"],
    );
    let ns = format!("{t}-prod");
    assert_eq!(
        configmap_value(&ns, "app-config", "greeting").as_deref(),
        Some("one")
    );
    server.commit(
        &[("components/lib/templates/_snippet.tpl".into(), "two".into())],
        "dynamic include",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "applied by the periodic resync",
        Duration::from_secs(20),
        || configmap_value(&ns, "app-config", "greeting").as_deref() == Some("two"),
    );
    assert!(agent.log().contains("periodic full resync"));
}

#[test]
fn fief_status_shows_the_agents_last_fetch_and_each_tenants_last_attempt() {
    let agent_ns = common::unique("fief-af10");
    let t = common::unique("view");
    let mut server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "1s"]);
    let head = git(&server.repo(), &["rev-parse", "HEAD"]);
    let status_text = || {
        let out = Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(["status", "--namespace", &agent_ns, "--agent"])
            .arg(format!("http://127.0.0.1:{}", agent.port))
            .arg("--kubeconfig")
            .arg(common::control_plane().admin_kubeconfig())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = status_text();
    assert!(
        text.contains(&format!("last fetched commit {head}")),
        "{text}"
    );
    assert!(text.contains("last fetch error: none"), "{text}");
    let row = text.lines().find(|l| l.starts_with(&t)).unwrap_or("");
    assert!(
        row.contains(&format!("{} applied", &head[..8])),
        "the attempted commit beside the applied one: {text}"
    );
    server.stop();
    wait_until("a failed fetch", Duration::from_secs(20), || {
        agent.metric("fief_git_fetches_total", "failure") >= 1.0
    });
    let text = status_text();
    assert!(!text.contains("last fetch error: none"), "{text}");
    let status = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(["status", "--namespace", &agent_ns, "--agent"])
            .arg(format!("http://127.0.0.1:{}", agent.port))
            .args(extra)
            .arg("--kubeconfig")
            .arg(common::control_plane().admin_kubeconfig())
            .output()
            .unwrap()
    };
    // A Ready tenant is left out by --not-ready; an unknown --tenant is a usage error.
    let not_ready = status(&["--not-ready"]);
    let listed = String::from_utf8_lossy(&not_ready.stdout).into_owned();
    assert!(!listed.lines().any(|l| l.starts_with(&t)), "{listed}");
    let unknown = status(&["--tenant", "no-such-tenant"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("no inventory for tenant no-such-tenant"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

#[test]
fn logs_carry_no_colour_off_a_terminal_and_json_logs_have_flat_plain_fields() {
    let agent_ns = common::unique("fief-af11");
    let t = common::unique("logs");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let text = Agent::start(&server.url(), &["--interval", "300s"]);
    assert!(!text.log().contains('\u{1b}'), "{}", text.log());
    drop(text);
    let json = Agent::start(
        &server.url(),
        &["--interval", "300s", "--log-format", "json"],
    );
    let log = json.log();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let commit = lines
        .iter()
        .find(|l| l["message"] == "new commit")
        .unwrap_or_else(|| panic!("{log}"));
    let head = git(&server.repo(), &["rev-parse", "HEAD"]);
    assert_eq!(commit["commit"], head.as_str(), "flat, plain: {commit}");
    assert!(!log.contains("Some("), "{log}");
}

#[test]
fn a_credential_file_that_does_not_exist_stops_the_agent_at_start_saying_which_and_why() {
    let agent_ns = common::unique("fief-cred");
    let t = common::unique("cred");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let missing = tempfile::tempdir().unwrap();
    let token = missing.path().join("git/token");
    let age = missing.path().join("age/keys.txt");
    let mut agent = Agent::spawn(
        &server.url(),
        &[
            "--interval",
            "300s",
            "--git-token-file",
            token.to_str().unwrap(),
            "--age-key-file",
            age.to_str().unwrap(),
        ],
        &[],
    );
    wait_until("the agent exits", Duration::from_secs(30), || {
        !agent.running()
    });
    let code = agent.child.wait().unwrap().code();
    assert_eq!(code, Some(2), "usage error; log:\n{}", agent.log());
    let log = agent.log();
    for expected in [
        "refusing to start",
        "2 credential file(s) missing",
        &format!("--git-token-file {}: no such file", token.display()),
        "create the Secret `fief-git` with key `token`",
        &format!("--age-key-file {}: no such file", age.display()),
        "create the Secret `fief-age-key` with key `keys.txt`",
    ] {
        assert!(log.contains(expected), "{expected:?} not in:\n{log}");
    }
    // Nothing was fetched or applied: the tenant's namespace does not exist.
    assert!(kubectl_json(&["get", "namespace", &format!("{t}-prod")]).is_none());

    // With the files in place, the same command line starts and applies.
    std::fs::create_dir_all(token.parent().unwrap()).unwrap();
    std::fs::write(&token, "not-needed-by-git-daemon\n").unwrap();
    std::fs::create_dir_all(age.parent().unwrap()).unwrap();
    common::sops::age_keygen(age.parent().unwrap(), "keys.txt");
    let agent = Agent::start(
        &server.url(),
        &[
            "--interval",
            "300s",
            "--git-token-file",
            token.to_str().unwrap(),
            "--age-key-file",
            age.to_str().unwrap(),
        ],
    );
    assert_eq!(
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref(),
        Some("hi"),
        "log:\n{}",
        agent.log()
    );
}
