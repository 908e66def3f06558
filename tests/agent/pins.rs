//! Pinned components in the agent, on the real control plane: tenants pinned to different
//! refs of one component render and apply that component as it is at their ref; moving a tag
//! (without a commit on the followed branch) re-syncs exactly the tenants pinned to it; a ref
//! that does not exist fails only its tenant.

use crate::common;

use std::time::Duration;

use common::agent::*;

fn template(version: &str) -> (String, String) {
    (
        "components/web/templates/cm.yaml".to_string(),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  version: \"{version}\"\n"
        ),
    )
}

fn tenant_file(name: &str, pin: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - {{name: web{pin}}}\n"
        ),
    )
}

fn version(tenant: &str) -> Option<String> {
    configmap_value(&format!("{tenant}-prod"), "web", "version")
}

#[test]
fn tenants_pinned_to_different_refs_apply_their_ref_and_moving_a_tag_resyncs_exactly_its_tenants() {
    let agent_ns = common::unique("fief-pin");
    let (tagged, head, by_commit, broken) = (
        common::unique("pin-tag"),
        common::unique("pin-head"),
        common::unique("pin-commit"),
        common::unique("pin-bad"),
    );
    let server = pinned_repo(&agent_ns, &tagged, &head, &by_commit, &broken);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let start = std::time::Instant::now();
    while !(version(&tagged).as_deref() == Some("one")
        && version(&head).as_deref() == Some("two")
        && version(&by_commit).as_deref() == Some("one"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "pinned tenants not applied: {:?} {:?} {:?}; {}\n{}",
            version(&tagged),
            version(&head),
            version(&by_commit),
            status(&agent_ns, &tagged),
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The unknown ref fails only its tenant, with the reason.
    let st = status(&agent_ns, &broken);
    assert_eq!(condition(&st, "Stalled"), "True", "{st}");
    assert!(
        st["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("pinned to ref `no-such-tag`")),
        "{st}"
    );

    let untouched = |t: &str| {
        (
            resource_version(&format!("{t}-prod"), "configmap", "web"),
            resource_version(&agent_ns, "configmap", &format!("fief-tenant-{t}")),
        )
    };
    let before = (untouched(&head), untouched(&by_commit));
    let syncs = agent.metric("fief_tenant_syncs_total", "");

    // Move the tag to main's head (version two); main itself does not move.
    git(&server.repo(), &["tag", "-f", "web-1", "HEAD"]);
    assert_eq!(agent.signed_push(), 202);
    let start = std::time::Instant::now();
    while version(&tagged).as_deref() != Some("two") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the tagged tenant was not re-synced:\n{}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = start.elapsed();
    eprintln!("tag moved to applied: {took:?}");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        before,
        (untouched(&head), untouched(&by_commit)),
        "tenants not pinned to the tag received no write"
    );
    assert_eq!(version(&by_commit).as_deref(), Some("one"));
    // One sync: the tagged tenant (the broken one is not retried by a tag move either).
    let synced = agent.metric("fief_tenant_syncs_total", "") - syncs;
    assert_eq!(synced, 1.0, "syncs after the tag moved:\n{}", agent.log());
}

/// A repo whose `web` component is version one (tagged `web-1`), then version two on main,
/// with tenants pinned to the tag, to nothing, to the first commit and to an unknown tag.
fn pinned_repo(
    agent_ns: &str,
    tagged: &str,
    head: &str,
    by_commit: &str,
    broken: &str,
) -> GitServer {
    // Version one, tagged web-1; then version two on main.
    let server = GitServer::new(&[
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        template("one"),
    ]);
    git(&server.repo(), &["tag", "web-1"]);
    let first = git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    server.commit(
        &[
            template("two"),
            tenant_file(tagged, ", ref: web-1"),
            tenant_file(head, ""),
            tenant_file(by_commit, &format!(", ref: {first}")),
            tenant_file(broken, ", ref: no-such-tag"),
        ],
        "web two; tenants",
    );
    server
}
