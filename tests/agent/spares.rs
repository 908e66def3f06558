//! Spare tenants: `fief spares` keeps the pool in git at fief.yaml's `spares.count`, the agent
//! applies the spares like any tenant and marks them in status, and `fief allocate` turns a
//! Ready spare into a customer's tenant and refills the pool in one commit.
//!
//! The offline tests work on temporary checkouts; the agent test runs against the real control
//! plane.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::agent::{Agent, GitServer, condition, git, small_repo, status, wait_until};
use common::offline::{fief, stderr, stdout, write_file};

const SPARES: &str = "spares:\n  count: 3\n  labels: {plan: trial}\n  components:\n    - name: app\n      values: {greeting: spare}\n";

/// A checkout of a small repo with `spares:`, committed, with a git identity.
fn checkout(dir: &Path, agent_ns: &str) {
    for (path, text) in small_repo(agent_ns, &[]) {
        let text = if path == "fief.yaml" {
            format!("{text}{SPARES}")
        } else {
            text
        };
        write_file(dir, &path, &text);
    }
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Platform"]);
    git(dir, &["config", "user.email", "platform@example.com"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "initial"]);
}

/// The tenant files in `dir` that say `spare: true`.
fn spares_in(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir.join("tenants"))
        .map(|rd| rd.flatten().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("spare: true")))
        .filter_map(|e| {
            e.path()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn spares_tops_the_pool_up_to_the_count_with_valid_dns_safe_tenants_and_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    checkout(dir.path(), "fief-system");
    let repo = dir.path().to_str().unwrap();
    let out = fief(&["spares", repo, "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("3 missing"), "{}", stdout(&out));
    assert!(spares_in(dir.path()).is_empty());

    let out = fief(&["spares", repo, "--commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pool = spares_in(dir.path());
    assert_eq!(pool.len(), 3, "{pool:?}");
    assert!(
        pool.iter().all(|n| n.starts_with("t-") && n.len() == 10),
        "{pool:?}"
    );
    assert_eq!(git(dir.path(), &["status", "--porcelain"]).trim(), "");
    let out = fief(&["validate", repo]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // A full pool: nothing to do, nothing committed.
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let out = fief(&["spares", repo, "--commit"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(git(dir.path(), &["rev-parse", "HEAD"]), head);
}

#[test]
fn allocate_makes_one_commit_with_the_customers_tenant_and_a_new_spare_and_pushes_it() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    git(remote.path(), &["init", "-q", "--bare", "-b", "main"]);
    checkout(dir.path(), "fief-system");
    git(
        dir.path(),
        &["remote", "add", "origin", remote.path().to_str().unwrap()],
    );
    git(dir.path(), &["push", "-q", "-u", "origin", "main"]);
    let repo = dir.path().to_str().unwrap();
    assert_eq!(fief(&["spares", repo, "--commit"]).status.code(), Some(0));
    let before = spares_in(dir.path());

    let out = fief(&[
        "allocate",
        repo,
        "--offline",
        "--organization",
        "Acme",
        "--owner-email",
        "ops@acme.example",
        "--label",
        "customer=acme",
        "--set",
        "app.greeting=welcome",
        "--push",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tenant = result["tenant"].as_str().unwrap().to_string();
    assert!(before.contains(&tenant), "{tenant} not in {before:?}");
    let text = std::fs::read_to_string(dir.path().join(format!("tenants/{tenant}.yaml"))).unwrap();
    assert!(!text.contains("spare"), "{text}");
    for want in [
        "organization: Acme",
        "customer: acme",
        "plan: trial",
        "greeting: welcome",
    ] {
        assert!(text.contains(want), "{want} missing in\n{text}");
    }
    // The pool is back at 3, and the remote has one commit with exactly those two files.
    assert_eq!(spares_in(dir.path()).len(), 3);
    let added = result["added"][0].as_str().unwrap();
    let files = git(remote.path(), &["show", "--name-only", "--format=", "main"]);
    let mut files: Vec<&str> = files.lines().collect();
    files.sort();
    let mut want = vec![
        format!("tenants/{added}.yaml"),
        format!("tenants/{tenant}.yaml"),
    ];
    want.sort();
    assert_eq!(files, want);
    let out = fief(&["validate", repo]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn allocate_refuses_bad_requests_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    checkout(dir.path(), "fief-system");
    let repo = dir.path().to_str().unwrap();
    assert_eq!(fief(&["spares", repo, "--commit"]).status.code(), Some(0));
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let cases: [&[&str]; 3] = [
        &["--offline", "--set", "db.size=1"],
        &["--spare", "no-such-tenant"],
        &["--offline", "--label", "no-equals-sign"],
    ];
    for extra in cases {
        let mut args = vec!["allocate", repo, "--commit"];
        args.extend_from_slice(extra);
        let out = fief(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert_eq!(
            git(dir.path(), &["status", "--porcelain"]).trim(),
            "",
            "{extra:?}"
        );
    }
    assert_eq!(git(dir.path(), &["rev-parse", "HEAD"]), head);
    // A repo without `spares:` says what to add.
    write_file(dir.path(), "fief.yaml", "agentNamespace: fief-system\n");
    let out = fief(&["spares", repo]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("spares:"), "{}", stderr(&out));
}

#[test]
fn the_agent_applies_spares_marks_them_and_allocate_takes_a_ready_one_and_refills_the_pool() {
    let agent_ns = common::unique("fief-spare");
    let mut files = small_repo(&agent_ns, &[]);
    files[0].1.push_str(SPARES);
    let server = GitServer::new(&files);
    let repo = server.repo();
    git(&repo, &["config", "user.name", "Platform"]);
    git(&repo, &["config", "user.email", "platform@example.com"]);
    let repo_arg = repo.to_str().unwrap();
    let kubeconfig = common::control_plane()
        .admin_kubeconfig()
        .to_str()
        .unwrap()
        .to_string();
    // With no spare applied yet, allocate refuses and says why.
    assert_eq!(
        fief(&["spares", repo_arg, "--commit"]).status.code(),
        Some(0)
    );
    let pool = spares_in(&repo);
    let out = fief(&["allocate", repo_arg, "--kubeconfig", &kubeconfig]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not applied yet"), "{}", stderr(&out));

    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let ready_spare = |t: &str| {
        let s = status(&agent_ns, t);
        s["spare"] == true && condition(&s, "Ready") == "True"
    };
    wait_until("3 spares Ready", Duration::from_secs(30), || {
        pool.iter().all(|t| ready_spare(t))
    });
    let out = fief(&["status", "-n", &agent_ns, "--kubeconfig", &kubeconfig]);
    assert_eq!(
        stdout(&out).matches("SPARE: ").count(),
        3,
        "{}",
        stdout(&out)
    );

    let out = fief(&[
        "allocate",
        repo_arg,
        "--kubeconfig",
        &kubeconfig,
        "--organization",
        "Acme",
        "--set",
        "app.greeting=welcome",
        "--commit",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tenant = result["tenant"].as_str().unwrap().to_string();
    assert!(pool.contains(&tenant));
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "the customer's tenant applied",
        Duration::from_secs(30),
        || {
            let s = status(&agent_ns, &tenant);
            s["spare"] != true
                && condition(&s, "Ready") == "True"
                && common::agent::configmap_value(
                    &format!("{tenant}-prod"),
                    "app-config",
                    "greeting",
                )
                .as_deref()
                    == Some("welcome")
        },
    );
    let refill = spares_in(&repo);
    assert_eq!(refill.len(), 3);
    wait_until("the pool back at 3 Ready", Duration::from_secs(30), || {
        refill.iter().all(|t| ready_spare(t))
    });
}
