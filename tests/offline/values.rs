//! Values as a tenant sets them: per-environment overrides (a component's version and values,
//! the quota and the access lists differ in one environment and nowhere else), and strict keys
//! (a key the component does not define is an error at its file and line, unless the component
//! opts out).

use crate::common::offline;
use crate::common::util;

use offline::{edit_file, fief, init_repo, line_of, stderr, stdout, write_file};
use serde_json::Value;

/// A `fief init` repo whose tenant `acme` (dev and prod) carries `overrides`.
fn repo_with(overrides: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    init_repo(dir.path(), "acme");
    let path = dir.path().join("tenants/acme.yaml");
    let mut text = std::fs::read_to_string(&path).expect("read tenant");
    text.push_str("  overrides:\n");
    text.push_str(overrides);
    write_file(dir.path(), "tenants/acme.yaml", &text);
    dir
}

fn render(dir: &tempfile::TempDir) -> Vec<Value> {
    let out = fief(&["render", dir.path().to_str().expect("utf-8"), "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list: Value = serde_json::from_str(&stdout(&out)).expect("a JSON list");
    list["items"].as_array().cloned().unwrap_or_default()
}

fn find<'a>(objects: &'a [Value], kind: &str, namespace: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| {
            o["kind"] == kind
                && o["metadata"]["namespace"] == namespace
                && o["metadata"]["name"] == name
        })
        .unwrap_or_else(|| panic!("no {kind} {namespace}/{name}"))
}

#[test]
fn a_component_runs_another_version_and_values_in_one_environment_only() {
    let dir = repo_with(
        "    dev:\n      components:\n        hello:\n          version: \"1.38\"\n          values: {greeting: Hello from the next release}\n",
    );
    let objects = render(&dir);
    let image = |ns: &str| {
        find(&objects, "Deployment", ns, "hello")["spec"]["template"]["spec"]["containers"][0]["image"].clone()
    };
    assert_eq!(image("acme-dev"), "docker.io/library/busybox:1.38");
    assert_eq!(image("acme-prod"), "docker.io/library/busybox:1.37");
    let page = |ns: &str| find(&objects, "ConfigMap", ns, "hello")["data"]["index.html"].clone();
    assert!(
        page("acme-dev")
            .as_str()
            .is_some_and(|p| p.contains("Hello from the next release"))
    );
    assert!(
        page("acme-prod")
            .as_str()
            .is_some_and(|p| p.contains("Hello, acme")),
        "the tenant's own value stays in prod"
    );
}

#[test]
fn render_values_shows_each_key_with_the_file_and_line_of_the_layer_that_set_it() {
    let dir = repo_with(
        "    dev:\n      components:\n        hello:\n          values: {greeting: Hello from the next release}\n",
    );
    let repo = dir.path().to_str().expect("utf-8");
    let out = fief(&["render", repo, "--values", "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows: Value = serde_json::from_str(&stdout(&out)).expect("a JSON array");
    let greeting = |env: &str| {
        let row = rows
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["tenant"] == "acme" && r["component"] == "hello" && r["env"] == env)
            .unwrap_or_else(|| panic!("no acme/hello/{env} in {rows}"));
        row["values"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["key"] == "greeting")
            .cloned()
            .unwrap_or_else(|| panic!("no greeting in {row}"))
    };
    // dev: the tenant's override for dev, at its line; prod: the tenant's own value.
    let dev = greeting("dev");
    assert_eq!(dev["value"], "Hello from the next release");
    assert_eq!(dev["file"], "tenants/acme.yaml");
    let line = line_of(
        dir.path(),
        "tenants/acme.yaml",
        "Hello from the next release",
    );
    assert_eq!(dev["line"], line);
    let prod = greeting("prod");
    assert_eq!(prod["value"], "Hello, acme");
    assert_eq!(prod["file"], "tenants/acme.yaml");
    assert_eq!(
        prod["line"],
        line_of(dir.path(), "tenants/acme.yaml", "greeting: Hello, acme")
    );

    // Text, one environment: `key: value   # file:line`.
    let out = fief(&[
        "render", repo, "--values", "--env", "dev", "--tenant", "acme",
    ]);
    let text = stdout(&out);
    assert!(text.contains("# acme / hello / dev"), "{text}");
    assert!(!text.contains("/ prod"), "{text}");
    assert!(
        text.contains(&format!("# tenants/acme.yaml:{line}")),
        "{text}"
    );
}

#[test]
fn quota_and_access_lists_differ_in_the_environment_that_overrides_them() {
    let dir = repo_with(
        "    prod:\n      quota: {cpu: \"8\"}\n      access:\n        viewers: [auditor]\n",
    );
    let objects = render(&dir);
    let hard = |ns: &str| find(&objects, "ResourceQuota", ns, "fief-quota")["spec"]["hard"].clone();
    assert_eq!(hard("acme-prod")["requests.cpu"], "8");
    assert_eq!(
        hard("acme-prod")["requests.memory"],
        "2Gi",
        "fields not overridden stay"
    );
    assert_eq!(hard("acme-dev")["requests.cpu"], "2");
    let viewers_in = |ns: &str| {
        objects
            .iter()
            .filter(|o| o["kind"] == "RoleBinding" && o["metadata"]["namespace"] == ns)
            .flat_map(|o| o["subjects"].as_array().cloned().unwrap_or_default())
            .any(|s| s["name"] == "auditor")
    };
    assert!(viewers_in("acme-prod"));
    assert!(!viewers_in("acme-dev"));
}

#[test]
fn an_override_of_an_environment_or_component_the_tenant_lacks_is_an_error_with_a_suggestion() {
    let dir = repo_with(
        "    prd:\n      quota: {cpu: \"8\"}\n    dev:\n      components:\n        helo: {version: \"1.38\"}\n",
    );
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("tenants/acme.yaml"), "{text}");
    assert!(
        text.contains("unknown environment `prd` (did you mean `prod`?)"),
        "{text}"
    );
    assert!(
        text.contains("unknown component `helo` (did you mean `hello`?)"),
        "{text}"
    );
}

#[test]
fn a_misspelt_value_in_an_override_is_refused_at_its_line_in_the_tenant_file() {
    let dir = repo_with(
        "    prod:\n      components:\n        hello:\n          values: {replicsa: 4}\n",
    );
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let line = line_of(dir.path(), "tenants/acme.yaml", "replicsa");
    assert!(
        text.contains(&format!("tenants/acme.yaml:{line}")),
        "{text}"
    );
    assert!(text.contains("did you mean `replicas`"), "{text}");
}

/// A `fief init` repo whose component has no values schema, so varz.yaml alone defines its
/// keys; `component_extra` is appended to its component.yaml.
fn repo_without_schema(tenant_values: &str, component_extra: &str) -> tempfile::TempDir {
    let dir = repo_with("    dev: {}\n");
    std::fs::remove_file(dir.path().join("components/hello/values.schema.json")).expect("rm");
    let path = dir.path().join("components/hello/component.yaml");
    let text = std::fs::read_to_string(&path).expect("read") + component_extra;
    std::fs::write(&path, text).expect("write");
    edit_file(
        dir.path(),
        "tenants/acme.yaml",
        "greeting: Hello, acme",
        tenant_values,
    );
    dir
}

#[test]
fn a_key_the_component_does_not_define_is_an_error_at_its_line_without_a_schema() {
    let dir = repo_without_schema("replicsa: 3", "");
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stderr(&out);
    let line = line_of(dir.path(), "tenants/acme.yaml", "replicsa");
    assert!(
        text.contains(&format!("tenants/acme.yaml:{line}")),
        "{text}"
    );
    assert!(text.contains("`values.replicsa` is not defined in components/hello/varz.yaml (did you mean `replicas`?)"), "{text}");
}

#[test]
fn a_component_that_opts_out_of_strict_values_takes_any_key() {
    let dir = repo_without_schema("replicsa: 3", "strictValues: false\n");
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_label_selector_chooses_the_tenants_render_and_validate_work_on() {
    let dir = repo_with("    dev: {}\n");
    init_repo(&dir.path().join("second"), "globex");
    std::fs::copy(
        dir.path().join("second/tenants/globex.yaml"),
        dir.path().join("tenants/globex.yaml"),
    )
    .expect("copy");
    let path = dir.path().join("tenants/globex.yaml");
    let text = std::fs::read_to_string(&path)
        .expect("read")
        .replace("tier: free", "tier: paid");
    std::fs::write(&path, text).expect("write");
    std::fs::remove_dir_all(dir.path().join("second")).expect("rm");
    let repo = dir.path().to_str().expect("utf-8");
    let out = fief(&["validate", repo, "-l", "tier=paid"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("globex: ok") && !stdout(&out).contains("acme"),
        "{}",
        stdout(&out)
    );
    let out = fief(&["render", repo, "-l", "tier!=paid", "-o", "json"]);
    let text = stdout(&out);
    assert!(text.contains("acme-dev") && !text.contains("globex-dev"));
    let out = fief(&["validate", repo, "-l", "tier=gold"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no tenant"), "{}", stderr(&out));
}

#[test]
fn render_and_diff_from_with_env_show_one_environment_and_an_unknown_one_is_refused() {
    let dir = repo_with("    prod:\n      components:\n        hello: {version: \"1.37\"}\n");
    let repo = dir.path().to_str().expect("utf-8");
    let objects = {
        let out = fief(&["render", repo, "--env", "prod", "-o", "json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let list: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        list["items"].as_array().cloned().unwrap_or_default()
    };
    assert!(!objects.is_empty());
    assert!(
        objects
            .iter()
            .all(|o| o["metadata"]["namespace"] == "acme-prod"
                || o["metadata"]["name"] == "acme-prod")
    );
    let out = fief(&["render", repo, "--env", "prd"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--env prd"), "{}", stderr(&out));
    // A change in dev only: the prod diff is empty, the dev diff is not.
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .expect("git");
        assert!(ok.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "one"]);
    write_file(
        dir.path(),
        "environments/dev.yaml",
        "components:\n  hello:\n    greeting: Hi from dev\n",
    );
    let prod = fief(&["diff", repo, "--from", "HEAD", "--env", "prod"]);
    assert_eq!(prod.status.code(), Some(0), "{}", stdout(&prod));
    let dev = fief(&["diff", repo, "--from", "HEAD", "--env", "dev"]);
    assert_eq!(dev.status.code(), Some(1), "{}", stdout(&dev));
}

#[test]
fn validate_with_env_checks_only_that_environment_and_an_unknown_one_gets_a_did_you_mean() {
    // A key the component does not define, in prod's override only.
    let dir = repo_with(
        "    prod:\n      components:\n        hello:\n          values: {greetnig: Hi}\n",
    );
    let repo = dir.path().to_str().expect("utf-8");
    let dev = fief(&["validate", repo, "--env", "dev"]);
    assert_eq!(dev.status.code(), Some(0), "{}", stderr(&dev));
    assert!(
        stdout(&dev).contains("acme: ok (1 namespaces"),
        "{}",
        stdout(&dev)
    );
    let prod = fief(&["validate", repo, "--env", "prod"]);
    assert_eq!(prod.status.code(), Some(1), "{}", stdout(&prod));
    assert!(stderr(&prod).contains("greetnig"), "{}", stderr(&prod));
    let all = fief(&["validate", repo]);
    assert_eq!(all.status.code(), Some(1), "{}", stdout(&all));
    let typo = fief(&["validate", repo, "--env", "prd"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        stderr(&typo).contains("--env prd: no tenant has this environment (did you mean `prod`?)"),
        "{}",
        stderr(&typo)
    );
}

#[test]
fn an_environment_override_pins_its_own_git_ref_over_the_component_entrys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, repo) = (dir.path(), dir.path().to_str().expect("utf-8"));
    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  template: {v}\n")
    };
    util::git(root, &["init", "-q", "-b", "main"]);
    write_file(root, "components/web/varz.yaml", "replicas: 1\n");
    for (v, tag) in [("\"2.3\"", "web-2.3"), ("\"2.4\"", "web-2.4")] {
        write_file(root, "components/web/templates/cm.yaml", &cm(v));
        util::git(root, &["add", "-A"]);
        util::git(root, &["commit", "-q", "-m", tag]);
        util::git(root, &["tag", tag]);
    }
    write_file(root, "components/web/templates/cm.yaml", &cm("head"));
    let tenant = |name: &str, entry: &str| {
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [dev, prod]\n  components:\n    - name: web{entry}\n  overrides:\n    dev:\n      components:\n        web: {{ref: web-2.4}}\n"
        )
    };
    // acme: dev at web-2.4, prod at the head; beta pins web-2.3, dev still at web-2.4.
    write_file(root, "tenants/acme.yaml", &tenant("acme", ""));
    write_file(
        root,
        "tenants/beta.yaml",
        &tenant("beta", "\n      ref: web-2.3"),
    );
    let out = fief(&["render", repo, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let objects = list["items"].as_array().cloned().unwrap_or_default();
    let template = |ns: &str| find(&objects, "ConfigMap", ns, "web")["data"]["template"].clone();
    assert_eq!(template("acme-dev"), "2.4");
    assert_eq!(template("acme-prod"), "head");
    assert_eq!(template("beta-dev"), "2.4");
    assert_eq!(template("beta-prod"), "2.3");
    // The values' provenance names the folder read at the environment's ref.
    let values = fief(&[
        "render", repo, "--values", "--tenant", "beta", "--env", "dev",
    ]);
    assert!(
        stdout(&values).contains("# components/web@web-2.4/varz.yaml:1"),
        "{}",
        stdout(&values)
    );
}
