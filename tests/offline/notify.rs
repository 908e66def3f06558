//! `fief notify test` with channel URLs in SOPS files (written by the real `sops` CLI) and a
//! loopback receiver: a platform channel and a tenant's own each get one test message, and
//! the output names the channel and where its URL came from, never the URL; an unknown
//! channel, a URL that cannot be read and a receiver that cannot be reached each fail with
//! their own exit code.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::common;
use common::offline::{stderr, stdout, write_file};
use common::receiver::Receiver;
use common::sops::{self, AgeKey};

/// A token in every receiver path: it must never show in the output.
const TOKEN: &str = "tok-Nv52Pd";

const TENANT: &str = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  notifications:\n    - name: team\n      type: slack\n      url: {secret: secrets/tenants/acme.sops.yaml, key: slack}\n";

/// A repo with platform channels `ops` (webhook) and `gone`, and acme's `team` (slack).
fn repo(dir: &Path, key: &AgeKey, ops: &str, team: &str, gone: &str) {
    let channel = |name: &str| {
        format!(
            "    - name: {name}\n      type: webhook\n      url: {{secret: secrets/notifications.sops.yaml, key: {name}}}\n"
        )
    };
    let fief_yaml = format!(
        "notifications:\n  providers:\n{}{}",
        channel("ops"),
        channel("gone")
    );
    write_file(dir, "fief.yaml", &fief_yaml);
    write_file(dir, "tenants/acme.yaml", TENANT);
    let plain = format!("ops: {ops}\ngone: {gone}\n");
    sops::encrypt(
        dir,
        "secrets/notifications.sops.yaml",
        &plain,
        &[&key.recipient],
    );
    let own = format!("slack: {team}\n");
    sops::encrypt(
        dir,
        "secrets/tenants/acme.sops.yaml",
        &own,
        &[&key.recipient],
    );
}

fn notify(dir: &Path, key: Option<&AgeKey>, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fief"));
    cmd.args(["notify", "test"])
        .args(args)
        .arg("--repo")
        .arg(dir)
        .env("NO_COLOR", "1")
        .env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY");
    if let Some(key) = key {
        cmd.arg("--age-key-file").arg(&key.file);
    }
    cmd.output().expect("run fief notify test")
}

#[test]
fn fief_notify_test_sends_one_message_to_a_platform_or_tenant_channel_and_never_prints_its_url() {
    let dir = tempfile::tempdir().unwrap();
    let keys = tempfile::tempdir().unwrap();
    let key = sops::age_keygen(keys.path(), "fief.agekey");
    let (ops, team) = (Receiver::start(), Receiver::start());
    let gone = format!("http://127.0.0.1:{}/{TOKEN}", common::util::free_port());
    let hook = |r: &Receiver| r.url(&format!("/hook/{TOKEN}"));
    repo(dir.path(), &key, &hook(&ops), &hook(&team), &gone);

    let sent = notify(dir.path(), Some(&key), &["ops"]);
    let out = stdout(&sent) + &stderr(&sent);
    assert_eq!(sent.status.code(), Some(0), "{out}");
    assert_eq!(
        stdout(&sent).trim(),
        "sent a test message to platform channel `ops` (webhook, URL from key `ops` of secrets/notifications.sops.yaml): HTTP 200"
    );
    let body = ops.wait_for("the test message", Duration::from_secs(5), |v| {
        v["kind"] == "test"
    });
    assert_eq!(body["tenant"], serde_json::Value::Null);
    assert!(!out.contains(TOKEN) && !out.contains("127.0.0.1"), "{out}");

    let sent = notify(dir.path(), Some(&key), &["team", "--tenant", "acme"]);
    let out = stdout(&sent) + &stderr(&sent);
    assert_eq!(sent.status.code(), Some(0), "{out}");
    assert!(
        out.contains("channel `team` of tenant acme (slack, "),
        "{out}"
    );
    let body = team.wait_for("the Slack test message", Duration::from_secs(5), |v| {
        v["text"]
            .as_str()
            .is_some_and(|t| t.contains("acme: test message"))
    });
    assert!(body["blocks"].is_array(), "{body:#}");
    assert!(!out.contains(TOKEN), "{out}");

    let down = notify(dir.path(), Some(&key), &["gone"]);
    let err = stderr(&down);
    assert_eq!(down.status.code(), Some(3), "{err}");
    assert!(
        err.contains("platform channel `gone` (webhook, URL from key `gone` of secrets/notifications.sops.yaml): not sent: cannot connect"),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
    assert_eq!(ops.bodies().len(), 1);
    assert_eq!(team.bodies().len(), 1);
}

#[test]
fn fief_notify_test_fails_clearly_for_an_unknown_channel_or_a_url_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let keys = tempfile::tempdir().unwrap();
    let key = sops::age_keygen(keys.path(), "fief.agekey");
    let url = format!("http://127.0.0.1:1/{TOKEN}");
    repo(dir.path(), &key, &url, &url, &url);

    let unknown = notify(dir.path(), Some(&key), &["opz"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown).trim(),
        "error: no channel `opz` in fief.yaml notifications.providers (did you mean `ops`?); its channels: ops, gone; a tenant's own channel needs --tenant"
    );
    let not_platform = notify(dir.path(), Some(&key), &["team"]);
    assert_eq!(not_platform.status.code(), Some(1));
    let unknown_tenant = notify(dir.path(), Some(&key), &["team", "--tenant", "acne"]);
    assert_eq!(unknown_tenant.status.code(), Some(2));
    assert!(
        stderr(&unknown_tenant).contains("no tenant named acne"),
        "{}",
        stderr(&unknown_tenant)
    );

    let no_key = notify(dir.path(), None, &["ops"]);
    let err = stderr(&no_key);
    assert_eq!(no_key.status.code(), Some(1), "{err}");
    assert!(err.contains("no age key was given"), "{err}");
    assert!(!err.contains(TOKEN), "{err}");
}
