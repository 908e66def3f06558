//! Day-2 commands against the real control plane: `fief suspend` / `fief resume` (apply and the
//! agent leave a suspended tenant alone), `fief reconcile` (the agent fetches and syncs on a
//! request made through the cluster), and `fief status` showing both.
//!
//! Each test has its own repo, agent namespace and tenants. `reconcile`'s exit codes by where
//! the tenants stand are in `exit_codes`; how the commands find the agent namespace in
//! `namespace`.

use crate::common;

mod exit_codes;
mod namespace;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::agent::{
    Agent, GitServer, condition, configmap_value, small_repo, status, tenant, wait_until,
};
use common::cluster_cli::{APP, TestRepo, fief, fief_cmd, kubectl_json, kubectl_ok, ok};
use common::util::text;

fn rv(kind: &str, ns: &str, name: &str) -> String {
    kubectl_json(&["get", kind, "-n", ns, name])["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Hand-edit a field fief owns.
fn hand_edit(ns: &str, name: &str, key: &str) {
    kubectl_ok(&[
        "-n",
        ns,
        "patch",
        "configmap",
        name,
        "--type=merge",
        "-p",
        &format!("{{\"data\":{{\"{key}\":\"hand-edited\"}}}}"),
    ]);
}

#[test]
fn apply_leaves_a_suspended_tenant_alone_until_resume() {
    let repo = TestRepo::new("");
    let (t, other) = (common::unique("susp"), common::unique("susp-o"));
    repo.write(
        "components/app/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  e: \"1\"\n",
    );
    repo.tenant(&t, APP);
    repo.tenant(&other, APP);
    ok(&fief("apply", repo.path(), &[]));
    let ns = format!("{t}-prod");
    let ans = repo.agent_ns.as_str();

    suspend_names_the_known_tenants_and_suspends_one(&t, ans);
    // A git change (one object changed, one removed) and a hand edit of a managed field.
    repo.write(
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  k: changed\n",
    );
    repo.remove("components/app/templates/extra.yaml");
    hand_edit(&ns, "app-config", "k");
    let before = (
        rv("configmap", &ns, "app-config"),
        rv("configmap", &ns, "extra"),
        rv("configmap", ans, &format!("fief-tenant-{t}")),
    );

    let out = fief("apply", repo.path(), &[]);
    let stdout = ok(&out);
    assert!(
        stdout.contains(&format!("{t}: suspended (by "))
            && stdout.contains("incident 42")
            && stdout.contains("nothing applied"),
        "{stdout}"
    );
    assert_eq!(
        before,
        (
            rv("configmap", &ns, "app-config"),
            rv("configmap", &ns, "extra"),
            rv("configmap", ans, &format!("fief-tenant-{t}")),
        ),
        "a suspended tenant got a write (apply, repair or prune)"
    );
    // The other tenant was synced as usual (its object removed from git is pruned).
    assert_eq!(
        configmap_value(&format!("{other}-prod"), "app-config", "k").as_deref(),
        Some("changed")
    );
    // `apply --tenant T` on a suspended tenant: left alone too, exit 0.
    let stdout = ok(&fief("apply", repo.path(), &["--tenant", &t]));
    assert!(stdout.contains("suspended"), "{stdout}");
    assert_eq!(before.0, rv("configmap", &ns, "app-config"));

    status_says_suspended_with_the_reason(&t, ans);
    // Resume: the next apply syncs it (change, repair, prune).
    let out = ok(&fief_cmd(&["resume", &t, "--namespace", ans]));
    assert!(out.contains("resumed"), "{out}");
    ok(&fief("apply", repo.path(), &[]));
    assert_eq!(
        configmap_value(&ns, "app-config", "k").as_deref(),
        Some("changed")
    );
    assert!(
        configmap_value(&ns, "extra", "e").is_none(),
        "the removed object was pruned after resume"
    );
    let stdout = text(&fief_cmd(&["status", "--namespace", ans, "--tenant", &t]).stdout);
    assert!(!stdout.contains("Suspended"), "{stdout}");
}

/// `fief suspend` of an unknown tenant exits 2 naming the known ones; of `t`, suspends it
/// with the reason.
fn suspend_names_the_known_tenants_and_suspends_one(t: &str, ans: &str) {
    // Unknown tenant: exit 2, the known ones named.
    let out = fief_cmd(&["suspend", "no-such-tenant", "--namespace", ans]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(t), "{}", text(&out.stderr));

    let out = ok(&fief_cmd(&[
        "suspend",
        t,
        "--namespace",
        ans,
        "--reason",
        "incident 42",
    ]));
    assert!(out.contains("suspended"), "{out}");
}

/// `fief status` says the tenant is Suspended, with the reason (table and JSON).
fn status_says_suspended_with_the_reason(t: &str, ans: &str) {
    // Status says Suspended, with the reason.
    let out = fief_cmd(&["status", "--namespace", ans, "--tenant", t]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Suspended") && stdout.contains("incident 42"),
        "{stdout}"
    );
    let json = fief_cmd(&["status", "--namespace", ans, "--tenant", t, "-o", "json"]);
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        rows[0]["suspended"]
            .as_str()
            .is_some_and(|s| s.contains("incident 42")),
        "{rows}"
    );
}

#[test]
fn the_agent_leaves_a_suspended_tenant_alone_and_syncs_it_at_once_on_resume() {
    let agent_ns = common::unique("fief-d2a");
    let (a, b) = (common::unique("sa"), common::unique("sb"));
    let mut files = small_repo(&agent_ns, &[(&a, "hi"), (&b, "hi")]);
    files.push((
        "components/app/templates/more.yaml".to_string(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\ndata:\n  m: \"1\"\n".to_string(),
    ));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let ns = format!("{a}-prod");
    assert_eq!(
        configmap_value(&ns, "app-config", "greeting").as_deref(),
        Some("hi")
    );
    ok(&fief_cmd(&[
        "suspend",
        &a,
        "--namespace",
        &agent_ns,
        "--reason",
        "db migration",
    ]));
    // A git change to both tenants (one object changed, one removed), pushed...
    server.commit(&[tenant(&a, "bonjour"), tenant(&b, "bonjour")], "change");
    std::fs::remove_file(server.repo().join("components/app/templates/more.yaml")).unwrap();
    common::util::git(&server.repo(), &["commit", "-qam", "remove more"]);
    // ...and a hand edit of a field fief owns.
    hand_edit(&ns, "app-config", "greeting");
    let before = (
        rv("configmap", &ns, "app-config"),
        rv("configmap", &ns, "more"),
        rv("configmap", &agent_ns, &format!("fief-tenant-{a}")),
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("the other tenant synced", Duration::from_secs(20), || {
        configmap_value(&format!("{b}-prod"), "app-config", "greeting").as_deref()
            == Some("bonjour")
    });
    // Drift repair would take well under a second; give it several.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        before,
        (
            rv("configmap", &ns, "app-config"),
            rv("configmap", &ns, "more"),
            rv("configmap", &agent_ns, &format!("fief-tenant-{a}")),
        ),
        "the agent wrote to a suspended tenant (apply, drift repair or prune)\n{}",
        agent.log()
    );
    assert!(agent.log().contains("suspended; not synced"));

    ok(&fief_cmd(&["resume", &a, "--namespace", &agent_ns]));
    let took = wait_until("resumed tenant synced", Duration::from_secs(20), || {
        configmap_value(&ns, "app-config", "greeting").as_deref() == Some("bonjour")
            && configmap_value(&ns, "more", "m").is_none()
    });
    eprintln!("resume to synced: {took:?}");
    wait_until("status settled", Duration::from_secs(10), || {
        condition(&status(&agent_ns, &a), "Ready") == "True"
    });
}

#[test]
fn reconcile_makes_the_agent_fetch_and_sync_now_and_reports_the_result() {
    let agent_ns = common::unique("fief-d2r");
    let (a, b) = (common::unique("ra"), common::unique("rb"));
    let server = GitServer::new(&small_repo(&agent_ns, &[(&a, "hi"), (&b, "hi")]));
    // A long interval and no webhook: only the request can make it fetch.
    let _agent = Agent::start(&server.url(), &["--interval", "600s"]);

    server.commit(&[tenant(&a, "bonjour")], "change a");
    let out = fief_cmd(&[
        "reconcile",
        "--tenant",
        &a,
        "--namespace",
        &agent_ns,
        "--timeout",
        "60s",
    ]);
    let stdout = ok(&out);
    eprintln!("reconcile --tenant: {stdout}");
    assert!(stdout.contains(&format!("tenant {a}: Ready")), "{stdout}");
    assert_eq!(
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref(),
        Some("bonjour"),
        "synced before reconcile returned"
    );

    // Every tenant.
    server.commit(&[tenant(&b, "hallo")], "change b");
    let stdout = ok(&fief_cmd(&[
        "reconcile",
        "--namespace",
        &agent_ns,
        "--timeout",
        "60s",
    ]));
    eprintln!("reconcile (all): {stdout}");
    assert!(stdout.contains("every tenant: Ready: 2 Ready"), "{stdout}");
    assert_eq!(
        configmap_value(&format!("{b}-prod"), "app-config", "greeting").as_deref(),
        Some("hallo")
    );

    // A tenant that fails: exit 1 with its error.
    server.commit(
        &[(
            format!("tenants/{a}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {a}\nspec:\n  components:\n    - name: no-such-component\n"
            ),
        )],
        "break a",
    );
    let out = fief_cmd(&[
        "reconcile",
        "--tenant",
        &a,
        "--namespace",
        &agent_ns,
        "--timeout",
        "60s",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("Failed") && text(&out.stdout).contains("no-such-component"),
        "{}",
        text(&out.stdout)
    );

    // Unknown tenant: exit 2. Suspended tenant: exit 1, nothing asked.
    let out = fief_cmd(&["reconcile", "--tenant", "nope", "--namespace", &agent_ns]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    ok(&fief_cmd(&["suspend", &b, "--namespace", &agent_ns]));
    let out = fief_cmd(&["reconcile", "--tenant", &b, "--namespace", &agent_ns]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("suspended"));
}

#[test]
fn reconcile_without_a_running_agent_times_out_with_exit_3() {
    let repo = TestRepo::new("");
    let t = common::unique("noagent");
    repo.tenant(&t, APP);
    ok(&fief("apply", repo.path(), &[]));
    let out = fief_cmd(&[
        "reconcile",
        "--tenant",
        &t,
        "--namespace",
        &repo.agent_ns,
        "--timeout",
        "2s",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("did not answer within 2s"),
        "{}",
        text(&out.stderr)
    );
}

/// `fief <args> --kubeconfig <user>`.
fn fief_as(user: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(common::control_plane().kubeconfig_for(user))
        .stdin(Stdio::null())
        .output()
        .expect("run fief")
}

#[test]
fn the_day2_operator_role_in_deploy_is_what_suspend_resume_and_reconcile_need() {
    let repo = TestRepo::new("");
    let t = common::unique("oprole");
    repo.tenant(&t, APP);
    ok(&fief("apply", repo.path(), &[]));
    let ns = repo.agent_ns.as_str();

    // Without a binding: refused by the API server (exit 3), nothing recorded.
    let out = fief_as("operator", &["suspend", &t, "--namespace", ns]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("403"), "{}", text(&out.stderr));

    // deploy/rbac.yaml's Role `fief-day2-operator`, in this test's agent namespace, bound to operator.
    let rbac = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml"),
    )
    .unwrap();
    let role = rbac
        .split("\n---\n")
        .find(|d| d.contains("name: fief-day2-operator"))
        .expect("the Role in deploy/rbac.yaml")
        .replace("namespace: fief-system", &format!("namespace: {ns}"));
    common::kubectl::Kubectl::admin()
        .stdin(&role)
        .ok(&["apply", "-f", "-"]);
    kubectl_ok(&[
        "create",
        "rolebinding",
        "day2",
        "-n",
        ns,
        "--role=fief-day2-operator",
        "--user=operator",
    ]);

    let out = fief_as(
        "operator",
        &["suspend", &t, "--namespace", ns, "--reason", "r"],
    );
    let stdout = ok(&out);
    assert!(
        stdout.contains("by operator at"),
        "who is recorded: {stdout}"
    );
    let out = fief_as("operator", &["status", "--namespace", ns, "--tenant", &t]);
    assert!(
        text(&out.stdout).contains("Suspended"),
        "{}",
        text(&out.stdout)
    );
    ok(&fief_as("operator", &["resume", &t, "--namespace", ns]));
    // No agent runs here: the requests are recorded (no 403), then time out (exit 3).
    for args in [vec!["--tenant", t.as_str()], vec![]] {
        let mut all = vec!["reconcile", "--namespace", ns, "--timeout", "1s"];
        all.extend(args);
        let out = fief_as("operator", &all);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("did not answer"),
            "{}",
            text(&out.stderr)
        );
    }
}
