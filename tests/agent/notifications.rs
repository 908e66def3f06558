//! Notifications end to end: `fief agent` against the real control plane, its channels' URLs
//! in SOPS files written by the real `sops` CLI, and a local HTTP receiver per channel.
//!
//! - a tenant's failure reaches the platform's channel and its own, never another tenant's,
//!   with the file and line; its fix reaches both as `recovered`;
//! - 100 tenants failing at once send a bounded, deduplicated number of messages;
//! - a receiver that is down or hangs delays nothing: the other channels get their messages
//!   and a tenant change still goes live within the usual time.
//!
//! URLs in a Secret of the agent's namespace instead of a SOPS file: `secrets`.

use crate::common;

mod secrets;

use std::path::Path;
use std::time::{Duration, Instant};

use common::agent::*;
use common::receiver::Receiver;
use common::sops::{self, AgeKey};
use serde_json::Value;

/// A token in every receiver path: it must never show in the agent's log.
const TOKEN: &str = "tok-Zx81Kq";

/// A webhook channel reading its URL from `key` of `file`.
fn channel(name: &str, file: &str, key: &str, indent: &str) -> String {
    format!(
        "{indent}- name: {name}\n{indent}  type: webhook\n{indent}  url: {{secret: {file}, key: {key}}}\n"
    )
}

/// fief.yaml with the platform channels `(name, key)` of `secrets/notifications.sops.yaml`.
fn fief_yaml(agent_ns: &str, channels: &[&str]) -> (String, String) {
    let mut text = format!("agentNamespace: {agent_ns}\nnotifications:\n  providers:\n");
    for c in channels {
        text.push_str(&channel(c, "secrets/notifications.sops.yaml", c, "    "));
    }
    ("fief.yaml".to_string(), text)
}

/// A tenant running `app` (and `extra` when asked) with its own channel `team`.
fn tenant_file(name: &str, greeting: &str, extra: bool, own_channel: bool) -> (String, String) {
    let mut text = format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n      values: {{greeting: {greeting}}}\n"
    );
    if extra {
        text.push_str("    - name: extra\n");
    }
    if own_channel {
        text.push_str("  notifications:\n");
        let file = format!("secrets/tenants/{name}.sops.yaml");
        text.push_str(&channel("team", &file, "webhook", "    "));
    }
    (format!("tenants/{name}.yaml"), text)
}

const EXTRA: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: {{ values.k | quote }}\n";
/// `EXTRA` broken on line 6 (an undefined value).
const EXTRA_BROKEN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: {{ values.missing.deeper }}\n";

/// Encrypt `key: url` pairs into `rel` of the repo with the real `sops`.
fn secret(repo: &Path, rel: &str, pairs: &[(&str, String)], key: &AgeKey) {
    let plain: String = pairs.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    sops::encrypt(repo, rel, &plain, &[&key.recipient]);
}

/// Start the agent with the age key, a long fetch interval (changes come by webhook).
fn agent(server: &GitServer, key: &AgeKey) -> Agent {
    let key_file = key.file.to_string_lossy().into_owned();
    Agent::start(
        &server.url(),
        &["--interval", "300s", "--age-key-file", &key_file],
    )
}

fn is(v: &Value, tenant: &str, kind: &str) -> bool {
    v["tenant"] == tenant && v["kind"] == kind
}

#[test]
fn a_tenants_failure_reaches_the_platform_and_its_own_channel_only_and_its_fix_reaches_both() {
    let agent_ns = common::unique("fief-nt1");
    let (a, b) = (common::unique("nt-a"), common::unique("nt-b"));
    let (platform, ra, rb) = (Receiver::start(), Receiver::start(), Receiver::start());
    let mut files = small_repo(&agent_ns, &[]);
    files[0] = fief_yaml(&agent_ns, &["ops"]);
    files.push(tenant_file(&a, "hi", true, true));
    files.push(tenant_file(&b, "hi", false, true));
    files.push(("components/extra/varz.yaml".into(), "k: v\n".into()));
    files.push(("components/extra/templates/cm.yaml".into(), EXTRA.into()));
    let server = GitServer::new(&files);
    let keys = tempfile::tempdir().unwrap();
    let key = sops::age_keygen(keys.path(), "fief.agekey");
    let repo = server.repo();
    let hook = |r: &Receiver| r.url(&format!("/hook/{TOKEN}"));
    secret(
        &repo,
        "secrets/notifications.sops.yaml",
        &[("ops", hook(&platform))],
        &key,
    );
    let own = |t: &str| format!("secrets/tenants/{t}.sops.yaml");
    secret(&repo, &own(&a), &[("webhook", hook(&ra))], &key);
    secret(&repo, &own(&b), &[("webhook", hook(&rb))], &key);
    server.commit(&[], "channels");
    let agent = agent(&server, &key);
    assert!(platform.bodies().is_empty(), "a fine fleet sends nothing");

    server.commit(
        &[(
            "components/extra/templates/cm.yaml".into(),
            EXTRA_BROKEN.into(),
        )],
        "break extra",
    );
    assert_eq!(agent.signed_push(), 202);
    let wait = Duration::from_secs(20);
    let failed = platform.wait_for("a's failure on the platform channel", wait, |v| {
        is(v, &a, "syncFailed")
    });
    let text = failed["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("components/extra/templates/cm.yaml:6"),
        "{failed:#}"
    );
    assert_eq!(failed["severity"], "error");
    assert_eq!(
        failed["commit"].as_str().map(str::len),
        Some(40),
        "{failed:#}"
    );
    let mine = ra.wait_for("a's failure on a's channel", wait, |v| {
        is(v, &a, "syncFailed")
    });
    assert_eq!(mine["message"], failed["message"]);

    server.commit(
        &[("components/extra/templates/cm.yaml".into(), EXTRA.into())],
        "fix extra",
    );
    assert_eq!(agent.signed_push(), 202);
    platform.wait_for("a's recovery on the platform channel", wait, |v| {
        is(v, &a, "recovered")
    });
    ra.wait_for("a's recovery on a's channel", wait, |v| {
        is(v, &a, "recovered")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        rb.received().is_empty(),
        "b's channel got a's messages: {:?}",
        rb.bodies()
    );
    let told = platform.bodies();
    let failures = told.iter().filter(|v| is(v, &a, "syncFailed")).count();
    assert_eq!(failures, 1, "told once while it failed: {told:#?}");
    assert_eq!(ra.bodies().len(), 2, "{:#?}", ra.bodies());
    assert!(ra.received().iter().all(|r| r.path.ends_with(TOKEN)));
    assert!(!agent.log().contains(TOKEN), "a URL was logged");
}

#[test]
fn a_hundred_tenants_failing_at_once_send_a_bounded_deduplicated_number_of_messages() {
    let agent_ns = common::unique("fief-nt2");
    let platform = Receiver::start();
    let prefix = common::unique("nt-burst");
    let names: Vec<String> = (0..100).map(|i| format!("{prefix}-{i}")).collect();
    let mut files = small_repo(&agent_ns, &[]);
    files[0] = fief_yaml(&agent_ns, &["ops"]);
    // The shared component is broken from the start: every tenant fails at once.
    files[2].1 = EXTRA_BROKEN.to_string();
    files.extend(names.iter().map(|n| tenant_file(n, "hi", false, false)));
    let server = GitServer::new(&files);
    let keys = tempfile::tempdir().unwrap();
    let key = sops::age_keygen(keys.path(), "fief.agekey");
    let url = platform.url("/hook");
    secret(
        &server.repo(),
        "secrets/notifications.sops.yaml",
        &[("ops", url)],
        &key,
    );
    server.commit(&[], "channel");
    let started = Instant::now();
    let agent = agent(&server, &key);
    // Every failure is either sent or counted in a summary.
    let accounted = |bodies: &[Value]| -> u64 {
        let sent = bodies.iter().filter(|v| v["kind"] == "syncFailed").count() as u64;
        let summed: u64 = bodies
            .iter()
            .filter(|v| v["kind"] == "suppressed")
            .filter_map(|v| {
                v["message"]
                    .as_str()?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        sent + summed
    };
    wait_until(
        "every failure sent or summed up",
        Duration::from_secs(60),
        || accounted(&platform.bodies()) >= 100,
    );
    // Another pass over every tenant with the same errors: nothing new is sent.
    let rendered = agent.metric("fief_tenants_rendered", "");
    server.commit(
        &[(
            "fief.yaml".into(),
            fief_yaml(&agent_ns, &["ops"]).1 + "baseDomain: example.org\n",
        )],
        "touch every tenant",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "every tenant rendered again",
        Duration::from_secs(60),
        || agent.metric("fief_tenants_rendered", "") >= rendered + 100.0,
    );
    std::thread::sleep(Duration::from_secs(4));
    let bodies = platform.bodies();
    let elapsed = started.elapsed().as_secs();
    assert_eq!(accounted(&bodies), 100, "{bodies:#?}");
    let failed = bodies.iter().filter(|v| v["kind"] == "syncFailed").count() as u64;
    // The bound: a channel takes a burst of 10, then one message every 3 s (20 a minute),
    // summaries included (the first token after a burst goes to the summary).
    let bound = 10 + elapsed / 3;
    let sent = bodies.len() as u64;
    assert!(
        sent <= bound,
        "{sent} messages in {elapsed}s (bound {bound})"
    );
    let mut tenants: Vec<&str> = bodies.iter().filter_map(|v| v["tenant"].as_str()).collect();
    let before = tenants.len();
    tenants.sort();
    tenants.dedup();
    assert_eq!(tenants.len(), before, "a tenant was told twice");
    assert!(bodies.iter().any(|v| v["kind"] == "suppressed"));
    eprintln!(
        "{failed} failures sent, {} bodies in {elapsed}s",
        bodies.len()
    );
}

#[test]
fn a_receiver_that_is_down_or_hangs_delays_neither_the_other_channels_nor_the_syncs() {
    let agent_ns = common::unique("fief-nt3");
    let (a, b) = (common::unique("nt-a"), common::unique("nt-b"));
    let (ops, stuck) = (Receiver::start(), Receiver::hanging());
    let gone = format!("http://127.0.0.1:{}/hook", free_port());
    let mut files = small_repo(&agent_ns, &[(&a, "hi"), (&b, "hi")]);
    files[0] = fief_yaml(&agent_ns, &["stuck", "gone", "ops"]);
    let server = GitServer::new(&files);
    let keys = tempfile::tempdir().unwrap();
    let key = sops::age_keygen(keys.path(), "fief.agekey");
    let pairs = [
        ("stuck", stuck.url("/hook")),
        ("gone", gone),
        ("ops", ops.url("/hook")),
    ];
    secret(
        &server.repo(),
        "secrets/notifications.sops.yaml",
        &pairs,
        &key,
    );
    server.commit(&[], "channels");
    let agent = agent(&server, &key);

    // b names a component the repo does not have: it fails.
    let broken = tenant_file(&b, "hi", false, false);
    let broken = (
        broken.0,
        broken
            .1
            .replace("    - name: app\n", "    - name: nope\n    - name: app\n"),
    );
    server.commit(&[broken], "break b");
    let pushed = Instant::now();
    assert_eq!(agent.signed_push(), 202);
    ops.wait_for(
        "b's failure on the channel that is up",
        Duration::from_secs(10),
        |v| is(v, &b, "syncFailed"),
    );
    eprintln!("failure delivered in {:?}", pushed.elapsed());
    stuck.wait_for(
        "the hanging receiver was called",
        Duration::from_secs(10),
        |v| is(v, &b, "syncFailed"),
    );

    // While one channel hangs and one is down, a change goes live in the usual time.
    server.commit(&[tenant(&a, "bonjour")], "change a");
    assert_eq!(agent.signed_push(), 202);
    wait_until("a's change applied", Duration::from_secs(5), || {
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref()
            == Some("bonjour")
    });
    // The channel that is down is given up on after its bounded retries.
    wait_until("the down channel given up", Duration::from_secs(60), || {
        agent.metric("fief_notifications_total", "result=\"failed\"") >= 1.0
    });
    assert_eq!(
        agent.metric("fief_notifications_total", "result=\"sent\""),
        1.0
    );
}
