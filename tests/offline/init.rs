//! `fief init` and `fief schemas`: a new repo that validates and renders at once, whose values
//! are strict, that overwrites nothing, and whose files name the schemas editors use.

use crate::common::offline;

use std::path::Path;

use offline::{fief, stderr, stdout, write_file};

fn init(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["init", dir.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    fief(&args)
}

#[test]
fn fief_init_writes_a_repo_that_validates_and_renders_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("tenants");
    let out = init(&repo, &["--tenant", "acme"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("fief validate"),
        "next steps: {}",
        stdout(&out)
    );
    let repo = repo.to_str().expect("utf-8");
    let out = fief(&["validate", repo]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = fief(&["render", repo]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let objects = stdout(&out);
    for expected in [
        "name: acme-dev",
        "name: acme-prod",
        "kind: Deployment",
        "Hello, acme",
    ] {
        assert!(objects.contains(expected), "render lacks `{expected}`");
    }
}

#[test]
fn the_files_fief_init_writes_name_their_json_schema_for_editors() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(init(dir.path(), &[]).status.success());
    for (file, schema) in [
        ("fief.yaml", ".fief/schemas/fief.schema.json"),
        (
            "tenants/example.yaml",
            "../.fief/schemas/tenant.schema.json",
        ),
        (
            "environments/dev.yaml",
            "../.fief/schemas/environment.schema.json",
        ),
        (
            "components/hello/component.yaml",
            "../../.fief/schemas/component.schema.json",
        ),
    ] {
        let text = std::fs::read_to_string(dir.path().join(file)).expect("read");
        let modeline = format!("# yaml-language-server: $schema={schema}");
        assert!(text.starts_with(&modeline), "{file} lacks `{modeline}`");
        let target = dir.path().join(file).parent().expect("parent").join(schema);
        assert!(target.is_file(), "{file}'s schema {schema} is not there");
    }
}

#[test]
fn a_misspelt_value_in_a_fief_init_repo_is_an_error_with_a_did_you_mean() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(init(dir.path(), &[]).status.success());
    write_file(
        dir.path(),
        "environments/prod.yaml",
        "components:\n  hello:\n    replicsa: 2\n",
    );
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains("replicsa") && text.contains("did you mean `replicas`"),
        "{text}"
    );
}

#[test]
fn fief_init_overwrites_nothing_and_names_the_files_in_the_way() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_file(dir.path(), "fief.yaml", "baseDomain: mine.example\n");
    let out = init(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("fief.yaml"), "{}", stderr(&out));
    let kept = std::fs::read_to_string(dir.path().join("fief.yaml")).expect("read");
    assert_eq!(kept, "baseDomain: mine.example\n");
    assert!(!dir.path().join("tenants").exists(), "nothing else written");
}

#[test]
fn fief_init_refuses_a_tenant_name_that_is_not_a_dns_label() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = init(dir.path(), &["--tenant", "Acme_Corp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("DNS-1123"), "{}", stderr(&out));
}

#[test]
fn fief_schemas_writes_the_four_schemas_editors_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = fief(&["schemas", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for name in ["fief", "tenant", "component", "environment"] {
        let text = std::fs::read_to_string(dir.path().join(format!("{name}.schema.json")))
            .expect("schema written");
        let schema: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(schema["additionalProperties"], false, "{name}");
    }
}

#[test]
fn validate_render_diff_and_apply_refuse_a_folder_that_is_not_a_tenants_repo_and_point_at_fief_init()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    write_file(dir.path(), "README.md", "not a tenants repo\n");
    // A repo's components/ folder, given by mistake, is not a repo either.
    let components = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tenants-repo/components");
    for folder in [dir.path(), components.as_path()] {
        for command in ["validate", "render", "diff", "apply"] {
            let out = fief(&[command, folder.to_str().expect("utf-8")]);
            assert_eq!(out.status.code(), Some(2), "{command}: {}", stdout(&out));
            assert!(
                stderr(&out).contains("is not a tenants repo")
                    && stderr(&out).contains("fief init"),
                "{command}: {}",
                stderr(&out)
            );
        }
    }
    // A repo with fief.yaml and no tenant yet is a repo: an empty fleet is valid.
    write_file(dir.path(), "fief.yaml", "baseDomain: example.com\n");
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_misspelt_component_name_is_an_error_with_a_did_you_mean() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(init(dir.path(), &[]).status.success());
    let path = dir.path().join("tenants/example.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("- name: hello", "- name: helo")).expect("write");
    let out = fief(&["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown component `helo` (did you mean `hello`?)"),
        "{}",
        stderr(&out)
    );
}
