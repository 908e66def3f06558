//! A chart from a Helm HTTP repository through the agent, on the real control plane: a chart
//! the agent cannot fetch yet is fetched at its next fetch once the repository answers, into
//! its chart cache, and applied; with the repository stopped, a new agent on the same cache
//! renders the next commit from the cache.
//!
//! Needs `$FIEF_RENDER_HELPER` and `$FIEF_HELM_BIN` (tools/test.sh sets both).

use crate::common;

use std::time::Duration;

use common::agent::*;
use common::chart_repos::{HttpRepo, digest_of_file, package};
use common::offline::write_file;

/// A tenant running the `web` chart with `greeting`.
fn tenant(name: &str, greeting: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  \
             components:\n    - name: web\n      values: {{greeting: {greeting}}}\n"
        ),
    )
}

#[test]
fn the_agent_fetches_a_locked_chart_when_it_can_and_renders_it_from_its_cache_once_the_repository_is_gone()
 {
    // A one-ConfigMap chart, packaged and served as a Helm repository.
    let home = tempfile::tempdir().expect("tempdir");
    let chart = home.path().join("src/web");
    write_file(
        &chart,
        "Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
    );
    write_file(&chart, "values.yaml", "greeting: hello\n");
    write_file(
        &chart,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  \
         greeting: {{ .Values.greeting | quote }}\n",
    );
    let served = home.path().join("served");
    let archive = package(home.path(), &chart, "1.0.0", &served);
    let digest = digest_of_file(&archive);
    // Not served yet: the agent's first read cannot fetch the chart.
    let port = common::util::free_port();
    let url = format!("http://127.0.0.1:{port}");

    let agent_ns = common::unique("fief-charts");
    let t = common::unique("rchart");
    let files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/component.yaml".to_string(),
            format!("kind: helm\nchart:\n  repository: {url}\n  name: web\n  version: 1.0.0\n"),
        ),
        (
            "fief.lock".to_string(),
            format!(
                "charts:\n  - repository: {url}\n    name: web\n    version: 1.0.0\n    digest: {digest}\n"
            ),
        ),
        tenant(&t, "hello"),
    ];
    let server = GitServer::new(&files);
    let cache = home.path().join("chart-cache");
    let env = [("FIEF_CHART_CACHE", cache.to_string_lossy().into_owned())];
    let mut first = Agent::spawn(&server.url(), &["--interval", "300s"], &env);
    first.wait_ready(Duration::from_secs(90));
    let greeting = || configmap_value(&format!("{t}-prod"), "web-config", "greeting");
    let cached = cache
        .join("sha256")
        .join(format!("{}.tgz", &digest["sha256:".len()..]));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(greeting(), None, "applied without its chart");
    assert!(!cached.exists());

    // The repository answers: the next fetch (same commit) fetches the chart and applies it.
    let http = HttpRepo::serve_on(&served, port);
    http.index(home.path());
    assert_eq!(first.signed_push(), 202);
    let start = std::time::Instant::now();
    while greeting().as_deref() != Some("hello") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the chart was not applied once its repository answered; the agent's log:\n{}",
            first.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(cached.is_file(), "{} is not cached", cached.display());

    // The repository gone and the agent restarted: the chart comes from the cache.
    drop(http);
    first.terminate(Duration::from_secs(30));
    server.commit(&[tenant(&t, "hi")], "greeting hi");
    let second = Agent::spawn(&server.url(), &["--interval", "300s"], &env);
    second.wait_ready(Duration::from_secs(90));
    wait_until(
        "the next commit rendered from the cache",
        Duration::from_secs(60),
        || greeting().as_deref() == Some("hi"),
    );
    let st = status(&agent_ns, &t);
    assert_eq!(condition(&st, "Ready"), "True", "{st}\n{}", second.log());
}
