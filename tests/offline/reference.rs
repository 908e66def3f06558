//! The generated reference: the pages of `docs/src/reference/` and the JSON Schemas in
//! `schemas/` are what the code says, and the schemas check real files as the loader does.
//!
//! A page that differs fails its test; `FIEF_BLESS=1 cargo test --test offline reference::` rewrites it
//! from the code (then read the diff before committing).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;
use fief::core::model::{RepoFile, repo_format_markdown};
use serde_json::Value;

fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Compares `rel` with `generated`; with FIEF_BLESS=1 writes it instead.
fn check_generated(rel: &str, generated: &str) {
    let path = repo_path(rel);
    if std::env::var_os("FIEF_BLESS").is_some_and(|v| v == "1") {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, generated).expect("write the generated file");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != generated {
        let first = current
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
        panic!(
            "{rel} differs from what the code generates (first at line {}): run \
             `FIEF_BLESS=1 cargo test --test offline reference::` and commit the result",
            first + 1
        );
    }
}

fn help_of(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--help")
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .output()
        .expect("run fief --help");
    assert!(out.status.success(), "fief {args:?} --help failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The CLI reference: `fief --help`, then every command's `--help`, verbatim.
fn cli_markdown() -> String {
    let mut out = String::from(
        "# Command line\n\n<!-- Generated from `fief <command> --help` by \
         `cargo test --test offline reference::` with FIEF_BLESS=1; do not edit. -->\n\n\
         Every command prints this text with `--help`; `fief man` prints it as a man page \
         and `fief completion SHELL` a completion script (commands, flags, and the tenant and \
         environment names of the repo in the current folder).\n\n## fief\n\n```text\n",
    );
    out.push_str(&help_of(&[]));
    out.push_str("```\n");
    for sub in fief::cli::Cli::command().get_subcommands() {
        let name = sub.get_name();
        if name == "help" {
            continue;
        }
        out.push_str(&format!("\n## fief {name}\n\n```text\n"));
        out.push_str(&help_of(&[name]));
        out.push_str("```\n");
    }
    out
}

#[test]
fn the_cli_reference_is_the_help_of_every_command() {
    check_generated("docs/src/reference/cli.md", &cli_markdown());
}

#[test]
fn fief_help_lists_the_exit_codes() {
    let help = help_of(&[]);
    for code in [
        "0  success",
        "1  invalid input",
        "2  usage error",
        "3  cluster or git",
        "4  `apply`",
        "5  `apply --wait`",
    ] {
        assert!(
            help.contains(code),
            "`fief --help` lacks exit code `{code}`:\n{help}"
        );
    }
}

#[test]
fn the_repo_format_reference_is_generated_from_the_types() {
    check_generated("docs/src/reference/repo-format.md", &repo_format_markdown());
}

#[test]
fn the_json_schemas_shipped_in_schemas_are_the_generated_ones() {
    for file in RepoFile::ALL {
        check_generated(
            &format!("schemas/{}", file.schema_file()),
            &file.schema_text(),
        );
    }
}

fn yaml_as_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("read");
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn schema_of(path: &str) -> Option<RepoFile> {
    if path == "fief.yaml" {
        Some(RepoFile::Config)
    } else if path.starts_with("tenants/") {
        Some(RepoFile::Tenant)
    } else if path.starts_with("environments/") {
        Some(RepoFile::Environment)
    } else if path.starts_with("components/") && path.ends_with("/component.yaml") {
        Some(RepoFile::Component)
    } else {
        None
    }
}

/// Every repo file under `root` with a schema, as (path in the repo, schema, content).
fn repo_files(root: &Path) -> Vec<(String, RepoFile, Value)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(root).expect("under root");
            let rel = rel.to_string_lossy().into_owned();
            if let Some(file) = schema_of(&rel) {
                out.push((rel, file, yaml_as_json(&path)));
            }
        }
    }
    out
}

fn assert_valid(root: &Path) -> usize {
    let files = repo_files(root);
    for (rel, file, value) in &files {
        let validator = jsonschema::validator_for(&file.schema()).expect("schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {rel}: {errors:?}", root.display());
    }
    files.len()
}

#[test]
fn the_json_schemas_accept_the_example_repo_and_what_fief_init_writes() {
    assert!(assert_valid(&repo_path("examples/tenants-repo")) >= 8);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .arg("init")
        .arg(dir.path())
        .output()
        .expect("run fief init");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(assert_valid(dir.path()) >= 5);
}

#[test]
fn the_json_schemas_reject_a_misspelt_field_in_each_kind_of_file() {
    let cases = [
        (RepoFile::Config, r#"{"agentNamespce": "fief-system"}"#),
        (
            RepoFile::Tenant,
            r#"{"apiVersion": "fief.dev/v1alpha1", "kind": "Tenant", "metadata": {"name": "a"},
                "spec": {"enviroments": ["dev"]}}"#,
        ),
        (RepoFile::Component, r#"{"dependOn": ["postgres"]}"#),
        (RepoFile::Environment, r#"{"value": {"replicas": 1}}"#),
    ];
    for (file, text) in cases {
        let value: Value = serde_json::from_str(text).expect("json");
        let validator = jsonschema::validator_for(&file.schema()).expect("schema compiles");
        assert!(!validator.is_valid(&value), "{file:?} accepted {text}");
    }
}
