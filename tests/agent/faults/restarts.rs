//! Restarts and resyncs: an interrupted sync finished on the next start, a start on an
//! applied cluster with no writes, fief's own applies not taken for drift, an included file
//! from another component, the periodic full resync, `fief status` of the last fetch, the
//! log formats, and a missing credential file.

use super::*;

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
