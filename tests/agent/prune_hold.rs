//! A held prune stays held in the agent, against the real test control plane: a tenant whose
//! every object moves to another namespace (its environment renamed) is held by the
//! mass-prune guard; `fief reconcile`, a restart of the agent and a further commit leave it
//! held with no DELETE at the API server; `fief reconcile --allow-mass-prune` releases it and
//! the status records who and when; a revert clears another tenant's hold and deletes only
//! what the held change added. The CLI's side: tests/cluster/prune_hold.rs.

use crate::common;

use std::time::Duration;

use common::agent::{Agent, GitServer, small_repo, status, wait_until};
use common::cluster_cli::{exists, fief_cmd, wait_gone};
use common::util::text;

/// Tenant `name` running `app` in environment `env`, with `greeting`.
fn tenant_in(name: &str, env: &str, greeting: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [{env}]\n  components:\n    - name: app\n      values: {{greeting: {greeting}}}\n"
        ),
    )
}

/// DELETE requests the API server received in `namespace` (or of it).
fn deletes_in(namespace: &str) -> usize {
    common::audit::writes()
        .iter()
        .filter(|w| w.verb == "delete")
        .filter(|w| w.namespace == namespace || (w.resource == "namespaces" && w.name == namespace))
        .count()
}

fn hold_kind(agent_ns: &str, tenant: &str) -> String {
    status(agent_ns, tenant)["pruneHold"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `fief reconcile --tenant T` with `extra`; its exit code and stdout.
fn reconcile(agent_ns: &str, tenant: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec![
        "reconcile",
        "--tenant",
        tenant,
        "--namespace",
        agent_ns,
        "--timeout",
        "60s",
    ];
    args.extend_from_slice(extra);
    let out = fief_cmd(&args);
    let shown = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    (out.status.code(), shown)
}

#[test]
fn a_held_prune_survives_reconcile_restart_and_commits_until_released_or_reverted() {
    let agent_ns = common::unique("fief-hold");
    let (a, b) = (common::unique("hold-a"), common::unique("hold-b"));
    let mut files = small_repo(&agent_ns, &[]);
    files.push(tenant_in(&a, "prod", "hi"));
    files.push(tenant_in(&b, "prod", "hi"));
    let server = GitServer::new(&files);
    let mut agent = Agent::start(&server.url(), &["--interval", "600s"]);
    let (a_old, b_old) = (format!("{a}-prod"), format!("{b}-prod"));
    wait_until("both tenants synced", Duration::from_secs(60), || {
        exists("configmap", &a_old, "app-config") && exists("configmap", &b_old, "app-config")
    });

    server.commit(
        &[tenant_in(&a, "live", "hi"), tenant_in(&b, "live", "hi")],
        "rename both tenants' environment",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("both tenants held", Duration::from_secs(60), || {
        hold_kind(&agent_ns, &a) == "massPrune" && hold_kind(&agent_ns, &b) == "massPrune"
    });
    let (code, shown) = reconcile(&agent_ns, &a, &[]);
    assert_eq!(code, Some(4), "a held prune is exit 4: {shown}");
    assert!(shown.contains("mass-prune guard"), "{shown}");

    // A restart, and a further commit that still asks for the prune: still held.
    agent.kill();
    let agent = Agent::start(&server.url(), &["--interval", "600s"]);
    server.commit(
        &[tenant_in(&a, "live", "hello"), tenant_in(&b, "live", "hi")],
        "a further change to a",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "a's further change applied",
        Duration::from_secs(60),
        || {
            common::agent::configmap_value(&format!("{a}-live"), "app-config", "greeting")
                .as_deref()
                == Some("hello")
        },
    );
    let (code, shown) = reconcile(&agent_ns, &a, &[]);
    assert_eq!(code, Some(4), "{shown}");
    assert_eq!(hold_kind(&agent_ns, &a), "massPrune");
    assert!(exists("namespace", "", &a_old) && exists("namespace", "", &b_old));
    assert_eq!(deletes_in(&a_old) + deletes_in(&b_old), 0);

    // A person releases a's hold through the agent: recorded with who and when.
    let (code, shown) = reconcile(&agent_ns, &a, &["--allow-mass-prune"]);
    assert_eq!(code, Some(0), "{shown}");
    wait_gone("namespace", &a_old);
    let s = status(&agent_ns, &a);
    assert!(s["pruneHold"].is_null(), "{s}");
    assert!(
        s["pruneReleased"]
            .as_str()
            .unwrap_or_default()
            .starts_with("by "),
        "{s}"
    );
    // The release was for that request only: b is still held.
    assert_eq!(hold_kind(&agent_ns, &b), "massPrune");

    // Git stops asking for b's prune: the hold clears, only what the change added goes.
    server.commit(&[tenant_in(&b, "prod", "hi")], "revert b");
    assert_eq!(agent.signed_push(), 202);
    wait_gone("namespace", &format!("{b}-live"));
    wait_until("b's hold cleared", Duration::from_secs(60), || {
        status(&agent_ns, &b)["pruneHold"].is_null()
    });
    assert!(exists("configmap", &b_old, "app-config"));
    assert_eq!(deletes_in(&b_old), 0);
}
