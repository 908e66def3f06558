//! `fief status` columns, `--color` on every command, and tenant-visible status (Events in the
//! tenant's own namespaces, read as the tenant's users) against the real control plane.
//!
//! Each test has its own repo, agent namespace and tenants.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::agent::{Agent, GitServer, condition, small_repo, status, wait_until};
use common::cluster_cli::{APP, TestRepo, fief, fief_cmd, ok};
use common::kubectl::Kubectl;
use common::util::text;

#[test]
fn status_shows_the_age_of_the_last_sync_and_a_failed_attempt_beside_the_applied_commit() {
    let agent_ns = common::unique("fief-d2s");
    let a = common::unique("st");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&a, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "600s"]);
    let applied = common::util::git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    let url = format!("http://127.0.0.1:{}", agent.port);
    let row = |out: &Output| {
        text(&out.stdout)
            .lines()
            .find(|l| l.starts_with(a.as_str()))
            .unwrap_or_default()
            .to_string()
    };
    let out = fief_cmd(&["status", "--namespace", &agent_ns, "--agent", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let header = text(&out.stdout);
    assert!(
        header.contains(" AGE ") && header.contains("ATTEMPTED"),
        "{header}"
    );
    let cols: Vec<String> = row(&out).split_whitespace().map(String::from).collect();
    assert_eq!(cols[1], "True", "{cols:?}");
    assert!(
        cols[3].ends_with('s') && cols[3].trim_end_matches('s').parse::<u32>().is_ok(),
        "AGE like `12s`: {cols:?}"
    );
    assert!(applied.starts_with(&cols[6]), "COMMIT {cols:?}");
    assert!(
        applied.starts_with(&cols[7]) && cols[8] == "applied",
        "ATTEMPTED beside it: {cols:?}"
    );

    // A commit that breaks the tenant: ATTEMPTED names it as failed, COMMIT still the applied.
    server.commit(
        &[(
            format!("tenants/{a}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {a}\nspec:\n  components:\n    - name: missing\n"
            ),
        )],
        "break",
    );
    let broken = common::util::git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    assert_eq!(agent.signed_push(), 202);
    wait_until("the failed attempt", Duration::from_secs(20), || {
        condition(&status(&agent_ns, &a), "Ready") == "False"
    });
    let out = fief_cmd(&["status", "--namespace", &agent_ns, "--agent", &url]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let line = row(&out);
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert!(applied.starts_with(cols[6]), "COMMIT stays: {line}");
    assert!(
        broken.starts_with(cols[7]) && cols[8] == "invalid",
        "ATTEMPTED names the failed commit: {line}"
    );
}

/// Run `command` (a shell line) on a pseudo-terminal (util-linux `script`); its output.
fn on_tty(command: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run script(1) for a pseudo-terminal");
    text(&out.stdout)
}

#[test]
fn color_is_a_flag_of_every_command_auto_means_a_terminal_without_no_color() {
    const ESC: &str = "\x1b[";
    let bin = env!("CARGO_BIN_EXE_fief");
    for cmd in [
        "render",
        "validate",
        "apply",
        "diff",
        "agent",
        "status",
        "bump",
        "completion",
        "man",
        "suspend",
        "resume",
        "reconcile",
    ] {
        let out = Command::new(bin)
            .args([cmd, "--color", "never", "--help"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd} --color: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("--color <WHEN>"), "{cmd} --help");
    }

    // An invalid repo: `error:` lines on stderr.
    let repo = TestRepo::new("");
    let t = common::unique("colour");
    repo.tenant(&t, "  components:\n    - name: nope\n");
    let validate = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(bin)
            .arg("validate")
            .arg(repo.path())
            .args(args)
            .env_remove("NO_COLOR")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        text(&out.stderr)
    };
    assert!(validate(&["--color", "always"], &[]).contains("\x1b[31merror:"));
    assert!(validate(&["--color", "always"], &[("NO_COLOR", "1")]).contains(ESC));
    assert!(!validate(&["--color", "never"], &[]).contains(ESC));
    assert!(!validate(&[], &[]).contains(ESC), "auto into a pipe");
    let line = format!("{bin} validate {} --color auto", repo.path().display());
    assert!(
        on_tty(&line, &[]).contains("\x1b[31merror:"),
        "auto on a TTY"
    );
    assert!(
        !on_tty(&line, &[("NO_COLOR", "1")]).contains(ESC),
        "NO_COLOR on a TTY"
    );
    let never = format!("{bin} validate {} --color never", repo.path().display());
    assert!(!on_tty(&never, &[]).contains(ESC));

    // Cluster commands: apply's problem outcomes (success stays plain) and status' READY.
    repo.tenant(&t, APP);
    let bad = common::unique("colour-bad");
    repo.tenant(&bad, "  components:\n    - name: nope\n");
    let out = fief("apply", repo.path(), &["--color", "always"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("{bad}: \x1b[31minvalid\x1b[0m"))
            && stdout.contains(&format!("{t}: applied")),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("\x1b[31merror:"));
    repo.remove(&format!("tenants/{bad}.yaml"));
    assert!(!ok(&fief("apply", repo.path(), &[])).contains(ESC));
    let status = ["status", "--namespace", &repo.agent_ns, "--tenant", &t];
    let out = fief_cmd(&[&status[..], &["--color", "always"]].concat());
    assert!(ok(&out).contains("\x1b[32mTrue"), "{}", text(&out.stdout));
    let out = fief_cmd(&status);
    assert!(!ok(&out).contains(ESC));
}

/// Events in `ns` as `user` sees them: `Ok(items)` or `Err(stderr)` when refused.
fn events_as(user: &str, ns: &str) -> Result<Vec<serde_json::Value>, String> {
    let out = Kubectl::user(user).run(&["get", "events", "-n", ns, "-o", "json"])?;
    let list: serde_json::Value = serde_json::from_str(&out).expect("kubectl printed JSON");
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

fn has_event(items: &[serde_json::Value], reason: &str, text_in_note: &str) -> bool {
    items.iter().any(|e| {
        e["reason"] == reason
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains(text_in_note))
    })
}

fn tenant_with_viewer(name: &str, viewer: &str, component: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  access: {{viewers: [{viewer}]}}\n  components:\n    - name: {component}\n"
        ),
    )
}

#[test]
fn a_tenant_viewer_reads_their_tenants_last_error_as_events_and_not_another_tenants() {
    let agent_ns = common::unique("fief-d2e");
    let (t1, t2) = (common::unique("ev1"), common::unique("ev2"));
    let mut files = small_repo(&agent_ns, &[]);
    files.push(tenant_with_viewer(&t1, "alice", "app"));
    files.push(tenant_with_viewer(&t2, "bob", "app"));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let (ns1, ns2) = (format!("{t1}-prod"), format!("{t2}-prod"));

    // The first sync is an Event in each tenant's namespace, readable by its viewer.
    wait_until(
        "bob sees his tenant's sync",
        Duration::from_secs(20),
        || events_as("bob", &ns2).is_ok_and(|e| has_event(&e, "Synced", "created")),
    );

    // t1 breaks: its viewer reads the error, without any access to the agent namespace.
    server.commit(
        &[tenant_with_viewer(&t1, "alice", "no-such-component")],
        "break t1",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "alice reads t1's last error",
        Duration::from_secs(20),
        || events_as("alice", &ns1).is_ok_and(|e| has_event(&e, "SyncFailed", "no-such-component")),
    );
    let refused = |user: &str, args: &[&str]| {
        let out = Kubectl::user(user).output(args);
        assert!(!out.status.success(), "{user} {args:?} was allowed");
        assert!(
            text(&out.stderr).contains("Forbidden"),
            "{}",
            text(&out.stderr)
        );
    };
    refused("alice", &["get", "configmaps", "-n", &agent_ns]);
    // ...and cannot read the other tenant's, nor can bob read t1's.
    let err = events_as("alice", &ns2).expect_err("alice reads t2's events");
    assert!(err.contains("Forbidden"), "{err}");
    let err = events_as("bob", &ns1).expect_err("bob reads t1's events");
    assert!(err.contains("Forbidden"), "{err}");
    // The agent published nothing into t2's namespace about t1.
    let t2_events = events_as("bob", &ns2).unwrap();
    assert!(
        !t2_events
            .iter()
            .any(|e| e["message"].as_str().is_some_and(|m| m.contains(&t1))),
        "{t2_events:?}"
    );
}

/// `fief status ARGS` as `user` (their own kubeconfig, no rights in the agent namespace).
fn status_as(user: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("status")
        .arg("--kubeconfig")
        .arg(common::control_plane().kubeconfig_for(user))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_tenant_viewer_reads_their_tenants_status_with_fief_status_and_is_refused_another_tenants() {
    let agent_ns = common::unique("fief-d2v");
    let (t1, t2) = (common::unique("sv1"), common::unique("sv2"));
    let mut files = small_repo(&agent_ns, &[]);
    files.push(tenant_with_viewer(&t1, "alice", "app"));
    files.push(tenant_with_viewer(&t2, "bob", "app"));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);

    // alice names her tenant: its row, Ready, with a note that she sees only what she named.
    let out = status_as("alice", &["-n", &agent_ns, "--tenant", &t1]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let row = stdout.lines().find(|l| l.starts_with(t1.as_str()));
    assert!(
        row.is_some_and(|r| r.split_whitespace().nth(1) == Some("True")),
        "{stdout}"
    );
    assert!(
        stdout.contains("showing the named tenants' status only"),
        "{stdout}"
    );
    assert!(!stdout.contains(&t2), "{stdout}");

    // Another tenant's status is refused, by fief and by kubectl alike.
    let out = status_as("alice", &["-n", &agent_ns, "--tenant", &t2]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("403"), "{}", text(&out.stderr));
    let inventory = |t: &str| format!("configmap/fief-tenant-{t}");
    let kubectl_get = |user: &str, t: &str| {
        Kubectl::user(user).output(&["get", &inventory(t), "-n", &agent_ns, "-o", "name"])
    };
    assert!(kubectl_get("alice", &t1).status.success());
    let refused = kubectl_get("alice", &t2);
    assert!(
        text(&refused.stderr).contains("Forbidden"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!kubectl_get("bob", &t1).status.success());

    // Without --tenant she is told how to read her own.
    let out = status_as("alice", &["-n", &agent_ns]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("--tenant"),
        "{}",
        text(&out.stderr)
    );

    // Taken off the tenant's access lists, she can no longer read it.
    server.commit(&[tenant_with_viewer(&t1, "carol", "app")], "carol views t1");
    assert_eq!(agent.signed_push(), 202);
    wait_until("alice loses t1's status", Duration::from_secs(20), || {
        !kubectl_get("alice", &t1).status.success()
    });
    assert!(kubectl_get("carol", &t1).status.success());
}

#[test]
fn apply_records_each_tenants_outcome_as_an_event_in_its_own_namespace() {
    let repo = TestRepo::new("");
    let t = common::unique("evap");
    repo.tenant(
        &t,
        "  access: {viewers: [carol]}\n  components:\n    - name: app\n",
    );
    ok(&fief("apply", repo.path(), &[]));
    let events = events_as("carol", &format!("{t}-prod")).unwrap();
    assert!(has_event(&events, "Synced", "created"), "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e["reportingComponent"] == "fief-apply"
                || e["source"]["component"] == "fief-apply"),
        "{events:?}"
    );
    // An unchanged second apply writes no Event (steady state sends nothing).
    let before = events.len();
    ok(&fief("apply", repo.path(), &[]));
    assert_eq!(
        events_as("carol", &format!("{t}-prod")).unwrap().len(),
        before
    );
}

#[test]
fn day2_commands_never_take_the_agent_namespace_from_the_kubeconfig_context_and_say_where_they_read()
 {
    let agent_ns = common::unique("fief-ctx");
    let t = common::unique("ctx");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    common::agent::fief_apply(&server.repo());
    // A kubeconfig whose context names the agent's namespace: fief does not use it (the
    // context's namespace is where a person works, often a tenant's).
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::copy(common::control_plane().admin_kubeconfig(), &kubeconfig).unwrap();
    let set = Command::new(common::control_plane().kubectl_path())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "config",
            "set-context",
            "--current",
            "--namespace",
            &agent_ns,
        ])
        .output()
        .unwrap();
    assert!(set.status.success(), "{}", text(&set.stderr));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    // Read from fief-system (nothing of fief there in this test binary): said, with the
    // context's namespace as a hint, exit 2.
    let out = run(&["status"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("namespace fief-system (the default")
            && stderr.contains(&format!("-n {agent_ns} if the agent runs there")),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains(&t), "{}", text(&out.stdout));
    // -n names it.
    let out = run(&["status", "-n", &agent_ns]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&t), "{}", text(&out.stdout));
}

#[test]
fn day2_commands_take_the_agent_namespace_from_the_repos_fief_yaml() {
    let agent_ns = common::unique("fief-repo");
    let t = common::unique("rns");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    common::agent::fief_apply(&server.repo());
    let repo = server.repo();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(args)
            .arg("--repo")
            .arg(&repo)
            .arg("--kubeconfig")
            .arg(common::control_plane().admin_kubeconfig())
            .output()
            .unwrap()
    };
    let out = run(&["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&t), "{}", text(&out.stdout));
    ok(&run(&["suspend", &t, "--reason", "repo"]));
    assert!(text(&run(&["status"]).stdout).contains("suspended"));
    ok(&run(&["resume", &t]));
}
