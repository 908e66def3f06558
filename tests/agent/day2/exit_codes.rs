//! `fief reconcile`'s exit code says where each tenant stands once the agent answered, read
//! from its inventory: 0 Ready, 1 failed, 4 a held prune, 5 still waiting for health when
//! `--timeout` ran out — each with the reason printed per tenant. A wait for health that ends
//! within `--timeout` is waited for and ends 0.
//!
//! The control plane has no node, so a Deployment never becomes available unless the test
//! writes its status as the deployment controller would.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::agent::{Agent, GitServer, configmap_value, small_repo, tenant};
use common::cluster_cli::{fief_cmd, mark_ready};
use common::util::text;

/// Component `web`: one Deployment, waited on for 10 minutes.
const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: registry.example/web:1\n";

fn web_files() -> Vec<(String, String)> {
    vec![
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 10m}\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            DEPLOYMENT.to_string(),
        ),
    ]
}

/// Tenant `name` running component `web`.
fn web_tenant(name: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: web\n"
        ),
    )
}

/// `fief reconcile -n <agent_ns> <args>`.
fn reconcile(agent_ns: &str, args: &[&str]) -> Output {
    let mut all = vec!["reconcile", "--namespace", agent_ns];
    all.extend_from_slice(args);
    fief_cmd(&all)
}

/// Assert the exit code; stdout and stderr together.
fn expect(out: &Output, code: i32) -> String {
    let both = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{both}");
    both
}

/// `fief reconcile --tenant b` waits within --timeout and exits 0 once b's Deployment is
/// made available.
fn a_wait_for_health_ends_with_exit_0_once_the_deployment_is_available(agent_ns: &str, b: &str) {
    let waiting = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["reconcile", "--namespace", agent_ns, "--tenant", b])
        .args(["--timeout", "60s", "--kubeconfig"])
        .arg(common::control_plane().admin_kubeconfig())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fief reconcile");
    std::thread::sleep(Duration::from_secs(4));
    mark_ready("deployment", "web", &format!("{b}-prod"));
    let out = waiting.wait_with_output().expect("fief reconcile exits");
    let both = expect(&out, 0);
    assert!(
        both.contains("waiting for") && both.contains(&format!("tenant {b}: Ready")),
        "{both}"
    );
}

#[test]
fn reconcile_exits_0_when_ready_5_while_waiting_for_health_1_when_failed_and_4_on_a_held_prune() {
    let agent_ns = common::unique("fief-d2x");
    let (a, b) = (common::unique("xa"), common::unique("xb"));
    let mut files = small_repo(&agent_ns, &[(&a, "hi")]);
    files.extend(web_files());
    let server = GitServer::new(&files);
    let _agent = Agent::start(&server.url(), &["--interval", "600s"]);

    // Ready: exit 0.
    server.commit(&[tenant(&a, "bonjour")], "change a");
    let both = expect(
        &reconcile(&agent_ns, &["--tenant", &a, "--timeout", "60s"]),
        0,
    );
    assert!(both.contains(&format!("tenant {a}: Ready")), "{both}");

    // A new tenant whose Deployment never becomes available: every tenant is asked, the
    // agent answers that it synced them, and the command waits for health, then exits 5
    // naming the tenant and the object.
    server.commit(&[web_tenant(&b)], "add b");
    let both = expect(&reconcile(&agent_ns, &["--timeout", "20s"]), 5);
    assert!(
        both.contains(&format!("{b}: Reconciling (WaitingForHealth)"))
            && both.contains("Deployment")
            && both.contains("NotHealthy"),
        "{both}"
    );
    assert!(
        !both.contains(&format!("{a}: ")),
        "a Ready tenant is not listed: {both}"
    );

    a_wait_for_health_ends_with_exit_0_once_the_deployment_is_available(&agent_ns, &b);

    // A tenant that fails to render: exit 1 with its error.
    server.commit(
        &[(
            format!("tenants/{a}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {a}\nspec:\n  components:\n    - name: no-such-component\n"
            ),
        )],
        "break a",
    );
    let both = expect(
        &reconcile(&agent_ns, &["--tenant", &a, "--timeout", "60s"]),
        1,
    );
    assert!(
        both.contains(&format!("tenant {a}: Failed (RenderFailed)"))
            && both.contains("no-such-component"),
        "{both}"
    );

    // a fixed, and every tenant's namespaces renamed: every object would be pruned, so the
    // prune is held (Stalled, PruneHeld) and the command exits 4, the old objects running.
    server.commit(
        &[
            tenant(&a, "bonjour"),
            (
                "fief.yaml".to_string(),
                format!(
                    "agentNamespace: {agent_ns}\nnamespacePattern: \"{{tenant}}-moved-{{env}}\"\n"
                ),
            ),
        ],
        "rename the namespaces",
    );
    // (b's Deployment in its new namespace waits for health until the timeout: the held
    // prune ranks above it.)
    let both = expect(&reconcile(&agent_ns, &["--timeout", "20s"]), 4);
    assert!(
        both.contains(&format!("{a}: Stalled (PruneHeld)")) && both.contains("PruneHeld:"),
        "{both}"
    );
    assert_eq!(
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref(),
        Some("bonjour"),
        "the held prune deleted nothing"
    );
}
