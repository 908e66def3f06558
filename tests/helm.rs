//! The Helm chart (deploy/chart/fief) against `fief install --export`: with equivalent
//! settings `helm template` renders the same objects (the same (apiVersion, kind, namespace,
//! name) set, and each object equal once Helm's own labels and annotations are left out), so
//! the chart cannot drift from the binary. Also: `helm lint --strict` is clean, the values
//! schema refuses a misspelt key, contradicting credentials are refused as `fief install`
//! refuses them, existing Secrets are mounted without the chart making any, and the optional
//! objects (NetworkPolicy, ServiceMonitor, PrometheusRule) appear only when asked for and,
//! with the container's resources, equal `fief install --export`'s for the same options; and
//! tools/release.sh refuses a version other than the crate's before it builds anything.
//!
//! Needs the pinned helm CLI in `$FIEF_HELM_BIN` (tools/test.sh sets it from
//! tools/build-helm.sh); without it the tests that run helm fail and say so.

#[path = "common/offline.rs"]
mod offline;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const REPO_URL: &str = "https://git.example.test/org/tenants.git";
/// Labels and annotations Helm's conventions add that `fief install` does not.
const HELM_LABELS: [&str; 4] = [
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
];

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/chart/fief")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `helm ARGS`, with Helm's cache, config and data folders in a throwaway folder.
fn helm(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("tempdir");
    Command::new(offline::helm_bin())
        .args(args)
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", offline::helm_bin().display()))
}

/// `helm template` of the chart with `values` (YAML); the output, or the failure's stderr.
fn template(values: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).expect("write values");
    let chart = chart();
    let out = helm(&[
        "template",
        "fief",
        chart.to_str().expect("utf-8 path"),
        "--values",
        file.to_str().expect("utf-8 path"),
    ]);
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

fn template_ok(values: &str) -> Vec<Value> {
    let yaml = template(values).unwrap_or_else(|e| panic!("helm template failed: {e}"));
    parse(&yaml)
}

/// `fief install --export` with `args` (stdout, which must succeed).
fn export(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["install", "--export"])
        .args(args)
        .output()
        .expect("run fief");
    assert_eq!(
        out.status.code(),
        Some(0),
        "fief install --export {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn parse(yaml: &str) -> Vec<Value> {
    fief::core::yaml::split_documents(yaml)
        .iter()
        .filter_map(|doc| {
            fief::core::yaml::parse_value(doc)
                .unwrap_or_else(|e| panic!("not YAML: {e}\n{}", doc.text))
        })
        .collect()
}

type Key = (String, String, String, String);

fn key(o: &Value) -> Key {
    let s = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (
        s("/apiVersion"),
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name"),
    )
}

/// The object without what Helm adds by convention: its labels above and `helm.sh/`
/// annotations (`resource-policy: keep` on the Namespace).
fn normalise(mut o: Value) -> Value {
    let Some(metadata) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
        return o;
    };
    for field in ["labels", "annotations"] {
        if let Some(map) = metadata.get_mut(field).and_then(Value::as_object_mut) {
            map.retain(|k, _| !HELM_LABELS.contains(&k.as_str()) && !k.starts_with("helm.sh/"));
            if map.is_empty() {
                metadata.remove(field);
            }
        }
    }
    o
}

fn by_key(objects: Vec<Value>) -> BTreeMap<Key, Value> {
    objects
        .into_iter()
        .map(|o| (key(&o), normalise(o)))
        .collect()
}

fn find<'a>(objects: &'a BTreeMap<Key, Value>, kind: &str) -> Vec<&'a Value> {
    objects.values().filter(|o| o["kind"] == kind).collect()
}

/// The Secrets the export asks to create first: name -> keys (from its comment lines).
fn exported_secrets(yaml: &str) -> BTreeMap<String, BTreeSet<String>> {
    yaml.lines()
        .filter_map(|l| l.strip_prefix("# create it first: "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words
                .iter()
                .position(|w| *w == "generic")
                .expect("`create secret generic NAME`");
            let keys = words[at + 2..]
                .iter()
                .filter_map(|w| w.strip_prefix("--from-file="))
                .map(|w| w.trim_end_matches("=FILE").to_string())
                .collect();
            (words[at + 1].to_string(), keys)
        })
        .collect()
}

/// Compares the chart's objects with the export's, field by field where a difference matters
/// most (so a failure names it), then whole. The chart's Secrets are checked against the
/// names and keys the export asks for.
fn assert_same_install(export_yaml: &str, chart_objects: Vec<Value>) {
    let exported = by_key(parse(export_yaml));
    let (secrets, rest): (Vec<Value>, Vec<Value>) = chart_objects
        .into_iter()
        .partition(|o| o["kind"] == "Secret");
    let charted = by_key(rest);

    let want: BTreeSet<&Key> = exported.keys().collect();
    let got: BTreeSet<&Key> = charted.keys().collect();
    assert_eq!(
        want,
        got,
        "objects only in `fief install --export`: {:?}; only in the chart: {:?}",
        want.difference(&got).collect::<Vec<_>>(),
        got.difference(&want).collect::<Vec<_>>()
    );

    let container = |objects: &BTreeMap<Key, Value>| {
        find(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0].clone()
    };
    let (a, b) = (container(&exported), container(&charted));
    for field in ["args", "env", "securityContext", "image", "resources"] {
        assert_eq!(a[field], b[field], "the agent container's {field}");
    }
    for kind in ["ClusterRole", "Role"] {
        let rules = |objects: &BTreeMap<Key, Value>| -> Vec<(String, Value)> {
            find(objects, kind)
                .iter()
                .map(|o| (key(o).3, o["rules"].clone()))
                .collect()
        };
        assert_eq!(rules(&exported), rules(&charted), "{kind} rules");
    }
    let policy = |objects: &BTreeMap<Key, Value>| {
        let p = find(objects, "ValidatingAdmissionPolicy")[0];
        (
            p["spec"]["matchConditions"].clone(),
            p["spec"]["variables"].clone(),
            p["spec"]["validations"].clone(),
        )
    };
    assert_eq!(
        policy(&exported),
        policy(&charted),
        "admission policy expressions"
    );
    for (k, object) in &exported {
        assert_eq!(
            object, &charted[k],
            "{k:?} differs between `fief install --export` and the chart"
        );
    }

    let made: BTreeMap<String, BTreeSet<String>> = secrets
        .iter()
        .map(|s| {
            let keys = s["data"]
                .as_object()
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            (key(s).3, keys)
        })
        .collect();
    assert_eq!(
        exported_secrets(export_yaml),
        made,
        "the Secrets (name and keys) the chart makes and the ones `fief install` makes"
    );
    let namespace = key(find(&exported, "Deployment")[0]).2;
    for s in &secrets {
        assert_eq!(key(s).2, namespace, "Secret {} namespace", key(s).3);
    }
}

fn crate_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

fn chart_field(field: &str) -> String {
    let path = chart().join("Chart.yaml");
    let yaml = std::fs::read_to_string(&path).expect("read Chart.yaml");
    let chart = parse(&yaml).pop().expect("Chart.yaml is a document");
    chart[field].as_str().unwrap_or_default().to_string()
}

fn base64_decode(s: &str) -> String {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64");
    String::from_utf8(bytes).expect("utf-8")
}

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
         repo: {{url: {REPO_URL}, branch: live}}\ninterval: 1m\nreplicas: 3\nclusterName: eu-1\n\
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
         tenantNotReadyFor: 1h, fetchStaleSeconds: 900}}\n"
    ));
    for kind in ["NetworkPolicy", "ServiceMonitor", "PrometheusRule"] {
        assert!(
            exported.contains(&format!("kind: {kind}\n")),
            "{kind} exported"
        );
    }
    assert_same_install(&exported, charted);

    // The optional objects with their defaults, and the default resources.
    let exported = export(&[
        "--image",
        "example.test/fief:1.2.3",
        "--repo",
        REPO_URL,
        "--network-policy",
        "--service-monitor",
        "--prometheus-rule",
    ]);
    let charted = template_ok(&format!(
        "image: {{repository: example.test/fief, tag: 1.2.3}}\nrepo: {{url: {REPO_URL}}}\n\
         networkPolicy: {{enabled: true}}\nserviceMonitor: {{enabled: true}}\n\
         prometheusRule: {{enabled: true}}\n"
    ));
    assert_same_install(&exported, charted);
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
fn network_policy_service_monitor_and_prometheus_rule_render_only_when_enabled() {
    let kinds = |values: &str| -> BTreeSet<String> {
        template_ok(values)
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let optional = ["NetworkPolicy", "ServiceMonitor", "PrometheusRule"];
    let off = kinds("repo: {url: git://h/t}\n");
    assert!(optional.iter().all(|k| !off.contains(*k)), "{off:?}");
    let objects = by_key(template_ok(
        "repo: {url: git://h/t}\nnamespace: gitops\n\
         networkPolicy: {enabled: true, from: [{namespaceSelector: {matchLabels: {team: platform}}}]}\n\
         serviceMonitor: {enabled: true, labels: {release: prom}}\n\
         prometheusRule: {enabled: true}\n",
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
