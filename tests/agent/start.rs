//! An agent start on an applied cluster, against the real control plane: tenants found as last
//! applied (recorded inputs current, live objects unchanged by anyone else) are neither
//! rendered nor synced, while whatever was changed during the agent's downtime — and after
//! its start — is still repaired.

use crate::common;

use std::time::Duration;

use common::agent::*;
use common::cluster_cli::kubectl_ok;

/// Mutating requests the agent sent, from its metrics.
fn mutating(agent: &Agent) -> f64 {
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|v| agent.metric("fief_api_requests_total", &format!("verb=\"{v}\"")))
        .sum()
}

fn rendered(agent: &Agent) -> f64 {
    agent.metric("fief_tenants_rendered_total", "")
}

fn verified(agent: &Agent) -> f64 {
    agent.metric("fief_tenants_verified_total", "")
}

/// Set `greeting` of a tenant's `app-config` by hand (kubectl takes the field over).
fn hand_edit(tenant: &str, value: &str) {
    kubectl_ok(&[
        "-n",
        &format!("{tenant}-prod"),
        "patch",
        "configmap",
        "app-config",
        "--type=merge",
        "-p",
        &format!("{{\"data\":{{\"greeting\":\"{value}\"}}}}"),
    ]);
}

fn greeting(tenant: &str) -> Option<String> {
    configmap_value(&format!("{tenant}-prod"), "app-config", "greeting")
}

#[test]
fn a_start_after_fief_apply_renders_only_tenants_changed_while_down_and_repairs_them() {
    let agent_ns = common::unique("fief-as1");
    let names: Vec<String> = (0..60).map(|i| common::unique(&format!("v{i}"))).collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "hi")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    fief_apply(&server.repo());
    // While no agent runs: a hand edit of a field fief owns, a deleted object, and a write by
    // someone else that touches no field fief sets (a new resourceVersion, fief's
    // managedFields entry unchanged: still as applied).
    let (edited, deleted, annotated) = (&names[0], &names[1], &names[2]);
    hand_edit(edited, "edited-while-down");
    kubectl_ok(&[
        "-n",
        &format!("{deleted}-prod"),
        "delete",
        "configmap",
        "app-extra",
    ]);
    kubectl_ok(&[
        "-n",
        &format!("{annotated}-prod"),
        "annotate",
        "configmap",
        "app-config",
        "someone.example/else=1",
    ]);

    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    assert_eq!(greeting(edited).as_deref(), Some("hi"), "{}", agent.log());
    assert_eq!(
        configmap_value(&format!("{deleted}-prod"), "app-extra", "k").as_deref(),
        Some("v"),
        "{}",
        agent.log()
    );
    assert_eq!(rendered(&agent), 2.0, "{}", agent.log());
    assert_eq!(verified(&agent), 58.0, "{}", agent.log());
    drop(agent);

    // The next start: nothing rendered, nothing sent.
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(rendered(&agent), 0.0, "{}", agent.log());
    assert_eq!(verified(&agent), 60.0, "{}", agent.log());
    assert_eq!(mutating(&agent), 0.0, "{}", agent.log());
}

#[test]
fn after_a_start_that_rendered_nothing_edits_are_repaired_prunes_and_orphans_work_and_own_writes_are_not_drift()
 {
    let agent_ns = common::unique("fief-as2");
    let names: Vec<String> = (0..3).map(|i| common::unique(&format!("w{i}"))).collect();
    let tenants: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "hi")).collect();
    let server = GitServer::new(&small_repo(&agent_ns, &tenants));
    drop(Agent::start(&server.url(), &["--interval", "300s"]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    assert_eq!(rendered(&agent), 0.0, "{}", agent.log());
    assert_eq!(verified(&agent), 3.0, "{}", agent.log());

    // A hand edit of a verified tenant's object: drift, repaired.
    hand_edit(&names[0], "edited");
    wait_until("the hand edit repaired", Duration::from_secs(10), || {
        greeting(&names[0]).as_deref() == Some("hi")
    });
    // A deletion: drift, repaired.
    kubectl_ok(&[
        "-n",
        &format!("{}-prod", names[1]),
        "delete",
        "configmap",
        "app-extra",
    ]);
    wait_until("the deletion repaired", Duration::from_secs(10), || {
        configmap_value(&format!("{}-prod", names[1]), "app-extra", "k").as_deref() == Some("v")
    });
    let drift = agent.metric("fief_drift_detected_total", "");
    assert!(drift >= 2.0, "{drift}: {}", agent.log());
    // A commit that drops the third tenant's component: its objects are pruned (its inventory,
    // not held since it was verified, is read back first), and fief's own writes and deletes
    // are not drift.
    let ns2 = format!("{}-prod", names[2]);
    server.commit(
        &[(
            format!("tenants/{}.yaml", names[2]),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {}\nspec:\n  components: []\n",
                names[2]
            ),
        )],
        "drop the component",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("the component pruned", Duration::from_secs(20), || {
        greeting(&names[2]).is_none() && configmap_value(&ns2, "app-extra", "k").is_none()
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        agent.metric("fief_drift_detected_total", ""),
        drift,
        "{}",
        agent.log()
    );
    // A verified tenant's file removed from git: its inventory is reported orphaned.
    std::fs::remove_file(server.repo().join(format!("tenants/{}.yaml", names[1]))).unwrap();
    server.commit(&[], "remove a tenant");
    assert_eq!(agent.signed_push(), 202);
    wait_until("the orphan reported", Duration::from_secs(20), || {
        condition(&status(&agent_ns, &names[1]), "Orphaned") == "True"
    });
    // And the edited tenant, now rendered, is still repaired.
    hand_edit(&names[0], "edited again");
    wait_until(
        "the second hand edit repaired",
        Duration::from_secs(10),
        || greeting(&names[0]).as_deref() == Some("hi"),
    );
}
