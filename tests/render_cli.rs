//! `fief render` / `fief validate` as a user runs them: exit codes, stdout, stderr.

mod common;

use common::offline::{fief, stderr, stdout, write_file};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

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

#[test]
fn malformed_yaml_names_file_and_line() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  quota: {cpu: [unclosed\n"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:7", "invalid YAML");
}

#[test]
fn unknown_field_names_file_and_line() {
    let repo = Repo::new();
    repo.write("tenants/alpha.yaml", &tenant("alpha", "  colour: blue\n"));
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:6", "colour");
}

#[test]
fn bad_tenant_name_names_file_and_line() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "").replace("name: alpha", "name: Alpha_1"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:4", "DNS-1123");
}

#[test]
fn file_name_must_equal_metadata_name() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "").replace("name: alpha", "name: gamma"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:4", "does not match metadata.name");
}

#[test]
fn unknown_component_names_the_tenant_file_line() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &format!("{}    - name: nosuch\n", tenant("alpha", "")),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:8", "unknown component `nosuch`");
}

#[test]
fn undefined_template_variable_names_template_line() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  x: {{ values.nope.deeper }}\n",
    );
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(&out, "components/app/templates/extra.yaml:6", "undefined");
}

#[test]
fn template_syntax_error_names_template_line() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n{% if %}\n",
    );
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/extra.yaml:5",
        "syntax error",
    );
}

#[test]
fn duplicate_object_names_both_places() {
    let repo = Repo::new();
    repo.write("components/app/templates/again.yaml", CONFIGMAP);
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/configmap.yaml:1",
        "duplicate object ConfigMap/alpha-prod/app-config",
    );
}

#[test]
fn cluster_scoped_component_object_is_refused() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/clusterrole.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: grab-everything\nrules: []\n",
    );
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/clusterrole.yaml:1",
        "cluster-scoped",
    );
}

#[test]
fn component_object_in_another_tenants_namespace_is_refused() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/sneaky.yaml",
        "{% if tenant.name == 'alpha' %}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sneaky\n  namespace: beta-prod\n{% endif %}\n",
    );
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/sneaky.yaml:2",
        "not one of this tenant's namespaces",
    );
}

#[test]
fn missing_dependency_is_refused() {
    let repo = Repo::new();
    repo.write("components/db/templates/x.yaml", "");
    repo.write("components/app/component.yaml", "dependsOn: [db]\n");
    repo.write(
        "tenants/beta.yaml",
        &tenant("beta", "").replace("    - name: app\n", "    - name: db\n    - name: app\n"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:7", "depends on `db`");
}

#[test]
fn namespace_claimed_by_two_tenants_fails_both() {
    let repo = Repo::new();
    // "alpha" env "x-prod" and "alpha-x" env "prod" both want namespace alpha-x-prod.
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  environments: [x-prod]\n"),
    );
    repo.write("tenants/alpha-x.yaml", &tenant("alpha-x", ""));
    let out = repo.render();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("namespace `alpha-x-prod` is also a namespace of tenant `alpha-x`"),
        "{err}"
    );
    assert!(
        err.contains("namespace `alpha-x-prod` is also a namespace of tenant `alpha`"),
        "{err}"
    );
    assert!(stdout(&out).contains("namespace: beta-prod"));
}

#[test]
fn purged_tenant_renders_nothing() {
    let repo = Repo::new();
    repo.write("tenants/alpha.yaml", &tenant("alpha", "  state: purged\n"));
    let out = repo.render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("alpha"));
}

#[test]
fn values_layer_component_environment_tenant() {
    let repo = Repo::new();
    repo.write(
        "environments/prod.yaml",
        "values:\n  greeting: env-wide\ncomponents:\n  app:\n    greeting: env-app\n",
    );
    repo.write(
        "tenants/alpha.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: alpha\nspec:\n  components:\n    - name: app\n      values: {greeting: from-tenant}\n",
    );
    let text = stdout(&repo.render());
    assert!(text.contains("greeting: from-tenant"), "{text}");
    assert!(text.contains("greeting: env-app"), "{text}");
    assert!(!text.contains("greeting: hello"), "{text}");
}

#[test]
fn include_with_parent_dir_or_absolute_path_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("stolen.txt"), "TOP-SECRET-CONTENT").unwrap();
    for include in [
        "../../../../../../../../etc/hostname".to_string(),
        outside.path().join("stolen.txt").display().to_string(),
    ] {
        let repo = Repo::new();
        repo.write(
            "components/app/templates/evil.yaml",
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\ndata:\n  x: \"{{% include '{include}' %}}\"\n"),
        );
        let out = repo.render();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("leaves the repo"), "{err}");
        assert!(
            err.contains("components/app/templates/evil.yaml:6"),
            "{err}"
        );
        assert!(!stdout(&out).contains("TOP-SECRET-CONTENT"));
    }
}

#[test]
fn symlink_out_of_the_repo_is_refused_and_not_read() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("stolen.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: TOP-SECRET-CONTENT\n",
    )
    .unwrap();
    let repo = Repo::new();
    std::os::unix::fs::symlink(
        outside.path().join("stolen.yaml"),
        repo.dir.path().join("components/app/templates/link.yaml"),
    )
    .unwrap();
    let out = repo.render();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("components/app/templates/link.yaml"), "{err}");
    assert!(err.contains("leaves the repo"), "{err}");
    assert!(!stdout(&out).contains("TOP-SECRET-CONTENT"));
    assert!(!err.contains("TOP-SECRET-CONTENT"));
}

#[test]
fn yaml_alias_bomb_is_refused_within_seconds() {
    let repo = Repo::new();
    let mut bomb =
        String::from("greeting: hi\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    repo.write("components/app/varz.yaml", &bomb);
    repo.beta_without_components();
    let start = Instant::now();
    let out = repo.render();
    // Bounded by the node limit, not a clock; generous so a loaded machine cannot fail it.
    assert!(start.elapsed() < Duration::from_secs(60));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("components/app/varz.yaml:"), "{err}");
    assert!(err.contains("tenant `alpha`"), "{err}");
}

#[test]
fn runaway_template_loop_is_stopped_within_seconds() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/loop.yaml",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n",
    );
    repo.beta_without_components();
    // Stopped by fuel, not by a clock: the bound is generous so a loaded machine cannot fail
    // it; an unbounded loop (10^10 iterations) would take hours.
    let start = Instant::now();
    let out = repo.render();
    assert!(
        start.elapsed() < Duration::from_secs(120),
        "{:?}",
        start.elapsed()
    );
    assert_alpha_fails_at(&out, "components/app/templates/loop.yaml:1", "runaway loop");
}

#[test]
fn unknown_field_in_fief_yaml_fails_every_tenant() {
    let repo = Repo::new();
    repo.write(
        "fief.yaml",
        "baseDomain: x.example\nnamespacePatern: \"{tenant}\"\n",
    );
    let out = repo.render();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("fief.yaml:2"), "{err}");
    assert!(err.contains("namespacePatern"), "{err}");
}

#[test]
fn repo_baseline_replaces_the_builtin_one() {
    let repo = Repo::new();
    repo.write(
        "baseline/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ namespace }}\n  labels: {custom: \"yes\"}\n",
    );
    let out = repo.render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("custom: 'yes'") || text.contains("custom: \"yes\""),
        "{text}"
    );
    assert!(!text.contains("kind: NetworkPolicy"));
}

#[test]
fn ingress_host_outside_the_tenant_suffix_fails_with_file_and_line() {
    let repo = Repo::new();
    repo.write("fief.yaml", "baseDomain: saas.example\n");
    repo.write(
        "components/app/templates/ingress.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\nspec:\n  rules:\n    - host: {{ 'beta.saas.example' if tenant.name == 'alpha' else tenant.name ~ '.saas.example' }}\n",
    );
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/ingress.yaml:1",
        "host `beta.saas.example` is not allowed",
    );
    // A tenant may not be given another tenant's suffix (it belongs to beta)...
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  hostSuffixes: [beta.saas.example]\n"),
    );
    assert_alpha_fails_at(
        &repo.render(),
        "tenants/alpha.yaml:6",
        "host suffix `beta.saas.example` overlaps `beta.saas.example`, a host suffix of tenant `beta`",
    );
    // ...but may be given its own domain.
    repo.write(
        "components/app/templates/ingress.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\nspec:\n  rules:\n    - host: {{ 'shop.alpha.example' if tenant.name == 'alpha' else tenant.name ~ '.saas.example' }}\n",
    );
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  hostSuffixes: [alpha.example]\n"),
    );
    assert_eq!(repo.render().status.code(), Some(0));
}

#[test]
fn image_from_a_registry_not_allowed_fails_with_file_and_line() {
    let repo = Repo::new();
    repo.write(
        "fief.yaml",
        "policy:\n  allowedRegistries: [registry.example.com]\n",
    );
    repo.write(
        "components/app/templates/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n        - name: web\n          image: {{ 'evil.io/miner:1' if tenant.name == 'alpha' else 'registry.example.com/web:1' }}\n",
    );
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/deploy.yaml:1",
        "image `evil.io/miner:1` is not from an allowed registry",
    );
}

#[test]
fn an_undeclared_environment_is_an_error_with_a_did_you_mean_hint() {
    let repo = Repo::new();
    repo.write("environments/prod.yaml", "values: {}\n");
    repo.write("environments/dev.yaml", "values: {}\n");
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  environments: [prd]\n"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:6", "undeclared environment `prd`");
    assert!(
        stderr(&out).contains("did you mean `prod`"),
        "{}",
        stderr(&out)
    );
    // Declared in fief.yaml, the same name is accepted.
    repo.write("fief.yaml", "environments: [prd]\n");
    let out = repo.render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("namespace: alpha-prd"));
}

#[test]
fn synthetic_repo_renders_cleanly_with_about_twenty_objects_per_tenant() {
    use fief::core::model::Repo;
    use fief::core::snapshot::Snapshot;
    use std::sync::Arc;
    let repo = Repo::load(Arc::new(Snapshot::from_files(common::synth::repo_files(
        20,
    ))));
    let renders = fief::core::pipeline::render_all(&repo, &[]);
    assert_eq!(renders.len(), 20);
    for r in &renders {
        assert!(r.is_ok(), "{:?}", r.errors);
    }
    let objects: usize = renders.iter().map(|r| r.objects.len()).sum();
    let per_tenant = objects / renders.len();
    assert!((20..=30).contains(&per_tenant), "{per_tenant}");
}

#[test]
fn completions_man_page_and_version_come_from_the_same_flags_as_help() {
    for shell in ["bash", "zsh", "fish"] {
        let out = fief(&["completion", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("validate"),
            "{shell}: {}",
            stdout(&out)
        );
    }
    let man = fief(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = stdout(&man);
    assert!(
        page.contains(".TH fief 1") && page.contains("fief\\-diff"),
        "{page}"
    );
    let version = stdout(&fief(&["--version"]));
    assert!(
        version.starts_with("fief 0.") && version.contains("(commit "),
        "{version}"
    );
    // `fief version`: the same version and commit, and the repo format it reads.
    let text = stdout(&fief(&["version"]));
    assert!(
        text.starts_with("fief 0.") && text.contains("\nrepo format fief.dev/v1alpha1\n"),
        "{text}"
    );
    let build: serde_json::Value =
        serde_json::from_slice(&fief(&["version", "-o", "json"]).stdout).unwrap();
    assert_eq!(build["repoFormat"], "fief.dev/v1alpha1");
    assert!(
        version.contains(&format!("(commit {})", build["commit"].as_str().unwrap())),
        "{version} {build}"
    );
    // `-o` is the short form of `--output`.
    let json = fief(&["validate", "-o", "json", example().to_str().unwrap()]);
    assert!(serde_json::from_slice::<serde_json::Value>(&json.stdout).is_ok());
}
