//! A tenant invalid since the agent started, whose fix changes a Deployment the health gate
//! waits for: once the Deployment is rolled out at the fixed version, the tenant is `Ready`
//! and the rollout completes, as it does without the restart. The test plays the deployment
//! controller (this control plane runs none): it rolls out each Deployment's new generation.

use super::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// [`APP`] and a Deployment that carries the greeting in its Pod template (a change of the
/// greeting is a new generation to roll out).
const WITH_DEPLOYMENT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n      annotations: {greeting: {{ values.greeting | quote }}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example/web:1\n";

/// Play the deployment controller for the Deployments in `namespaces` until `stop`: each
/// generation not observed yet is marked rolled out, its replica ready and available.
fn play_the_deployment_controller(namespaces: Vec<String>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            for ns in &namespaces {
                let Some(list) = kubectl_json(&["get", "deployments", "-n", ns]) else {
                    continue;
                };
                for d in list["items"].as_array().into_iter().flatten() {
                    let generation = d["metadata"]["generation"].as_i64().unwrap_or(0);
                    if d["status"]["observedGeneration"].as_i64() == Some(generation) {
                        continue;
                    }
                    let status = serde_json::json!({"status": {
                        "observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
                        "readyReplicas": 1, "availableReplicas": 1}});
                    let name = d["metadata"]["name"].as_str().unwrap_or_default();
                    let _ = common::kubectl::Kubectl::admin().run(&[
                        "patch",
                        "deployment",
                        name,
                        "-n",
                        ns,
                        "--subresource=status",
                        "--type=merge",
                        "-p",
                        &status.to_string(),
                    ]);
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
}

/// The Deployment's Pod template greeting in `tenant`'s namespace.
fn deployment_greeting(tenant: &str) -> Option<String> {
    kubectl_json(&["get", "deployment", "-n", &format!("{tenant}-prod"), "web"]).and_then(|d| {
        d["spec"]["template"]["metadata"]["annotations"]["greeting"]
            .as_str()
            .map(str::to_string)
    })
}

#[test]
fn a_tenant_invalid_since_a_restart_is_ready_within_seconds_of_a_fix_that_changes_its_deployment() {
    fix_after_a_restart(WITH_DEPLOYMENT, true);
}

#[test]
fn a_tenant_invalid_since_a_restart_is_ready_within_seconds_of_a_fix_that_changes_a_deployment_of_no_replicas()
 {
    // No replica: healthy as soon as it is observed at the applied version, no controller.
    fix_after_a_restart(
        &WITH_DEPLOYMENT.replace("replicas: 1", "replicas: 0"),
        false,
    );
}

/// Defect sequence: waves canary/early/rest over `template`; a shared change invalid for the
/// early tenant halts the rollout at wave 2; the agent restarts; the early tenant's fix
/// changes its Deployment. The rollout completes within 15 s of the fix, the tenant `Ready`.
fn fix_after_a_restart(template: &str, controller: bool) {
    let agent_ns = common::unique("fief-rod");
    let p = common::unique("rod");
    let (canary, early, rest) = (format!("{p}-c1"), format!("{p}-e1"), format!("{p}-r1"));
    let mut files = waves(&agent_ns, template);
    files.extend([
        tenant(&canary, "canary", "extra: x"),
        tenant(&early, "early", ""),
        tenant(&rest, "other", "extra: x"),
    ]);
    let stop = Arc::new(AtomicBool::new(!controller));
    play_the_deployment_controller(
        [&canary, &early, &rest]
            .iter()
            .map(|t| format!("{t}-prod"))
            .collect(),
        stop.clone(),
    );
    let server = GitServer::new(&files);
    let mut agent = Agent::start(&server.url(), &["--interval", "300s"]);
    // The shared change (greeting g2, `extra` needed) is invalid for the early tenant alone.
    server.commit(&needs_extra(template), "g2 with extra");
    let broken = head(&server);
    assert_eq!(agent.signed_push(), 202);
    wait_until("the rollout halts", Duration::from_secs(60), || {
        let r = record(&agent_ns);
        r["commit"] == broken.as_str() && r["phase"] == "Halted"
    });
    assert_eq!(deployment_greeting(&early).as_deref(), Some("g1"));

    agent.kill();
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    // The fix: the early tenant defines `extra`; its Deployment changes (greeting g2).
    server.commit(&[tenant(&early, "early", "extra: y")], "e1 defines extra");
    let fixed = head(&server);
    assert_eq!(agent.signed_push(), 202);
    let took = wait_until("the rollout completes", Duration::from_secs(60), || {
        let r = record(&agent_ns);
        r["commit"] == fixed.as_str() && r["phase"] == "Complete"
    });
    stop.store(true, Ordering::Relaxed);
    eprintln!("the fix completed the rollout in {took:?}");
    assert!(
        took < Duration::from_secs(15),
        "took {took:?}\n{}",
        agent.log()
    );
    let status = common::agent::status(&agent_ns, &early);
    assert_eq!(
        common::agent::condition(&status, "Ready"),
        "True",
        "{status}"
    );
    for t in [&canary, &early, &rest] {
        assert_eq!(deployment_greeting(t).as_deref(), Some("g2"), "{t}");
    }
}
