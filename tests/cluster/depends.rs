//! `dependsOn` waits, against the real test control plane: web depends on postgres, so web's
//! objects are created only once postgres's StatefulSet is Ready (times taken at the API
//! server's audit log); `fief apply` without `--wait` applies postgres and reports web
//! waiting, with a condition that names postgres; `fief apply --wait` applies web as soon as
//! postgres is Ready; a dependency cycle is a validation error at its `dependsOn` line. The
//! test control plane runs no workload controllers: the test marks the StatefulSet Ready as
//! its controller would. The agent's side: tests/agent/depends.rs.

use crate::common;

use std::time::Duration;

use common::cluster_cli::*;
use common::util::{text, wait_until};

const POSTGRES: &str = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n  replicas: 1\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n        - name: db\n          image: registry.example.com/postgres:16\n";
const WEB: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: site\ndata:\n  db: db\n";

/// A repo whose tenants may run postgres and web, web depending on postgres.
fn repo() -> TestRepo {
    let repo = TestRepo::new("");
    repo.write("components/postgres/templates/db.yaml", POSTGRES);
    repo.write("components/web/component.yaml", "dependsOn: [postgres]\n");
    repo.write("components/web/templates/site.yaml", WEB);
    repo
}

const BOTH: &str = "  components:\n    - name: postgres\n    - name: web\n";

/// When the API server first received a write of ConfigMap `site` in `ns`.
fn site_written_at(ns: &str) -> Option<i64> {
    common::audit::writes()
        .iter()
        .filter(|w| w.resource == "configmaps" && w.namespace == ns && w.name == "site")
        .map(|w| w.received_us)
        .min()
}

#[test]
fn apply_holds_a_dependent_until_its_dependency_is_ready_and_names_it() {
    let repo = repo();
    let t = common::unique("dep");
    repo.tenant(&t, BOTH);
    let ns = format!("{t}-prod");
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    let r = tenant_report(&out, &t);
    assert!(
        r["waiting"]["web"].to_string().contains("postgres"),
        "{out}"
    );
    assert!(exists("statefulset", &ns, "db"));
    assert!(!exists("configmap", &ns, "site"), "web waits");
    let status = inventory_status(&repo, &t);
    let ready = common::agent::condition_of(&status, "Ready");
    assert_eq!(ready["status"], "False", "{status}");
    assert_eq!(ready["reason"], "DependencyNotReady", "{status}");
    assert!(
        ready["message"]
            .as_str()
            .unwrap_or_default()
            .contains("web waits for postgres"),
        "{status}"
    );
    // Applied again while postgres is not Ready: still held.
    apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(!exists("configmap", &ns, "site"));

    let ready_at = mark_ready("statefulset", "db", &ns);
    let (out, _) = apply_json(repo.path(), &["--tenant", &t], 0);
    assert!(tenant_report(&out, &t)["waiting"].is_null(), "{out}");
    assert!(exists("configmap", &ns, "site"));
    let written = site_written_at(&ns).expect("web's ConfigMap written");
    assert!(
        written > ready_at,
        "web written {written} before postgres Ready {ready_at}"
    );
}

#[test]
fn apply_wait_applies_a_dependent_as_soon_as_its_dependency_is_ready() {
    let repo = repo();
    let t = common::unique("depw");
    repo.tenant(&t, BOTH);
    let ns = format!("{t}-prod");
    let marker = {
        let ns = ns.clone();
        std::thread::spawn(move || {
            wait_until("postgres applied", Duration::from_secs(60), || {
                exists("statefulset", &ns, "db")
            });
            std::thread::sleep(Duration::from_secs(2));
            mark_ready("statefulset", "db", &ns)
        })
    };
    let out = fief(
        "apply",
        repo.path(),
        &["--tenant", &t, "--wait", "--timeout", "60s"],
    );
    let ready_at = marker.join().expect("marker thread");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = site_written_at(&ns).expect("web's ConfigMap written");
    assert!(
        written > ready_at,
        "web written {written} before postgres Ready {ready_at}"
    );
    let status = inventory_status(&repo, &t);
    assert!(status.get("waiting").is_none(), "{status}");
}

#[test]
fn a_dependency_cycle_is_a_validation_error_at_its_depends_on_line() {
    let repo = repo();
    repo.write(
        "components/postgres/component.yaml",
        "description: the database\ndependsOn: [web]\n",
    );
    let t = common::unique("cyc");
    repo.tenant(&t, BOTH);
    let out = common::offline::fief(&["validate", repo.path().to_str().unwrap_or_default()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cycle"), "{stderr}");
    assert!(
        stderr.contains("components/web/component.yaml:1")
            || stderr.contains("components/postgres/component.yaml:2"),
        "{stderr}"
    );
}
