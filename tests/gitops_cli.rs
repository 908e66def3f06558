//! The GitOps CLI on real git repos: `fief diff REPO --from REF [--to REF]` (pull-request diffs
//! without a cluster) and `fief bump` (version changes across tenants, committed).

mod common;

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
