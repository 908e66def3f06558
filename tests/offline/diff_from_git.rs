//! The GitOps CLI on real git repos: `fief diff REPO --from REF [--to REF]` (pull-request diffs
//! without a cluster) and components pinned to a git ref. `fief bump` is in tests/offline/bump.rs.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::util::{git, text, write};

fn fief(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .output()
        .expect("run fief")
}

fn tenant(name: &str) -> String {
    format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n"
    )
}

/// A git repo whose tenants repo lives in `tenants-repo/` (a subfolder, as in a monorepo):
/// commit 1 has three tenants; commit 2 changes the shared component, adds a Secret for
/// `acme` only, and removes `gone`'s file.
fn two_commits(root: &Path) -> String {
    git(root, &["init", "-q", "-b", "main"]);
    let r = root.join("tenants-repo");
    write(&r, "components/app/varz.yaml", "greeting: hello\n");
    write(
        &r,
        "components/app/templates/cm.yaml",
        "# a comment that moves around\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  greeting: {{ values.greeting }}\n",
    );
    for t in ["acme", "beta", "gone"] {
        write(&r, &format!("tenants/{t}.yaml"), tenant(t));
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    let first = git(root, &["rev-parse", "HEAD"]);
    write(&r, "components/app/varz.yaml", "greeting: hi\n");
    write(
        &r,
        "components/app/templates/cm.yaml",
        "\n\n# the comment moved: no change\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  greeting: {{ values.greeting }}\n",
    );
    write(
        &r,
        "components/app/templates/secret.yaml",
        "{% if tenant.name == 'acme' %}apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n{% endif %}\n",
    );
    std::fs::remove_file(r.join("tenants/gone.yaml")).expect("remove tenant");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "two"]);
    first
}

#[test]
fn a_pull_request_diff_needs_no_cluster_and_groups_a_shared_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = two_commits(dir.path());
    let repo = dir.path().join("tenants-repo");
    let repo = repo.to_str().expect("utf-8 path");
    // No kubeconfig anywhere: the command must not try to reach a cluster.
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args([
            "diff", repo, "--from", &first, "--to", "HEAD", "--color", "never",
        ])
        .env("KUBECONFIG", "/nonexistent")
        .output()
        .expect("run fief");
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "differences exit 1: {}",
        text(&out.stderr)
    );
    assert!(
        stdout.starts_with("2 tenants changed, 0 unchanged"),
        "summary first: {stdout}"
    );
    assert!(
        stdout.contains("acme: 1 added, 1 changed, 0 removed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("beta: 0 added, 1 changed, 0 removed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("orphaned: objects left running): gone"),
        "{stdout}"
    );
    assert!(stdout.contains("-  greeting: hello") && stdout.contains("+  greeting: hi"));
    assert!(
        !stdout.contains("comment"),
        "source comments are never changes: {stdout}"
    );
    assert!(!stdout.contains("hunter2"), "secret values are never shown");

    let md = text(
        &fief(&[
            "diff", repo, "--from", &first, "--to", "HEAD", "-o", "markdown",
        ])
        .stdout,
    );
    assert!(md.starts_with("### fief diff"), "{md}");
    assert!(md.contains("| `acme` | 1 | 1 | 0 |"), "{md}");
    assert!(md.contains("```diff"), "{md}");
    assert!(!md.contains("hunter2"));

    let json = fief(&["diff", repo, "--from", &first, "--to", "HEAD", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON output");
    assert_eq!(v["tenants"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["orphaned"][0], "gone");

    // Without --to, the files in the folder are the new side; HEAD against itself is equal.
    let same = fief(&["diff", repo, "--from", "HEAD"]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stdout));
    assert!(
        text(&same.stdout).is_empty(),
        "no difference prints nothing"
    );
    let md = fief(&["diff", repo, "--from", "HEAD", "-o", "markdown"]);
    assert!(text(&md.stdout).contains("**0 tenants changed**, 2 unchanged"));
}

#[test]
fn a_shared_change_in_many_tenants_is_shown_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "components/app/varz.yaml", "greeting: hello\n");
    write(
        root,
        "components/app/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  greeting: {{ values.greeting }}\n  owner: {{ tenant.name }}\n",
    );
    for i in 0..30 {
        write(
            root,
            &format!("tenants/t{i:02}.yaml"),
            tenant(&format!("t{i:02}")),
        );
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    write(root, "components/app/varz.yaml", "greeting: hi\n");
    let out = fief(&[
        "diff",
        root.to_str().expect("utf-8"),
        "--from",
        "main",
        "--color",
        "never",
    ]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("same change in 30 tenants: t00, t01"),
        "{stdout}"
    );
    assert!(stdout.contains("and 20 more"), "{stdout}");
    assert_eq!(stdout.matches("+  greeting: hi").count(), 1, "{stdout}");
}

#[test]
fn a_folder_outside_git_or_an_unknown_revision_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = fief(&[
        "diff",
        dir.path().to_str().expect("utf-8"),
        "--from",
        "main",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not inside a git checkout"),
        "{}",
        text(&out.stderr)
    );
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "tenants/a.yaml", tenant("a"));
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    let out = fief(&["diff", root.to_str().expect("utf-8"), "--from", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown revision `nope`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_component_pinned_to_a_tag_renders_as_it_is_at_that_tag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "components/app/varz.yaml", "greeting: one\n");
    write(
        root,
        "components/app/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  greeting: {{ values.greeting }}\n",
    );
    write(root, "tenants/beta.yaml", tenant("beta"));
    write(
        root,
        "tenants/acme.yaml",
        tenant("acme").replace("- name: app\n", "- name: app\n      ref: app-1.0\n"),
    );
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    git(root, &["tag", "app-1.0"]);
    write(root, "components/app/varz.yaml", "greeting: two\n");
    git(root, &["commit", "-q", "-am", "two"]);
    let path = root.to_str().expect("utf-8");
    let greeting = |tenant: &str| {
        let out = fief(&["render", path, "--tenant", tenant]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let yaml = text(&out.stdout);
        let line = yaml
            .lines()
            .find(|l| l.contains("greeting:"))
            .map(str::to_string);
        line.unwrap_or_default()
    };
    assert_eq!(
        greeting("acme").trim(),
        "greeting: one",
        "pinned to app-1.0"
    );
    assert_eq!(greeting("beta").trim(), "greeting: two", "at the head");
    // Moving the tag moves exactly the tenant pinned to it.
    git(root, &["tag", "-f", "app-1.0", "HEAD"]);
    assert_eq!(greeting("acme").trim(), "greeting: two");

    // A pin to a ref that does not exist fails that tenant only, with a clear message.
    write(
        root,
        "tenants/acme.yaml",
        tenant("acme").replace("- name: app\n", "- name: app\n      ref: app-9.9\n"),
    );
    let out = fief(&["validate", path]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("pinned to ref `app-9.9`") && err.contains("tenant `acme`"),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("beta: ok"),
        "{}",
        text(&out.stdout)
    );
}
