//! `fief render` / `fief validate` as a user runs them: exit codes, stdout, stderr.

use crate::common;

use common::offline::{fief, stderr, stdout, write_file};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

mod limits;
mod messages;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tenants-repo")
}

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";

fn tenant(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{extra}  components:\n    - name: app\n"
    )
}

/// A small repo: component `app` (one ConfigMap), tenants `alpha` and `beta`.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        r.write("components/app/varz.yaml", "greeting: hello\n");
        r.write("components/app/templates/configmap.yaml", CONFIGMAP);
        r.write("tenants/alpha.yaml", &tenant("alpha", ""));
        r.write("tenants/beta.yaml", &tenant("beta", ""));
        r
    }

    fn write(&self, path: &str, text: &str) {
        write_file(self.dir.path(), path, text);
    }

    /// Beta stops using `app`, so a broken `app` template fails only alpha.
    fn beta_without_components(&self) {
        self.write(
            "tenants/beta.yaml",
            &tenant("beta", "").replace("components:\n    - name: app\n", "components: []\n"),
        );
    }

    fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    fn render(&self) -> Output {
        fief(&["render", self.path()])
    }
}

/// Asserts exit 1, that stderr names `file:line`, and that `beta` still rendered.
fn assert_alpha_fails_at(out: &Output, file_line: &str, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains(file_line), "expected `{file_line}` in: {err}");
    assert!(
        err.contains("tenant `alpha`"),
        "expected the tenant in: {err}"
    );
    assert!(err.contains(what), "expected `{what}` in: {err}");
    assert!(err.contains("hint:"), "expected a hint in: {err}");
    let text = stdout(out);
    assert!(
        text.contains("namespace: beta-prod"),
        "beta must still render"
    );
    assert!(!text.contains("alpha-prod"), "alpha must not be printed");
}

#[test]
fn example_repo_renders_kubernetes_objects_deterministically() {
    let first = fief(&["render", example().to_str().unwrap()]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let second = fief(&["render", example().to_str().unwrap()]);
    assert_eq!(
        first.stdout, second.stdout,
        "two runs must print identical bytes"
    );
    let text = stdout(&first);
    let docs: Vec<&str> = text.split("\n---\n").collect();
    assert!(docs.len() > 100, "only {} documents", docs.len());
    for doc in docs {
        assert!(doc.contains("apiVersion: "), "{doc}");
        assert!(doc.contains("\nkind: "), "{doc}");
        assert!(doc.contains("\n  name: "), "{doc}");
        let cluster = doc.contains("\nkind: Namespace\n");
        assert_eq!(doc.contains("\n  namespace: "), !cluster, "{doc}");
        assert!(doc.contains("app.kubernetes.io/managed-by: fief"), "{doc}");
        assert!(
            doc.contains("applyset.kubernetes.io/part-of: applyset-"),
            "{doc}"
        );
    }
}

#[test]
fn example_repo_states_shape_the_render() {
    let out = fief(&["render", example().to_str().unwrap()]);
    let text = stdout(&out);
    // initech is frozen: its Deployments have zero replicas.
    let initech_web = text
        .split("\n---\n")
        .find(|d| d.contains("deployment.yaml:1 (tenant initech"))
        .expect("initech web deployment");
    assert!(initech_web.contains("\n  replicas: 0\n"), "{initech_web}");
    // hooli is archived: baseline and data only, no Deployment or Service.
    let hooli: Vec<&str> = text
        .split("\n---\n")
        .filter(|d| d.contains("(tenant hooli"))
        .collect();
    assert!(
        hooli
            .iter()
            .any(|d| d.contains("kind: PersistentVolumeClaim"))
    );
    assert!(!hooli.iter().any(|d| d.contains("kind: Deployment")));
    assert!(!hooli.iter().any(|d| d.contains("kind: Service\n")));
}

#[test]
fn secrets_are_redacted_unless_asked() {
    let out = fief(&["render", example().to_str().unwrap(), "--tenant", "globex"]);
    let text = stdout(&out);
    assert!(text.contains("password: <redacted>"));
    assert!(!text.contains("username: YXBw"), "base64 of `app` leaked");
    let shown = fief(&[
        "render",
        example().to_str().unwrap(),
        "--tenant",
        "globex",
        "--show-secrets",
        "--age-key-file",
        example().join("age-key.TEST-ONLY.txt").to_str().unwrap(),
    ]);
    assert!(stdout(&shown).contains("username: YXBw"));
}

/// The plaintext of the example's `secrets.shared.analytics.apiKey` (not a valid name).
const SHARED_API_KEY: &str = "ak_example_shared_analytics_0001";

#[test]
fn a_secret_rendered_where_a_name_goes_is_named_by_its_key_never_its_value() {
    let repo = Repo::new();
    let shared = std::fs::read_to_string(example().join("secrets/shared.sops.yaml")).unwrap();
    repo.write("secrets/shared.sops.yaml", &shared);
    repo.write(
        "components/app/templates/token.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ secrets.shared.analytics.apiKey }}\ndata:\n  a: b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ secrets.shared.analytics.apiKey | upper }}-up\ndata:\n  a: b\n",
    );
    let key = example().join("age-key.TEST-ONLY.txt");
    let key = key.to_str().unwrap();
    let mut seen = String::new();
    for args in [
        vec!["validate", repo.path(), "--age-key-file", key],
        vec!["validate", repo.path(), "--age-key-file", key, "-o", "json"],
        vec!["render", repo.path(), "--age-key-file", key],
        vec!["render", repo.path(), "--age-key-file", key, "-o", "json"],
    ] {
        let out = fief(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        seen.push_str(&format!("{args:?}\n{}{}", stdout(&out), stderr(&out)));
    }
    assert!(
        seen.contains("ConfigMap `<secret secrets.shared.analytics.apiKey>`: "),
        "{seen}"
    );
    assert!(
        seen.contains("ConfigMap `<secret secrets.shared.analytics.apiKey>-up`: "),
        "{seen}"
    );
    assert!(seen.contains("DNS-1123"), "{seen}");
    assert!(
        !seen.to_ascii_lowercase().contains(SHARED_API_KEY),
        "a secret value was printed:\n{seen}"
    );
}

#[test]
fn render_output_json_is_one_list_of_the_same_objects_with_secrets_redacted() {
    let repo = example();
    let yaml = stdout(&fief(&["render", repo.to_str().unwrap()]));
    let out = fief(&["render", repo.to_str().unwrap(), "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    let docs =
        yaml.matches("\napiVersion: ").count() + usize::from(yaml.starts_with("apiVersion: "));
    assert_eq!(items.len(), docs, "same objects as the YAML stream");
    let secrets: Vec<&serde_json::Value> = items.iter().filter(|o| o["kind"] == "Secret").collect();
    assert!(!secrets.is_empty());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("<redacted>"));
    assert!(!text.contains("YXBw"), "base64 of `app` leaked");
    let both = fief(&[
        "render",
        repo.to_str().unwrap(),
        "-o",
        "json",
        "--out",
        "/tmp/x",
    ]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "-o json and --out together are a usage error"
    );
}

#[test]
fn out_dir_gets_one_file_per_object() {
    let dir = tempfile::tempdir().unwrap();
    let out = fief(&[
        "render",
        example().to_str().unwrap(),
        "--tenant",
        "acme",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        dir.path()
            .join("acme/_cluster/namespace.acme-dev.yaml")
            .is_file()
    );
    assert!(
        dir.path()
            .join("acme/acme-prod/deployment.web.yaml")
            .is_file()
    );
    let secret = std::fs::read_to_string(
        dir.path()
            .join("acme/acme-prod/secret.postgres-credentials.yaml"),
    )
    .unwrap();
    assert!(secret.contains("<redacted>"));
    assert!(!dir.path().join("globex").exists());
}

#[test]
fn validate_prints_a_summary_per_tenant_and_json() {
    let out = fief(&["validate", example().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("acme: ok (2 namespaces,"));
    let json = fief(&["validate", example().to_str().unwrap(), "--output", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 5);
    assert_eq!(v[0]["tenant"], "acme");
    assert_eq!(v[0]["ok"], true);
}

#[test]
fn unknown_tenant_flag_is_a_usage_error() {
    let out = fief(&["render", example().to_str().unwrap(), "--tenant", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no tenant named nobody"));
}

#[test]
fn missing_repo_is_a_usage_error() {
    let out = fief(&["validate", "/nonexistent/fief-repo"]);
    assert_eq!(out.status.code(), Some(2));
}
