//! What a change costs the agent: a one-tenant change costs the same at 10 and 200
//! tenants, and a shared change renders only the tenants that use it.

use super::*;

/// The agent's work counters: (tenant files parsed, input hashes computed, tenants rendered).
fn work(agent: &Agent) -> [f64; 3] {
    [
        agent.metric("fief_tenants_loaded_total", ""),
        agent.metric("fief_tenants_hashed_total", ""),
        agent.metric("fief_tenants_rendered_total", ""),
    ]
}

/// Commit `files`, push, wait until every tenant in `wait_for` has an attempt at the new
/// commit, and return the work counters' increase.
fn work_for(
    agent: &Agent,
    server: &GitServer,
    files: &[(String, String)],
    wait_for: &[String],
) -> [f64; 3] {
    let before = work(agent);
    server.commit(files, "change");
    let head = git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    assert_eq!(agent.signed_push(), 202);
    wait_until("the commit synced", Duration::from_secs(120), || {
        let Some((_, body)) = agent.get("/status") else {
            return false;
        };
        let status: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        wait_for
            .iter()
            .all(|t| status["tenants"][t]["commit"] == head.as_str())
    });
    // Nothing else is due (no drift, no resync): the counters have settled.
    std::thread::sleep(Duration::from_millis(300));
    let after = work(agent);
    [0, 1, 2].map(|i| after[i] - before[i])
}

#[test]
fn a_one_tenant_change_costs_the_same_at_10_and_200_tenants_and_a_shared_change_renders_only_its_users()
 {
    let agent_ns = common::unique("fief-ag12");
    let prefix = common::unique("cost");
    let name = |i: usize| format!("{prefix}-{i:03}");
    let extra = |i: usize| {
        (
            format!("tenants/{}.yaml", name(i)),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {}\nspec:\n  components:\n    - name: app\n    - name: extra\n",
                name(i)
            ),
        )
    };
    let small: Vec<String> = (0..10).map(name).collect();
    let mut files = small_repo(&agent_ns, &[]);
    files.push((
        "components/extra/templates/extra.yaml".to_string(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  v: one\n".to_string(),
    ));
    for (i, t) in small.iter().enumerate() {
        files.push(if i < 3 { extra(i) } else { tenant(t, "hi") });
    }
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let changed = name(5);

    let one = std::slice::from_ref(&changed);
    let at_10 = work_for(&agent, &server, &[tenant(&changed, "one")], one);
    assert_eq!(
        at_10,
        [1.0, 1.0, 1.0],
        "parsed, hashed, rendered at 10 tenants"
    );

    let more: Vec<(String, String)> = (10..200).map(|i| tenant(&name(i), "hi")).collect();
    let added: Vec<String> = (10..200).map(name).collect();
    let grow = work_for(&agent, &server, &more, &added);
    assert_eq!(grow, [190.0, 190.0, 190.0], "only the new tenants");

    let at_200 = work_for(&agent, &server, &[tenant(&changed, "two")], one);
    assert_eq!(
        at_200, at_10,
        "a one-tenant change costs the same at 200 tenants"
    );
    assert_eq!(
        configmap_value(&format!("{changed}-prod"), "app-config", "greeting").as_deref(),
        Some("two")
    );

    // A shared component change renders exactly the tenants that use it.
    let shared = work_for(
        &agent,
        &server,
        &[(
            "components/extra/templates/extra.yaml".to_string(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  v: two\n"
                .to_string(),
        )],
        &small[..3],
    );
    assert_eq!(
        shared,
        [0.0, 3.0, 3.0],
        "parsed, hashed, rendered: the three users"
    );
    for i in 0..3 {
        assert_eq!(
            configmap_value(&format!("{}-prod", name(i)), "extra", "v").as_deref(),
            Some("two")
        );
    }
}
