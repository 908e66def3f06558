//! Error messages of `fief validate` / `fief render` as a user reads them: the undefined name
//! and what is defined beside it, Helm syntax answered with the Jinja way, YAML errors at the
//! template's line, one error of many tenants printed once, and no library internals.

use crate::common::offline;
use offline::{edit_file, fief, init_repo, stderr, stdout, write_file};

use std::process::Output;

struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    /// Component `app` with `template` as its only template, used by tenants `names`.
    fn new(template: &str, names: &[&str]) -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        r.write(
            "components/app/varz.yaml",
            "greeting: hello\nimage:\n  repository: web\n  tag: \"1\"\n",
        );
        r.write("components/app/templates/app.yaml", template);
        for n in names {
            r.write(
                &format!("tenants/{n}.yaml"),
                &format!(
                    "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {n}\nspec:\n  components:\n    - name: app\n"
                ),
            );
        }
        r
    }

    fn write(&self, path: &str, text: &str) {
        write_file(self.dir.path(), path, text);
    }

    fn validate(&self, extra: &[&str]) -> Output {
        let mut args = vec!["validate", self.dir.path().to_str().unwrap()];
        args.extend(extra);
        fief(&args)
    }
}

fn configmap(data_line: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n{data_line}\n")
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
/// Also through a filter: `{{ values.typo | quote }}` used to render `""` silently.
fn an_undefined_value_is_named_with_what_is_defined_beside_it() {
    let repo = Repo::new(
        &configmap("  tag: {{ values.image.tagg | quote }}"),
        &["acme"],
    );
    let out = repo.validate(&[]);
    assert_invalid(
        &out,
        &[
            "components/app/templates/app.yaml:6: tenant `acme`: template error: undefined value: `values.image.tagg` is not defined; `values.image` has: repository, tag (did you mean `values.image.tag`?)",
        ],
    );
    let top = Repo::new(&configmap("  greeting: {{ value.greeting }}"), &["acme"]);
    assert_invalid(
        &top.validate(&[]),
        &[
            "`value` is not defined; the template context has:",
            "(did you mean `values`?)",
        ],
    );
}

#[test]
fn helm_values_syntax_gets_the_jinja_equivalent() {
    let repo = Repo::new(&configmap("  greeting: {{ .Values.greeting }}"), &["acme"]);
    assert_invalid(
        &repo.validate(&[]),
        &[
            "components/app/templates/app.yaml:6: tenant `acme`: template error:",
            "this line is written in Helm's Go template syntax",
            "hint: fief templates are Jinja (minijinja), not Helm's Go templates: write `{{ values.replicas }}` for `{{ .Values.replicas }}`",
        ],
    );
}

#[test]
fn helm_include_and_to_yaml_get_the_jinja_equivalent() {
    let include = Repo::new(
        &configmap("  labels: {{ include \"app.labels\" . }}"),
        &["acme"],
    );
    assert_invalid(
        &include.validate(&[]),
        &["app.yaml:6", "write `{% include \"_name.yaml\" %}`"],
    );
    let to_yaml = Repo::new(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  {{- toYaml .Values.data | nindent 2 }}\n",
        &["acme"],
    );
    assert_invalid(
        &to_yaml.validate(&[]),
        &["app.yaml:6", "write `{{ values.x | to_yaml | indent(4) }}`"],
    );
}

#[test]
fn prometheus_template_text_gets_the_raw_block_hint_and_renders_as_written_inside_one() {
    let rule = "  rule: 'Instance {{ $labels.instance }} is down'";
    let repo = Repo::new(&configmap(rule), &["acme"]);
    assert_invalid(
        &repo.validate(&[]),
        &[
            "components/app/templates/app.yaml:6: tenant `acme`: template error:",
            "this line holds another tool's template",
            "hint: to send text with `{{` as written, put it between `{% raw %}` and `{% endraw %}`",
        ],
    );
    let raw = Repo::new(
        &configmap(&format!("{{% raw %}}\n{rule}\n{{% endraw %}}")),
        &["acme"],
    );
    let out = raw.validate(&[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
}

#[test]
fn a_yaml_error_in_rendered_output_points_at_the_template_line() {
    let repo = Repo::new(
        "{% set n = 2 %}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: [1\n  b: {{ n }}\n",
        &["acme"],
    );
    assert_invalid(
        &repo.validate(&[]),
        &[
            "components/app/templates/app.yaml:8: tenant `acme`: invalid YAML:",
            "(line 7 of the rendered output)",
        ],
    );
}

#[test]
fn a_yaml_error_after_a_leading_comment_points_at_the_template_line() {
    let repo = Repo::new(
        "# the app's settings\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: [1\n  b: 2\n",
        &["acme"],
    );
    let out = repo.validate(&[]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let rendered: usize = err
        .split("(line ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rendered line in: {err}"));
    // The rendered output keeps the comment and the blank line, so a rendered line is the
    // template line with the same number.
    assert!(
        err.contains(&format!(
            "components/app/templates/app.yaml:{rendered}: tenant `acme`: invalid YAML:"
        )),
        "{err}"
    );
}

#[test]
fn one_error_in_many_tenants_is_printed_once_with_the_count_and_a_few_names() {
    let names = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"];
    let repo = Repo::new(&configmap("  greeting: {{ values.greting }}"), &names);
    let out = repo.validate(&[]);
    let err = assert_invalid(
        &out,
        &[
            "error: components/app/templates/app.yaml:6: template error: undefined value: `values.greting`",
            "in all 8 tenants: t1, t2, t3, t4, t5 and 3 more (`validate --output json` lists them all)",
        ],
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error: ")).count(),
        1,
        "{err}"
    );
    let json = repo.validate(&["--output", "json"]);
    let summary: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let failing: Vec<&str> = summary
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["errors"].as_array().is_some_and(|e| !e.is_empty()))
        .map(|t| t["tenant"].as_str().unwrap())
        .collect();
    assert_eq!(failing, names);
}

#[test]
fn fief_yaml_errors_are_printed_once_for_the_repo() {
    let repo = Repo::new(&configmap("  a: b"), &["alpha", "beta", "gamma"]);
    repo.write("fief.yaml", "environments: [prod]\nenvironments: [dev]\n");
    let err = assert_invalid(
        &repo.validate(&[]),
        &[
            "error: fief.yaml:2: invalid YAML: duplicate key `environments` (a key may appear once in a map)",
            "in all 3 tenants: alpha, beta, gamma",
        ],
    );
    assert_eq!(err.matches("fief.yaml").count(), 1, "{err}");
}

#[test]
fn messages_name_no_library_internals() {
    let repo = Repo::new(&configmap("  a: b"), &["acme", "beta"]);
    repo.write(
        "tenants/acme.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\n  name: acme\n",
    );
    repo.write(
        "tenants/beta.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: beta\nspec:\n  quota: {cpu: [1]}\n",
    );
    repo.write("components/app/varz.yaml", "a: 1\na: 2\n");
    let err = stderr(&repo.validate(&[]));
    assert!(err.contains("tenants/acme.yaml:5"), "{err}");
    assert!(err.contains("tenants/beta.yaml:6"), "{err}");
    for internal in [
        "DuplicateKeyPolicy",
        "Error {",
        "Some(",
        "untagged enum",
        "Options",
    ] {
        assert!(!err.contains(internal), "`{internal}` in: {err}");
    }
}

#[test]
fn a_template_setting_an_applyset_label_fails_validate_at_its_line() {
    let repo = Repo::new(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    applyset.kubernetes.io/id: applyset-x-v1\ndata:\n  a: b\n",
        &["acme"],
    );
    assert_invalid(
        &repo.validate(&[]),
        &[
            "components/app/templates/app.yaml:1: tenant `acme`: ConfigMap `app` sets label `applyset.kubernetes.io/id`, which fief reserves for its inventories",
            "remove the label",
        ],
    );
}

#[test]
fn one_duplicate_template_in_every_tenant_and_environment_is_one_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    init_repo(root, "t000");
    let tenant = std::fs::read_to_string(root.join("tenants/t000.yaml")).expect("read");
    for i in 1..200 {
        let name = format!("t{i:03}");
        std::fs::write(
            root.join(format!("tenants/{name}.yaml")),
            tenant.replace("t000", &name),
        )
        .expect("write tenant");
    }
    std::fs::copy(
        root.join("components/hello/templates/configmap.yaml"),
        root.join("components/hello/templates/configmap2.yaml"),
    )
    .expect("copy template");
    let out = fief(&["validate", root.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().count() <= 3, "{err}");
    assert!(
        err.contains(
            "duplicate object ConfigMap/{t000-dev, t000-prod, t001-dev, t001-prod, t002-dev and 395 more}/hello"
        ),
        "the namespaces that differ are listed: {err}"
    );
    assert!(err.contains("in all 200 tenants"), "{err}");
}

#[test]
fn a_misspelt_field_in_a_tenant_file_is_an_unknown_field_with_a_did_you_mean_at_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    init_repo(root, "example");
    edit_file(
        root,
        "tenants/example.yaml",
        "  environments:",
        "  enviroments:",
    );
    let out = fief(&["validate", root.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("tenants/example.yaml:11: tenant `example`: unknown field `enviroments` (did you mean `environments`?)"),
        "{err}"
    );
}

#[test]
fn an_environment_typo_is_reported_alone_without_the_errors_that_follow_from_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    init_repo(root, "example");
    // A value only the prod environment file sets, read by a template.
    write_file(
        root,
        "environments/prod.yaml",
        "values:\n  logLevel: warn\n",
    );
    write_file(
        root,
        "components/hello/templates/log.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: log\ndata:\n  level: {{ values.logLevel }}\n",
    );
    write_file(
        root,
        "environments/dev.yaml",
        "values:\n  logLevel: debug\n",
    );
    edit_file(root, "tenants/example.yaml", "[dev, prod]", "[dev, prd]");
    let out = fief(&["validate", root.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("undeclared environment `prd` (did you mean `prod`?)"),
        "{err}"
    );
    assert!(!err.contains("logLevel"), "no knock-on error: {err}");
    assert!(
        stdout(&out).contains("example: INVALID (1 errors)"),
        "{}",
        stdout(&out)
    );
}

/// Tenant files in folders under `tenants/` are tenants like any other; the same name in two
/// folders fails that tenant alone, at both files, and the others still render.
#[test]
fn tenant_files_in_folders_render_and_a_name_in_two_folders_fails_that_tenant_at_both_files() {
    let repo = Repo::new(&configmap("  a: \"1\""), &["flat"]);
    let tenant = |n: &str| {
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {n}\nspec:\n  components:\n    - name: app\n"
        )
    };
    repo.write("tenants/eu/shops/nested.yaml", &tenant("nested"));
    let dir = repo.dir.path().to_str().unwrap();
    let out = fief(&["render", dir, "--tenant", "nested"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("namespace: nested-"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        repo.validate(&[]).status.code(),
        Some(0),
        "{}",
        stderr(&repo.validate(&[]))
    );

    repo.write("tenants/us/nested.yaml", &tenant("nested"));
    let err = assert_invalid(
        &repo.validate(&[]),
        &[
            "tenants/eu/shops/nested.yaml",
            "tenants/us/nested.yaml",
            "tenant `nested` is declared twice",
            "rename or remove one of the two files",
        ],
    );
    assert!(
        !err.contains("flat"),
        "only the tenant declared twice fails: {err}"
    );
    let out = fief(&["render", dir, "--tenant", "flat"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
