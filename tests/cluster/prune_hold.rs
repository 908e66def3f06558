//! A held prune stays held (`fief apply`), against the real test control plane: a rename of
//! every object (fief.yaml `namespacePattern`) is held by the mass-prune guard, and re-applies
//! leave it held with no DELETE at the API server; `--allow-mass-prune` releases it and the
//! status records who did and when; a revert clears the hold and deletes only what the held
//! change added. The agent's side: tests/agent/prune_hold.rs.

use crate::common;

use common::cluster_cli::*;
use common::util::text;

/// DELETE requests the API server received for objects in any of `namespaces` (or for those
/// namespaces themselves).
fn deletes_in(namespaces: &[&str]) -> usize {
    common::audit::writes()
        .iter()
        .filter(|w| w.verb == "delete")
        .filter(|w| {
            namespaces.contains(&w.namespace.as_str())
                || (w.resource == "namespaces" && namespaces.contains(&w.name.as_str()))
        })
        .count()
}

/// A repo whose one tenant runs `app`.
fn renamed_repo(tenant: &str) -> TestRepo {
    let repo = TestRepo::new("");
    repo.tenant(tenant, APP);
    repo
}

/// Rewrite fief.yaml with `namespacePattern: pattern`.
fn set_pattern(repo: &TestRepo, pattern: &str) {
    repo.write(
        "fief.yaml",
        &format!(
            "agentNamespace: {}\nnamespacePattern: \"{pattern}\"\n",
            repo.agent_ns
        ),
    );
}

#[test]
fn a_mass_prune_held_by_apply_stays_held_on_every_re_apply_until_a_person_releases_it() {
    let tenant = common::unique("ren");
    let repo = renamed_repo(&tenant);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    let old_ns = format!("{tenant}-prod");
    assert!(exists("configmap", &old_ns, "app-config"));

    set_pattern(&repo, "{tenant}-x-{env}");
    let new_ns = format!("{tenant}-x-prod");
    let (out, stderr) = apply_json(repo.path(), &["--tenant", &tenant], 4);
    assert!(stderr.contains("refusing to prune"), "{stderr}\n{out}");
    // A plain re-run, twice: still held, nothing deleted.
    for _ in 0..2 {
        let (out, stderr) = apply_json(repo.path(), &["--tenant", &tenant], 4);
        assert!(
            tenant_report(&out, &tenant)["pruneHeld"]
                .as_str()
                .unwrap_or_default()
                .contains("mass-prune guard"),
            "{out}\n{stderr}"
        );
    }
    assert!(exists("namespace", "", &old_ns));
    assert!(exists("configmap", &old_ns, "app-config"));
    assert!(exists("configmap", &new_ns, "app-config"));
    assert_eq!(deletes_in(&[&old_ns]), 0, "DELETEs in {old_ns}");
    let status = inventory_status(&repo, &tenant);
    let hold = &status["pruneHold"];
    assert_eq!(hold["kind"], "massPrune", "{status}");
    assert!(hold["count"].as_u64().unwrap_or(0) > 0, "{status}");
    assert!(
        hold["objects"].to_string().contains(&old_ns),
        "the hold lists what it would delete: {status}"
    );

    // A person releases it: the old objects go, and the status says who and when.
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant, "--allow-mass-prune"], 0);
    assert_eq!(tenant_report(&out, &tenant)["outcome"], "applied", "{out}");
    wait_gone("namespace", &old_ns);
    assert!(exists("configmap", &new_ns, "app-config"));
    let status = inventory_status(&repo, &tenant);
    assert!(status["pruneHold"].is_null(), "{status}");
    let released = status["pruneReleased"].as_str().unwrap_or_default();
    assert!(
        released.starts_with("by ") && released.contains(" at "),
        "who and when: {status}"
    );
    // And the next plain apply is clean.
    apply_json(repo.path(), &["--tenant", &tenant], 0);
}

#[test]
fn a_revert_of_a_held_rename_clears_the_hold_and_deletes_nothing_that_ran_before() {
    let tenant = common::unique("rev");
    let repo = renamed_repo(&tenant);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    let old_ns = format!("{tenant}-prod");
    set_pattern(&repo, "{tenant}-y-{env}");
    let new_ns = format!("{tenant}-y-prod");
    apply_json(repo.path(), &["--tenant", &tenant], 4);
    apply_json(repo.path(), &["--tenant", &tenant], 4);
    assert!(exists("configmap", &new_ns, "app-config"));

    set_pattern(&repo, "{tenant}-{env}");
    let (out, stderr) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert_eq!(
        tenant_report(&out, &tenant)["outcome"],
        "applied",
        "{out}\n{stderr}"
    );
    wait_gone("namespace", &new_ns);
    assert!(exists("configmap", &old_ns, "app-config"));
    assert_eq!(deletes_in(&[&old_ns]), 0, "nothing of {old_ns} deleted");
    let status = inventory_status(&repo, &tenant);
    assert!(status["pruneHold"].is_null(), "{status}");
    assert_eq!(status["lastError"], serde_json::Value::Null, "{status}");
    let again = fief("apply", repo.path(), &["--tenant", &tenant]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
}
