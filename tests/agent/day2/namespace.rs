//! The day-2 commands find the agent's namespace from `-n`, else `--repo`'s fief.yaml, else
//! the current folder's, else `fief-system`, whatever namespace the kubeconfig context names
//! (here a tenant's, as `kubens` leaves it); they write nothing into that tenant namespace, and
//! where no fief is they say which namespace they read and exit 2, asking nothing.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::agent::{Agent, GitServer, small_repo};
use common::kubectl::Kubectl;
use common::util::text;

/// A copy of `kubeconfig` whose current context's namespace is `namespace`.
fn with_context_namespace(kubeconfig: &Path, namespace: &str, dir: &Path) -> PathBuf {
    let copy = dir.join("kubeconfig");
    std::fs::copy(kubeconfig, &copy).unwrap();
    Kubectl::kubeconfig(&copy).ok(&[
        "config",
        "set-context",
        "--current",
        "--namespace",
        namespace,
    ]);
    copy
}

/// `fief <args> --kubeconfig <kubeconfig>`, run in `dir`.
fn fief_in(dir: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run fief")
}

/// Assert the exit code; stdout and stderr together.
fn expect(out: &Output, code: i32) -> String {
    let both = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{both}");
    both
}

/// The ConfigMaps of `ns` (name → resourceVersion), read with `kubeconfig`.
fn configmaps(kubeconfig: &Path, ns: &str) -> BTreeMap<String, String> {
    let list = Kubectl::kubeconfig(kubeconfig)
        .json(&["get", "configmaps", "-n", ns])
        .unwrap_or_default();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|cm| {
            let m = &cm["metadata"];
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_string();
            (s("name"), s("resourceVersion"))
        })
        .collect()
}

#[test]
fn with_a_tenant_namespace_in_the_context_day2_commands_find_the_agent_from_n_repo_and_the_current_folder_and_write_nothing_there()
 {
    let agent_ns = common::unique("fief-d2n");
    let a = common::unique("na");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&a, "hi")]));
    let _agent = Agent::start(&server.url(), &["--interval", "600s"]);
    let tenant_ns = format!("{a}-prod");
    let tmp = tempfile::tempdir().unwrap();
    let admin = common::control_plane().admin_kubeconfig();
    let kubeconfig = with_context_namespace(admin, &tenant_ns, tmp.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let (out_of_repo, repo) = (elsewhere.path(), server.repo());
    let repo_arg = repo.to_str().unwrap();
    let before = configmaps(admin, &tenant_ns);

    for args in [
        vec!["status", "-n", &agent_ns],
        vec!["status", "--repo", repo_arg],
    ] {
        let both = expect(&fief_in(out_of_repo, &kubeconfig, &args), 0);
        assert!(
            both.contains(&a) && both.contains(&agent_ns),
            "{args:?}: {both}"
        );
    }
    let both = expect(&fief_in(&repo, &kubeconfig, &["status"]), 0);
    assert!(both.contains(&a), "from the current folder: {both}");

    let once = ["--timeout", "60s"];
    for (dir, args) in [
        (
            out_of_repo,
            vec!["reconcile", "-n", &agent_ns, "--tenant", &a],
        ),
        (out_of_repo, vec!["reconcile", "--repo", repo_arg]),
        (repo.as_path(), vec!["reconcile", "--tenant", &a]),
    ] {
        let args: Vec<&str> = args.into_iter().chain(once).collect();
        let both = expect(&fief_in(dir, &kubeconfig, &args), 0);
        assert!(both.contains("Ready"), "{args:?}: {both}");
    }
    expect(&fief_in(&repo, &kubeconfig, &["suspend", &a]), 0);
    expect(
        &fief_in(
            out_of_repo,
            &kubeconfig,
            &["resume", &a, "--repo", repo_arg],
        ),
        0,
    );

    // Nothing names a namespace: fief-system, where no test of this binary runs fief. Each
    // command names it (and the context's namespace it does not use), exits 2, asks nothing.
    for args in [
        vec!["status"],
        vec!["reconcile", "--timeout", "5s"],
        vec!["reconcile", "--tenant", &a, "--timeout", "5s"],
        vec!["suspend", &a],
    ] {
        let both = expect(&fief_in(out_of_repo, &kubeconfig, &args), 2);
        assert!(
            both.contains("namespace fief-system (the default")
                && both.contains(&format!("`{tenant_ns}` is not where fief looks")),
            "{args:?}: {both}"
        );
    }
    assert!(!configmaps(admin, "fief-system").contains_key("fief-reconcile"));
    assert_eq!(
        before,
        configmaps(admin, &tenant_ns),
        "a day-2 command wrote into the tenant namespace the context names"
    );
}

#[test]
fn with_a_tenant_namespace_in_the_context_day2_commands_find_an_agent_in_fief_system_by_default() {
    let cp = common::own_control_plane();
    let admin = cp.admin_kubeconfig().to_path_buf();
    let a = common::unique("nd");
    let server = GitServer::new(&small_repo("fief-system", &[(&a, "hi")]));
    let admin_arg = admin.to_str().unwrap();
    let agent = Agent::start(
        &server.url(),
        &["--interval", "600s", "--kubeconfig", admin_arg],
    );
    let tenant_ns = format!("{a}-prod");
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = with_context_namespace(&admin, &tenant_ns, tmp.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let before = configmaps(&admin, &tenant_ns);

    let both = expect(&fief_in(elsewhere.path(), &kubeconfig, &["status"]), 0);
    assert!(both.contains(&a) && both.contains("fief-system"), "{both}");
    for args in [
        vec!["reconcile", "--timeout", "60s"],
        vec!["reconcile", "--tenant", &a, "--timeout", "60s"],
    ] {
        let both = expect(&fief_in(elsewhere.path(), &kubeconfig, &args), 0);
        assert!(both.contains("Ready"), "{args:?}: {both}");
    }
    assert_eq!(
        before,
        configmaps(&admin, &tenant_ns),
        "a day-2 command wrote into the tenant namespace the context names"
    );
    drop(agent);
    cp.stop();
}
