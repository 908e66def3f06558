//! A chart from a private Helm HTTP repository (basic auth, served on loopback): fetched with
//! the credentials `helm repo add --username --password` stored in Helm's repository config
//! (`$HELM_REPOSITORY_CONFIG`), refused with the server's answer without them, and the
//! password never printed or written to fief.lock.
//!
//! Needs `$FIEF_RENDER_HELPER` and `$FIEF_HELM_BIN` (tools/test.sh sets them) and `go` for the
//! chart's module download.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::chart_repos::{HttpRepo, digest_of_file, helm, package};
use crate::common::offline::{metrics_server_chart, render_helper, stderr, stdout, write_file};

const USER: &str = "fleet";
const PASSWORD: &str = "s3cret-chart-password";

/// `fief ARGS` with the chart cache in `cache` and Helm's config under `helm_home`.
fn fief(cache: &Path, helm_home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .env("FIEF_RENDER_HELPER", render_helper())
        .env("FIEF_CHART_CACHE", cache)
        .env("HELM_CONFIG_HOME", helm_home.join("config"))
        .env(
            "HELM_REPOSITORY_CONFIG",
            helm_home.join("config/repositories.yaml"),
        )
        .env("HELM_CACHE_HOME", helm_home.join("cache"))
        .output()
        .expect("run fief")
}

fn tenants_repo(dir: &Path, repository: &str) {
    write_file(dir, "fief.yaml", "");
    write_file(
        dir,
        "tenants/acme.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
         environments: [dev]\n  components:\n    - name: ms\n      values: {rbac: {create: \
         false}, apiService: {create: false}}\n",
    );
    write_file(
        dir,
        "components/ms/component.yaml",
        &format!(
            "kind: helm\nchart:\n  repository: {repository}\n  name: metrics-server\n  version: \"3.12.2\"\n"
        ),
    );
}

fn assert_no_password(o: &Output, what: &str) {
    for text in [stdout(o), stderr(o)] {
        assert!(
            !text.contains(PASSWORD),
            "{what} printed the password:\n{text}"
        );
    }
}

#[test]
fn a_private_http_repository_is_read_with_the_credentials_helm_repo_add_stored() {
    let work = tempfile::tempdir().expect("tempdir");
    let (helm_home, cache, repo) = (
        work.path().join("helm"),
        work.path().join("cache"),
        work.path().join("repo"),
    );
    let served = work.path().join("served");
    let archive = package(&helm_home, &metrics_server_chart(), "3.12.2", &served);
    let http = HttpRepo::serve_with_basic_auth(&served, USER, PASSWORD);
    http.index(&helm_home);
    tenants_repo(&repo, &http.url);
    let path = repo.to_str().expect("utf-8");

    let refused = fief(&cache, &helm_home, &["chart", "update", path]);
    assert!(!refused.status.success(), "fetched without credentials");
    let why = stderr(&refused);
    assert!(
        why.contains("401") && why.contains("helm repo add"),
        "{why}"
    );
    assert!(!repo.join("fief.lock").exists(), "a lock was written");

    helm(
        &helm_home,
        &[
            "repo",
            "add",
            "private",
            &http.url,
            "--username",
            USER,
            "--password",
            PASSWORD,
            "--repository-config",
            helm_home
                .join("config/repositories.yaml")
                .to_str()
                .expect("utf-8"),
        ],
    );
    let update = fief(&cache, &helm_home, &["chart", "update", path]);
    assert!(update.status.success(), "{}", stderr(&update));
    assert_no_password(&update, "fief chart update");
    let lock = std::fs::read_to_string(repo.join("fief.lock")).expect("fief.lock");
    assert!(lock.contains(&digest_of_file(&archive)), "{lock}");
    assert!(!lock.contains(PASSWORD) && !lock.contains(USER), "{lock}");

    let render = fief(&cache, &helm_home, &["render", path]);
    assert!(render.status.success(), "{}", stderr(&render));
    assert!(
        stdout(&render).contains("kind: Deployment"),
        "{}",
        stdout(&render)
    );
    assert_no_password(&render, "fief render");
}
