//! Secrets in the cluster and the agent: each tenant's Secret lands in its namespace, a
//! rotation reaches only its tenant and nothing leaks; the agent decrypts with its own key,
//! refuses a bad key file naming the line, and a pull-request diff reports a rotated secret
//! without showing it.

use super::*;

use crate::common::cluster_cli::kubectl;

fn live_secret(ns: &str) -> Value {
    let out = kubectl(&["get", "secret", "app-secrets", "-n", ns, "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn secrets_land_in_each_tenant_namespace_rotation_reaches_only_its_tenant_and_nothing_leaks() {
    let repo = TestRepo::new("e2e");
    let cp = common::control_plane();
    let kubeconfig = cp.admin_kubeconfig().to_str().unwrap().to_string();
    let key = repo.key_arg();
    let mut session = Session {
        repo: &repo,
        kubeconfig,
        transcript: String::new(),
    };
    let mut run = |cmd: &str, args: &[&str]| session.run(cmd, args);

    // Without a key, apply fails the tenants that read secrets and applies nothing of them.
    let out = run("apply", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no age key"),
        "{}",
        text(&out.stderr)
    );
    assert!(!kubectl(&["get", "ns", "e2ea-prod"]).status.success());

    let out = run("apply", &[key[0], key[1], "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let a = live_secret("e2ea-prod");
    let b = live_secret("e2eb-prod");
    assert_eq!(decoded(&a, "db-password"), ALPHA_DB);
    assert_eq!(decoded(&a, "analytics-key"), SHARED_KEY);
    assert_eq!(decoded(&b, "db-password"), BETA_DB);
    assert_eq!(decoded(&b, "smtp-password"), SMTP);
    let b_version = b["metadata"]["resourceVersion"].clone();

    // Steady state: nothing written.
    let out = run("apply", &[key[0], key[1], "--output", "json"]);
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["requests"]["patch"], 0, "{summary}");

    rotation_reaches_only_its_tenant(&mut run, &repo, &b_version);
    let out = run("apply", &[key[0], key[1]]);
    assert_eq!(out.status.code(), Some(0));

    // Everything a person or a script sees: render, validate, diff in text and JSON.
    run("render", &[]);
    run("render", &[key[0], key[1]]);
    run("validate", &[key[0], key[1]]);
    run("validate", &[key[0], key[1], "--output", "json"]);
    run("diff", &[key[0], key[1]]);
    run("diff", &[]);

    the_redacted_render_is_refused_by_the_api_server(&repo, cp);
    a_secret_where_a_name_goes_is_reported_by_its_key(&mut run, &repo);

    let inventories = kubectl(&["get", "configmaps", "-n", &repo.agent_ns, "-o", "yaml"]);
    assert!(inventories.status.success());
    let inventories = text(&inventories.stdout);
    assert!(inventories.contains("fief-tenant-e2ea"), "{inventories}");
    let events = text(&kubectl(&["get", "events", "-A", "-o", "yaml"]).stdout);

    let transcript = &session.transcript;
    assert!(transcript.contains("Secret"), "{transcript}");
    assert_no_plaintext("fief output", transcript);
    assert_no_plaintext("inventories", &inventories);
    assert_no_plaintext("events", &events);
}

/// A template puts `secrets.tenant.apiToken` where a name goes: validate, render, apply and
/// diff report the invalid name naming the secret key (never its value), and apply applies
/// nothing of the failing tenants. Everything printed lands in the session's transcript.
fn a_secret_where_a_name_goes_is_reported_by_its_key(
    run: &mut dyn FnMut(&str, &[&str]) -> Output,
    repo: &TestRepo,
) {
    repo.write(TOKEN_AS_NAME.0, TOKEN_AS_NAME.1);
    let key = repo.key_arg();
    let json: &[&str] = &["--output", "json"];
    for (cmd, extra) in [
        ("validate", &[][..]),
        ("validate", json),
        ("render", &[]),
        ("render", json),
        ("apply", &[]),
        ("apply", json),
        ("diff", &[]),
    ] {
        let mut args = vec![key[0], key[1]];
        args.extend_from_slice(extra);
        let out = run(cmd, &args);
        let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_ne!(out.status.code(), Some(0), "{cmd} {extra:?}: {shown}");
        if cmd != "render" {
            assert!(shown.contains(TOKEN_NAMED), "{cmd} {extra:?}: {shown}");
        }
    }
    let names = kubectl(&["get", "configmaps", "-A", "-o", "name"]);
    assert!(!text(&names.stdout).contains("tok_"), "nothing applied");
}

/// `fief` commands on a repo, with what they printed kept in a transcript.
struct Session<'a> {
    repo: &'a TestRepo,
    /// Given to every command that talks to the cluster.
    kubeconfig: String,
    /// Every command and what it printed.
    transcript: String,
}

impl Session<'_> {
    /// `fief CMD ARGS` (with the kubeconfig unless `render` or `validate`), recorded.
    fn run(&mut self, cmd: &str, args: &[&str]) -> Output {
        let mut all = vec!["--kubeconfig", self.kubeconfig.as_str()];
        if cmd == "render" || cmd == "validate" {
            all.clear();
        }
        all.extend_from_slice(args);
        let out = self.repo.fief(cmd, &all);
        self.transcript.push_str(&format!(
            "$ fief {cmd} {all:?}\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        ));
        out
    }
}

/// Rotate tenant e2ea's password with `sops set`: diff names only e2ea, apply writes only
/// its Secret (e2eb's stays at `b_version`).
fn rotation_reaches_only_its_tenant(
    run: &mut dyn FnMut(&str, &[&str]) -> Output,
    repo: &TestRepo,
    b_version: &Value,
) {
    let key = repo.key_arg();
    sops::set(
        repo.path(),
        "secrets/tenants/e2ea.sops.yaml",
        &repo.key,
        "[\"dbPassword\"]",
        &format!("\"{ALPHA_ROTATED}\""),
    );
    let out = run("diff", &[key[0], key[1], "--color", "never"]);
    let diff = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{diff}");
    assert!(
        diff.contains("e2ea") && !diff.contains("tenant e2eb"),
        "{diff}"
    );
    let out = run("apply", &[key[0], key[1], "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    let counts = |t: &str| {
        summary["tenants"]
            .as_array()
            .and_then(|ts| ts.iter().find(|r| r["tenant"] == t))
            .map(|r| r["counts"].clone())
            .unwrap_or_default()
    };
    assert_eq!(counts("e2ea")["configured"], 1, "{summary}");
    assert_eq!(counts("e2eb")["configured"], 0, "{summary}");
    assert_eq!(
        counts("e2eb")["unchanged"],
        counts("e2eb")["objects"],
        "{summary}"
    );
    assert_eq!(
        decoded(&live_secret("e2ea-prod"), "db-password"),
        ALPHA_ROTATED
    );
    assert_eq!(
        live_secret("e2eb-prod")["metadata"]["resourceVersion"],
        *b_version
    );
}

/// The redacted render does not apply as real values: the API server refuses it (without
/// quoting a value).
fn the_redacted_render_is_refused_by_the_api_server(repo: &TestRepo, cp: &common::ControlPlane) {
    let rendered = repo.fief("render", &["--tenant", "e2ea"]);
    let dry = crate::common::kubectl::Kubectl::with(cp.kubectl_admin())
        .stdin(&text(&rendered.stdout))
        .output(&["apply", "--dry-run=server", "-f", "-"]);
    assert!(!dry.status.success());
    assert!(
        text(&dry.stderr).contains("illegal base64"),
        "{}",
        text(&dry.stderr)
    );
    assert!(
        text(&dry.stderr).contains("app-secrets"),
        "{}",
        text(&dry.stderr)
    );
}

#[test]
fn agent_refuses_a_bad_age_key_file_naming_the_line_not_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.txt");
    std::fs::write(&file, "# created: now\nAGE-SECRET-KEY-1NOTAREALKEY\n").unwrap();
    let out = Command::new(fief_bin())
        .args([
            "agent",
            "--repo",
            "file:///nonexistent",
            "--no-leader-election",
        ])
        .arg("--age-key-file")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("keys.txt") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert!(!stderr.contains("NOTAREALKEY"), "{stderr}");
}

#[test]
fn a_pull_request_diff_reports_a_rotated_secret_as_changed_without_showing_it() {
    let repo = TestRepo::new("pr");
    let g = |args: &[&str]| common::util::git(repo.path(), args);
    g(&["init", "-q", "-b", "main"]);
    g(&["add", "-A"]);
    g(&["commit", "-q", "-m", "secrets"]);
    sops::set(
        repo.path(),
        "secrets/tenants/pra.sops.yaml",
        &repo.key,
        "[\"dbPassword\"]",
        &format!("\"{ALPHA_ROTATED}\""),
    );
    let key = repo.key_arg();
    for format in ["text", "json", "markdown"] {
        let out = repo.fief("diff", &["--from", "HEAD", "-o", format, key[0], key[1]]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
        assert!(stdout.contains("pra"), "{stdout}");
        assert!(!stdout.contains("prb"), "only pra changed: {stdout}");
        assert_no_plaintext("diff --from", &stdout);
        assert_no_plaintext("diff --from stderr", &text(&out.stderr));
    }
}

/// Every file of the test repo, as (path, text), for the agent's git server.
fn repo_files(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read test repo") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                let rel = path.strip_prefix(root).expect("inside the repo");
                let rel = rel.to_string_lossy().into_owned();
                if rel.starts_with("fief.yaml")
                    || ["tenants/", "components/", "secrets/"]
                        .iter()
                        .any(|p| rel.starts_with(p))
                {
                    out.push((rel, text));
                }
            }
        }
    }
    out
}

fn live_secret_opt(ns: &str) -> Option<Value> {
    common::agent::kubectl_json(&["get", "secret", "app-secrets", "-n", ns])
}

#[test]
fn the_agent_decrypts_with_its_key_applies_a_rotation_to_one_tenant_and_logs_no_secret() {
    let repo = TestRepo::new("sag");
    let (a, b) = repo.names("sag");
    let git = common::agent::GitServer::new(&repo_files(repo.path()));
    let key = repo.key.file.to_str().expect("utf-8 path").to_string();
    let agent = common::agent::Agent::start(
        &git.url(),
        &[
            "--interval",
            "1s",
            "--age-key-file",
            &key,
            "--log-format",
            "json",
            "--web",
        ],
    );
    let (ns_a, ns_b) = (format!("{a}-prod"), format!("{b}-prod"));
    common::util::wait_until("both tenants' Secrets", Duration::from_secs(60), || {
        live_secret_opt(&ns_a).is_some() && live_secret_opt(&ns_b).is_some()
    });
    let secret_a = live_secret_opt(&ns_a).expect("secret a");
    assert_eq!(decoded(&secret_a, "db-password"), ALPHA_DB);
    assert_eq!(decoded(&secret_a, "analytics-key"), SHARED_KEY);
    let rv_b = live_secret_opt(&ns_b).expect("secret b")["metadata"]["resourceVersion"].clone();

    // Rotate tenant a's password with `sops set`, push, and trigger the webhook.
    let file = format!("secrets/tenants/{a}.sops.yaml");
    sops::set(
        repo.path(),
        &file,
        &repo.key,
        "[\"dbPassword\"]",
        &format!("\"{ALPHA_ROTATED}\""),
    );
    git.commit(&[(file.clone(), repo.read(&file))], "rotate a");
    assert_eq!(agent.signed_push(), 202, "the webhook is accepted");
    common::util::wait_until("the rotated password", Duration::from_secs(60), || {
        live_secret_opt(&ns_a).is_some_and(|s| decoded(&s, "db-password") == ALPHA_ROTATED)
    });
    assert_eq!(
        live_secret_opt(&ns_b).expect("secret b")["metadata"]["resourceVersion"],
        rv_b,
        "the other tenant's Secret is not written"
    );
    let served = a_secret_where_a_name_goes_fails_both_tenants_naming_the_key(&agent, &git, &repo);
    let inventories = common::agent::kubectl_json(&["get", "configmaps", "-n", &repo.agent_ns])
        .map(|v| v.to_string())
        .unwrap_or_default();
    let events = common::agent::kubectl_json(&["get", "events", "-n", &repo.agent_ns])
        .map(|v| v.to_string())
        .unwrap_or_default();
    let metrics = agent
        .get("/metrics")
        .map(|(_, body)| body)
        .unwrap_or_default();
    assert_no_plaintext("the agent's JSON log", &agent.log());
    assert_no_plaintext("the inventories", &inventories);
    assert_no_plaintext("the Events", &events);
    assert_no_plaintext("the metrics", &metrics);
    for (path, body) in &served {
        assert_no_plaintext(path, body);
    }
}

/// Push a template that puts `secrets.tenant.apiToken` where a name goes: both tenants fail
/// and `/status` names the secret key. Returns what the agent serves then: `/status` and
/// every page of the web view, by path.
fn a_secret_where_a_name_goes_fails_both_tenants_naming_the_key(
    agent: &common::agent::Agent,
    git: &common::agent::GitServer,
    repo: &TestRepo,
) -> Vec<(String, String)> {
    let (a, b) = repo.names("sag");
    let (path, template) = TOKEN_AS_NAME;
    git.commit(
        &[(path.to_string(), template.to_string())],
        "a secret as a name",
    );
    assert_eq!(agent.signed_push(), 202, "the webhook is accepted");
    let failed = |body: &str| body.matches(TOKEN_NAMED).count() >= 2;
    common::util::wait_until(
        "both tenants failed, naming the key",
        Duration::from_secs(60),
        || agent.get("/status").is_some_and(|(_, body)| failed(&body)),
    );
    let mut served = Vec::new();
    for path in [
        "/status".to_string(),
        "/ui/".to_string(),
        "/ui/tenants".to_string(),
        "/ui/tenants?state=failed".to_string(),
        "/ui/tenants?q=sag".to_string(),
        format!("/ui/tenants/{a}"),
        format!("/ui/tenants/{b}"),
    ] {
        let (code, body) = agent.get(&path).expect("the agent answers");
        assert_eq!(code, 200, "{path}: {body}");
        served.push((path, body));
    }
    let page_a = &served[5].1;
    assert!(
        page_a.contains("&lt;secret secrets.tenant.apiToken&gt;")
            || page_a.contains("<secret secrets.tenant.apiToken>"),
        "the tenant's page names the key:\n{page_a}"
    );
    served
}
