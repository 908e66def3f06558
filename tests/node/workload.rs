//! Tenant workloads that really run on the node: a component whose Pods become Ready after
//! `fief apply` and serve over the bridge (with no traffic leaving the machine), `apply --wait`
//! on a Deployment that never becomes Ready, and the agent holding a tenant on a failing
//! readiness probe until the fix.

use super::*;

/// A component whose Deployment runs busybox `httpd` with an HTTP readiness probe.
pub(crate) const WEB_TEMPLATE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ values.replicas }}
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
      containers:
        - name: httpd
          image: {{ values.image }}
          command: ["sh", "-c", "mkdir -p /tmp/www && echo {{ values.greeting }} > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
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

#[test]
fn a_tenant_component_whose_pods_run_becomes_ready_after_fief_apply() {
    let cluster = node_cluster();
    let tenant = common::unique("web");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-web");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = web_repo(&agent_ns, &tenant);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("apply")
        .arg(repo.path())
        .arg("--kubeconfig")
        .arg(cluster.cp().admin_kubeconfig())
        .output()
        .expect("cannot run fief apply");
    assert!(
        out.status.success(),
        "fief apply failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (pods, ready_after) = wait_for_two_ready_web_pods(&ns);
    eprintln!(
        "tenant component: 2 busybox httpd pods Ready {:.1}s after fief apply started \
         ({:.1}s after it returned)",
        started.elapsed().as_secs_f64(),
        ready_after.as_secs_f64()
    );
    let deployment = kubectl_json(&["get", "deployment", "-n", &ns, "web"]).expect("deployment");
    assert_eq!(deployment["status"]["readyReplicas"], 2);
    assert_eq!(
        deployment["metadata"]["labels"]["fief.dev/tenant"],
        tenant.as_str()
    );

    the_pods_serve_over_the_bridge(cluster, &pods);
    no_pod_traffic_leaves_the_machine(cluster, &ns, &pods);
}

/// A tenants repo (agent namespace `agent_ns`) whose tenant `tenant` runs the busybox
/// `web` component, two replicas, under a quota.
pub(crate) fn web_repo(agent_ns: &str, tenant: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("tempdir");
    let files = [
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            format!(
                "replicas: 2\nimage: {}\ngreeting: served-by-busybox\n",
                common::node::BUSYBOX_IMAGE
            ),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.to_string(),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n"
            ),
        ),
    ];
    for (path, text) in &files {
        let p = repo.path().join(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }
    repo
}

/// Wait until both `web` Pods in `ns` are Ready (else say where they are, with the
/// namespace's Events); the Pods and how long that took.
pub(crate) fn wait_for_two_ready_web_pods(ns: &str) -> (Vec<Value>, Duration) {
    let (pods, ready_after) = wait_for("both web pods Ready", Duration::from_secs(120), || {
        let list =
            kubectl_json(&["get", "pods", "-n", ns, "-l", "app=web"]).ok_or("cannot list pods")?;
        let pods = list["items"].as_array().cloned().unwrap_or_default();
        let ready = pods.iter().filter(|p| is_ready(p)).count();
        if ready == 2 {
            Ok(pods)
        } else {
            let states: Vec<String> = pods
                .iter()
                .map(|p| {
                    format!(
                        "{} {} {}",
                        pod_name(p),
                        p["status"]["phase"],
                        p["status"]["containerStatuses"][0]["state"]
                    )
                })
                .collect();
            let events = kubectl(
                &["get", "events", "-n", ns, "--sort-by=.lastTimestamp"],
                None,
            );
            Err(format!(
                "{ready} of 2 Ready: {states:?}\n{}",
                String::from_utf8_lossy(&events.stdout)
            ))
        }
    });
    (pods, ready_after)
}

/// The Pods really serve: from the host, over the bridge, to each Pod's IP.
fn the_pods_serve_over_the_bridge(cluster: &NodeCluster, pods: &[Value]) {
    // The pods really serve: from the host, over the bridge, to each pod's IP.
    let subnet_prefix = cluster
        .subnet()
        .rsplit_once('.')
        .map(|(p, _)| format!("{p}."))
        .expect("subnet");
    for pod in pods {
        let ip = pod["status"]["podIP"].as_str().expect("pod IP");
        assert!(
            ip.starts_with(&subnet_prefix),
            "pod IP {ip} is outside the node's subnet {}",
            cluster.subnet()
        );
        let got = http_request((ip, 8080), "GET", "/index.html", &[], "");
        assert_eq!(
            got.as_ref()
                .map(|(code, body)| (*code, body.trim().to_string())),
            Some((200, "served-by-busybox".to_string())),
            "GET http://{ip}:8080/index.html"
        );
    }
}

/// No Pod traffic can leave the machine: no default route in the Pod (kubectl exec goes
/// API server -> kubelet -> containerd), IP forwarding off on the host; the node is the
/// one expected.
fn no_pod_traffic_leaves_the_machine(cluster: &NodeCluster, ns: &str, pods: &[Value]) {
    // No pod traffic can leave the machine: no default route in the pod (kubectl exec goes
    // API server -> kubelet -> containerd), IP forwarding off on the host.
    let name = pod_name(&pods[0]);
    let routes = kubectl_ok(&["exec", "-n", ns, &name, "--", "ip", "route"]);
    assert!(
        !routes.contains("default"),
        "the pod has a default route:\n{routes}"
    );
    assert!(
        routes.contains(&format!("10.0.0.1 via {}", cluster.node_ip())),
        "the pod has no route to the API server's Service IP:\n{routes}"
    );
    let forwarding = fs::read_to_string("/proc/sys/net/ipv4/ip_forward").expect("ip_forward");
    assert_eq!(forwarding.trim(), "0", "IP forwarding is on");
    let node = kubectl_json(&["get", "node", NODE_NAME]).expect("node");
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.36.3");
    let internal: Vec<&Value> = node["status"]["addresses"]
        .as_array()
        .expect("addresses")
        .iter()
        .filter(|a| a["type"] == "InternalIP")
        .collect();
    assert_eq!(internal.len(), 1);
    assert_eq!(internal[0]["address"], cluster.node_ip());
}

#[test]
fn apply_wait_reports_a_deployment_that_never_becomes_ready_and_passes_once_fixed() {
    let cluster = node_cluster();
    let tenant = common::unique("sick");
    let agent_ns = common::unique("fief-sick");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = tempfile::tempdir().expect("tempdir");
    let varz = |probe: &str| {
        format!(
            "replicas: 1\nimage: {}\ngreeting: hi\nprobePath: {probe}\n",
            common::node::BUSYBOX_IMAGE
        )
    };
    let files = [
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            varz("/missing.html"),
        ),
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 20s}\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.replace("path: /index.html", "path: {{ values.probePath }}"),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n"
            ),
        ),
    ];
    for (path, text) in &files {
        let p = repo.path().join(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }
    let apply = || {
        Command::new(env!("CARGO_BIN_EXE_fief"))
            .arg("apply")
            .arg(repo.path())
            .arg("--wait")
            .arg("--kubeconfig")
            .arg(cluster.cp().admin_kubeconfig())
            .output()
            .expect("cannot run fief apply")
    };
    let out = apply();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(5),
        "a probe that never passes: {stderr}"
    );
    assert!(
        stderr.contains(&format!("tenant `{tenant}`: not healthy"))
            && stderr.contains("Deployment")
            && stderr.contains("/web")
            && stderr.contains("after 20s"),
        "{stderr}"
    );
    fs::write(
        repo.path().join("components/web/varz.yaml"),
        varz("/index.html"),
    )
    .expect("fix");
    let out = apply();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{tenant}: healthy")));
}

/// The agent (a process on this machine, against the node cluster) gates a tenant on the
/// health of what it applied: a readiness probe that never passes keeps it `Reconciling`,
/// then `Stalled` naming the Deployment after its 20s `health.timeout`; the fix commit makes
/// it `Ready` once the new Pods really pass their probe.
#[test]
fn the_agent_holds_a_tenant_reconciling_then_stalled_on_a_failing_probe_and_ready_after_the_fix() {
    let cluster = node_cluster();
    let tenant = common::unique("agsick");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-agsick");
    let server = probed_repo(&agent_ns, &tenant);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("agent.log");
    let mut agent = spawn_agent(cluster, &server.url(), dir.path(), &log);
    let agent_log = || fs::read_to_string(&log).unwrap_or_default();
    let condition = |type_: &str| tenant_condition(&agent_ns, &tenant, type_);
    let wait = |what: &str, type_: &str, reason: &str, timeout: Duration| -> String {
        let (message, _) = wait_for(what, timeout, || {
            let c = condition(type_);
            if c.0 == "True" && c.1 == reason {
                Ok(c.2)
            } else {
                Err(format!("{type_}: {c:?}\nagent log:\n{}", agent_log()))
            }
        });
        message
    };
    let message = wait(
        "Reconciling while the probe fails",
        "Reconciling",
        "WaitingForHealth",
        Duration::from_secs(60),
    );
    assert!(
        message.contains(&format!("Deployment.apps/{ns}/web")),
        "{message}"
    );
    let message = wait(
        "Stalled after the 20s timeout",
        "Stalled",
        "Unhealthy",
        Duration::from_secs(60),
    );
    assert!(
        message.contains(&format!("Deployment.apps/{ns}/web")) && message.contains("timed out"),
        "{message}"
    );
    assert_eq!(condition("Ready").0, "False");

    server.commit(
        &[(
            "components/web/varz.yaml".to_string(),
            web_varz("/index.html"),
        )],
        "fix the probe",
    );
    wait(
        "Ready after the fix",
        "Ready",
        "Healthy",
        Duration::from_secs(180),
    );
    assert_eq!(condition("Stalled").0, "False");
    let _ = agent.kill();
    let _ = agent.wait();
}

/// The `web` component's values: one busybox replica probed at `probe`.
fn web_varz(probe: &str) -> String {
    format!(
        "replicas: 1\nimage: {}\ngreeting: hi\nprobePath: {probe}\n",
        common::node::BUSYBOX_IMAGE
    )
}

/// A repo served by `git daemon` whose tenant `tenant` runs `web` probed at a page that does
/// not exist, with a 20s health timeout.
fn probed_repo(agent_ns: &str, tenant: &str) -> common::agent::GitServer {
    common::agent::GitServer::new(&[
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            web_varz("/missing.html"),
        ),
        (
            "components/web/component.yaml".to_string(),
            "health: {timeout: 20s}\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            WEB_TEMPLATE.replace("path: /index.html", "path: {{ values.probePath }}"),
        ),
        (
            format!("tenants/{tenant}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n"
            ),
        ),
    ])
}

/// `fief agent` on `repo` (no leader election, a 2s interval), its log in `log`.
fn spawn_agent(cluster: &NodeCluster, repo: &str, dir: &Path, log: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["agent", "--repo", repo, "--no-leader-election"])
        .arg("--kubeconfig")
        .arg(cluster.cp().admin_kubeconfig())
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args([
            "--listen",
            &format!("127.0.0.1:{}", common::util::free_port()),
        ])
        .args(["--interval", "2s"])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(log).expect("log"))
        .spawn()
        .expect("start fief agent")
}

/// Status, reason and message of the condition `type_` in `tenant`'s inventory (empty when
/// there is none).
fn tenant_condition(agent_ns: &str, tenant: &str, type_: &str) -> (String, String, String) {
    let cm = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    let status: Value = cm
        .and_then(|cm| {
            cm["data"]["status"]
                .as_str()
                .and_then(|s| serde_json::from_str(s).ok())
        })
        .unwrap_or(Value::Null);
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("status"), s("reason"), s("message"))
        })
        .unwrap_or_default()
}
