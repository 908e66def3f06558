//! A progressive rollout on the real node: 30 tenants in three waves (canary: 3, early: 10,
//! rest: 17; the canary and early tenants run a Pod each, the rest scale to 0).
//! A shared template change that breaks readiness only for the `early` tenants (their own
//! values point the new probe at a missing page): the canary wave finishes, the early wave
//! halts with the reason, the rest stays at the commit it was last synced at (resourceVersions
//! unchanged; a deleted Deployment is repaired at that commit), a tenant's own change goes
//! through at once, and the fix commit completes the rollout.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::common;
use super::common::agent::condition;
use super::common::node::{
    LocalAgent, NodeCluster, inventory_status, kubectl, kubectl_json, node_cluster, wait_for,
};

const TENANTS: usize = 30;

fn ring(i: usize) -> &'static str {
    match i {
        0..=2 => "canary",
        3..=12 => "early",
        _ => "rest",
    }
}

fn tenant_file(name: &str, i: usize, extra_label: &str) -> (String, String) {
    // The early tenants' own values point the next template's probe at a missing page; the
    // rest run no Pod (their Deployments are healthy at 0 replicas), to spare the node.
    let values = match ring(i) {
        "early" => "\n      values: {nextProbe: /missing.html}",
        "rest" => "\n      values: {replicas: 0}",
        _ => "",
    };
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{ring: {}{extra_label}}}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web{values}\n",
            ring(i)
        ),
    )
}

/// The web template at `greeting`, its readiness probe at the value `probe`.
fn template(greeting: &str, probe: &str) -> (String, String) {
    (
        "components/web/templates/deployment.yaml".to_string(),
        super::workload::WEB_TEMPLATE
            .replace("{{ values.greeting }}", greeting)
            .replace(
                "path: /index.html",
                &format!("path: {{{{ values.{probe} }}}}"),
            ),
    )
}

/// Each tenant's web Deployment: (resourceVersion, generation, greeting in its command).
fn deployments(names: &[String]) -> BTreeMap<String, (String, i64, String)> {
    names
        .iter()
        .filter_map(|t| {
            let d = kubectl_json(&["get", "deployment", "-n", &format!("{t}-prod"), "web"])?;
            let cmd = d["spec"]["template"]["spec"]["containers"][0]["command"][2]
                .as_str()
                .unwrap_or("")
                .to_string();
            let greeting = cmd
                .split("echo ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap_or("")
                .to_string();
            Some((
                t.clone(),
                (
                    d["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    d["metadata"]["generation"].as_i64().unwrap_or(0),
                    greeting,
                ),
            ))
        })
        .collect()
}

fn record(agent_ns: &str) -> Value {
    common::util::rollout_record(kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        "fief-rollout",
    ]))
}

/// The fleet of the wave test: its agent namespace and tenants, the repo and the agent.
struct Waves {
    agent_ns: String,
    names: Vec<String>,
    server: common::agent::GitServer,
    agent: LocalAgent,
}

impl Waves {
    /// The tenants of ring `r`.
    fn ring(&self, r: &str) -> Vec<String> {
        self.names
            .iter()
            .enumerate()
            .filter(|(i, _)| ring(*i) == r)
            .map(|(_, n)| n.clone())
            .collect()
    }

    /// The repo's head commit.
    fn head(&self) -> String {
        let out = Command::new("git")
            .args(["-C"])
            .arg(self.server.repo())
            .args(["rev-parse", "HEAD"])
            .output()
            .expect("git rev-parse");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Wait until every one of `tenants` is Ready at `commit`.
    fn all_at(&self, what: &str, tenants: &[String], commit: &str, timeout: Duration) {
        wait_for(what, timeout, || {
            let behind: Vec<String> = tenants
                .iter()
                .filter(|t| {
                    let s = inventory_status(&self.agent_ns, t);
                    s["commit"].as_str() != Some(commit) || condition(&s, "Ready") != "True"
                })
                .cloned()
                .collect();
            if behind.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} not Ready at {commit}: {behind:?}\nagent log tail:\n{}",
                    behind.len(),
                    self.agent.log_tail(40)
                ))
            }
        });
    }

    /// Wait for the rollout record at `commit` in `phase` (at wave index `wave` when given).
    fn wait_record(
        &self,
        what: &str,
        commit: &str,
        phase: &str,
        wave: Option<i64>,
        timeout: Duration,
    ) -> Value {
        wait_for(what, timeout, || {
            let r = record(&self.agent_ns);
            let at_wave = wave.is_none_or(|w| r["wave"] == w);
            if r["commit"] == commit && r["phase"] == phase && at_wave {
                Ok(r)
            } else {
                Err(format!(
                    "record: {r}\nagent log tail:\n{}",
                    self.agent.log_tail(40)
                ))
            }
        })
        .0
    }
}

/// The repo of the wave test: rollout waves by the `ring` label, the `web` component
/// (healthy at v1) and the tenants `names`.
fn waves_repo(agent_ns: &str, names: &[String]) -> Vec<(String, String)> {
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!(
                "agentNamespace: {agent_ns}\nrollout:\n  waves:\n    - name: canary\n      selector: {{ring: canary}}\n    - name: early\n      selector: {{ring: early}}\n    - name: rest\n"
            ),
        ),
        (
            "components/web/varz.yaml".to_string(),
            format!(
                "replicas: 1\nimage: {}\ngreeting: hi\nprobePath: /index.html\nnextProbe: /index.html\n",
                common::node::BUSYBOX_IMAGE
            ),
        ),
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 25s}\n".to_string(),
        ),
        template("v1", "probePath"),
    ];
    files.extend(names.iter().enumerate().map(|(i, n)| tenant_file(n, i, "")));
    files
}

#[test]
fn a_rollout_in_three_waves_halts_at_the_wave_that_breaks_readiness_holds_the_rest_and_completes_after_the_fix()
 {
    let cluster = node_cluster();
    let prefix = common::unique("wv");
    let agent_ns = common::unique("fief-waves");
    let names: Vec<String> = (0..TENANTS).map(|i| format!("{prefix}-{i:02}")).collect();
    let server = common::agent::GitServer::new(&waves_repo(&agent_ns, &names));
    let agent = LocalAgent::start(&server.url(), "2s");
    let w = Waves {
        agent_ns,
        names,
        server,
        agent,
    };
    let rest = w.ring("rest");

    // The first sync (the agent's start) is not a rollout: every tenant becomes Ready.
    let first = w.head();
    w.all_at(
        "every tenant Ready at the first commit",
        &w.names,
        &first,
        Duration::from_secs(400),
    );
    let before = deployments(&w.names);
    assert!(before.values().all(|(_, _, g)| g == "v1"), "{before:?}");

    a_broken_change_halts_at_the_early_wave(&w, &first, &before);
    the_status_and_metrics_name_the_halt(cluster, &w, &rest);
    a_held_tenant_is_repaired_at_its_commit(&rest[0]);
    a_held_tenants_own_change_goes_through_at_once(&w, &rest, &before);

    // The fix completes the rollout: every tenant Ready at the fix commit with v3.
    w.server
        .commit(&[template("v3", "probePath")], "web v3: fix the probe");
    let fixed = w.head();
    w.wait_record(
        "the rollout completes",
        &fixed,
        "Complete",
        None,
        Duration::from_secs(400),
    );
    w.all_at(
        "every tenant Ready at the fix",
        &w.names,
        &fixed,
        Duration::from_secs(30),
    );
    assert!(deployments(&w.names).values().all(|(_, _, g)| g == "v3"));
}

/// A shared change whose new probe fails for the early tenants only halts the rollout at
/// wave 2, naming an early tenant and its Deployment: the canary wave is done at the new
/// commit, the early tenants got it and are not Ready, the rest is untouched (same
/// resourceVersion and generation, still v1 at the `first` commit) and held.
fn a_broken_change_halts_at_the_early_wave(
    w: &Waves,
    first: &str,
    before: &BTreeMap<String, (String, i64, String)>,
) {
    let (canary, early, rest) = (w.ring("canary"), w.ring("early"), w.ring("rest"));
    w.server
        .commit(&[template("v2", "nextProbe")], "web v2: probe at nextProbe");
    let broken = w.head();
    let halted = w.wait_record(
        "the rollout halts at wave 2",
        &broken,
        "Halted",
        Some(1),
        Duration::from_secs(240),
    );
    assert_eq!(halted["wave"], 1, "{halted}");
    let reason = halted["reason"].as_str().unwrap_or("");
    assert!(reason.contains("wave 2 \"early\""), "{reason}");
    assert!(
        early.iter().any(|t| reason.contains(t.as_str())) && reason.contains("Deployment.apps/"),
        "the reason names an early tenant and its Deployment: {reason}"
    );
    // Wave 1 is done: the canary tenants run v2 and are Ready at the new commit.
    w.all_at(
        "the canary wave Ready at v2",
        &canary,
        &broken,
        Duration::from_secs(5),
    );
    let now = deployments(&w.names);
    for t in &canary {
        assert_eq!(now[t].2, "v2", "{t}");
    }
    for t in &early {
        assert_eq!(now[t].2, "v2", "{t} got the change");
        assert_eq!(
            condition(&inventory_status(&w.agent_ns, t), "Ready"),
            "False",
            "{t}"
        );
    }
    // Wave 3 is untouched: same resourceVersion, same generation, still v1 at the first commit.
    std::thread::sleep(Duration::from_secs(5));
    let now = deployments(&w.names);
    for t in &rest {
        assert_eq!(now[t], before[t], "{t} was touched while held");
        assert_eq!(inventory_status(&w.agent_ns, t)["commit"], first, "{t}");
    }
    let held = halted["held"].as_object().map(|m| m.len()).unwrap_or(0);
    assert_eq!(held, rest.len(), "{halted}");
}

/// `fief status` says which wave halted and why, and which tenants are held; the metrics
/// say the rollout is halted at wave 2.
fn the_status_and_metrics_name_the_halt(cluster: &NodeCluster, w: &Waves, rest: &[String]) {
    let port = w.agent.port;
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["status", "--namespace", &w.agent_ns, "--kubeconfig"])
        .arg(cluster.cp().admin_kubeconfig())
        .args(["--agent", &format!("http://127.0.0.1:{port}")])
        .output()
        .expect("fief status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("wave 2/3 \"early\" halted")
            && text.contains(&rest[0])
            && text.contains("held by the rollout (wave 3 \"rest\")"),
        "{text}"
    );
    let metrics =
        common::util::http_request(format!("127.0.0.1:{port}"), "GET", "/metrics", &[], "")
            .map(|(_, body)| body)
            .unwrap_or_default();
    assert!(metrics.contains("fief_rollout_halted 1"), "{metrics}");
    assert!(metrics.contains("fief_rollout_wave 2"), "{metrics}");
}

/// Drift repair of a held tenant renders it at its last synced commit (v1, not v2).
fn a_held_tenant_is_repaired_at_its_commit(victim: &String) {
    kubectl(
        &[
            "delete",
            "deployment",
            "-n",
            &format!("{victim}-prod"),
            "web",
            "--wait=false",
        ],
        None,
    );
    wait_for(
        "the held tenant's Deployment is repaired at v1",
        Duration::from_secs(60),
        || match deployments(std::slice::from_ref(victim)).get(victim) {
            Some((_, _, g)) if g == "v1" => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
}

/// A tenant's own change is never held: a held tenant's new label goes through at once
/// (rendered at the head, so with v2, which is healthy for it); the others stay held.
fn a_held_tenants_own_change_goes_through_at_once(
    w: &Waves,
    rest: &[String],
    before: &BTreeMap<String, (String, i64, String)>,
) {
    let own = &rest[1];
    let own_index = w.names.iter().position(|n| n == own).unwrap_or(0);
    w.server.commit(
        &[tenant_file(own, own_index, ", team: blue")],
        "own change of one tenant",
    );
    let own_commit = w.head();
    w.all_at(
        "the tenant's own change applied at once",
        std::slice::from_ref(own),
        &own_commit,
        Duration::from_secs(90),
    );
    assert_eq!(deployments(std::slice::from_ref(own))[own].2, "v2");
    w.wait_record(
        "the rollout of the new commit halts at wave 2 again",
        &own_commit,
        "Halted",
        Some(1),
        Duration::from_secs(30),
    );
    let now = deployments(&w.names);
    for t in rest.iter().skip(2) {
        assert_eq!(now[t], before[t], "{t} was touched while held");
    }
}
