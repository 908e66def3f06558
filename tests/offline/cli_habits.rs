//! How every command reads: the tenant named `-t`/`--tenant` (a bare name where one tenant is
//! meant), `-l` wherever tenants are chosen, and one plain line when there is no kubeconfig.
//! (Examples under every `--help`: a unit test of the argument definitions; completion of
//! tenant names: `render::limits`.)

use std::process::Command;

use crate::common::offline::*;

/// `fief ARGS` with no kubeconfig anywhere (HOME without `.kube`, no KUBECONFIG).
fn without_kubeconfig(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("run fief")
}

#[test]
fn a_missing_kubeconfig_is_one_plain_line_naming_the_file_and_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    init_repo(repo.path(), "stark");
    let repo = repo.path().to_str().unwrap();
    for args in [
        vec!["status"],
        vec!["apply", repo, "-t", "stark"],
        vec!["suspend", "-t", "stark"],
        vec!["reconcile", "-t", "stark"],
    ] {
        let out = without_kubeconfig(home.path(), &args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        let expected = format!(
            "error: no kubeconfig: {}/.kube/config does not exist",
            home.path().display()
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(&expected), "{args:?}: {err}");
        assert!(
            err.contains("give --kubeconfig FILE or set KUBECONFIG"),
            "{err}"
        );
    }
}

#[test]
fn one_tenant_is_named_with_t_or_tenant_or_bare_and_not_twice() {
    let home = tempfile::tempdir().unwrap();
    // Parsed, then stopped at the kubeconfig: the tenant argument was accepted.
    for args in [
        ["suspend", "-t", "stark"],
        ["suspend", "--tenant", "stark"],
        ["resume", "-t", "stark"],
    ] {
        let out = without_kubeconfig(home.path(), &args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
    }
    let out = without_kubeconfig(home.path(), &["resume", "stark"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let both = without_kubeconfig(home.path(), &["suspend", "stark", "-t", "wayne"]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    let none = without_kubeconfig(home.path(), &["suspend"]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("--tenant <NAME>"),
        "{}",
        stderr(&none)
    );
}

#[test]
fn bump_and_status_choose_tenants_with_l_as_render_does() {
    let dir = tempfile::tempdir().unwrap();
    init_repo(dir.path(), "stark");
    write_file(
        dir.path(),
        "tenants/wayne.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: wayne\n  labels:\n    tier: paid\nspec:\n  environments: [dev]\n  components:\n    - name: hello\n",
    );
    let repo = dir.path().to_str().unwrap();
    let bumped = fief(&[
        "bump",
        repo,
        "hello",
        "--version",
        "9.9",
        "-l",
        "tier!=free",
    ]);
    assert!(bumped.status.success(), "{}", stderr(&bumped));
    let wayne = std::fs::read_to_string(dir.path().join("tenants/wayne.yaml")).unwrap();
    let stark = std::fs::read_to_string(dir.path().join("tenants/stark.yaml")).unwrap();
    assert!(
        wayne.contains("version: \"9.9\"") || wayne.contains("version: 9.9"),
        "{wayne}"
    );
    assert!(!stark.contains("9.9"), "{stark}");
    let rendered = fief(&["validate", repo, "-l", "tier=paid"]);
    assert!(
        stdout(&rendered).starts_with("wayne: ok"),
        "{}",
        stdout(&rendered)
    );
    // status -l reads the labels from --repo before it asks the cluster.
    let home = tempfile::tempdir().unwrap();
    let none = without_kubeconfig(home.path(), &["status", "-l", "tier=gold", "--repo", repo]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("matches -l `tier=gold`"),
        "{}",
        stderr(&none)
    );
}
