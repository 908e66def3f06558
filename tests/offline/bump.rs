//! `fief bump` on real git repos: a component's version or ref changed in the chosen tenant
//! files, one line each with comments kept, committed once; refusals write nothing.

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

const COMMENTED: &str = "# Tenant acme: owned by the payments team.\napiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: NAME\n  labels: {tier: TIER}\nspec:\n  components:\n    - name: app   # the storefront\n      version: 1.4.2   # bumped by fief\n      values: {replicas: 2}\n";

fn bump_repo(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    write(
        root,
        "components/app/varz.yaml",
        "greeting: hello\nreplicas: 1\n",
    );
    write(
        root,
        "components/app/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: {{ component.version }}\n",
    );
    for (name, tier) in [
        ("acme", "canary"),
        ("beta", "standard"),
        ("gamma", "standard"),
    ] {
        write(
            root,
            &format!("tenants/{name}.yaml"),
            COMMENTED.replace("NAME", name).replace("TIER", tier),
        );
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
}

#[test]
fn bump_changes_one_line_per_chosen_tenant_keeps_comments_and_commits_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    bump_repo(root);
    // An unrelated staged change stays staged, not committed.
    write(
        root,
        "components/app/varz.yaml",
        "greeting: hi\nreplicas: 1\n",
    );
    git(root, &["add", "components/app/varz.yaml"]);
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args([
            "bump",
            root.to_str().expect("utf-8"),
            "app",
            "--version",
            "1.5.0",
        ])
        .args(["--selector", "tier=standard", "--commit"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "fief test")
        .env("GIT_AUTHOR_EMAIL", "test@fief.invalid")
        .env("GIT_COMMITTER_NAME", "fief test")
        .env("GIT_COMMITTER_EMAIL", "test@fief.invalid")
        .current_dir(root)
        .output()
        .expect("run fief");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(
        diff.contains("-      version: 1.4.2   # bumped by fief"),
        "{diff}"
    );
    assert!(
        diff.contains("+      version: 1.5.0   # bumped by fief"),
        "{diff}"
    );
    assert!(
        !diff.contains("acme"),
        "acme is a canary, not chosen: {diff}"
    );
    // One commit, naming the tenants, holding exactly one changed line per tenant file.
    assert_eq!(git(root, &["rev-list", "--count", "HEAD"]), "2");
    let message = git(root, &["log", "-1", "--format=%s"]);
    assert_eq!(message, "bump app to 1.5.0 for 2 tenants: beta, gamma");
    let stat = git(root, &["show", "--numstat", "--format=", "HEAD"]);
    assert_eq!(
        stat, "1\t1\ttenants/beta.yaml\n1\t1\ttenants/gamma.yaml",
        "{stat}"
    );
    assert_eq!(
        git(root, &["diff", "--cached", "--name-only"]),
        "components/app/varz.yaml"
    );
    // The edited files still render, with the new version.
    let render = fief(&["render", root.to_str().expect("utf-8"), "--tenant", "beta"]);
    assert!(
        text(&render.stdout).contains("version: \"1.5.0\""),
        "{}",
        text(&render.stdout)
    );
}

fn bump_cmd(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["bump", root.to_str().expect("utf-8")])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "fief test")
        .env("GIT_AUTHOR_EMAIL", "test@fief.invalid")
        .env("GIT_COMMITTER_NAME", "fief test")
        .env("GIT_COMMITTER_EMAIL", "test@fief.invalid")
        .current_dir(root)
        .output()
        .expect("run fief")
}

#[test]
fn bump_ref_pins_the_chosen_tenants_with_one_line_each_and_the_pin_renders_the_old_template() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    bump_repo(root);
    git(root, &["tag", "app-old"]);
    write(
        root,
        "components/app/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: {{ component.version }}\n  edition: two\n",
    );
    git(root, &["commit", "-q", "-am", "two"]);

    let out = bump_cmd(
        root,
        &["app", "--ref", "app-old", "--tenant", "beta", "--commit"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(diff.contains("+      ref: app-old\n"), "{diff}");
    assert_eq!(
        diff.lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .count(),
        1,
        "{diff}"
    );
    assert_eq!(
        diff.lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("---"))
            .count(),
        0,
        "{diff}"
    );
    assert_eq!(git(root, &["rev-list", "--count", "HEAD"]), "3");
    assert_eq!(
        git(root, &["log", "-1", "--format=%s"]),
        "bump app to ref app-old for 1 tenant: beta"
    );
    assert_eq!(
        git(root, &["show", "--numstat", "--format=", "HEAD"]),
        "1\t0\ttenants/beta.yaml"
    );
    let beta = std::fs::read_to_string(root.join("tenants/beta.yaml")).expect("read");
    assert!(beta.contains("    - name: app   # the storefront\n      ref: app-old\n      version: 1.4.2   # bumped by fief\n"), "{beta}");
    // The pinned tenant renders the template as tagged; the others at the head.
    let render =
        |t: &str| text(&fief(&["render", root.to_str().expect("utf-8"), "--tenant", t]).stdout);
    assert!(!render("beta").contains("edition"), "{}", render("beta"));
    assert!(
        render("gamma").contains("edition: two"),
        "{}",
        render("gamma")
    );

    // Moving the pin is a one-line change in place; the same ref again changes nothing.
    let out = bump_cmd(root, &["app", "--ref", "main", "--tenant", "beta"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(
        diff.contains("-      ref: app-old\n+      ref: main\n"),
        "{diff}"
    );
    let again = bump_cmd(root, &["app", "--ref", "main", "--tenant", "beta"]);
    assert_eq!(again.status.code(), Some(0));
    assert!(text(&again.stdout).is_empty());
    assert!(
        text(&again.stderr).contains("already has app ref main"),
        "{}",
        text(&again.stderr)
    );
}

#[test]
fn bump_of_a_tenant_without_the_component_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    bump_repo(root);
    let out = fief(&[
        "bump",
        root.to_str().expect("utf-8"),
        "web",
        "--version",
        "2",
        "--all",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no tenant uses component web"));
    let out = fief(&[
        "bump",
        root.to_str().expect("utf-8"),
        "app",
        "--version",
        "2",
        "--percent",
        "34",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).matches("+      version: \"2\"").count(),
        2,
        "34% of 3 is 2 tenants"
    );
    assert_eq!(
        git(root, &["rev-list", "--count", "HEAD"]),
        "1",
        "no --commit, no commit"
    );
}

#[test]
fn bump_commit_without_a_git_identity_says_so_and_edits_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    bump_repo(root);
    let before = std::fs::read_to_string(root.join("tenants/beta.yaml")).expect("read");
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args([
            "bump",
            root.to_str().expect("utf-8"),
            "app",
            "--version",
            "1.5.0",
        ])
        .args(["--tenant", "beta", "--commit"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", root)
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .env_remove("GIT_COMMITTER_NAME")
        .env_remove("GIT_COMMITTER_EMAIL")
        .env_remove("EMAIL")
        .current_dir(root)
        .output()
        .expect("run fief");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("git has no identity") && err.contains("git config user.email"),
        "{err}"
    );
    let after = std::fs::read_to_string(root.join("tenants/beta.yaml")).expect("read");
    assert_eq!(before, after, "nothing edited");
}
