//! `dependsOn` waits in the agent, against the real test control plane: web depends on
//! postgres; the agent applies postgres, holds web with `Ready=False` reason
//! `DependencyNotReady` naming postgres while postgres's StatefulSet is not Ready, and
//! applies web within seconds once it is (times taken at the API server's audit log); a
//! tenant without dependencies is applied meanwhile. The CLI's side: tests/cluster/depends.rs.

use crate::common;

use std::time::Duration;

use common::agent::{Agent, GitServer, condition_of, small_repo, status, tenant, wait_until};
use common::cluster_cli::{exists, mark_ready};

const POSTGRES: &str = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n  replicas: 1\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n        - name: db\n          image: registry.example.com/postgres:16\n";
const WEB: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: site\ndata:\n  db: db\n";

/// The Ready condition's (status, reason, message).
fn ready(agent_ns: &str, t: &str) -> (String, String, String) {
    let c = condition_of(&status(agent_ns, t), "Ready");
    let word = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (word("status"), word("reason"), word("message"))
}

#[test]
fn the_agent_applies_a_dependent_only_once_its_dependency_is_ready() {
    let agent_ns = common::unique("fief-dep");
    let (t, other) = (common::unique("dep"), common::unique("indep"));
    let mut files = small_repo(&agent_ns, &[(&other, "hi")]);
    files.extend([
        ("components/postgres/templates/db.yaml".to_string(), POSTGRES.to_string()),
        ("components/web/component.yaml".to_string(), "dependsOn: [postgres]\n".to_string()),
        ("components/web/templates/site.yaml".to_string(), WEB.to_string()),
        (
            format!("tenants/{t}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {t}\nspec:\n  components:\n    - name: postgres\n    - name: web\n"
            ),
        ),
    ]);
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "600s"]);
    let ns = format!("{t}-prod");
    wait_until("web held, naming postgres", Duration::from_secs(60), || {
        let (s, reason, message) = ready(&agent_ns, &t);
        s == "False" && reason == "DependencyNotReady" && message.contains("postgres")
    });
    assert!(exists("statefulset", &ns, "db"));
    assert!(!exists("configmap", &ns, "site"));
    // Independent tenants are applied meanwhile, and a change to one goes out at once.
    server.commit(&[tenant(&other, "bonjour")], "change the other tenant");
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "the other tenant's change applied",
        Duration::from_secs(20),
        || {
            common::agent::configmap_value(&format!("{other}-prod"), "app-config", "greeting")
                .as_deref()
                == Some("bonjour")
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(!exists("configmap", &ns, "site"), "still held");

    let ready_at = mark_ready("statefulset", "db", &ns);
    let took = wait_until("web applied", Duration::from_secs(30), || {
        exists("configmap", &ns, "site")
    });
    assert!(
        took < Duration::from_secs(15),
        "web applied {took:?} after postgres Ready"
    );
    let written = common::audit::writes()
        .iter()
        .filter(|w| w.resource == "configmaps" && w.namespace == ns && w.name == "site")
        .map(|w| w.received_us)
        .min()
        .unwrap_or_default();
    assert!(written > ready_at, "web written before postgres was Ready");
    wait_until("the tenant Ready", Duration::from_secs(30), || {
        ready(&agent_ns, &t).0 == "True"
    });
}
