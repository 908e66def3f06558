//! The first way the getting started runs the agent: on a machine, against any cluster, with
//! no image — `fief agent --repo .` following a local checkout with the user's kubeconfig and
//! the web view on.

use crate::common;

use std::time::Duration;

use common::agent::{Agent, configmap_value, wait_until};
use common::offline::{edit_file, init_repo};
use common::util::git;

#[test]
fn an_agent_run_locally_follows_a_local_checkout_and_serves_the_web_view() {
    let tenant = common::unique("local");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    init_repo(repo, &tenant);
    let agent_ns = common::unique("fief-local");
    edit_file(
        repo,
        "fief.yaml",
        "agentNamespace: fief-system",
        &format!("agentNamespace: {agent_ns}"),
    );
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "tenants repo"]);
    let path = repo.to_str().expect("a UTF-8 path");
    let agent = Agent::start(path, &["--interval", "1s", "--web"]);
    let greeting = |text: &str| {
        configmap_value(&format!("{tenant}-dev"), "hello", "index.html")
            .is_some_and(|html| html.contains(text))
    };
    wait_until(
        "the tenant applied from the local checkout",
        Duration::from_secs(90),
        || greeting(&format!("Hello, {tenant}")),
    );

    // A commit in the folder lands at the next interval: no push, no webhook.
    edit_file(
        repo,
        &format!("tenants/{tenant}.yaml"),
        &format!("greeting: Hello, {tenant}"),
        "greeting: Hello again",
    );
    git(repo, &["commit", "-q", "-am", "a new greeting"]);
    wait_until("the local commit applied", Duration::from_secs(60), || {
        greeting("Hello again")
    });

    // The web view: the agent's root leads to it, and it lists the tenant.
    assert_eq!(agent.get("/").map(|(code, _)| code), Some(307));
    let (code, page) = agent.get("/ui/tenants").expect("the agent answers");
    assert_eq!(code, 200, "{page}");
    assert!(page.contains(&tenant), "{page}");
}
