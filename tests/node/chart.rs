//! A Helm chart on the real node: its `pre-install,pre-upgrade` hook Job (a migration) runs
//! in a real Pod and completes before the chart's busybox `httpd` Deployment is created, whose
//! Pod turns Ready; `fief apply --wait` ends with both. A migration that fails on the next
//! upgrade fails the tenant with the Job's name, and the Deployment keeps its old version.

use super::*;

use super::workload::WEB_TEMPLATE;

/// The migration hook: a busybox Job that exits with `.Values.migrationExit`.
const MIGRATION: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {app: migrate}
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534
        runAsGroup: 65534
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: migrate
          image: {{ .Values.image }}
          command: ["sh", "-c", "echo migrating to {{ .Values.greeting }}; exit {{ .Values.migrationExit }}"]
          resources:
            requests: {cpu: 10m, memory: 16Mi}
            limits: {cpu: 100m, memory: 32Mi}
          securityContext:
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
"#;

/// The chart's files under `components/web/chart/`.
fn chart_files() -> Vec<(String, String)> {
    // The templates component's Deployment, in Helm's syntax.
    let deployment = WEB_TEMPLATE
        .replace("{{ values.replicas }}", "{{ .Values.replicas }}")
        .replace("{{ values.image }}", "{{ .Values.image }}")
        .replace("{{ values.greeting }}", "{{ .Values.greeting }}");
    let dir = "components/web/chart";
    vec![
        (
            format!("{dir}/Chart.yaml"),
            "apiVersion: v2\nname: web\nversion: 1.0.0\n".to_string(),
        ),
        (
            format!("{dir}/values.yaml"),
            format!(
                "replicas: 1\nimage: {}\ngreeting: served-by-busybox\nmigrationExit: 0\n",
                common::node::BUSYBOX_IMAGE
            ),
        ),
        (format!("{dir}/templates/deployment.yaml"), deployment),
        (format!("{dir}/templates/migrate.yaml"), MIGRATION.into()),
    ]
}

fn write(repo: &Path, files: &[(String, String)]) {
    for (path, text) in files {
        let p = repo.join(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }
}

fn tenant_file(tenant: &str, values: &str) -> (String, String) {
    (
        format!("tenants/{tenant}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {tenant}\nspec:\n  quota: {{cpu: \"1\", memory: 256Mi, pods: \"4\"}}\n  components:\n    - name: web\n      values: {{{values}}}\n"
        ),
    )
}

fn apply_wait(cluster: &NodeCluster, repo: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("apply")
        .arg(repo)
        .args(["--wait", "--timeout", "180s", "--kubeconfig"])
        .arg(cluster.cp().admin_kubeconfig())
        .output()
        .expect("cannot run fief apply")
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The namespace's Pods, Jobs, Deployments and Events, for a failure message.
fn namespace_state(ns: &str) -> String {
    let out = kubectl(
        &[
            "get",
            "pods,jobs,deployments,events",
            "-n",
            ns,
            "-o",
            "wide",
        ],
        None,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_charts_migration_hook_completes_in_a_real_pod_before_its_deployment_runs_ready() {
    let cluster = node_cluster();
    let tenant = common::unique("chart");
    let ns = format!("{tenant}-prod");
    let agent_ns = common::unique("fief-chart");
    kubectl_ok(&["create", "namespace", &agent_ns]);
    let repo = tempfile::tempdir().expect("tempdir");
    let mut files = chart_files();
    files.push((
        "fief.yaml".to_string(),
        format!("agentNamespace: {agent_ns}\n"),
    ));
    files.push((
        "components/web/component.yaml".to_string(),
        "kind: helm\nchart: chart\n".to_string(),
    ));
    files.push(tenant_file(&tenant, ""));
    write(repo.path(), &files);

    let out = apply_wait(cluster, repo.path());
    assert!(
        out.status.success(),
        "fief apply --wait failed:\n{}\n{}",
        said(&out),
        namespace_state(&ns)
    );
    let job = kubectl_json(&["get", "job", "-n", &ns, "web-migrate"]).expect("the hook Job");
    let completed = job["status"]["completionTime"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!completed.is_empty(), "the migration completed: {job}");
    let web = kubectl_json(&["get", "deployment", "-n", &ns, "web"]).expect("web deployment");
    let created = web["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or_default();
    // RFC 3339 times of one clock, to the second.
    assert!(
        created >= completed.as_str(),
        "web created {created}, migration completed {completed}"
    );
    assert_eq!(web["status"]["readyReplicas"], 1, "{web}");

    // The next upgrade's migration fails: the tenant fails, naming the Job; web is not touched.
    let generation = web["metadata"]["generation"].clone();
    write(
        repo.path(),
        &[tenant_file(&tenant, "greeting: v2, migrationExit: 3")],
    );
    let out = apply_wait(cluster, repo.path());
    let text = said(&out);
    assert!(
        !out.status.success(),
        "the failed migration fails the apply:\n{text}"
    );
    assert!(
        text.contains("web-migrate"),
        "the error names the Job:\n{text}"
    );
    let web = kubectl_json(&["get", "deployment", "-n", &ns, "web"]).expect("web deployment");
    assert_eq!(
        web["metadata"]["generation"], generation,
        "web untouched: {web}"
    );
    assert_eq!(web["status"]["readyReplicas"], 1, "{web}");
}
