//! Spare tenants on the real node: the agent keeps the pool Ready with Pods that really run;
//! `fief allocate` turns one into a customer's tenant that is synced as a change (no object
//! created, its Namespace the same), and a cold new tenant with the same components is synced
//! from nothing. Both times, from the commit's making to the tenant Ready at it, are written
//! to `target/spares-timing.json` for the performance page; they are not asserted.
//!
//! The component stands for an app that takes a few seconds to start (`warmup`) and reads
//! its customer's settings from a ConfigMap (`greeting`): what a spare saves is that start.

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common;
use super::common::agent::{GitServer, condition, git};
use super::common::node::{
    BUSYBOX_IMAGE, LocalAgent, inventory_status, kubectl_json, node_cluster, wait_for,
};

/// A web server whose content is a ConfigMap, serving after `warmup` seconds.
const WEB: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: web-content
data:
  index.html: {{ values.greeting | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534
        runAsGroup: 65534
        seccompProfile: {type: RuntimeDefault}
      volumes:
        - name: content
          configMap: {name: web-content}
      containers:
        - name: httpd
          image: {{ values.image }}
          command: ["sh", "-c", "sleep {{ values.warmup }} && exec httpd -f -p 8080 -h /srv"]
          volumeMounts:
            - {name: content, mountPath: /srv}
          ports:
            - {name: http, containerPort: 8080}
          readinessProbe:
            httpGet: {path: /index.html, port: http}
            periodSeconds: 1
          resources:
            requests: {cpu: 10m, memory: 16Mi}
            limits: {cpu: 100m, memory: 32Mi}
          securityContext:
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
"#;

/// The agent's health verdict of `tenant` (`ready`, `reconciling`, `stalled`), from its
/// `/status` at `port`.
fn verdict(port: u16, tenant: &str) -> String {
    common::util::http_request(("127.0.0.1", port), "GET", "/status", &[], "")
        .and_then(|(_, body)| serde_json::from_str::<Value>(&body).ok())
        .and_then(|s| {
            s["health"]["tenants"][tenant]["health"]
                .as_str()
                .map(String::from)
        })
        .unwrap_or_default()
}

fn head(server: &GitServer) -> String {
    git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string()
}

fn namespace_uid(ns: &str) -> String {
    kubectl_json(&["get", "namespace", ns])
        .map(|n| n["metadata"]["uid"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

#[test]
fn an_allocated_spare_is_synced_as_a_change_and_a_cold_tenant_from_nothing() {
    let cluster = node_cluster();
    let agent_ns = common::unique("fief-spares");
    let server = GitServer::new(&spares_repo(&agent_ns));
    let repo = server.repo();
    git(&repo, &["config", "user.name", "Platform"]);
    git(&repo, &["config", "user.email", "platform@example.com"]);
    let kubeconfig = Some(cluster.cp().admin_kubeconfig());
    let repo_arg = repo.to_str().expect("utf-8 path").to_string();
    let pool = fill_the_pool(&repo_arg);
    assert_eq!(pool.len(), 2, "{pool:?}");

    let agent = LocalAgent::start(&server.url(), "1s");
    let ready_at = |what: &str, tenant: &str, commit: &str, timeout: Duration| {
        ready_and_healthy(&agent, &agent_ns, what, tenant, commit, timeout)
    };
    let first = head(&server);
    for t in &pool {
        let s = ready_at("a spare Ready", t, &first, Duration::from_secs(300));
        assert_eq!(s["spare"], true, "{s}");
    }

    // Allocate: the timer starts before `fief allocate` runs.
    let started = Instant::now();
    let out = fief_ok(
        &[
            "allocate",
            &repo_arg,
            "--organization",
            "Acme",
            "--set",
            "web.greeting=acme",
            "--commit",
            "-o",
            "json",
        ],
        kubeconfig,
    );
    let allocated: Value = serde_json::from_str(&out).expect("json");
    let tenant = allocated["tenant"].as_str().expect("tenant").to_string();
    let ns = format!("{tenant}-prod");
    let uid = namespace_uid(&ns);
    let commit = head(&server);
    let s = ready_at(
        "the customer's tenant Ready",
        &tenant,
        &commit,
        Duration::from_secs(300),
    );
    let allocate_to_ready = started.elapsed();
    assert_ne!(s["spare"], true, "{s}");
    assert_eq!(
        s["counts"]["created"], 0,
        "an allocation creates nothing: {s}"
    );
    assert_eq!(namespace_uid(&ns), uid, "the Namespace is the spare's");
    let refill = allocated["added"][0]
        .as_str()
        .expect("a refill")
        .to_string();
    ready_at(
        "the refill spare Ready",
        &refill,
        &commit,
        Duration::from_secs(300),
    );

    let cold_to_ready = a_cold_tenant_ready(&server, &ready_at);
    drop(agent);

    let timing = serde_json::json!({
        "allocateToReadySeconds": allocate_to_ready.as_secs_f64(),
        "coldToReadySeconds": cold_to_ready.as_secs_f64(),
        "agentInterval": "1s",
    });
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../spares-timing.json");
    let _ = fs::write(&path, timing.to_string());
    eprintln!("spares timing: {timing}");
}

/// The repo of the spares test: a pool of two spares of the `web` component (healthy after
/// a 5s warm-up).
fn spares_repo(agent_ns: &str) -> Vec<(String, String)> {
    vec![
        (
            "fief.yaml".to_string(),
            format!(
                "agentNamespace: {agent_ns}\nspares:\n  count: 2\n  prefix: {}-\n  components:\n    - name: web\n",
                common::unique("sp")
            ),
        ),
        (
            "components/web/varz.yaml".to_string(),
            format!("image: {BUSYBOX_IMAGE}\ngreeting: spare\nwarmup: 5\n"),
        ),
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 120s}\n".to_string(),
        ),
        (
            "components/web/templates/web.yaml".to_string(),
            WEB.to_string(),
        ),
    ]
}

/// `fief ARGS` (with `kubeconfig` when given), asserting success; its stdout.
fn fief_ok(args: &[&str], kubeconfig: Option<&std::path::Path>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fief"));
    cmd.args(args);
    if let Some(kubeconfig) = kubeconfig {
        cmd.arg("--kubeconfig").arg(kubeconfig);
    }
    let out = cmd.output().expect("run fief");
    assert!(
        out.status.success(),
        "fief {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `fief spares --commit` on the repo at `repo_arg`: the spares it added.
fn fill_the_pool(repo_arg: &str) -> Vec<String> {
    let pool: Value = serde_json::from_str(&fief_ok(
        &["spares", repo_arg, "--commit", "-o", "json"],
        None,
    ))
    .expect("json");
    pool["added"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// Wait until `tenant` is applied at `commit` and Ready, its objects judged healthy (not only
/// applied); its status.
fn ready_and_healthy(
    agent: &LocalAgent,
    agent_ns: &str,
    what: &str,
    tenant: &str,
    commit: &str,
    timeout: Duration,
) -> Value {
    wait_for(what, timeout, || {
        let s = inventory_status(agent_ns, tenant);
        // Applied at the commit, and its objects judged healthy (not only applied).
        let ready = s["commit"] == commit && condition(&s, "Ready") == "True";
        if ready && verdict(agent.port, tenant) == "ready" {
            Ok(s)
        } else {
            Err(format!(
                "{tenant}: {s}\nagent log tail:\n{}",
                agent.log_tail(20)
            ))
        }
    })
    .0
}

/// A cold tenant with the spares' components, from its commit to Ready (`ready_at`): how
/// long that took.
fn a_cold_tenant_ready(
    server: &GitServer,
    ready_at: &dyn Fn(&str, &str, &str, Duration) -> Value,
) -> Duration {
    let cold = common::unique("cold");
    let started = Instant::now();
    server.commit(
        &[(
            format!("tenants/{cold}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {cold}\nspec:\n  owner: {{organization: Acme}}\n  components:\n    - name: web\n      values: {{greeting: acme}}\n"
            ),
        )],
        "a cold tenant",
    );
    let commit = head(server);
    ready_at(
        "the cold tenant Ready",
        &cold,
        &commit,
        Duration::from_secs(300),
    );
    started.elapsed()
}
