//! SOPS secrets end to end: files written by the real `sops` CLI (age keys from
//! `age-keygen`) decrypted by fief, tampering refused, rotation touching only the tenants that
//! use a file, and the plaintext found nowhere in fief's output, inventories or Events.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use base64::Engine;
use common::sops::{self, AgeKey};
use serde_json::Value;

mod chart;
mod in_the_cluster;

fn fief_bin() -> &'static str {
    env!("CARGO_BIN_EXE_fief")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

const SHARED_PLAIN: &str = "# shared by every tenant\nanalytics:\n  apiKey: ak-shared-Zq81xT4\n  region: eu\nsmtp:\n  password: smtp-Pw-77Hk2\n  port: 587\n  tls: true\n  hosts: [mail-a.example, mail-b.example]\nnote_unencrypted: visible-in-git\n";
const SHARED_KEY: &str = "ak-shared-Zq81xT4";
const SMTP: &str = "smtp-Pw-77Hk2";
const ALPHA_DB: &str = "alpha-db-Kc9vW2pq";
const BETA_DB: &str = "beta-db-Lm3nB8rt";
const ALPHA_ROTATED: &str = "alpha-db-ROTATED-Yy5";
/// Each tenant's `apiToken`: not a valid object name (capitals, an underscore), so a template
/// that puts it where a name goes fails fief's own name check, which quotes the name.
const ALPHA_TOKEN: &str = "Tok_alpha_Qx71Lp";
const BETA_TOKEN: &str = "Tok_beta_Wd38Zr";

/// Every plaintext value a test writes (each must appear nowhere it should not).
const PLAINTEXTS: [&str; 7] = [
    SHARED_KEY,
    SMTP,
    ALPHA_DB,
    BETA_DB,
    ALPHA_ROTATED,
    ALPHA_TOKEN,
    BETA_TOKEN,
];

/// A template that uses a secret where a name goes (a mistake fief must report without
/// printing the value).
const TOKEN_AS_NAME: (&str, &str) = (
    "components/app/templates/token.yaml",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ secrets.tenant.apiToken }}\ndata:\n  a: b\n",
);
/// What fief's name check says about it instead of the value.
const TOKEN_NAMED: &str = "ConfigMap `<secret secrets.tenant.apiToken>`: ";

const SECRET_TEMPLATE: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secrets\ntype: Opaque\ndata:\n  analytics-key: {{ secrets.shared.analytics.apiKey | b64encode }}\n  smtp-password: {{ secrets.shared.smtp.password | b64encode }}\n  db-password: {{ secrets.tenant.dbPassword | b64encode }}\nstringData:\n  smtp-port: {{ secrets.shared.smtp.port | string | quote }}\n  region: {{ secrets.shared.analytics.region | quote }}\n";
const CONFIG_TEMPLATE: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: hello\n";

struct TestRepo {
    dir: tempfile::TempDir,
    key: AgeKey,
    agent_ns: String,
}

impl TestRepo {
    /// Component `app` (a Secret from `secrets`, a ConfigMap); tenants `<prefix>a` (YAML
    /// secrets) and `<prefix>b` (JSON secrets); the shared file in YAML.
    fn new(prefix: &str) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        let key = sops::age_keygen(dir.path(), "fief.agekey");
        let repo = TestRepo {
            dir,
            key,
            agent_ns: common::unique("fief-sec"),
        };
        repo.write("fief.yaml", &format!("agentNamespace: {}\n", repo.agent_ns));
        repo.write("components/app/templates/secret.yaml", SECRET_TEMPLATE);
        repo.write("components/app/templates/config.yaml", CONFIG_TEMPLATE);
        let (a, b) = repo.names(prefix);
        for t in [&a, &b] {
            repo.write(
                &format!("tenants/{t}.yaml"),
                &format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {t}\nspec:\n  components:\n    - name: app\n"),
            );
        }
        let r = [repo.key.recipient.as_str()];
        sops::encrypt(repo.path(), "secrets/shared.sops.yaml", SHARED_PLAIN, &r);
        sops::encrypt(
            repo.path(),
            &format!("secrets/tenants/{a}.sops.yaml"),
            &format!("dbPassword: {ALPHA_DB}\napiToken: {ALPHA_TOKEN}\n"),
            &r,
        );
        sops::encrypt(
            repo.path(),
            &format!("secrets/tenants/{b}.sops.json"),
            &format!(
                "{{\"dbPassword\": \"{BETA_DB}\", \"apiToken\": \"{BETA_TOKEN}\", \"pool\": 5}}\n"
            ),
            &r,
        );
        repo
    }

    fn names(&self, prefix: &str) -> (String, String) {
        (format!("{prefix}a"), format!("{prefix}b"))
    }

    fn write(&self, path: &str, body: &str) {
        let p = self.dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).unwrap()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `fief <cmd> REPO args...` with no key in the environment.
    fn fief(&self, cmd: &str, args: &[&str]) -> Output {
        Command::new(fief_bin())
            .arg(cmd)
            .arg(self.path())
            .args(args)
            .env_remove("SOPS_AGE_KEY_FILE")
            .env_remove("SOPS_AGE_KEY")
            .stdin(Stdio::null())
            .output()
            .expect("run fief")
    }

    fn key_arg(&self) -> [&str; 2] {
        [
            "--age-key-file",
            self.key.file.to_str().expect("utf-8 path"),
        ]
    }
}

/// The YAML documents of a render, as JSON, skipping comments.
fn documents(stream: &str) -> Vec<Value> {
    stream
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str::<Value>(d).expect("yaml document"))
        .collect()
}

fn secret_of(docs: &[Value], ns: &str) -> Value {
    docs.iter()
        .find(|d| d["kind"] == "Secret" && d["metadata"]["namespace"] == ns)
        .cloned()
        .unwrap_or_else(|| panic!("no Secret in {ns}"))
}

fn decoded(secret: &Value, key: &str) -> String {
    let raw = secret["data"][key].as_str().unwrap_or_default();
    text(
        &base64::engine::general_purpose::STANDARD
            .decode(raw)
            .unwrap_or_default(),
    )
}

fn assert_no_plaintext(what: &str, haystack: &str) {
    let lower = haystack.to_ascii_lowercase();
    for p in PLAINTEXTS {
        assert!(
            !lower.contains(&p.to_ascii_lowercase()) && !haystack.contains(&b64(p)),
            "{what} contains the secret value {p}:\n{haystack}"
        );
    }
}

#[test]
fn files_encrypted_by_sops_yaml_and_json_are_decrypted_by_fief() {
    let repo = TestRepo::new("sx");
    let key = repo.key_arg();
    let out = repo.fief("render", &["--show-secrets", key[0], key[1]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let docs = documents(&text(&out.stdout));
    let a = secret_of(&docs, "sxa-prod");
    let b = secret_of(&docs, "sxb-prod");
    assert_eq!(decoded(&a, "analytics-key"), SHARED_KEY);
    assert_eq!(decoded(&a, "smtp-password"), SMTP);
    assert_eq!(decoded(&a, "db-password"), ALPHA_DB);
    assert_eq!(decoded(&b, "db-password"), BETA_DB);
    assert_eq!(a["stringData"]["smtp-port"], "587");
    assert_eq!(a["stringData"]["region"], "eu");
    // fief agrees with sops itself.
    let plain = sops::decrypt(repo.path(), "secrets/tenants/sxb.sops.json", &repo.key);
    assert!(plain.contains(BETA_DB), "{plain}");
    // The same through $SOPS_AGE_KEY_FILE, the variable sops users already have.
    let out = Command::new(fief_bin())
        .args(["render", "--show-secrets"])
        .arg(repo.path())
        .env("SOPS_AGE_KEY_FILE", &repo.key.file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&b64(ALPHA_DB)));
}

#[test]
fn a_file_whose_mac_was_tampered_with_is_refused_and_only_its_tenant_fails() {
    let repo = TestRepo::new("tm");
    let key = repo.key_arg();
    // Drop the `pool` value from b's JSON file: the MAC no longer matches the values.
    let path = "secrets/tenants/tmb.sops.json";
    let mut doc: Value = serde_json::from_str(&repo.read(path)).unwrap();
    doc.as_object_mut().unwrap().remove("pool");
    repo.write(path, &serde_json::to_string_pretty(&doc).unwrap());
    let out = repo.fief("validate", &[key[0], key[1]]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(path) && stderr.contains("MAC mismatch"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tenant `tmb`") && stderr.contains("hint:"),
        "{stderr}"
    );
    assert!(!stderr.contains("tenant `tma`"), "{stderr}");
    assert!(
        text(&out.stdout).contains("tma: ok"),
        "{}",
        text(&out.stdout)
    );
    // sops agrees the file is broken.
    let sops_out = Command::new(sops::sops_bin())
        .arg("--decrypt")
        .arg(repo.path().join(path))
        .env("SOPS_AGE_KEY_FILE", &repo.key.file)
        .output()
        .unwrap();
    assert!(!sops_out.status.success());
    assert!(text(&sops_out.stderr).contains("MAC mismatch"));
    assert_no_plaintext("validate stderr", &stderr);

    // A MAC copied from another file (well-formed, wrong) is refused as well.
    let mac_of = |text: &str| {
        let at = text.find("mac: ENC[").expect("mac");
        (at, at + text[at..].find(']').expect("]") + 1)
    };
    let shared = repo.read("secrets/shared.sops.yaml");
    let own = repo.read("secrets/tenants/tma.sops.yaml");
    let ((s0, s1), (o0, o1)) = (mac_of(&shared), mac_of(&own));
    let swapped = format!("{}{}{}", &own[..o0], &shared[s0..s1], &own[o1..]);
    repo.write("secrets/tenants/tma.sops.yaml", &swapped);
    let out = repo.fief("validate", &[key[0], key[1]]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("secrets/tenants/tma.sops.yaml") && stderr.contains("MAC mismatch"),
        "{stderr}"
    );
}

#[test]
fn a_file_edited_with_sops_set_re_renders_only_the_affected_tenant() {
    let repo = TestRepo::new("ro");
    let load = || {
        let mut r = fief::core::model::Repo::load(std::sync::Arc::new(
            fief::source::fs::read_dir(repo.path()).unwrap(),
        ));
        let keys =
            fief::core::secrets::Keys::parse(&std::fs::read_to_string(&repo.key.file).unwrap())
                .unwrap();
        r.secrets
            .set_unlock(fief::core::secrets::Unlock::Keys(std::sync::Arc::new(keys)));
        r
    };
    let before = load();
    let hashes_before = fief::core::inputs::tenant_hashes(&before);
    sops::set(
        repo.path(),
        "secrets/tenants/roa.sops.yaml",
        &repo.key,
        "[\"dbPassword\"]",
        &format!("\"{ALPHA_ROTATED}\""),
    );
    let after = load();
    let hashes_after = fief::core::inputs::tenant_hashes(&after);
    assert_ne!(hashes_before["roa"], hashes_after["roa"]);
    assert_eq!(hashes_before["rob"], hashes_after["rob"]);
    let renders = fief::core::pipeline::render_all(&after, &[]);
    let secret = renders
        .iter()
        .find(|r| r.tenant == "roa")
        .and_then(|r| r.objects.iter().find(|o| o.id.kind == "Secret"))
        .expect("roa Secret");
    assert_eq!(decoded(&secret.object, "db-password"), ALPHA_ROTATED);
}

#[test]
fn without_a_key_render_validate_show_encrypted_and_say_so_once() {
    let repo = TestRepo::new("nk");
    let out = repo.fief("render", &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("<encrypted>").count(), 1, "{stderr}");
    assert!(
        stdout.contains("data:\n  analytics-key: <redacted>"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# fief: Secret values redacted"),
        "{stdout}"
    );
    assert_no_plaintext("render", &stdout);
    // With a key, render still does not decrypt unless asked.
    let key = repo.key_arg();
    let out = repo.fief("render", &[key[0], key[1]]);
    assert_no_plaintext("render with a key", &text(&out.stdout));
    let out = repo.fief("validate", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr).matches("<encrypted>").count(), 1);
    // --show-secrets needs the key: a usage error, nothing printed.
    let out = repo.fief("render", &["--show-secrets"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        ["--age-key-file", "SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY "]
            .iter()
            .all(|k| stderr.contains(k)),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    // A structurally broken file is still found without a key.
    repo.write(
        "secrets/tenants/nkb.sops.json",
        "{\"dbPassword\": \"plain-text\"}\n",
    );
    let out = repo.fief("validate", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("secrets/tenants/nkb.sops.json")
            && stderr.contains("not a SOPS-encrypted file"),
        "{stderr}"
    );
    assert!(!stderr.contains("plain-text"), "{stderr}");
}

#[test]
fn a_template_error_inside_a_secret_value_names_the_key_not_the_value() {
    let repo = TestRepo::new("te");
    repo.write(
        "components/app/templates/broken.yaml",
        "{% include secrets.tenant.dbPassword %}\n",
    );
    let key = repo.key_arg();
    let out = repo.fief("validate", &[key[0], key[1]]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("<secret secrets.tenant.dbPassword>"),
        "{stderr}"
    );
    assert_no_plaintext("validate stderr", &stderr);
}

#[test]
fn the_api_servers_refusal_that_quotes_a_secret_names_the_key_in_apply_and_diff() {
    // A Service port name must be a DNS-1123 label: fief's checks do not look at it, the API
    // server refuses it and quotes the value in its answer.
    let repo = TestRepo::new("as");
    repo.write(
        "components/app/templates/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  selector: {app: app}\n  ports:\n    - name: {{ secrets.tenant.apiToken }}\n      port: 80\n",
    );
    let key = repo.key_arg();
    let kubeconfig = common::control_plane().admin_kubeconfig();
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path");
    let (a, _) = repo.names("as");
    let mut shown = String::new();
    for (cmd, code) in [("apply", 3), ("diff", 3)] {
        let args = [key[0], key[1], "--kubeconfig", kubeconfig, "--tenant", &a];
        let out = repo.fief(cmd, &args);
        let both = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_no_plaintext(&format!("fief {cmd}"), &both);
        assert!(
            out.status.code() == Some(code) || out.status.code() == Some(1),
            "fief {cmd}: {both}"
        );
        shown.push_str(&both);
    }
    assert!(
        shown.contains("<secret secrets.tenant.apiToken>"),
        "the refusal names the key: {shown}"
    );
    let inventory = common::cluster_cli::kubectl_json(&[
        "get",
        "configmap",
        "-n",
        &repo.agent_ns,
        &format!("fief-tenant-{a}"),
    ]);
    assert_no_plaintext("the inventory", &inventory.to_string());
}
