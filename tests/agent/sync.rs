//! The agent end to end: `fief agent` as a process against the real control plane, the tenants
//! repo served by `git daemon` on loopback.
//!
//! Each test has its own repo, agent, agent namespace and tenants.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::agent::*;
use serde_json::Value;

mod cost;
mod replicas;

#[test]
fn a_pushed_change_to_one_tenant_is_applied_within_seconds_and_touches_only_that_tenant() {
    let agent_ns = common::unique("fief-ag1");
    let (a, b) = (common::unique("push-a"), common::unique("push-b"));
    let server = GitServer::new(&small_repo(&agent_ns, &[(&a, "hi"), (&b, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    assert_eq!(
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref(),
        Some("hi")
    );
    a_change_to_one_tenant_writes_only_that_tenant(&server, &agent, &agent_ns, &a, &b);
    a_hand_edit_is_reverted_within_seconds(&b);
    a_webhook_without_a_good_signature_triggers_nothing(&server, &agent, &a);
    the_inventory_keeps_others_keys_and_comes_back_when_deleted(&server, &agent, &agent_ns, &a, &b);
}

/// A pushed change to tenant A is applied within seconds, and B receives no write.
fn a_change_to_one_tenant_writes_only_that_tenant(
    server: &GitServer,
    agent: &Agent,
    agent_ns: &str,
    a: &str,
    b: &str,
) {
    let b_versions = (
        resource_version(&format!("{b}-prod"), "configmap", "app-config"),
        resource_version(agent_ns, "configmap", &format!("fief-tenant-{b}")),
    );
    let patches_before = agent.metric("fief_api_requests", "PATCH");

    server.commit(&[tenant(a, "bonjour")], "change a");
    let sent = Instant::now();
    assert_eq!(agent.signed_push(), 202);
    wait_until("the change applied", Duration::from_secs(5), || {
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref()
            == Some("bonjour")
    });
    eprintln!("webhook to applied: {:?}", sent.elapsed());
    // Only tenant A was touched: one object and A's inventory (once: the change adds no
    // object, so no union write), and at most an Event series update.
    wait_until("the sync finished", Duration::from_secs(5), || {
        condition(&status(agent_ns, a), "Reconciling") == "False"
    });
    let patches = agent.metric("fief_api_requests", "PATCH") - patches_before;
    assert!(
        patches <= 3.0,
        "{patches} PATCH requests for a one-object change"
    );
    assert_eq!(
        b_versions,
        (
            resource_version(&format!("{b}-prod"), "configmap", "app-config"),
            resource_version(agent_ns, "configmap", &format!("fief-tenant-{b}")),
        ),
        "tenant B received no write"
    );
}

/// A hand edit of a field fief owns is reverted within seconds.
fn a_hand_edit_is_reverted_within_seconds(b: &str) {
    common::kubectl::Kubectl::admin().ok(&[
        "-n",
        &format!("{b}-prod"),
        "patch",
        "configmap",
        "app-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"greeting":"hacked"}}"#,
    ]);
    let took = wait_until("drift reverted", Duration::from_secs(10), || {
        configmap_value(&format!("{b}-prod"), "app-config", "greeting").as_deref() == Some("hi")
    });
    eprintln!("drift reverted in {took:?}");
}

/// A webhook with a wrong signature, or none, is refused and triggers nothing.
fn a_webhook_without_a_good_signature_triggers_nothing(server: &GitServer, agent: &Agent, a: &str) {
    server.commit(&[tenant(a, "unsigned")], "change a again");
    let fetches = agent.metric("fief_git_fetches_total", "");
    assert_eq!(agent.push_webhook(Some("sha256=0000".into())), 401);
    assert_eq!(agent.push_webhook(None), 401);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(agent.metric("fief_git_fetches_total", ""), fetches);
    assert_eq!(
        configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref(),
        Some("bonjour")
    );
    assert!(agent.log().contains("bad or missing signature"));
}

/// The inventory is written by a strategic merge patch: a key another writer put on it stays.
/// An inventory deleted by hand is created again, whole, by the tenant's next sync.
fn the_inventory_keeps_others_keys_and_comes_back_when_deleted(
    server: &GitServer,
    agent: &Agent,
    agent_ns: &str,
    a: &str,
    b: &str,
) {
    let admin = common::cluster_cli::kubectl_ok;
    let inventory_of = |t: &str| format!("fief-tenant-{t}");
    admin(&[
        "-n",
        agent_ns,
        "annotate",
        "configmap",
        &inventory_of(a),
        "example.com/note=kept",
    ]);
    admin(&["-n", agent_ns, "delete", "configmap", &inventory_of(b)]);
    server.commit(&[tenant(a, "again"), tenant(b, "hola")], "change both");
    assert_eq!(agent.signed_push(), 202);
    wait_until("both changes recorded", Duration::from_secs(10), || {
        status(agent_ns, b)["revision"].is_string()
            && configmap_value(&format!("{a}-prod"), "app-config", "greeting").as_deref()
                == Some("again")
            && condition(&status(agent_ns, a), "Reconciling") == "False"
    });
    let inventory = kubectl_json(&["get", "configmap", "-n", agent_ns, &inventory_of(a)])
        .expect("A's inventory");
    assert_eq!(
        inventory["metadata"]["annotations"]["example.com/note"],
        "kept"
    );
    let entries = kubectl_json(&["get", "configmap", "-n", agent_ns, &inventory_of(b)])
        .expect("B's inventory is back")["data"]["entries"]
        .as_str()
        .map(|e| e.matches("\"kind\"").count());
    assert!(
        entries.unwrap_or(0) >= 3,
        "B's inventory lists its objects: {entries:?}"
    );
    assert_eq!(
        configmap_value(&format!("{b}-prod"), "app-config", "greeting").as_deref(),
        Some("hola")
    );
}

#[test]
fn a_broken_template_stalls_only_that_tenant_and_the_fix_recovers_it() {
    let agent_ns = common::unique("fief-ag2");
    let (good, bad) = (common::unique("good"), common::unique("bad"));
    let server = GitServer::new(&small_repo(&agent_ns, &[(&good, "hi"), (&bad, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);

    // The bad tenant's values now break the template; the repo also drops app-extra.
    let broken = format!(
        "{}{{% if tenant.name == '{bad}' %}}  oops: {{{{ values.missing.field }}}}\n{{% endif %}}",
        APP.replace(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\ndata:\n  k: v\n",
            ""
        )
    );
    server.commit(
        &[
            ("components/app/templates/app.yaml".into(), broken),
            tenant(&good, "hey"),
        ],
        "break",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("bad tenant stalled", Duration::from_secs(10), || {
        condition(&status(&agent_ns, &bad), "Stalled") == "True"
    });
    let st = status(&agent_ns, &bad);
    assert!(
        st["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("components/app/templates/app.yaml"),
        "{st}"
    );
    assert!(
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            &format!("{bad}-prod"),
            "app-extra"
        ])
        .is_some(),
        "nothing of the bad tenant is pruned"
    );
    // The failure is also a Kubernetes Event on the tenant's inventory.
    wait_until("a RenderFailed event", Duration::from_secs(10), || {
        kubectl_json(&["get", "events.events.k8s.io", "-n", &agent_ns])
            .and_then(|v| v["items"].as_array().cloned())
            .is_some_and(|items| {
                items.iter().any(|e| {
                    e["reason"] == "RenderFailed"
                        && e["regarding"]["name"] == format!("fief-tenant-{bad}").as_str()
                })
            })
    });
    wait_until("good tenant applied", Duration::from_secs(10), || {
        configmap_value(&format!("{good}-prod"), "app-config", "greeting").as_deref() == Some("hey")
    });
    assert!(
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            &format!("{good}-prod"),
            "app-extra"
        ])
        .is_none(),
        "the good tenant is pruned as usual"
    );

    // The fix commit recovers it.
    server.commit(
        &[("components/app/templates/app.yaml".into(), APP.to_string())],
        "fix",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("bad tenant recovered", Duration::from_secs(10), || {
        let st = status(&agent_ns, &bad);
        condition(&st, "Ready") == "True" && condition(&st, "Stalled") == "False"
    });
}

#[test]
fn a_stopped_git_server_is_reported_and_the_agent_recovers_when_it_is_back() {
    let agent_ns = common::unique("fief-ag3");
    let t = common::unique("gitdown");
    let mut server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "1s"]);
    server.stop();
    wait_until("a failed fetch reported", Duration::from_secs(15), || {
        agent.metric("fief_git_fetches_total", "failure") >= 1.0
    });
    assert!(
        agent
            .log()
            .contains("git fetch failed; keeping the last good revision")
    );
    assert_eq!(
        agent.get("/readyz").map(|(c, _)| c),
        Some(200),
        "still serving the last good revision"
    );
    assert_eq!(
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref(),
        Some("hi"),
        "nothing pruned"
    );
    server.commit(&[tenant(&t, "back")], "while down");
    server.start();
    wait_until("the agent recovered", Duration::from_secs(15), || {
        configmap_value(&format!("{t}-prod"), "app-config", "greeting").as_deref() == Some("back")
    });
}

#[test]
fn an_agent_killed_mid_sync_converges_after_restart_with_nothing_lost_or_orphaned() {
    let agent_ns = common::unique("fief-ag4");
    let mut files = common::synth::repo_files(50);
    files.retain(|(p, _)| p != "fief.yaml");
    files.push((
        "fief.yaml".into(),
        format!("agentNamespace: {agent_ns}\nbaseDomain: bench.example\n"),
    ));
    let server = GitServer::new(&files);
    kill_an_agent_mid_sync(&server, &agent_ns);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    wait_until("every tenant Ready", Duration::from_secs(120), || {
        (0..50).all(|i| {
            condition(&status(&agent_ns, &common::synth::tenant_name(i)), "Ready") == "True"
        })
    });
    assert_nothing_lost_or_orphaned(&files, &agent_ns);
    drop(agent);
}

/// Start an agent on the repo of `server` and kill it once it has synced a few of its 50
/// tenants (and before it synced them all).
fn kill_an_agent_mid_sync(server: &GitServer, agent_ns: &str) {
    let cp = common::control_plane();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args([
            "agent",
            "--repo",
            &server.url(),
            "--no-leader-election",
            "--concurrency",
            "4",
        ])
        .arg("--kubeconfig")
        .arg(cp.admin_kubeconfig())
        .arg("--cache-dir")
        .arg(dir.path())
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let inventories = || {
        kubectl_json(&[
            "get",
            "configmap",
            "-n",
            agent_ns,
            "-l",
            "applyset.kubernetes.io/id",
        ])
        .and_then(|v| v["items"].as_array().map(|a| a.len()))
        .unwrap_or(0)
    };
    wait_until("the sync under way", Duration::from_secs(60), || {
        inventories() >= 3
    });
    let at_kill = inventories();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        at_kill < 50,
        "killed after {at_kill} of 50 tenants; the test needs a mid-sync kill"
    );
}

/// No object lost: everything rendered from `files` exists. None orphaned: everything
/// labelled as a tenant's member is in that tenant's inventory.
fn assert_nothing_lost_or_orphaned(files: &[(String, String)], agent_ns: &str) {
    let snapshot = fief::core::snapshot::Snapshot::from_files(files.to_vec());
    let repo = fief::core::model::Repo::load(std::sync::Arc::new(snapshot));
    let renders = fief::core::pipeline::render_all(&repo, &[]);
    let kinds = "namespaces,roles,rolebindings,resourcequotas,limitranges,networkpolicies,serviceaccounts,configmaps,secrets,services,deployments,statefulsets,persistentvolumeclaims,ingresses";
    let live = kubectl_json(&[
        "get",
        kinds,
        "-A",
        "-l",
        "fief.dev/tenant,fief.dev/component",
    ])
    .unwrap();
    let mut live_ids = std::collections::BTreeSet::new();
    for o in live["items"].as_array().unwrap() {
        let t = o["metadata"]["labels"]["fief.dev/tenant"]
            .as_str()
            .unwrap_or("");
        if !t.starts_with("tenant-000") {
            continue;
        }
        live_ids.insert((
            t.to_string(),
            o["kind"].as_str().unwrap().to_string(),
            o["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            o["metadata"]["name"].as_str().unwrap().to_string(),
        ));
    }
    let mut inventory_ids = std::collections::BTreeSet::new();
    for r in &renders {
        let st = kubectl_json(&[
            "get",
            "configmap",
            "-n",
            agent_ns,
            &format!("fief-tenant-{}", r.tenant),
        ])
        .unwrap();
        let entries: Vec<Value> =
            serde_json::from_str(st["data"]["entries"].as_str().unwrap()).unwrap();
        for e in entries {
            inventory_ids.insert((
                r.tenant.clone(),
                e["kind"].as_str().unwrap().to_string(),
                e["namespace"].as_str().unwrap().to_string(),
                e["name"].as_str().unwrap().to_string(),
            ));
        }
        for o in &r.objects {
            let id = (
                r.tenant.clone(),
                o.id.kind.clone(),
                o.id.namespace.clone(),
                o.id.name.clone(),
            );
            assert!(live_ids.contains(&id), "lost: {id:?}");
        }
    }
    let orphans: Vec<_> = live_ids.difference(&inventory_ids).collect();
    assert!(orphans.is_empty(), "orphaned: {orphans:?}");
}

/// A tenant file in a folder under `tenants/` is a tenant like any other: applied, changed by a
/// push, and moved to another folder with one sync that deletes and recreates nothing.
#[test]
fn a_tenant_file_in_a_folder_is_applied_changed_and_moved_without_a_prune() {
    let agent_ns = common::unique("fief-agf");
    let a = common::unique("folder-a");
    let in_folder = |dir: &str, greeting: &str| {
        let (path, text) = tenant(&a, greeting);
        (path.replace("tenants/", &format!("tenants/{dir}/")), text)
    };
    let mut files = small_repo(&agent_ns, &[]);
    files.push(in_folder("eu/shops", "hi"));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let ns = format!("{a}-prod");
    assert_eq!(
        configmap_value(&ns, "app-config", "greeting").as_deref(),
        Some("hi")
    );
    server.commit(
        &[in_folder("eu/shops", "bonjour")],
        "change a in its folder",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("the change applied", Duration::from_secs(10), || {
        configmap_value(&ns, "app-config", "greeting").as_deref() == Some("bonjour")
    });
    wait_until("the sync finished", Duration::from_secs(10), || {
        condition(&status(&agent_ns, &a), "Ready") == "True"
    });
    let uid = |name: &str| {
        kubectl_json(&["get", "configmap", "-n", &ns, name])
            .map(|cm| cm["metadata"]["uid"].to_string())
            .unwrap_or_default()
    };
    let uids = (uid("app-config"), uid("app-extra"));

    let (old, _) = in_folder("eu/shops", "");
    std::fs::remove_file(server.repo().join(old)).unwrap();
    server.commit(&[in_folder("us", "bonjour")], "move a to another folder");
    let head = git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    assert_eq!(agent.signed_push(), 202);
    // The tenant's last sync attempt is at the move's commit, and it succeeded.
    wait_until("the move synced", Duration::from_secs(10), || {
        let body = agent.get("/status").map(|(_, b)| b).unwrap_or_default();
        let view: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let attempt = &view["tenants"][a.as_str()];
        attempt["commit"] == head.as_str() && attempt["outcome"] == "applied"
    });
    assert_eq!(condition(&status(&agent_ns, &a), "Ready"), "True");
    assert_eq!(
        (uid("app-config"), uid("app-extra")),
        uids,
        "the move deleted or recreated an object"
    );
    assert_eq!(
        configmap_value(&ns, "app-config", "greeting").as_deref(),
        Some("bonjour")
    );
}
