//! `fief apply --env` and `fief diff --env` against the real test control plane: only the
//! chosen environments are applied, diffed and pruned; the other environments' objects stay
//! running and stay in the tenant's inventory until a sync that covers them.

use crate::common;

use common::cluster_cli::*;
use common::util::text;
use serde_json::Value;

const EXTRA: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\ndata:\n  k: v\n";
const NEW: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-new\ndata:\n  k: v\n";

/// The `namespace/name` of every ConfigMap recorded in the tenant's inventory.
fn recorded_configmaps(repo: &TestRepo, tenant: &str) -> Vec<String> {
    let inv = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    let entries: Vec<Value> =
        serde_json::from_str(inv["data"]["entries"].as_str().expect("entries")).expect("json");
    let mut out: Vec<String> = entries
        .iter()
        .filter(|e| e["kind"] == "ConfigMap")
        .map(|e| {
            format!(
                "{}/{}",
                e["namespace"].as_str().unwrap_or_default(),
                e["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn apply_with_env_prunes_and_applies_only_that_environment_and_keeps_the_others_recorded() {
    let repo = TestRepo::new("environments: [dev, prod]\n");
    repo.write("components/app/templates/extra.yaml", EXTRA);
    let t = common::unique("envs");
    repo.tenant(&t, &format!("  environments: [dev, prod]\n{APP}"));
    // A tenant with no dev environment: an apply of dev leaves it out.
    let p = common::unique("prodonly");
    repo.tenant(&p, &format!("  environments: [prod]\n{APP}"));
    let (dev, prod) = (format!("{t}-dev"), format!("{t}-prod"));
    apply_json(repo.path(), &[], 0);
    assert!(exists("configmap", &dev, "app-extra") && exists("configmap", &prod, "app-extra"));

    // Git drops app-extra and adds app-new, in both environments.
    repo.remove("components/app/templates/extra.yaml");
    repo.write("components/app/templates/new.yaml", NEW);

    the_diff_of_one_environment_shows_its_changes_only(&repo, &t, &dev, &prod);
    // Apply dev: dev's copy is pruned and app-new created there; prod is untouched and its
    // app-extra is still recorded.
    let p_status = inventory_status(&repo, &p);
    let (out, _) = apply_json(repo.path(), &["--env", "dev"], 0);
    let report = tenant_report(&out, &t);
    let reported: Vec<&Value> = out["tenants"].as_array().unwrap().iter().collect();
    assert_eq!(reported.len(), 1, "only {t} has dev: {out}");
    assert_eq!(inventory_status(&repo, &p), p_status, "{p} untouched");
    assert!(exists("configmap", &format!("{p}-prod"), "app-extra"));
    assert_eq!(report["counts"]["pruned"], 1, "{out}");
    assert_eq!(report["counts"]["created"], 1, "{out}");
    assert!(!exists("configmap", &dev, "app-extra"));
    assert!(exists("configmap", &dev, "app-new"));
    assert!(exists("configmap", &prod, "app-extra"), "prod's copy stays");
    assert!(
        !exists("configmap", &prod, "app-new"),
        "prod is not applied"
    );
    let recorded = recorded_configmaps(&repo, &t);
    for want in [
        format!("{dev}/app-config"),
        format!("{dev}/app-new"),
        format!("{prod}/app-config"),
        format!("{prod}/app-extra"),
    ] {
        assert!(recorded.contains(&want), "{want} in {recorded:?}");
    }
    assert!(
        !recorded.contains(&format!("{dev}/app-extra")),
        "{recorded:?}"
    );
    // No input hash stands for a tenant synced in part: the next sync renders it in full.
    assert!(
        inventory_status(&repo, &t)["inputs"].is_null(),
        "{}",
        inventory_status(&repo, &t)
    );

    // Again: nothing to do in dev, and still nothing done in prod.
    let (again, _) = apply_json(repo.path(), &["--tenant", &t, "--env", "dev"], 0);
    let counts = &tenant_report(&again, &t)["counts"];
    assert_eq!(
        (&counts["created"], &counts["pruned"]),
        (&0.into(), &0.into())
    );
    assert!(exists("configmap", &prod, "app-extra"));

    // The whole tenant: prod catches up.
    let (full, _) = apply_json(repo.path(), &[], 0);
    let report = tenant_report(&full, &t);
    assert_eq!(report["counts"]["pruned"], 1, "{full}");
    assert_eq!(report["counts"]["created"], 1, "{full}");
    assert!(!exists("configmap", &prod, "app-extra"));
    assert!(exists("configmap", &prod, "app-new"));
    assert!(!recorded_configmaps(&repo, &t).contains(&format!("{prod}/app-extra")));
    assert!(!exists("configmap", &format!("{p}-prod"), "app-extra"));
    let clean = fief("diff", repo.path(), &[]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stdout));
}

/// `fief diff --env dev` shows dev's changes only; a misspelt environment is a usage error
/// with a did-you-mean.
fn the_diff_of_one_environment_shows_its_changes_only(
    repo: &TestRepo,
    t: &str,
    dev: &str,
    prod: &str,
) {
    // The diff of dev shows dev's changes only.
    let diff = fief("diff", repo.path(), &["--tenant", t, "--env", "dev"]);
    let shown = text(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{shown}{}", text(&diff.stderr));
    assert!(
        shown.contains(&format!("# tenant {t}: delete ConfigMap/{dev}/app-extra")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("# tenant {t}: create ConfigMap/{dev}/app-new")),
        "{shown}"
    );
    assert!(!shown.contains(prod), "prod is not shown: {shown}");
    let typo = fief("diff", repo.path(), &["--tenant", t, "--env", "prd"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        text(&typo.stderr).contains("did you mean `prod`"),
        "{}",
        text(&typo.stderr)
    );
}
