//! Progressive rollouts on the test control plane: a wave whose tenants fail to render halts
//! the rollout; an agent restarted (SIGKILL) while it is halted takes it up again — the held
//! tenants stay at their commit, and a hand deletion of a held tenant's object is repaired at
//! that commit, not at the head; the fix commit completes it. A held tenant's own change is
//! applied at the head while the tenant that halted the rollout keeps it halted, so the other
//! held tenants stay at their commit. After a restart during a halt, the fix completes the
//! rollout at once, objects it leaves unchanged counting as current. (Health-driven halts on a real node:
//! tests/node/rollout.rs.)

use crate::common;

use std::time::Duration;

use serde_json::Value;

use common::agent::{Agent, GitServer, kubectl_json, resource_version, waves};
use common::util::wait_until;

mod health_gated;

const APP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";

fn tenant(name: &str, ring: &str, values: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{ring: {ring}}}\nspec:\n  components:\n    - name: app\n      values: {{{values}}}\n"
        ),
    )
}

fn greeting(tenant: &str) -> Option<String> {
    data(tenant, "greeting")
}

fn data(tenant: &str, key: &str) -> Option<String> {
    kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &format!("{tenant}-prod"),
        "app-config",
    ])
    .and_then(|cm| cm["data"][key].as_str().map(str::to_string))
}

fn record(agent_ns: &str) -> Value {
    common::agent::rollout_record(agent_ns)
}

fn head(server: &GitServer) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(server.repo())
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("git rev-parse");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A shared change of `template`: greeting g2, and `app-config` needs `values.extra`, which
/// only some tenants define.
fn needs_extra(template: &str) -> Vec<(String, String)> {
    vec![
        (
            "components/app/varz.yaml".to_string(),
            "greeting: g2\n".to_string(),
        ),
        (
            "components/app/templates/app.yaml".to_string(),
            template.replacen(
                "greeting: {{ values.greeting | quote }}\n",
                "greeting: {{ values.greeting | quote }}\n  extra: {{ values.extra | quote }}\n",
                1,
            ),
        ),
    ]
}

#[test]
fn a_halted_rollout_survives_an_agent_restart_held_tenants_are_repaired_at_their_commit_and_the_fix_completes_it()
 {
    let agent_ns = common::unique("fief-ro");
    let p = common::unique("ro");
    let (canary, early, rest) = (
        [format!("{p}-c1"), format!("{p}-c2")],
        [format!("{p}-e1"), format!("{p}-e2")],
        [format!("{p}-r1"), format!("{p}-r2")],
    );
    let mut files = waves(&agent_ns, APP);
    // Only the canary and rest tenants define `extra`: the next template fails for early ones.
    files.extend(canary.iter().map(|t| tenant(t, "canary", "extra: x")));
    files.extend(early.iter().map(|t| tenant(t, "early", "")));
    files.extend(rest.iter().map(|t| tenant(t, "other", "extra: x")));
    let server = GitServer::new(&files);
    let mut agent = Agent::start(&server.url(), &["--interval", "1s"]);
    let all: Vec<&String> = canary.iter().chain(&early).chain(&rest).collect();
    for t in &all {
        assert_eq!(greeting(t).as_deref(), Some("g1"), "{t}");
    }
    let rest_versions: Vec<String> = rest
        .iter()
        .map(|t| resource_version(&format!("{t}-prod"), "configmap", "app-config"))
        .collect();

    a_change_the_early_tenants_cannot_render_halts_at_their_wave(&server, &agent_ns, &canary);
    // SIGKILL and start again: the rollout is taken up, the rest stays held.
    agent.kill();
    let agent = Agent::start(&server.url(), &["--interval", "1s"]);
    assert!(
        agent.log().contains("rollout taken up again"),
        "{}",
        agent.log()
    );
    std::thread::sleep(Duration::from_secs(3));
    for (t, rv) in rest.iter().zip(&rest_versions) {
        assert_eq!(greeting(t).as_deref(), Some("g1"), "{t} held");
        assert_eq!(
            &resource_version(&format!("{t}-prod"), "configmap", "app-config"),
            rv,
            "{t} untouched"
        );
    }
    assert_eq!(record(&agent_ns)["phase"], "Halted");
    a_held_tenants_deleted_object_comes_back_at_its_commit(&rest[0]);
    // The fix completes the rollout through every wave.
    server.commit(
        &[(
            "components/app/varz.yaml".to_string(),
            "greeting: g3\nextra: default\n".to_string(),
        )],
        "g3, extra has a default",
    );
    let fixed = head(&server);
    wait_until("the rollout completes", Duration::from_secs(60), || {
        let r = record(&agent_ns);
        r["commit"] == fixed.as_str() && r["phase"] == "Complete"
    });
    for t in &all {
        assert_eq!(greeting(t).as_deref(), Some("g3"), "{t}");
    }
    let metrics = agent.get("/metrics").map(|(_, b)| b).unwrap_or_default();
    assert!(metrics.contains("fief_rollout_halted 0"), "{metrics}");
}

/// A shared change the early tenants cannot render halts the rollout at their wave (the
/// reason says why), after the canary tenants took it; the two rest tenants are held.
fn a_change_the_early_tenants_cannot_render_halts_at_their_wave(
    server: &GitServer,
    agent_ns: &str,
    canary: &[String],
) {
    // A shared change the early tenants cannot render.
    server.commit(&needs_extra(APP), "g2 with extra");
    let broken = head(server);
    wait_until(
        "the rollout halts at the early wave",
        Duration::from_secs(60),
        || {
            let r = record(agent_ns);
            r["commit"] == broken.as_str() && r["phase"] == "Halted"
        },
    );
    let r = record(agent_ns);
    assert_eq!(r["wave"], 1, "{r}");
    let reason = r["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("wave 2 \"early\"")
            && reason.contains("invalid")
            && reason.contains("extra"),
        "{reason}"
    );
    for t in canary {
        assert_eq!(greeting(t).as_deref(), Some("g2"), "{t}");
    }
    assert_eq!(r["held"].as_object().map(|h| h.len()), Some(2), "{r}");
}

/// A held tenant's deleted object comes back as it was at its commit (`g1`).
fn a_held_tenants_deleted_object_comes_back_at_its_commit(held: &str) {
    // A held tenant's deleted object comes back as it was at its commit.
    common::kubectl::Kubectl::admin().ok(&[
        "delete",
        "configmap",
        "-n",
        &format!("{held}-prod"),
        "app-config",
    ]);
    wait_until(
        "the held tenant's ConfigMap is repaired at g1",
        Duration::from_secs(30),
        || greeting(held).as_deref() == Some("g1"),
    );
}

#[test]
fn a_held_tenants_own_change_leaves_the_halt_in_place_and_the_other_held_tenants_at_the_commit_they_ran()
 {
    let agent_ns = common::unique("fief-roh");
    let p = common::unique("roh");
    let (canary, early, rest) = (
        format!("{p}-c1"),
        [format!("{p}-e1"), format!("{p}-e2")],
        [format!("{p}-r1"), format!("{p}-r2"), format!("{p}-r3")],
    );
    let mut files = waves(&agent_ns, APP);
    files.extend([
        tenant(&canary, "canary", "extra: x"),
        // The only tenant without `extra`: the shared change is invalid for it alone.
        tenant(&early[0], "early", ""),
        tenant(&early[1], "early", "extra: x"),
    ]);
    files.extend(rest.iter().map(|t| tenant(t, "other", "extra: x")));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let initial = head(&server);
    let versions = |tenants: &[String]| -> Vec<String> {
        tenants
            .iter()
            .map(|t| resource_version(&format!("{t}-prod"), "configmap", "app-config"))
            .collect()
    };
    let held_versions = versions(&rest[1..]);

    // A shared change the early tenant e1 cannot render halts the rollout at wave 2.
    server.commit(&needs_extra(APP), "g2 with extra");
    let broken = head(&server);
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "the rollout halts at wave 2",
        Duration::from_secs(60),
        || {
            let r = record(&agent_ns);
            r["commit"] == broken.as_str() && r["phase"] == "Halted"
        },
    );
    assert_eq!(greeting(&canary).as_deref(), Some("g2"));

    // A held tenant of wave 3 changes its own file: its change is applied at the head.
    server.commit(
        &[tenant(&rest[0], "other", "extra: x, greeting: own")],
        "r1's own greeting",
    );
    let own = head(&server);
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "r1's own change is applied",
        Duration::from_secs(60),
        || greeting(&rest[0]).as_deref() == Some("own"),
    );
    assert_eq!(
        data(&rest[0], "extra").as_deref(),
        Some("x"),
        "r1 at the head"
    );
    let r = the_new_commits_rollout_halts_with_the_others_held_at_their_commit(
        &agent_ns,
        &own,
        &early[0],
        &rest[1..],
        &initial,
    );
    let (_, body) = agent.get("/status").unwrap_or_default();
    let status: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    assert_eq!(status["rollout"], r, "/status shows the record");
    // The other held tenants run what they ran: not touched at all.
    assert_eq!(
        versions(&rest[1..]),
        held_versions,
        "held tenants untouched"
    );
    for t in &rest[1..] {
        assert_eq!(greeting(t).as_deref(), Some("g1"), "{t} held");
    }
    assert!(!agent.log().contains("rollout complete"), "{}", agent.log());
}

/// The invalid early tenant halts the new commit (`own`)'s rollout at its wave again, naming
/// it; the held tenants are recorded at the commit they ran (`initial`). The record.
fn the_new_commits_rollout_halts_with_the_others_held_at_their_commit(
    agent_ns: &str,
    own: &str,
    invalid: &str,
    held_tenants: &[String],
    initial: &str,
) -> Value {
    // The invalid early tenant halts the new commit's rollout at its wave again.
    wait_until(
        "the new commit's rollout halts at wave 2",
        Duration::from_secs(60),
        || {
            let r = record(agent_ns);
            r["commit"] == own && r["phase"] != "Progressing"
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    let r = record(agent_ns);
    assert_eq!(
        (r["phase"].as_str(), &r["wave"]),
        (Some("Halted"), &1.into()),
        "{r}"
    );
    let reason = r["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("wave 2 \"early\"")
            && reason.contains(invalid)
            && reason.contains("invalid"),
        "{reason}"
    );
    let held: serde_json::Map<String, Value> = held_tenants
        .iter()
        .map(|t| (t.clone(), Value::from(initial)))
        .collect();
    assert_eq!(
        r["held"],
        Value::Object(held),
        "held at the commit they ran: {r}"
    );
    r
}

#[test]
fn after_a_restart_during_a_halt_the_fix_completes_the_rollout_within_seconds_with_the_tenant_ready()
 {
    // A second object the fix leaves as it is: it must count as current at once.
    let template = format!(
        "{APP}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-static\ndata:\n  k: v\n"
    );
    let agent_ns = common::unique("fief-rof");
    let p = common::unique("rof");
    let (canary, early, rest) = (format!("{p}-c1"), format!("{p}-e1"), format!("{p}-r1"));
    let mut files = waves(&agent_ns, &template);
    files.extend([
        tenant(&canary, "canary", "extra: x"),
        tenant(&early, "early", ""),
        tenant(&rest, "other", "extra: x"),
    ]);
    let server = GitServer::new(&files);
    let mut agent = Agent::start(&server.url(), &["--interval", "300s"]);
    server.commit(&needs_extra(&template), "g2 with extra");
    let broken = head(&server);
    assert_eq!(agent.signed_push(), 202);
    wait_until("the rollout halts", Duration::from_secs(60), || {
        let r = record(&agent_ns);
        r["commit"] == broken.as_str() && r["phase"] == "Halted"
    });

    agent.kill();
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    // The fix: the invalid tenant defines `extra`; its `app-static` does not change.
    server.commit(&[tenant(&early, "early", "extra: y")], "e1 defines extra");
    let fixed = head(&server);
    assert_eq!(agent.signed_push(), 202);
    let took = wait_until("the rollout completes", Duration::from_secs(30), || {
        let r = record(&agent_ns);
        r["commit"] == fixed.as_str() && r["phase"] == "Complete"
    });
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
        assert_eq!(greeting(t).as_deref(), Some("g2"), "{t}");
    }
}
