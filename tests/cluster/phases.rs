//! Ordered phases through `fief apply`, against the real test control plane: a `fief.dev/phase:
//! pre` Job is applied first and the tenant's Deployment only once the Job is Complete (times
//! taken at the API server's audit log), with `Ready=False` reason `PhaseNotReady` meanwhile;
//! `fief apply --wait` waits through it; a Failed pre Job fails its tenant alone (the Job and
//! its reason named, reason `PhaseFailed`, nothing pruned) while another tenant is applied; a
//! changed pre Job is deleted and created again; a chart's `pre-install` hook gets the same
//! treatment, its test and delete hooks not applied. The test control plane runs no Job
//! controller: the test writes the Job's status as the controller would
//! (tests/common/job.rs). Hook delete policies: a chart's `hook-succeeded` hook is deleted
//! once complete, runs again only when its content changes, and a `hook-failed` Job is
//! deleted once failed while its tenant stays failed. The agent's side: tests/agent/phases.rs.

use crate::common;

use std::time::Duration;

use common::cluster_cli::*;
use common::util::{text, wait_until};

/// The migration Job; `version` goes into its command (a change recreates it).
fn migrate(version: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    fief.dev/phase: pre\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: migrate\n          image: registry.example.com/migrate:1\n          args: [\"--to\", \"{version}\"]\n"
    )
}

/// The main Deployment; `image` is its tag.
fn web(tag: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example.com/web:{tag}\n"
    )
}

const APP: &str = "  components:\n    - name: app\n";
const OTHER: &str = "  components:\n    - name: other\n";
const OTHER_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  a: b\n";

/// A repo with component `app` (the migration and web) and `other` (a ConfigMap).
fn repo() -> TestRepo {
    let repo = TestRepo::new("");
    repo.write("components/app/templates/migrate.yaml", &migrate("1"));
    repo.write("components/app/templates/web.yaml", &web("1"));
    repo.write("components/other/templates/cm.yaml", OTHER_CM);
    repo
}

/// When the API server first received a write of `resource` `name` in `ns`, and with `verb`.
fn written_at(resource: &str, ns: &str, name: &str, verb: &str) -> Option<i64> {
    common::audit::writes()
        .iter()
        .filter(|w| w.resource == resource && w.namespace == ns && w.name == name)
        .filter(|w| w.verb == verb || verb.is_empty())
        .map(|w| w.received_us)
        .min()
}

fn ready(repo: &TestRepo, t: &str) -> (String, String, String) {
    let status = inventory_status(repo, t);
    let c = common::agent::condition_of(&status, "Ready");
    let word = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (word("status"), word("reason"), word("message"))
}

#[test]
fn the_deployment_waits_until_the_pre_job_completes() {
    let repo = repo();
    let t = common::unique("pre");
    repo.tenant(&t, APP);
    let ns = format!("{t}-prod");
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    let r = tenant_report(&out, &t);
    assert!(
        r["phaseHold"].to_string().contains("Job.batch/")
            && r["phaseHold"].to_string().contains("migrate"),
        "{out}"
    );
    assert!(exists("job", &ns, "migrate"));
    assert!(
        !exists("deployment", &ns, "web"),
        "main waits for the pre Job"
    );
    let (s, reason, message) = ready(&repo, &t);
    assert_eq!((s.as_str(), reason.as_str()), ("False", "PhaseNotReady"));
    assert!(
        message.contains("main phase waits for") && message.contains("migrate"),
        "{message}"
    );
    // Applied again while the Job runs: still held, and the summary says so.
    let out = fief("apply", repo.path(), &["--tenant", &t]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(
        summary.contains("waiting: the main phase waits for Job.batch/"),
        "{summary}"
    );
    assert!(!exists("deployment", &ns, "web"));

    let done_at = common::job::complete("migrate", &ns);
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(tenant_report(&out, &t)["phaseHold"].is_null(), "{out}");
    let written = written_at("deployments", &ns, "web", "").expect("web written");
    assert!(
        written > done_at,
        "web written {written} before the Job completed {done_at}"
    );
    // Nothing changed: nothing is written, the completed Job is not applied again.
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    let counts = &tenant_report(&out, &t)["counts"];
    assert_eq!(
        (counts["created"].as_u64(), counts["configured"].as_u64()),
        (Some(0), Some(0)),
        "{out}"
    );
}

#[test]
fn apply_wait_applies_the_deployment_once_the_pre_job_completes() {
    let repo = repo();
    let t = common::unique("prew");
    repo.tenant(&t, APP);
    let ns = format!("{t}-prod");
    let marker = {
        let ns = ns.clone();
        std::thread::spawn(move || {
            wait_until("the Job applied", Duration::from_secs(60), || {
                exists("job", &ns, "migrate")
            });
            std::thread::sleep(Duration::from_secs(2));
            common::job::complete("migrate", &ns)
        })
    };
    // The Deployment never becomes healthy here (no controller): it is not waited for.
    repo.write("components/app/component.yaml", "health:\n  wait: false\n");
    let out = fief(
        "apply",
        repo.path(),
        &["--tenant", &t, "--wait", "--timeout", "60s"],
    );
    let done_at = marker.join().expect("marker thread");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = written_at("deployments", &ns, "web", "").expect("web written");
    assert!(written > done_at, "web written before the Job completed");
}

#[test]
fn a_failed_pre_job_fails_its_tenant_alone_and_nothing_is_pruned() {
    let repo = TestRepo::new("");
    repo.write(
        "components/app/templates/old.yaml",
        OTHER_CM.replace("other", "old").as_str(),
    );
    repo.write("components/other/templates/cm.yaml", OTHER_CM);
    let (t, other) = (common::unique("fail"), common::unique("ok"));
    repo.tenant(&t, APP);
    let ns = format!("{t}-prod");
    apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(exists("configmap", &ns, "old"));

    // The next version migrates first, and no longer has `old`.
    repo.remove("components/app/templates/old.yaml");
    repo.write("components/app/templates/migrate.yaml", &migrate("2"));
    repo.write("components/app/templates/web.yaml", &web("2"));
    apply_json(repo.path(), &["--tenant", &t], 0);
    common::job::fail("migrate", &ns);
    repo.tenant(&other, OTHER);
    let (out, _) = apply_json(repo.path(), &[], 3);
    let r = tenant_report(&out, &t);
    assert_eq!(r["outcome"], "failed", "{out}");
    let errors = r["errors"].to_string();
    assert!(
        errors.contains(&format!("Job.batch/{ns}/migrate"))
            && errors.contains("BackoffLimitExceeded"),
        "{errors}"
    );
    assert!(exists("configmap", &ns, "old"), "nothing pruned");
    assert!(!exists("deployment", &ns, "web"), "nothing of main applied");
    assert_eq!(tenant_report(&out, &other)["outcome"], "applied", "{out}");
    assert!(exists("configmap", &format!("{other}-prod"), "other"));
    let (s, reason, message) = ready(&repo, &t);
    assert_eq!(
        (s.as_str(), reason.as_str()),
        ("False", "PhaseFailed"),
        "{message}"
    );
    assert!(
        message.contains("migrate") && message.contains("backoff limit"),
        "{message}"
    );
}

#[test]
fn a_changed_pre_job_is_deleted_and_created_again_before_the_rest() {
    let repo = repo();
    let t = common::unique("rerun");
    repo.tenant(&t, APP);
    let ns = format!("{t}-prod");
    apply_json(repo.path(), &["--tenant", &t], 0);
    common::job::complete("migrate", &ns);
    apply_json(repo.path(), &["--tenant", &t], 0);
    let uid =
        |ns: &str| kubectl_json(&["get", "job", "migrate", "-n", ns])["metadata"]["uid"].clone();
    let first = uid(&ns);

    repo.write("components/app/templates/migrate.yaml", &migrate("2"));
    repo.write("components/app/templates/web.yaml", &web("2"));
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(!tenant_report(&out, &t)["phaseHold"].is_null(), "{out}");
    assert_ne!(uid(&ns), first, "a new Job");
    let deleted = written_at("jobs", &ns, "migrate", "delete").expect("the old Job deleted");
    let live = kubectl_json(&["get", "job", "migrate", "-n", &ns]);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["args"][1],
        "2"
    );
    assert!(
        live["status"]["conditions"].is_null(),
        "not complete: {live}"
    );
    let image = |ns: &str| {
        kubectl_json(&["get", "deployment", "web", "-n", ns])["spec"]["template"]["spec"]["containers"][0]["image"]
            .clone()
    };
    assert_eq!(
        image(&ns),
        "registry.example.com/web:1",
        "the Deployment waits"
    );
    let done_at = common::job::complete("migrate", &ns);
    apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(image(&ns), "registry.example.com/web:2");
    assert!(deleted < done_at);
}

/// A chart whose migration is a `pre-install,pre-upgrade` hook, with a test hook and a
/// `pre-delete` hook fief never runs.
fn chart(repo: &TestRepo) {
    let dir = "components/db/chart";
    repo.write("components/db/component.yaml", "kind: helm\nchart: chart\n");
    repo.write(
        &format!("{dir}/Chart.yaml"),
        "apiVersion: v2\nname: db\nversion: 0.1.0\n",
    );
    repo.write(&format!("{dir}/values.yaml"), "tag: \"1\"\n");
    let hook = |name: &str, hook: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{{{ .Release.Name }}}}-{name}\n  annotations:\n    helm.sh/hook: {hook}\n    helm.sh/hook-weight: \"-1\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: m\n          image: registry.example.com/migrate:{{{{ .Values.tag }}}}\n"
        )
    };
    repo.write(
        &format!("{dir}/templates/migrate.yaml"),
        &hook("migrate", "pre-install,pre-upgrade"),
    );
    repo.write(
        &format!("{dir}/templates/cleanup.yaml"),
        &hook("cleanup", "pre-delete"),
    );
    repo.write(&format!("{dir}/templates/test.yaml"), &hook("test", "test"));
    repo.write(
        &format!("{dir}/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  tag: {{ .Values.tag | quote }}\n",
    );
}

#[test]
fn a_charts_pre_install_hook_runs_before_the_chart_and_its_other_hooks_do_not() {
    let repo = TestRepo::new("");
    chart(&repo);
    let t = common::unique("hook");
    repo.tenant(&t, "  components:\n    - name: db\n");
    let ns = format!("{t}-prod");
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(!tenant_report(&out, &t)["phaseHold"].is_null(), "{out}");
    let job = kubectl_json(&["get", "job", "db-migrate", "-n", &ns]);
    assert_eq!(
        job["metadata"]["annotations"]["helm.sh/hook"],
        "pre-install,pre-upgrade"
    );
    assert!(
        !exists("configmap", &ns, "db-settings"),
        "the chart waits for its hook"
    );
    assert!(!exists("job", &ns, "db-cleanup") && !exists("job", &ns, "db-test"));
    let done_at = common::job::complete("db-migrate", &ns);
    apply_json(repo.path(), &["--tenant", &t], 0);
    let written = written_at("configmaps", &ns, "db-settings", "").expect("the chart applied");
    assert!(written > done_at);
    assert!(!exists("job", &ns, "db-cleanup") && !exists("job", &ns, "db-test"));
}

/// Whether the tenant's inventory records `name` done, and how (`"succeeded"`, or the
/// failure's JSON).
fn done_of(repo: &TestRepo, t: &str, name: &str) -> Option<String> {
    let inventory = format!("fief-tenant-{t}");
    let cm = kubectl_json(&["get", "configmap", "-n", &repo.agent_ns, &inventory]);
    let entries: serde_json::Value =
        serde_json::from_str(cm["data"]["entries"].as_str().unwrap_or("[]")).unwrap_or_default();
    let entry = entries
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?
        .clone();
    (!entry["done"].is_null()).then(|| entry["done"].to_string())
}

/// fief's applies of Job `name` in `ns` at the API server (the test's status writes, sent
/// with kubectl, left out).
fn job_applies(ns: &str, name: &str) -> usize {
    common::audit::writes()
        .iter()
        .filter(|w| w.resource == "jobs" && w.namespace == ns && w.name == name)
        .filter(|w| w.verb == "patch" && !w.user_agent.starts_with("kubectl"))
        .count()
}

#[test]
fn a_hook_succeeded_job_is_deleted_once_complete_and_runs_again_only_when_its_content_changes() {
    let repo = TestRepo::new("");
    chart(&repo);
    let migrate = "components/db/chart/templates/migrate.yaml";
    let body = std::fs::read_to_string(repo.path().join(migrate)).expect("hook template");
    let policy = "    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded\n";
    repo.write(
        migrate,
        &body.replacen("  annotations:\n", &format!("  annotations:\n{policy}"), 1),
    );
    let t = common::unique("hookdel");
    repo.tenant(&t, "  components:\n    - name: db\n");
    let ns = format!("{t}-prod");
    apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(exists("job", &ns, "db-migrate") && !exists("configmap", &ns, "db-settings"));

    common::job::complete("db-migrate", &ns);
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(tenant_report(&out, &t)["phaseHold"].is_null(), "{out}");
    assert_eq!(
        tenant_report(&out, &t)["ended"],
        serde_json::json!([format!("Job.batch/{ns}/db-migrate (succeeded)")]),
        "the report names the hook deleted"
    );
    assert!(!exists("job", &ns, "db-migrate"), "deleted once complete");
    assert!(exists("configmap", &ns, "db-settings"), "the chart goes on");
    assert_eq!(
        done_of(&repo, &t, "db-migrate").as_deref(),
        Some("\"succeeded\"")
    );
    let (s, _, message) = ready(&repo, &t);
    assert_eq!(s, "True", "{message}");

    // Unchanged: not created again, nothing written.
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(
        tenant_report(&out, &t)["ended"].is_null(),
        "deleted once: {out}"
    );
    let counts = &tenant_report(&out, &t)["counts"];
    assert_eq!(
        (counts["created"].as_u64(), counts["configured"].as_u64()),
        (Some(0), Some(0)),
        "{out}"
    );
    assert!(!exists("job", &ns, "db-migrate"));
    assert_eq!(job_applies(&ns, "db-migrate"), 1);

    // A values change reaches the hook: it runs again, and the chart waits for it.
    repo.write("components/db/chart/values.yaml", "tag: \"2\"\n");
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(!tenant_report(&out, &t)["phaseHold"].is_null(), "{out}");
    let job = kubectl_json(&["get", "job", "db-migrate", "-n", &ns]);
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example.com/migrate:2"
    );
    assert_eq!(done_of(&repo, &t, "db-migrate"), None);
    common::job::complete("db-migrate", &ns);
    apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(!exists("job", &ns, "db-migrate"));
    let settings = kubectl_json(&["get", "configmap", "db-settings", "-n", &ns]);
    assert_eq!(settings["data"]["tag"], "2");
}

#[test]
fn a_hook_failed_job_is_deleted_once_failed_and_its_tenant_stays_failed_with_nothing_pruned() {
    let repo = TestRepo::new("");
    repo.write(
        "components/app/templates/old.yaml",
        OTHER_CM.replace("other", "old").as_str(),
    );
    let t = common::unique("hookfail");
    repo.tenant(&t, APP);
    let ns = format!("{t}-prod");
    apply_json(repo.path(), &["--tenant", &t], 0);

    repo.remove("components/app/templates/old.yaml");
    let policy = "    helm.sh/hook-delete-policy: hook-failed\n";
    let job = migrate("2").replacen("  annotations:\n", &format!("  annotations:\n{policy}"), 1);
    repo.write("components/app/templates/migrate.yaml", &job);
    repo.write("components/app/templates/web.yaml", &web("2"));
    apply_json(repo.path(), &["--tenant", &t], 0);
    common::job::fail("migrate", &ns);
    for run in ["the sync that sees it fail", "a later sync"] {
        let (out, _) = apply_json(repo.path(), &["--tenant", &t], 3);
        let errors = tenant_report(&out, &t)["errors"].to_string();
        assert!(
            errors.contains(&format!("Job.batch/{ns}/migrate"))
                && errors.contains("BackoffLimitExceeded"),
            "{run}: {errors}"
        );
        assert!(
            !exists("job", &ns, "migrate"),
            "{run}: deleted, not run again"
        );
        assert!(exists("configmap", &ns, "old"), "{run}: nothing pruned");
        assert!(
            !exists("deployment", &ns, "web"),
            "{run}: nothing of main applied"
        );
        let (s, reason, message) = ready(&repo, &t);
        assert_eq!(
            (s.as_str(), reason.as_str()),
            ("False", "PhaseFailed"),
            "{run}"
        );
        assert!(message.contains("backoff limit"), "{run}: {message}");
    }
    assert_eq!(job_applies(&ns, "migrate"), 1);
    assert!(done_of(&repo, &t, "migrate").is_some_and(|d| d.contains("BackoffLimitExceeded")));
}

#[test]
fn apply_wait_goes_through_pre_and_post_hooks_deleted_once_complete() {
    let repo = repo();
    let policy = "    helm.sh/hook-delete-policy: hook-succeeded\n";
    let with_policy =
        |job: String| job.replacen("  annotations:\n", &format!("  annotations:\n{policy}"), 1);
    repo.write(
        "components/app/templates/migrate.yaml",
        &with_policy(migrate("1")),
    );
    let notify = migrate("1")
        .replace("name: migrate", "name: notify")
        .replace("phase: pre", "phase: post");
    repo.write("components/app/templates/notify.yaml", &with_policy(notify));
    repo.write("components/app/component.yaml", "health:\n  wait: false\n");
    let t = common::unique("hookw");
    repo.tenant(&t, APP);
    let ns = format!("{t}-prod");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let marker = {
        let (ns, stop) = (ns.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut done = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for job in ["migrate", "notify"] {
                    if !done.contains(&job) && exists("job", &ns, job) {
                        common::job::complete(job, &ns);
                        done.push(job);
                    }
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            done
        })
    };
    let out = fief(
        "apply",
        repo.path(),
        &["--tenant", &t, "--wait", "--timeout", "60s"],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let completed = marker.join().expect("marker thread");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(completed, ["migrate", "notify"]);
    assert!(exists("deployment", &ns, "web"));
    assert!(!exists("job", &ns, "migrate") && !exists("job", &ns, "notify"));
    let (s, _, message) = ready(&repo, &t);
    assert_eq!(s, "True", "{message}");
}
