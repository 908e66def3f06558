//! `fief validate` / `fief render` with schemas: a component's `values.schema.json` over each
//! tenant's merged values, and the offline Kubernetes API schema over rendered objects of
//! built-in kinds. Each test runs the real binary on a temporary repo and checks the exit code
//! and the message (file:line, tenant, what is wrong, what is allowed).

use crate::common::offline;
use offline::{fief, stderr, stdout, write_file};

use std::process::Output;

const SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "replicas": {"type": "integer", "minimum": 1},
    "greeting": {"type": "string"},
    "image": {
      "type": "object",
      "additionalProperties": false,
      "properties": {"repository": {"type": "string"}, "tag": {"type": "string"}}
    }
  }
}
"#;

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";

/// A repo with component `app` (one ConfigMap) and tenants `alpha` and `beta`.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        r.write("components/app/varz.yaml", "greeting: hello\nreplicas: 1\n");
        r.write("components/app/templates/configmap.yaml", CONFIGMAP);
        r.tenant("alpha", "");
        r.tenant("beta", "");
        r
    }

    fn write(&self, path: &str, text: &str) {
        write_file(self.dir.path(), path, text);
    }

    /// Tenant `name` using `app`, with `values` (block-style lines under `values:`).
    fn tenant(&self, name: &str, values: &str) {
        let values = if values.is_empty() {
            String::new()
        } else {
            format!("      values:\n{values}")
        };
        self.write(
            &format!("tenants/{name}.yaml"),
            &format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n{values}"
            ),
        );
    }

    fn run(&self, cmd: &str) -> Output {
        fief(&[cmd, self.dir.path().to_str().unwrap()])
    }
}

fn assert_invalid(out: &Output, wanted: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    for w in wanted {
        assert!(err.contains(w), "expected `{w}` in: {err}");
    }
    err
}

#[test]
fn values_schema_refuses_a_typo_at_the_tenant_override_line_with_what_is_allowed() {
    let repo = Repo::new();
    repo.write("components/app/values.schema.json", SCHEMA);
    repo.tenant("alpha", "        replicsa: 5\n");
    let out = repo.run("validate");
    let err = assert_invalid(
        &out,
        &[
            "tenants/alpha.yaml:9: tenant `alpha`",
            "values of component `app`: `values.replicsa` is not an allowed value",
            "components/app/values.schema.json, at /additionalProperties",
            "allowed here: greeting, image, replicas (did you mean `replicas`?)",
            "hint:",
        ],
    );
    assert!(!err.contains("tenant `beta`"), "beta is valid: {err}");
    assert!(stdout(&out).contains("beta: ok"), "{}", stdout(&out));
}

#[test]
fn values_schema_finds_nested_keys_and_types_in_the_layer_that_set_them() {
    let repo = Repo::new();
    repo.write("components/app/values.schema.json", SCHEMA);
    // The environment file sets a wrong type; the tenant a nested typo.
    repo.write(
        "environments/prod.yaml",
        "values: {}\ncomponents:\n  app:\n    replicas: two\n",
    );
    repo.tenant(
        "alpha",
        "        image:\n          repository: web\n          tagg: \"1.0\"\n",
    );
    let out = repo.run("validate");
    assert_invalid(
        &out,
        &[
            "tenants/alpha.yaml:11: tenant `alpha`: values of component `app`: `values.image.tagg` is not an allowed value",
            "allowed here: repository, tag (did you mean `tag`?)",
            "environments/prod.yaml:4: values of component `app`: `values.replicas` is invalid: \"two\" is not of type \"integer\"",
            "in all 2 tenants: alpha, beta",
            "at /properties/replicas/type",
        ],
    );
}

#[test]
fn values_schema_blames_a_component_default_in_varz() {
    let repo = Repo::new();
    repo.write("components/app/values.schema.json", SCHEMA);
    repo.write("components/app/varz.yaml", "greeting: hello\nreplicas: 0\n");
    let out = repo.run("render");
    assert_invalid(
        &out,
        &[
            "components/app/varz.yaml:2: values of component `app`",
            "in all 2 tenants: alpha, beta",
            "`values.replicas` is invalid: 0 is less than the minimum of 1",
        ],
    );
    assert!(stdout(&out).is_empty(), "nothing renders: {}", stdout(&out));
}

#[test]
fn values_that_pass_the_schema_render() {
    let repo = Repo::new();
    repo.write("components/app/values.schema.json", SCHEMA);
    repo.tenant(
        "alpha",
        "        replicas: 3\n        image: {repository: web, tag: \"1\"}\n",
    );
    let out = repo.run("validate");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_malformed_values_schema_is_one_repo_level_error_naming_the_schema_file() {
    let repo = Repo::new();
    repo.write(
        "components/app/values.schema.json",
        "{\n  \"type\": \"object\",\n  oops\n}\n",
    );
    let out = repo.run("validate");
    let err = assert_invalid(
        &out,
        &[
            "components/app/values.schema.json:3",
            "invalid values schema: not JSON",
            "2 tenants: alpha, beta",
        ],
    );
    assert_eq!(
        err.matches("invalid values schema").count(),
        1,
        "printed once: {err}"
    );
}

#[test]
fn a_values_schema_with_a_remote_ref_is_refused_without_fetching_it() {
    let repo = Repo::new();
    // Nothing listens on port 9; a fetch would fail differently or hang.
    repo.write(
        "components/app/values.schema.json",
        r#"{"$ref": "http://127.0.0.1:9/schema.json"}"#,
    );
    let started = std::time::Instant::now();
    let out = repo.run("validate");
    assert_invalid(
        &out,
        &[
            "components/app/values.schema.json",
            "invalid values schema: `$ref` to `http://127.0.0.1:9/schema.json` points outside the schema file; fief fetches nothing",
        ],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(!stderr(&out).contains("feature"), "{}", stderr(&out));
}

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources:
          requests: {cpu: 1, memory: 64Mi}
";

#[test]
fn builtin_kinds_that_match_the_kubernetes_schema_pass_quantities_as_numbers_too() {
    let repo = Repo::new();
    repo.write("components/app/templates/deployment.yaml", DEPLOYMENT);
    let out = repo.run("validate");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_misspelled_builtin_kind_is_an_error_with_did_you_mean() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/deployment.yaml",
        &DEPLOYMENT.replace("kind: Deployment", "kind: Deploymnet"),
    );
    let out = repo.run("validate");
    let err = assert_invalid(
        &out,
        &[
            "components/app/templates/deployment.yaml:2: `kind: Deploymnet` is not served by apiVersion `apps/v1` in Kubernetes v1.36.3 (did you mean `Deployment` of apiVersion apps/v1?)",
        ],
    );
    assert!(
        !err.contains("is not a kind components may create"),
        "{err}"
    );
}

#[test]
fn a_builtin_kind_under_the_wrong_api_version_names_where_it_is_served() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/deployment.yaml",
        &DEPLOYMENT.replace("apiVersion: apps/v1", "apiVersion: v1"),
    );
    let out = repo.run("validate");
    assert_invalid(
        &out,
        &[
            "`kind: Deployment` is not served by apiVersion `v1`",
            "(`Deployment` is served as apiVersion apps/v1)",
        ],
    );
}

#[test]
fn a_field_of_the_wrong_type_is_an_error_at_its_template_line() {
    let repo = Repo::new();
    repo.write("components/app/templates/deployment.yaml", DEPLOYMENT);
    repo.write(
        "components/app/varz.yaml",
        "greeting: hello\nreplicas: two\n",
    );
    let out = repo.run("validate");
    assert_invalid(
        &out,
        &[
            "components/app/templates/deployment.yaml:6: Deployment `web`: `spec.replicas` is the string \"two\", but must be an integer (Kubernetes v1.36.3 API schema)",
        ],
    );
}

#[test]
fn an_unknown_field_of_a_builtin_kind_is_an_error_with_did_you_mean() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/deployment.yaml",
        &DEPLOYMENT
            .replace("  replicas: {{", "  replicsa: {{")
            .replace(
                "        image: nginx",
                "        imagePullPolcy: Always\n        image: nginx",
            ),
    );
    let out = repo.run("validate");
    assert_invalid(
        &out,
        &[
            "components/app/templates/deployment.yaml:6: Deployment `web`: `spec.replicsa` is not a field of DeploymentSpec (did you mean `replicas`?)",
            "components/app/templates/deployment.yaml:15: Deployment `web`: `spec.template.spec.containers[0].imagePullPolcy` is not a field of Container (did you mean `imagePullPolicy`?)",
            "in all 2 tenants: alpha, beta",
        ],
    );
}

#[test]
fn custom_resources_are_left_to_the_cluster() {
    let repo = Repo::new();
    repo.write("fief.yaml", "componentKinds: [example.com/Widget]\n");
    repo.write(
        "components/app/templates/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  anything: [1, two]\n",
    );
    let out = repo.run("validate");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
