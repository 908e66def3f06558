//! Charts from a Helm HTTP repository and an OCI registry, both served on loopback by real
//! servers (a static file server over `helm repo index`'s output, and the pinned distribution
//! registry charts are pushed to with the pinned `helm push`): `fief chart update` writes
//! fief.lock with each archive's digest, the charts render as the same chart stored in the
//! repo, a chart published again under the same version is refused, an unlocked chart or a
//! version the lock does not have is refused with the command to run, and with the servers
//! stopped a warm cache still renders. Also packed subcharts (`charts/*.tgz`) against `helm
//! template`. The payload is the metrics-server chart.
//!
//! Needs `$FIEF_RENDER_HELPER`, `$FIEF_HELM_BIN`, `$FIEF_REGISTRY_BIN` (tools/test.sh sets
//! them) and `go` for the chart's module download.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use fief_core::model::Repo;
use fief_core::render::Renderer;
use fief_source::render_helper::HelperRenderer;
use serde_json::json;

use crate::common::chart_repos::{HttpRepo, Registry, copy_dir, digest_of_file, package};
use crate::common::offline::{
    fief_with_charts, line_of, metrics_server_chart, render_helper, stderr, stdout, write_file,
};

/// The version the tests publish the chart at.
const VERSION: &str = "3.12.2";

/// The tenant's values: no cluster-scoped objects, which a component may not make.
const VALUES: &str = "{rbac: {create: false}, apiService: {create: false}}";

/// A repo with tenant `acme` (environment dev) running component `ms`, whose component.yaml
/// is `component`.
fn tenants_repo(dir: &Path, component: &str) {
    write_file(dir, "fief.yaml", "");
    write_file(
        dir,
        "tenants/acme.yaml",
        &format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
             environments: [dev]\n  components:\n    - name: ms\n      values: {VALUES}\n"
        ),
    );
    write_file(dir, "components/ms/component.yaml", component);
}

/// `chart: {repository, name, version}` for a component.yaml.
fn remote(repository: &str, version: &str) -> String {
    format!(
        "kind: helm\nchart:\n  repository: {repository}\n  name: metrics-server\n  version: \"{version}\"\n"
    )
}

/// Both renders print the same objects (the `# Source:` comments name where each came from,
/// the repo's chart folder or the repository).
fn assert_same_objects(ours: &Output, expected: &Output, what: &str) {
    let objects = |o: &Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter(|l| !l.starts_with("# Source:"))
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (objects(ours), objects(expected));
    let first = a.iter().zip(&b).position(|(x, y)| x != y);
    assert!(
        a == b,
        "{what}: the objects differ ({} lines against {}), first at line {first:?}",
        a.len(),
        b.len()
    );
}

/// What the servers hold: the packaged chart, in an HTTP repository and a registry.
struct Published {
    _home: tempfile::TempDir,
    archive: std::path::PathBuf,
    http: HttpRepo,
    registry: Registry,
}

fn publish() -> Published {
    let home = tempfile::tempdir().expect("tempdir");
    let served = home.path().join("served");
    let archive = package(home.path(), &metrics_server_chart(), VERSION, &served);
    let http = HttpRepo::serve(&served);
    http.index(home.path());
    let registry = Registry::start();
    registry.push(home.path(), &archive);
    Published {
        _home: home,
        archive,
        http,
        registry,
    }
}

#[test]
fn charts_from_an_http_repository_and_a_registry_are_locked_render_as_in_repo_and_offline_once_cached()
 {
    let published = publish();
    let digest = digest_of_file(&published.archive);
    let work = tempfile::tempdir().expect("tempdir");
    let cache = work.path().join("cache");
    // The same chart stored in the repo: what the fetched ones must render as.
    let local = work.path().join("local");
    tenants_repo(&local, "kind: helm\nchart: chart\n");
    copy_dir(&metrics_server_chart(), &local.join("components/ms/chart"));
    let expected = fief_with_charts(&cache, &["render", local.to_str().expect("utf-8")]);
    assert!(expected.status.success(), "{}", stderr(&expected));
    let mut renders = Vec::new();
    for (name, repository) in [
        ("http", published.http.url.clone()),
        ("oci", published.registry.url.clone()),
    ] {
        let repo = work.path().join(name);
        tenants_repo(&repo, &remote(&repository, VERSION));
        let path = repo.to_str().expect("utf-8");
        let update = fief_with_charts(&cache, &["chart", "update", path]);
        assert!(update.status.success(), "{name}: {}", stderr(&update));
        assert!(stdout(&update).contains(&digest), "{}", stdout(&update));
        let lock = std::fs::read_to_string(repo.join("fief.lock")).expect("fief.lock");
        for want in [
            repository.as_str(),
            "metrics-server",
            VERSION,
            digest.as_str(),
        ] {
            assert!(
                lock.contains(want),
                "{name}: fief.lock has no {want}:\n{lock}"
            );
        }
        let out = fief_with_charts(&cache, &["render", path]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_same_objects(&out, &expected, name);
        renders.push(repo);
    }
    // Content-addressed: both repositories served the same archive, cached once.
    let cached: Vec<_> = std::fs::read_dir(cache.join("sha256"))
        .expect("the cache")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(cached, [format!("{}.tgz", &digest["sha256:".len()..])]);
    // Servers stopped: the warm cache renders; a cold one says what it could not fetch.
    drop(published);
    for repo in &renders {
        let path = repo.to_str().expect("utf-8");
        let out = fief_with_charts(&cache, &["render", path]);
        assert!(out.status.success(), "offline: {}", stderr(&out));
        assert_same_objects(&out, &expected, "offline");
        let cold = fief_with_charts(&work.path().join("cold"), &["validate", path]);
        assert!(!cold.status.success());
        let err = stderr(&cold);
        assert!(
            err.contains("cannot fetch") && err.contains("components/ms/component.yaml"),
            "{err}"
        );
    }
}

#[test]
fn an_unlocked_chart_another_version_or_a_range_is_refused_with_what_to_run() {
    let work = tempfile::tempdir().expect("tempdir");
    let cache = work.path().join("cache");
    let repo = work.path().join("repo");
    let path = repo.to_str().expect("utf-8");
    let at = |line: usize| format!("components/ms/component.yaml:{line}");
    // No lock at all.
    tenants_repo(&repo, &remote("oci://127.0.0.1:1/charts", VERSION));
    let out = fief_with_charts(&cache, &["validate", path]);
    let err = stderr(&out);
    assert!(!out.status.success());
    let chart_line = line_of(&repo, "components/ms/component.yaml", "chart:");
    assert!(
        err.contains(&at(chart_line))
            && err.contains("no entry in fief.lock")
            && err.contains("fief chart update"),
        "{err}"
    );
    // A lock with another version of the chart.
    write_file(
        &repo,
        "fief.lock",
        "charts:\n  - repository: oci://127.0.0.1:1/charts\n    name: metrics-server\n    \
         version: 3.11.0\n    digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n",
    );
    let out = fief_with_charts(&cache, &["validate", path]);
    let err = stderr(&out);
    let version_line = line_of(&repo, "components/ms/component.yaml", "version:");
    assert!(
        err.contains(&at(version_line))
            && err.contains("3.11.0")
            && err.contains("fief chart update"),
        "{err}"
    );
    // A range is not a version.
    tenants_repo(&repo, &remote("oci://127.0.0.1:1/charts", "^3.12.0"));
    let out = fief_with_charts(&cache, &["validate", path]);
    let err = stderr(&out);
    assert!(
        err.contains(&at(version_line)) && err.contains("not an exact version"),
        "{err}"
    );
    // `fief chart update` refuses it too, writing nothing.
    let update = fief_with_charts(&cache, &["chart", "update", path]);
    assert!(!update.status.success());
    assert!(
        stderr(&update).contains("not an exact version"),
        "{}",
        stderr(&update)
    );
}

#[test]
fn a_chart_published_again_under_the_same_version_is_refused() {
    let home = tempfile::tempdir().expect("tempdir");
    let served = home.path().join("served");
    let archive = package(home.path(), &metrics_server_chart(), VERSION, &served);
    let first = digest_of_file(&archive);
    let http = HttpRepo::serve(&served);
    http.index(home.path());
    let work = tempfile::tempdir().expect("tempdir");
    let repo = work.path().join("repo");
    let path = repo.to_str().expect("utf-8");
    tenants_repo(&repo, &remote(&http.url, VERSION));
    let update = fief_with_charts(&work.path().join("first"), &["chart", "update", path]);
    assert!(update.status.success(), "{}", stderr(&update));
    // The same version again, with a changed template.
    let changed = home.path().join("changed/metrics-server");
    copy_dir(&metrics_server_chart(), &changed);
    write_file(&changed, "templates/extra.yaml", "# published again\n");
    std::fs::remove_file(&archive).expect("remove the first archive");
    let again = package(home.path(), &changed, VERSION, &served);
    assert_ne!(digest_of_file(&again), first);
    http.index(home.path());
    let out = fief_with_charts(&work.path().join("second"), &["validate", path]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("published again")
            && err.contains(&digest_of_file(&again))
            && err.contains("fief chart update"),
        "{err}"
    );
    // The first cache holds the locked archive: it renders, unchanged by the republication.
    let out = fief_with_charts(&work.path().join("first"), &["validate", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Accepting it is a visible change: `fief chart update` warns and rewrites the digest.
    let update = fief_with_charts(&work.path().join("second"), &["chart", "update", path]);
    assert!(update.status.success(), "{}", stderr(&update));
    assert!(
        stderr(&update).contains("published again"),
        "{}",
        stderr(&update)
    );
    let lock = std::fs::read_to_string(repo.join("fief.lock")).expect("fief.lock");
    assert!(lock.contains(&digest_of_file(&again)), "{lock}");
}

#[test]
fn a_packed_subchart_renders_as_helm_template_renders_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    let repo = work.path();
    let parent = repo.join("components/c/app");
    write_file(
        &parent,
        "Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 1.0.0\n",
    );
    write_file(&parent, "values.yaml", "metrics-server: {}\n");
    write_file(
        &parent,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\ndata:\n  subcharts: {{ len .Subcharts | quote }}\n",
    );
    package(
        home.path(),
        &metrics_server_chart(),
        VERSION,
        &parent.join("charts"),
    );
    write_file(
        repo,
        "components/c/component.yaml",
        "kind: helm\nchart: app\n",
    );
    write_file(repo, "fief.yaml", "");
    let values =
        json!({"metrics-server": {"rbac": {"create": false}, "apiService": {"create": false}}});
    write_file(
        repo,
        "tenants/acme.yaml",
        &format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  \
             environments: [dev]\n  components:\n    - name: c\n      values: {values}\n"
        ),
    );
    // Read from disk: the archive is a binary file of the snapshot.
    let snapshot = fief_source::fs::read_dir(repo).expect("read the repo");
    let loaded = Repo::load(Arc::new(snapshot));
    let helper = Arc::new(HelperRenderer::at(render_helper()));
    let renderer = Renderer::new(loaded.snapshot.clone()).with_packages(helper);
    let ours = super::packages::fief_objects(&loaded, &renderer);
    let theirs = super::packages::helm_template(&parent, &values);
    assert!(ours.len() >= 3, "{} objects", ours.len());
    super::packages::assert_same(&ours, &theirs, "packed subchart");
}
