//! A chart from a Helm HTTP repository through the agent, on the real control plane: the
//! agent fetches the locked chart once into its chart cache and applies it; with the
//! repository stopped, a new agent on the same cache renders the next commit from the cache.
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
fn the_agent_renders_a_locked_repository_chart_from_its_cache_with_the_repository_gone() {
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
    let http = HttpRepo::serve(&served);
    http.index(home.path());
    let digest = digest_of_file(&archive);

    let agent_ns = common::unique("fief-charts");
    let t = common::unique("rchart");
    let files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/component.yaml".to_string(),
            format!(
                "kind: helm\nchart:\n  repository: {}\n  name: web\n  version: 1.0.0\n",
                http.url
            ),
        ),
        (
            "fief.lock".to_string(),
            format!(
                "charts:\n  - repository: {}\n    name: web\n    version: 1.0.0\n    digest: {digest}\n",
                http.url
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
    wait_until("the chart applied", Duration::from_secs(60), || {
        greeting().as_deref() == Some("hello")
    });
    let cached = cache
        .join("sha256")
        .join(format!("{}.tgz", &digest["sha256:".len()..]));
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
