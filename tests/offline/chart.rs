//! The Helm chart (deploy/chart/fief) against `fief install --export`: with equivalent
//! settings `helm template` renders the same objects (the same (apiVersion, kind, namespace,
//! name) set, and each object equal once Helm's own labels and annotations are left out), so
//! the chart cannot drift from the binary. Also: `helm lint --strict` is clean, the values
//! schema refuses a misspelt key, contradicting credentials are refused as `fief install`
//! refuses them, existing Secrets are mounted without the chart making any, and the optional
//! objects (NetworkPolicy, ServiceMonitor, PrometheusRule, dashboard ConfigMap) appear only when
//! asked for and, with the container's resources, equal `fief install --export`'s for the same
//! options; and tools/release.sh refuses a version other than the crate's before it builds
//! anything.
//!
//! Needs the pinned helm CLI in `$FIEF_HELM_BIN` (tools/test.sh sets it from
//! tools/build-helm.sh); without it the tests that run helm fail and say so.

mod kit;
use crate::common::offline;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use kit::*;

#[test]
fn the_chart_version_and_app_version_are_the_crate_version() {
    assert_eq!(
        chart_field("version"),
        crate_version(),
        "Chart.yaml version"
    );
    assert_eq!(
        chart_field("appVersion"),
        crate_version(),
        "Chart.yaml appVersion"
    );
}

#[test]
fn default_values_render_what_fief_install_exports_with_its_defaults() {
    let image = format!("registry.example.com/fief:{}", crate_version());
    let exported = export(&["--image", &image, "--repo", REPO_URL]);
    let charted = template_ok(&format!("repo:\n  url: {REPO_URL}\n"));
    assert_same_install(&exported, charted);
}

#[test]
fn every_option_and_inline_credentials_render_what_fief_install_exports_plus_its_secrets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        p.display().to_string()
    };
    let (token, hook) = (file("token", "tok-123\n"), file("hook", "hook-secret\n"));
    let age = file("age", "AGE-SECRET-KEY-1TESTONLY\n");
    let exported = export(&[
        "--namespace",
        "platform-gitops",
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        REPO_URL,
        "--branch",
        "live",
        "--interval",
        "1m",
        "--replicas",
        "3",
        "--shards",
        "6",
        "--sync-durations",
        "fleet",
        "--cluster-name",
        "eu-1",
        "--git-token-file",
        &token,
        "--webhook-secret-file",
        &hook,
        "--age-key-file",
        &age,
    ]);
    let charted = template_ok(&format!(
        "namespace: platform-gitops\nimage: {{repository: example.test/fief, tag: 1.2.3}}\n\
         repo: {{url: {REPO_URL}, branch: live}}\ninterval: 1m\nreplicas: 3\nshards: 6\nsyncDurations: fleet\nclusterName: eu-1\n\
         git: {{token: \"tok-123\\n\"}}\nwebhook: {{secret: \"hook-secret\\n\"}}\n\
         ageKey: {{key: \"AGE-SECRET-KEY-1TESTONLY\\n\"}}\n"
    ));
    let secret = |name: &str, data_key: &str| {
        let s = charted
            .iter()
            .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no Secret {name}"));
        base64_decode(s["data"][data_key].as_str().unwrap_or_default())
    };
    // The values `fief install` stores: the token and webhook secret trimmed, the key as is.
    assert_eq!(secret("fief-git", "token"), "tok-123");
    assert_eq!(secret("fief-webhook", "secret"), "hook-secret");
    assert_eq!(
        secret("fief-age-key", "keys.txt"),
        "AGE-SECRET-KEY-1TESTONLY\n"
    );
    assert!(exported.contains("fief-agent-scope-platform-gitops"));
    assert!(
        exported.contains("--shards=6"),
        "the shards reach the agent's flags"
    );
    assert!(
        exported.contains("--sync-durations=fleet"),
        "the fleet durations reach the agent's flags"
    );
    assert_same_install(&exported, charted);
}

#[test]
fn ssh_credentials_render_what_fief_install_exports_with_an_ssh_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (key, hosts) = (dir.path().join("key"), dir.path().join("hosts"));
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----\nTESTONLY\n").expect("write");
    std::fs::write(&hosts, "git.example.test ssh-ed25519 AAAATESTONLY\n").expect("write");
    let exported = export(&[
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        "ssh://git@git.example.test/org/tenants.git",
        "--ssh-key-file",
        key.to_str().expect("utf-8"),
        "--known-hosts-file",
        hosts.to_str().expect("utf-8"),
    ]);
    let charted = template_ok(
        "image: {repository: example.test/fief, tag: 1.2.3}\n\
         repo: {url: \"ssh://git@git.example.test/org/tenants.git\"}\n\
         git:\n  sshKey: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n    TESTONLY\n\
         \x20 knownHosts: |\n    git.example.test ssh-ed25519 AAAATESTONLY\n",
    );
    assert_same_install(&exported, charted);
}

#[test]
fn optional_objects_and_resources_render_what_fief_install_exports_with_those_options() {
    let exported = export(&[
        "--namespace",
        "gitops",
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        REPO_URL,
        "--cpu-request",
        "250m",
        "--memory-request",
        "256Mi",
        "--cpu-limit",
        "none",
        "--memory-limit",
        "1Gi",
        "--network-policy",
        "--network-policy-from-namespace",
        "team=platform,env=prod",
        "--network-policy-from-namespace",
        "kubernetes.io/metadata.name=monitoring",
        "--service-monitor",
        "--service-monitor-interval",
        "1m",
        "--service-monitor-label",
        "release=prom",
        "--service-monitor-label",
        "team=platform",
        "--prometheus-rule",
        "--prometheus-rule-label",
        "release=prom,role=alert-rules",
        "--alert-tenant-not-ready-for",
        "1h",
        "--alert-fetch-stale",
        "15m",
        "--alert-fetch-failing-for",
        "20m",
        "--alert-tenant-stalled-for",
        "1h",
        "--alert-rollout-halted-for",
        "45m",
        "--alert-prune-held-for",
        "2h",
        "--grafana-dashboard",
        "--grafana-dashboard-namespace",
        "monitoring",
        "--grafana-dashboard-label",
        "grafana_dashboard=fief,team=platform",
    ]);
    let charted = template_ok(&format!(
        "namespace: gitops\nimage: {{repository: example.test/fief, tag: 1.2.3}}\n\
         repo: {{url: {REPO_URL}}}\n\
         resources: {{requests: {{cpu: 250m, memory: 256Mi}}, limits: {{cpu: null, memory: 1Gi}}}}\n\
         networkPolicy:\n  enabled: true\n  from:\n\
         \x20   - namespaceSelector: {{matchLabels: {{team: platform, env: prod}}}}\n\
         \x20   - namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: monitoring}}}}\n\
         serviceMonitor: {{enabled: true, interval: 1m, labels: {{release: prom, team: platform}}}}\n\
         prometheusRule: {{enabled: true, labels: {{release: prom, role: alert-rules}}, \
         tenantNotReadyFor: 1h, fetchStaleSeconds: 900, fetchFailingFor: 20m, \
         tenantStalledFor: 1h, rolloutHaltedFor: 45m, pruneHeldFor: 2h}}\n\
         grafanaDashboard: {{enabled: true, namespace: monitoring, \
         labels: {{grafana_dashboard: fief, team: platform}}}}\n"
    ));
    for kind in [
        "NetworkPolicy",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",
    ] {
        assert!(
            exported.contains(&format!("kind: {kind}\n")),
            "{kind} exported"
        );
    }
    assert_same_install(&exported, charted);

    the_optional_objects_with_their_defaults_render_the_same();
}

/// The optional objects with their defaults, and the default resources: the chart renders
/// what `fief install` exports.
fn the_optional_objects_with_their_defaults_render_the_same() {
    // The optional objects with their defaults, and the default resources.
    let exported = export(&[
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        REPO_URL,
        "--network-policy",
        "--service-monitor",
        "--prometheus-rule",
        "--grafana-dashboard",
    ]);
    let charted = template_ok(&format!(
        "image: {{repository: example.test/fief, tag: 1.2.3}}\nrepo: {{url: {REPO_URL}}}\n\
         networkPolicy: {{enabled: true}}\nserviceMonitor: {{enabled: true}}\n\
         prometheusRule: {{enabled: true}}\ngrafanaDashboard: {{enabled: true}}\n"
    ));
    assert_same_install(&exported, charted);
}

#[test]
fn the_web_view_and_its_token_render_what_fief_install_exports_with_web() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("web-token");
    std::fs::write(&token, "web-tok\n").expect("write");
    let exported = export(&[
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        REPO_URL,
        "--web",
        "--web-token-file",
        token.to_str().expect("utf-8"),
    ]);
    assert!(
        exported.contains("--web-token-file=/etc/fief/web/token"),
        "{exported}"
    );
    let charted = template_ok(&format!(
        "image: {{repository: example.test/fief, tag: 1.2.3}}\nrepo: {{url: {REPO_URL}}}\n\
         web: {{enabled: true, token: \"web-tok\\n\"}}\n"
    ));
    assert_same_install(&exported, charted);
    let exported = export(&[
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        REPO_URL,
        "--web",
    ]);
    let web = |l: &str| l.trim().trim_start_matches("- ").trim_matches('"') == "--web";
    assert!(exported.lines().any(web) && !exported.contains("--web-token-file"));
    let charted = template_ok(&format!(
        "image: {{repository: example.test/fief, tag: 1.2.3}}\nrepo: {{url: {REPO_URL}}}\n\
         web: {{enabled: true}}\n"
    ));
    assert_same_install(&exported, charted);
    let err = template("repo: {url: git://h/t}\nweb: {token: t}\n").expect_err("token without web");
    assert!(err.contains("need web.enabled"), "{err}");
}

#[test]
fn existing_secrets_add_the_credential_flags_and_mount_those_secrets_without_making_any() {
    let objects = by_key(template_ok(
        "repo: {url: https://git.example.test/t.git}\n\
         git: {existingSecret: corp-git, auth: ssh}\n\
         webhook: {existingSecret: corp-hook}\nageKey: {existingSecret: corp-age}\n",
    ));
    assert!(
        find(&objects, "Secret").is_empty(),
        "the chart made a Secret"
    );
    let spec = &find(&objects, "Deployment")[0]["spec"]["template"]["spec"];
    let args = spec["containers"][0]["args"].to_string();
    for flag in [
        "--ssh-key-file=/etc/fief/git/ssh-key",
        "--known-hosts-file=/etc/fief/git/known_hosts",
        "--webhook-secret-file=/etc/fief/webhook/secret",
        "--age-key-file=/etc/fief/age/keys.txt",
    ] {
        assert!(args.contains(flag), "{flag} missing from {args}");
    }
    assert!(!args.contains("--git-token-file"), "{args}");
    let volumes: BTreeMap<String, String> = spec["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .filter(|v| v["secret"].is_object())
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_string(),
                v["secret"]["secretName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(volumes["git-credentials"], "corp-git");
    assert_eq!(volumes["webhook-secret"], "corp-hook");
    assert_eq!(volumes["age-key"], "corp-age");
}

#[test]
fn helm_lint_strict_is_clean() {
    let chart = chart();
    let out = helm(&[
        "lint",
        "--strict",
        chart.to_str().expect("utf-8 path"),
        "--set",
        "repo.url=https://git.example.test/t.git",
    ]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "helm lint --strict failed:\n{stdout}{}",
        text(&out.stderr)
    );
    assert!(
        !stdout.contains("[WARNING]") && !stdout.contains("[ERROR]"),
        "{stdout}"
    );
}

#[test]
fn a_misspelt_value_is_refused_by_the_schema_and_named() {
    for (values, misspelt) in [
        ("repo: {url: git://h/t}\nreplicsa: 3\n", "replicsa"),
        ("repo: {url: git://h/t}\ngit: {tokne: x}\n", "tokne"),
        ("repo: {url: git://h/t}\nimage: {tag: 1, repo: x}\n", "repo"),
    ] {
        match template(values) {
            Ok(_) => panic!("helm template accepted {values:?}"),
            Err(e) => assert!(
                e.contains(misspelt) && e.contains("not allowed"),
                "{values:?}: {e}"
            ),
        }
    }
    let err = template("repo: {url: git://h/t}\nnamespace: Not_A_Label\n")
        .expect_err("a namespace that is no DNS label");
    assert!(err.contains("namespace"), "{err}");
}

#[test]
fn contradicting_or_missing_settings_are_refused_with_the_reason() {
    for (values, reason) in [
        ("{}", "repo.url is required"),
        (
            "repo: {url: git://h/t}\ngit: {token: t, sshKey: k, knownHosts: h}\n",
            "exclude each other",
        ),
        (
            "repo: {url: git://h/t}\ngit: {sshKey: k}\n",
            "git.sshKey and git.knownHosts go together",
        ),
        (
            "repo: {url: git://h/t}\ngit: {existingSecret: s}\n",
            "git.existingSecret needs git.auth",
        ),
        (
            "repo: {url: git://h/t}\nwebhook: {secret: s, existingSecret: s}\n",
            "webhook.secret and webhook.existingSecret exclude each other",
        ),
    ] {
        match template(values) {
            Ok(_) => panic!("helm template accepted {values:?}"),
            Err(e) => assert!(e.contains(reason), "{values:?}: {e}"),
        }
    }
}

#[test]
fn optional_objects_render_only_when_enabled() {
    let kinds = |values: &str| -> BTreeSet<String> {
        template_ok(values)
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let optional = [
        "NetworkPolicy",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",
    ];
    let off = kinds("repo: {url: git://h/t}\n");
    assert!(optional.iter().all(|k| !off.contains(*k)), "{off:?}");
    let objects = by_key(template_ok(
        "repo: {url: git://h/t}\nnamespace: gitops\n\
         networkPolicy: {enabled: true, from: [{namespaceSelector: {matchLabels: {team: platform}}}]}\n\
         serviceMonitor: {enabled: true, labels: {release: prom}}\n\
         prometheusRule: {enabled: true}\ngrafanaDashboard: {enabled: true}\n",
    ));
    for kind in optional {
        let found = find(&objects, kind);
        assert_eq!(found.len(), 1, "{kind}");
        assert_eq!(key(found[0]).2, "gitops", "{kind} namespace");
    }
    let policy = find(&objects, "NetworkPolicy")[0];
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["team"],
        "platform"
    );
    assert_eq!(
        find(&objects, "ServiceMonitor")[0]["metadata"]["labels"]["release"],
        "prom"
    );
    let rules = find(&objects, "PrometheusRule")[0].to_string();
    assert!(
        rules.contains("fief_tenant_ready{namespace=\\\"gitops\\\"}"),
        "{rules}"
    );
}

#[test]
fn release_script_refuses_a_version_other_than_the_crate_version() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/release.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("999.0.0")
        .output()
        .expect("run tools/release.sh");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "VERSION 999.0.0 differs from Cargo.toml's version {}",
            crate_version()
        )),
        "{stderr}"
    );
}
