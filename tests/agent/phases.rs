//! Ordered phases in the agent, against the real test control plane: a shared change adds a
//! `fief.dev/phase: pre` migration Job to a component rolled out in waves. The canary
//! tenant's Job is applied first and its other objects wait; once the Job fails, the tenant
//! fails (`Ready=False` reason `PhaseFailed`, naming the Job and why), keeps its old objects,
//! and the rollout halts at the canary wave: the next wave's tenant gets neither the Job nor
//! the change. A fixed Job is created again and, once complete, the rollout goes through: the
//! next wave starts only once the canary's own objects are applied after its Job.
//! Hook delete policies: a pre and a post Job with `hook-succeeded` are deleted once
//! complete and are not run again by drift repair, resyncs or a restart.
//! The test plays the Job controller (this control plane runs none). The CLI's side:
//! tests/cluster/phases.rs.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;

use common::agent::{Agent, GitServer, condition_of, kubectl_json, status, wait_until, waves};
use common::cluster_cli::exists;

const APP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";

/// The migration Job, at `version`.
fn migrate(version: &str) -> (String, String) {
    (
        "components/app/templates/migrate.yaml".to_string(),
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    fief.dev/phase: pre\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: migrate\n          image: registry.example.com/migrate:{version}\n"
        ),
    )
}

fn tenant(name: &str, ring: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{ring: {ring}}}\nspec:\n  components:\n    - name: app\n"
        ),
    )
}

fn greeting(tenant: &str) -> Option<String> {
    let cm = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &format!("{tenant}-prod"),
        "app-config",
    ]);
    cm.and_then(|cm| cm["data"]["greeting"].as_str().map(str::to_string))
}

fn record(agent_ns: &str) -> Value {
    common::agent::rollout_record(agent_ns)
}

/// The Ready condition's (reason, message).
fn ready(agent_ns: &str, t: &str) -> (String, String) {
    let c = condition_of(&status(agent_ns, t), "Ready");
    let word = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (word("reason"), word("message"))
}

/// Complete every Job without a status condition in `namespaces`, until `stop`.
fn complete_jobs(namespaces: Vec<String>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            for ns in &namespaces {
                let jobs = kubectl_json(&["get", "jobs", "-n", ns]);
                for j in jobs
                    .iter()
                    .flat_map(|l| l["items"].as_array().cloned().unwrap_or_default())
                {
                    if j["status"]["conditions"].is_null() {
                        let name = j["metadata"]["name"].as_str().unwrap_or_default();
                        common::job::complete(name, ns);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
}

#[test]
fn a_failed_migration_job_holds_its_tenant_and_the_rollout_wave() {
    let agent_ns = common::unique("fief-ph");
    let p = common::unique("ph");
    let (canary, rest) = (format!("{p}-c1"), format!("{p}-r1"));
    let mut files = waves(&agent_ns, APP);
    files.extend([tenant(&canary, "canary"), tenant(&rest, "other")]);
    let server = GitServer::new(&files);
    let _agent = Agent::start(&server.url(), &["--interval", "1s"]);
    for t in [&canary, &rest] {
        assert_eq!(greeting(t).as_deref(), Some("g1"), "{t}");
    }
    let (c_ns, r_ns) = (format!("{canary}-prod"), format!("{rest}-prod"));

    // A shared change: a migration first, then greeting g2.
    let change = vec![
        migrate("1"),
        (
            "components/app/varz.yaml".to_string(),
            "greeting: g2\n".to_string(),
        ),
    ];
    server.commit(&change, "migrate, then g2");
    wait_until(
        "the canary's migration applied",
        Duration::from_secs(60),
        || exists("job", &c_ns, "migrate"),
    );
    wait_until("the canary waits for it", Duration::from_secs(30), || {
        ready(&agent_ns, &canary).0 == "PhaseNotReady"
    });
    assert_eq!(
        greeting(&canary).as_deref(),
        Some("g1"),
        "the rest waits for the Job"
    );

    common::job::fail("migrate", &c_ns);
    wait_until("the canary fails", Duration::from_secs(60), || {
        ready(&agent_ns, &canary).0 == "PhaseFailed"
    });
    let (_, message) = ready(&agent_ns, &canary);
    assert!(
        message.contains(&format!("Job.batch/{c_ns}/migrate"))
            && message.contains("BackoffLimitExceeded"),
        "{message}"
    );
    wait_until("the rollout halts", Duration::from_secs(30), || {
        record(&agent_ns)["phase"] == "Halted"
    });
    let r = record(&agent_ns);
    assert_eq!(r["wave"], 0, "{r}");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        greeting(&canary).as_deref(),
        Some("g1"),
        "the failed tenant keeps its objects"
    );
    assert_eq!(
        greeting(&rest).as_deref(),
        Some("g1"),
        "the next wave is held"
    );
    assert!(
        !exists("job", &r_ns, "migrate"),
        "the next wave is not started"
    );

    the_fixed_migration_lets_the_rollout_through(&server, &agent_ns, &canary, &rest);
}

/// The fixed migration is created again; once it completes, the rollout goes through, the
/// next wave starting only once the canary's own objects are applied after its Job.
fn the_fixed_migration_lets_the_rollout_through(
    server: &GitServer,
    agent_ns: &str,
    canary: &str,
    rest: &str,
) {
    let (c_ns, r_ns) = (format!("{canary}-prod"), format!("{rest}-prod"));
    let stop = Arc::new(AtomicBool::new(false));
    complete_jobs(vec![c_ns.clone(), r_ns.clone()], stop.clone());
    server.commit(&[migrate("2")], "fix the migration");
    wait_until("the rollout completes", Duration::from_secs(90), || {
        record(agent_ns)["phase"] == "Complete"
            && greeting(canary).as_deref() == Some("g2")
            && greeting(rest).as_deref() == Some("g2")
    });
    stop.store(true, Ordering::Relaxed);
    let writes = common::audit::writes();
    let at = |resource: &str, ns: &str, name: &str| -> Vec<i64> {
        let same = |w: &&common::audit::Write| {
            w.resource == resource && w.namespace == ns && w.name == name
        };
        writes.iter().filter(same).map(|w| w.received_us).collect()
    };
    let canary_applied = at("configmaps", &c_ns, "app-config")
        .into_iter()
        .max()
        .unwrap_or_default();
    let rest_started = at("jobs", &r_ns, "migrate")
        .into_iter()
        .min()
        .unwrap_or_default();
    assert!(
        rest_started > canary_applied,
        "the next wave's Job at {rest_started}, before the canary's change at {canary_applied}"
    );
}

/// A Job placed in `phase` with `helm.sh/hook-delete-policy: hook-succeeded`.
fn hook(name: &str, phase: &str) -> (String, String) {
    (
        format!("components/app/templates/{name}.yaml"),
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    fief.dev/phase: {phase}\n    helm.sh/hook-delete-policy: hook-succeeded\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: m\n          image: registry.example.com/{name}:1\n"
        ),
    )
}

/// fief's applies of Job `name` in `ns` (the test's status writes, sent with kubectl, left
/// out).
fn job_applies(ns: &str, name: &str) -> usize {
    common::audit::writes()
        .iter()
        .filter(|w| w.resource == "jobs" && w.namespace == ns && w.name == name)
        .filter(|w| w.verb == "patch" && !w.user_agent.starts_with("kubectl"))
        .count()
}

#[test]
fn done_hooks_are_not_run_again_by_drift_repair_resyncs_or_a_restart() {
    let agent_ns = common::unique("fief-hd");
    let t = common::unique("hd");
    let ns = format!("{t}-prod");
    let mut files = common::agent::small_repo(&agent_ns, &[(&t, "hi")]);
    files.extend([hook("migrate", "pre"), hook("notify", "post")]);
    let server = GitServer::new(&files);
    let stop = Arc::new(AtomicBool::new(false));
    complete_jobs(vec![ns.clone()], stop.clone());
    let args = ["--interval", "1s", "--resync-interval", "2s"];
    let mut agent = Agent::start(&server.url(), &args);
    let settled = || {
        exists("configmap", &ns, "app-config")
            && !exists("job", &ns, "migrate")
            && !exists("job", &ns, "notify")
            && condition_of(&status(&agent_ns, &t), "Ready")["status"] == "True"
    };
    wait_until(
        "both hooks ran, were deleted, and the tenant is ready",
        Duration::from_secs(90),
        settled,
    );
    let once = [job_applies(&ns, "migrate"), job_applies(&ns, "notify")];
    assert_eq!(once, [1, 1]);

    // Drift repair of another object, and resyncs.
    common::cluster_cli::kubectl_ok(&["delete", "configmap", "app-extra", "-n", &ns]);
    wait_until(
        "the deleted ConfigMap repaired",
        Duration::from_secs(30),
        || exists("configmap", &ns, "app-extra"),
    );
    std::thread::sleep(Duration::from_secs(5));
    assert!(settled(), "after drift repair and resyncs");

    // A restart.
    agent.kill();
    let drift: Vec<String> = agent
        .log()
        .lines()
        .filter(|l| l.contains("drift") && (l.contains("/migrate") || l.contains("/notify")))
        .map(str::to_string)
        .collect();
    assert!(
        drift.is_empty(),
        "a deleted done hook is no drift: {drift:?}"
    );
    let agent = Agent::start(&server.url(), &args);
    std::thread::sleep(Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    assert!(settled(), "after a restart; its log:\n{}", agent.log());
    let again = [job_applies(&ns, "migrate"), job_applies(&ns, "notify")];
    assert_eq!(again, once, "no hook applied again");
}
