//! `fief diff` tells the truth, against the real test control plane: it
//! shows every prune apply would do, dry-runs as the tenant identity (predicting apply's
//! 403s), falls back to a client-side comparison for read-only users, and skips tenants of
//! another cluster.
//!
//! This binary has its own control plane, so the RBAC granted here to the test users is seen
//! by these tests only.

use crate::common;

use std::path::Path;

use common::cluster_cli::*;
use common::util::text;

// ---- diff is honest ----

#[test]
fn diff_shows_the_prune_of_a_kind_the_render_no_longer_has() {
    let repo = TestRepo::new("");
    repo.write(
        "components/app/templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  token: s3cret\n",
    );
    let tenant = common::unique("dsec");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    repo.remove("components/app/templates/secret.yaml");
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    let shown = text(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{shown}{}", text(&diff.stderr));
    assert!(
        shown.contains(&format!(
            "# tenant {tenant}: delete Secret/{tenant}-prod/token"
        )),
        "{shown}"
    );
    assert!(
        !shown.contains("s3cret"),
        "secrets are never printed: {shown}"
    );
    assert!(
        shown.starts_with("1 tenant changed"),
        "summary first: {shown}"
    );
    let json = fief("diff", repo.path(), &["--tenant", &tenant, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("diff -o json");
    assert_eq!(v["tenants"][0]["objects"][0]["action"], "removed", "{v}");
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert_eq!(tenant_report(&out, &tenant)["counts"]["pruned"], 1, "{out}");
}

/// Give `user` read-only rights (get, list, watch) on every resource of the cluster.
fn grant_read_only(user: &str) {
    let role = format!("fief-test-read-{user}");
    let _ = kubectl(&[
        "create",
        "clusterrole",
        &role,
        "--verb=get,list,watch",
        "--resource=*.*",
    ]);
    let _ = kubectl(&[
        "create",
        "clusterrolebinding",
        &role,
        &format!("--clusterrole={role}"),
        &format!("--user={user}"),
    ]);
}

#[test]
fn diff_as_a_read_only_user_compares_client_side_with_a_note() {
    let repo = TestRepo::new("");
    let tenant = common::unique("dro");
    let ns = format!("{tenant}-prod");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    // `reader`: the one test user granted cluster-wide read (the isolation tests rely on the
    // others having no rights).
    grant_read_only("reader");
    let reader = common::control_plane().kubeconfig_for("reader");

    // Nothing changed: the read-only diff says so.
    let clean = fief_with("diff", repo.path(), &reader, &["--tenant", &tenant], &[]);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}{}",
        text(&clean.stdout),
        text(&clean.stderr)
    );

    // A hand edit of a field fief sets is shown, with the fallback note.
    kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "app-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"k":"hacked"}}"#,
    ]);
    let diff = fief_with("diff", repo.path(), &reader, &["--tenant", &tenant], &[]);
    let (shown, stderr) = (text(&diff.stdout), text(&diff.stderr));
    assert_eq!(diff.status.code(), Some(1), "{shown}{stderr}");
    assert!(
        shown.contains("-  k: hacked") && shown.contains("+  k: v"),
        "{shown}"
    );
    let note = stderr
        .lines()
        .find(|l| l.starts_with("note: ") && l.contains("compared client-side"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(note.contains("may not impersonate"), "{note}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn diff_dry_runs_as_the_tenant_identity_and_predicts_the_403_apply_hits() {
    let repo = TestRepo::new("");
    // The repo's own baseline: fief's built-in one, copied.
    let builtin = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    for f in std::fs::read_dir(&builtin).unwrap() {
        let f = f.unwrap();
        let body = std::fs::read_to_string(f.path()).unwrap();
        repo.write(
            &format!("baseline/{}", f.file_name().to_string_lossy()),
            &body,
        );
    }
    let tenant = common::unique("d403");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    // The baseline no longer lets the tenant identity write ConfigMaps.
    let deployer = std::fs::read_to_string(builtin.join("deployer.yaml")).unwrap();
    let narrowed = deployer.replace(
        "resources: {{ r.resources | to_json }}",
        "resources: {{ r.resources | reject(\"equalto\", \"configmaps\") | list | to_json }}",
    );
    assert_ne!(
        narrowed, deployer,
        "deployer.yaml renders fief.componentRules"
    );
    repo.write("baseline/deployer.yaml", &narrowed);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    // Now a changed ConfigMap: diff must predict the refusal, as the tenant identity.
    repo.write(
        "components/app/templates/config.yaml",
        &CONFIG.replace("k: v", "k: changed"),
    );
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    let stderr = text(&diff.stderr);
    assert_eq!(
        diff.status.code(),
        Some(3),
        "{}{stderr}",
        text(&diff.stdout)
    );
    assert!(
        stderr.contains(&format!(
            "dry-run apply ConfigMap/{tenant}-prod/app-config (as system:serviceaccount:{tenant}-prod:fief-tenant)"
        )) && stderr.contains("403 Forbidden"),
        "{stderr}"
    );
    let (_, applied) = apply_json(repo.path(), &["--tenant", &tenant], 3);
    assert!(applied.contains("403 Forbidden"), "{applied}");
}

#[test]
fn diff_skips_tenants_of_another_cluster_as_apply_does() {
    let repo = TestRepo::new("");
    let tenant = common::unique("dcl");
    repo.tenant(&tenant, &format!("  cluster: elsewhere\n{APP}"));
    let diff = fief("diff", repo.path(), &["--tenant", &tenant]);
    let (shown, stderr) = (text(&diff.stdout), text(&diff.stderr));
    assert_eq!(diff.status.code(), Some(0), "{shown}{stderr}");
    assert!(shown.is_empty(), "{shown}");
    assert!(
        stderr.contains("skipped") && stderr.contains(&tenant),
        "{stderr}"
    );
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 0);
    assert_eq!(tenant_report(&out, &tenant)["outcome"], "skipped", "{out}");
}

#[test]
fn diff_with_the_builtin_view_role_shows_what_it_can_read_and_names_what_it_cannot() {
    let repo = TestRepo::new("");
    let tenant = common::unique("dview");
    let ns = format!("{tenant}-prod");
    repo.tenant(&tenant, APP);
    apply_json(repo.path(), &["--tenant", &tenant], 0);
    let _ = kubectl(&[
        "create",
        "clusterrolebinding",
        "fief-test-view-bob",
        "--clusterrole=view",
        "--user=bob",
    ]);
    kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "app-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"k":"hacked"}}"#,
    ]);
    let bob = common::control_plane().kubeconfig_for("bob");
    let diff = fief_with("diff", repo.path(), &bob, &["--tenant", &tenant], &[]);
    let (shown, stderr) = (text(&diff.stdout), text(&diff.stderr));
    // `view` may not list Roles or RoleBindings: named, and the exit code says incomplete.
    assert_eq!(diff.status.code(), Some(3), "{shown}{stderr}");
    assert!(shown.contains("-  k: hacked"), "{shown}");
    assert!(
        stderr.contains("error: cannot compare Role objects: list Role")
            && stderr.contains("403 Forbidden"),
        "{stderr}"
    );
    assert!(stderr.contains("compared client-side"), "{stderr}");
    assert_one_line_error(&stderr);
}

#[test]
fn diff_without_the_age_key_right_after_an_apply_notes_the_secrets_it_cannot_compare_and_exits_0() {
    // The example repo (SOPS secrets, a test-only key) in an agent namespace of its own.
    let dir = tempfile::tempdir().expect("tempdir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tenants-repo");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(&example)
        .arg(dir.path().join("repo"))
        .status()
        .expect("cp");
    assert!(copied.success());
    let repo = dir.path().join("repo");
    let fief_yaml = std::fs::read_to_string(repo.join("fief.yaml")).expect("read");
    let ns = common::unique("fief-nokey");
    std::fs::write(
        repo.join("fief.yaml"),
        fief_yaml.replace(
            "agentNamespace: fief-system",
            &format!("agentNamespace: {ns}"),
        ),
    )
    .expect("write");
    let key = repo.join("age-key.TEST-ONLY.txt");
    let key = key.to_str().expect("utf-8");
    let applied = fief("apply", &repo, &["--tenant", "acme", "--age-key-file", key]);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stderr));
    let diff = common::cluster_cli::fief_with(
        "diff",
        &repo,
        common::control_plane().admin_kubeconfig(),
        &["--tenant", "acme"],
        &[("SOPS_AGE_KEY_FILE", ""), ("SOPS_AGE_KEY", "")],
    );
    let (out, err) = (text(&diff.stdout), text(&diff.stderr));
    assert_eq!(diff.status.code(), Some(0), "{out}{err}");
    assert!(err.contains("Secret(s) not compared"), "{err}");
    // With the key, the same Secrets are compared, and equal.
    let keyed = fief("diff", &repo, &["--tenant", "acme", "--age-key-file", key]);
    assert_eq!(keyed.status.code(), Some(0), "{}", text(&keyed.stdout));
    assert!(!text(&keyed.stderr).contains("not compared"));
}

#[test]
fn diff_of_the_whole_repo_reports_a_tenant_whose_file_was_deleted_as_orphaned_and_exits_1() {
    let repo = TestRepo::new("");
    let (kept, gone) = (common::unique("dkeep"), common::unique("dgone"));
    repo.tenant(&kept, APP);
    repo.tenant(&gone, APP);
    apply_json(repo.path(), &[], 0);
    repo.remove(&format!("tenants/{gone}.yaml"));
    let diff = fief("diff", repo.path(), &[]);
    let out = text(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{out}{}", text(&diff.stderr));
    assert!(
        out.contains(&format!("{gone}: orphaned: tenant file removed from git")),
        "{out}"
    );
    assert!(!out.contains(&format!("{kept}: orphaned")), "{out}");
}
