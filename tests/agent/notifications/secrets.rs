//! Channel URLs in a Kubernetes Secret of the agent's namespace, against the real control
//! plane, with no age key anywhere:
//!
//! - the agent sends to the URL its Secret holds, and a changed Secret is used for the next
//!   message; a channel naming a key the Secret lacks is logged by Secret and key, sends
//!   nothing, and the URLs never show in the log;
//! - `fief notify test` reads the same Secret through the kubeconfig and sends one message,
//!   printing the channel and the Secret but never the URL.

use std::time::Duration;

use crate::common;
use common::agent::*;
use common::kubectl::Kubectl;
use common::receiver::Receiver;
use serde_json::Value;

/// A token in every receiver path: it must never show in a log or the CLI's output.
const TOKEN: &str = "tok-Sk37Wq";

/// The namespace `ns` with the Secret `hook` holding `url` at key `url`.
fn namespace_with_hook(ns: &str, url: &str) {
    Kubectl::admin().ok(&["create", "namespace", ns]);
    let literal = format!("--from-literal=url={url}");
    Kubectl::admin().ok(&["-n", ns, "create", "secret", "generic", "hook", &literal]);
}

/// fief.yaml whose platform channels `(name, key)` read key `key` of the Secret `hook`.
fn fief_yaml(agent_ns: &str, channels: &[(&str, &str)]) -> (String, String) {
    let mut text = format!("agentNamespace: {agent_ns}\nnotifications:\n  providers:\n");
    for (name, key) in channels {
        text.push_str(&format!(
            "    - name: {name}\n      type: webhook\n      url: {{secretKeyRef: {{name: hook, key: {key}}}}}\n"
        ));
    }
    ("fief.yaml".to_string(), text)
}

fn is(v: &Value, tenant: &str, kind: &str) -> bool {
    v["tenant"] == tenant && v["kind"] == kind
}

#[test]
fn the_agent_sends_to_the_url_in_a_secret_and_uses_a_changed_secret_for_the_next_message() {
    let agent_ns = common::unique("fief-nts");
    let a = common::unique("nts-a");
    let (first, second) = (Receiver::start(), Receiver::start());
    let hook = |r: &Receiver| r.url(&format!("/hook/{TOKEN}"));
    namespace_with_hook(&agent_ns, &hook(&first));
    let mut files = small_repo(&agent_ns, &[(&a, "hi")]);
    files[0] = fief_yaml(&agent_ns, &[("ops", "url"), ("broken", "nope")]);
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let wait = Duration::from_secs(20);
    let missing = format!("Secret `{agent_ns}/hook` has no key `nope` (its keys: url)");
    wait_until("the missing key logged", wait, || {
        agent.log().contains(&missing)
    });

    // a names a component the repo does not have: it fails.
    let broken = tenant(&a, "hi");
    let broken = (
        broken.0,
        broken
            .1
            .replace("    - name: app\n", "    - name: nope\n    - name: app\n"),
    );
    server.commit(&[broken], "break a");
    assert_eq!(agent.signed_push(), 202);
    first.wait_for("a's failure at the Secret's URL", wait, |v| {
        is(v, &a, "syncFailed")
    });

    // The Secret now holds another URL: the next message goes there, with no commit.
    let url = hook(&second);
    let patch = format!("{{\"stringData\":{{\"url\":\"{url}\"}}}}");
    Kubectl::admin().ok(&["-n", &agent_ns, "patch", "secret", "hook", "-p", &patch]);
    server.commit(&[tenant(&a, "hi")], "fix a");
    assert_eq!(agent.signed_push(), 202);
    second.wait_for("a's recovery at the Secret's new URL", wait, |v| {
        is(v, &a, "recovered")
    });
    // The channel naming a missing key sent nothing and counts its messages as failed.
    wait_until("the broken channel's messages failed", wait, || {
        agent.metric("fief_notifications_total", "result=\"failed\"") >= 2.0
    });
    assert_eq!(first.bodies().len(), 1, "{:#?}", first.bodies());
    assert_eq!(second.bodies().len(), 1, "{:#?}", second.bodies());
    assert!(second.received().iter().all(|r| r.path.ends_with(TOKEN)));
    let log = agent.log();
    assert!(
        log.contains(&missing) && !log.contains(TOKEN),
        "the log names the Secret and key, never a URL:\n{log}"
    );
}

#[test]
fn fief_notify_test_reads_the_secret_through_the_kubeconfig_and_never_prints_the_url() {
    let agent_ns = common::unique("fief-ntc");
    let receiver = Receiver::start();
    namespace_with_hook(&agent_ns, &receiver.url(&format!("/hook/{TOKEN}")));
    let repo = tempfile::tempdir().unwrap();
    let (path, text) = fief_yaml(&agent_ns, &[("ops", "url"), ("broken", "nope")]);
    common::util::write(repo.path(), &path, text);
    let kubeconfig = common::control_plane().admin_kubeconfig();
    let run = |channel: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fief"))
            .args(["notify", "test", channel, "--repo"])
            .arg(repo.path())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env("NO_COLOR", "1")
            .output()
            .expect("run fief notify test")
    };

    let sent = run("ops");
    let (out, err) = (
        common::util::text(&sent.stdout),
        common::util::text(&sent.stderr),
    );
    assert_eq!(sent.status.code(), Some(0), "{out}{err}");
    assert_eq!(
        out.trim(),
        format!(
            "sent a test message to platform channel `ops` (webhook, URL from Secret `{agent_ns}/hook` (key `url`)): HTTP 200"
        )
    );
    let body = receiver.wait_for("the test message", Duration::from_secs(5), |v| {
        v["kind"] == "test"
    });
    assert_eq!(body["severity"], "info");
    assert!(!out.contains(TOKEN) && !err.contains(TOKEN));

    let refused = run("broken");
    let err = common::util::text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "Secret `{agent_ns}/hook` has no key `nope` (its keys: url)"
        )),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
    assert_eq!(
        receiver.bodies().len(),
        1,
        "the refused channel sent nothing"
    );
}
