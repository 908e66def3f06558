//! Moving a tenant between two real clusters: the old cluster reports it moved (inventory
//! `Moved=True`, `Ready=False` reason `MovedAway`, objects left running), `fief retire` refuses
//! until the new cluster has it Ready, then deletes everything of it on the old cluster and
//! nothing on the new one. Cluster `a` is [`common::control_plane`], `b` the second one.

use crate::common;

use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use common::cluster_cli::{APP, TestRepo, fief_cmd, fief_with, tenant_report};
use common::util::{text, wait_until};
use common::{ControlPlane, control_plane, second_control_plane};

/// `fief <cmd> <repo> --kubeconfig <cluster's admin> <args>`.
fn on(cp: &ControlPlane, cmd: &str, repo: &TestRepo, args: &[&str]) -> Output {
    fief_with(cmd, repo.path(), cp.admin_kubeconfig(), args, &[])
}

/// `fief apply --cluster NAME -o json` on a cluster; asserts exit 0 and returns the summary.
fn apply(cp: &ControlPlane, name: &str, repo: &TestRepo) -> Value {
    let out = on(cp, "apply", repo, &["--cluster", name, "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json summary")
}

/// An object as JSON, if it exists on the cluster.
fn get(cp: &ControlPlane, args: &[&str]) -> Option<Value> {
    let mut all = vec!["get"];
    all.extend(args);
    crate::common::kubectl::Kubectl::with(cp.kubectl_admin()).json(&all)
}

/// The tenant's inventory status on a cluster (`None`: no inventory).
fn inventory(cp: &ControlPlane, repo: &TestRepo, tenant: &str) -> Option<Value> {
    let name = format!("fief-tenant-{tenant}");
    let cm = get(cp, &["configmap", "-n", &repo.agent_ns, &name])?;
    serde_json::from_str(cm["data"]["status"].as_str()?).ok()
}

/// A condition's (status, reason).
fn condition(status: &Value, type_: &str) -> (String, String) {
    let c = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_);
    let word = |k: &str| c.and_then(|c| c[k].as_str()).unwrap_or("").to_string();
    (word("status"), word("reason"))
}

/// Whether the tenant's ConfigMap (and so its namespace) is on a cluster.
fn runs_on(cp: &ControlPlane, tenant: &str) -> bool {
    let ns = format!("{tenant}-prod");
    get(cp, &["configmap", "-n", &ns, "app-config"]).is_some()
}

fn retire(repo: &TestRepo, tenant: &str, new_kubeconfig: &std::path::Path) -> Output {
    let new = new_kubeconfig.to_str().unwrap();
    let args = [
        "--tenant",
        tenant,
        "--cluster",
        "a",
        "--new-kubeconfig",
        new,
    ];
    on(control_plane(), "retire", repo, &args)
}

#[test]
fn a_tenant_moved_to_another_cluster_is_reported_moved_and_retired_only_once_ready_there() {
    let (a, b) = (control_plane(), second_control_plane());
    let repo = TestRepo::new("");
    let t = common::unique("mv");
    let other = common::unique("mvb");
    repo.tenant(&t, &format!("  cluster: a\n{APP}"));
    repo.tenant(&other, &format!("  cluster: b\n{APP}"));
    apply(a, "a", &repo);
    assert!(runs_on(a, &t));

    repo.tenant(&t, &format!("  cluster: b\n{APP}"));
    let summary = apply(a, "a", &repo);
    let report = tenant_report(&summary, &t);
    assert_eq!(report["outcome"], "moved", "{summary}");
    assert_eq!(report["movedTo"], "b", "{summary}");
    // Never applied on a: nothing to say about it there.
    assert_eq!(tenant_report(&summary, &other)["outcome"], "skipped");
    let status = inventory(a, &repo, &t).expect("inventory stays on a");
    assert_eq!(
        condition(&status, "Moved"),
        ("True".into(), "MovedAway".into())
    );
    assert_eq!(
        condition(&status, "Ready"),
        ("False".into(), "MovedAway".into())
    );
    assert!(runs_on(a, &t), "objects are left running on a");
    let table = text(&fief_cmd(&["status", "--namespace", &repo.agent_ns]).stdout);
    assert!(table.contains("MOVED to b: "), "{table}");

    // Not on b yet, and a wrong context (a itself): refused, nothing deleted.
    let refusals = [
        (b.admin_kubeconfig(), "the new cluster has no inventory"),
        (a.admin_kubeconfig(), "not Ready on the new cluster"),
    ];
    for (new, why) in refusals {
        let out = retire(&repo, &t, new);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("refused") && stderr.contains(why),
            "{stderr}"
        );
        assert!(runs_on(a, &t) && inventory(a, &repo, &t).is_some());
    }

    apply(b, "b", &repo);
    assert!(runs_on(b, &t));
    let out = retire(&repo, &t, b.admin_kubeconfig());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(inventory(a, &repo, &t).is_none(), "inventory gone from a");
    let ns = format!("{t}-prod");
    wait_until("its namespace leaves a", Duration::from_secs(120), || {
        get(a, &["namespace", &ns]).is_none()
    });
    assert!(runs_on(b, &t), "b untouched");
    let on_b = inventory(b, &repo, &t).expect("inventory on b");
    assert_eq!(condition(&on_b, "Ready").0, "True");
    // Nothing of it is left on a to be reported: it is skipped there now.
    let summary = apply(a, "a", &repo);
    assert_eq!(tenant_report(&summary, &t)["outcome"], "skipped");
}

#[test]
fn a_tenant_moved_back_is_applied_again_and_no_longer_marked_moved() {
    let a = control_plane();
    let repo = TestRepo::new("");
    let t = common::unique("back");
    repo.tenant(&t, &format!("  cluster: a\n{APP}"));
    apply(a, "a", &repo);
    repo.tenant(&t, &format!("  cluster: b\n{APP}"));
    apply(a, "a", &repo);
    assert_eq!(
        condition(&inventory(a, &repo, &t).unwrap(), "Moved").0,
        "True"
    );
    repo.tenant(&t, &format!("  cluster: a\n{APP}"));
    let summary = apply(a, "a", &repo);
    assert_eq!(tenant_report(&summary, &t)["outcome"], "applied");
    let status = inventory(a, &repo, &t).unwrap();
    assert_eq!(condition(&status, "Moved").0, "", "{status}");
    assert_eq!(condition(&status, "Ready").0, "True", "{status}");
    assert!(status.get("movedTo").is_none(), "{status}");
}

#[test]
fn the_agent_of_the_old_cluster_reports_a_moved_tenant_then_skipped_once_retired() {
    use common::agent::{Agent, GitServer, small_repo, tenant};
    let a = control_plane();
    let agent_ns = common::unique("fief-mv");
    let t = common::unique("mva");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "1s"]);
    let (path, body) = tenant(&t, "hi");
    let moved = body.replace("spec:\n", "spec:\n  cluster: b\n");
    server.commit(&[(path, moved)], "move to b");
    // The tenant's outcome in the agent's `/status`.
    let outcome = || {
        let view: Value = agent
            .get("/status")
            .and_then(|(_, body)| serde_json::from_str(&body).ok())
            .unwrap_or(Value::Null);
        view["tenants"][&t]["outcome"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_until(
        "the agent reports it moved",
        Duration::from_secs(60),
        || outcome() == "moved",
    );
    let name = format!("fief-tenant-{t}");
    let cm = get(a, &["configmap", "-n", &agent_ns, &name]).expect("inventory stays");
    let status: Value = serde_json::from_str(cm["data"]["status"].as_str().unwrap()).unwrap();
    assert_eq!(condition(&status, "Moved").0, "True", "{status}");
    assert_eq!(status["movedTo"], "b", "{status}");
    assert!(get(a, &["configmap", "-n", &format!("{t}-prod"), "app-config"]).is_some());

    // Ready on b, then retired from a while a's agent runs: its next commit reports the
    // tenant skipped (nothing of it is left on a), with no restart.
    let b = second_control_plane();
    let checkout = server.repo();
    let out = fief_with(
        "apply",
        &checkout,
        b.admin_kubeconfig(),
        &["--cluster", "b", "--tenant", &t],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let new = b.admin_kubeconfig().to_str().unwrap().to_string();
    let out = fief_with(
        "retire",
        &checkout,
        a.admin_kubeconfig(),
        &[
            "--tenant",
            &t,
            "--cluster",
            "default",
            "--new-kubeconfig",
            &new,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (path, body) = tenant(&t, "hello");
    let changed = body.replace("spec:\n", "spec:\n  cluster: b\n");
    server.commit(&[(path, changed)], "a change after the retire");
    wait_until(
        "the agent reports it skipped",
        Duration::from_secs(60),
        || outcome() == "skipped",
    );
}
