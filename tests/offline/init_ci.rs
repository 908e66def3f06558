//! The CI workflow `fief init` writes: it pins this fief's version and the SHA-256 of the
//! binary that ran init (and of the render helper and chart fetcher it found), and its own
//! shell steps, run
//! here with the workflow's env, download and check those binaries and keep one comment per
//! pull request.
//!
//! Needs `bash`, `curl` (a `file://` URL stands for the release folder), `sha256sum` and
//! `jq` (the fake `gh` answers `--jq` queries with it).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::offline::{stderr, stdout, write_file};

const FIEF: &str = env!("CARGO_BIN_EXE_fief");
const VERSION: &str = env!("CARGO_PKG_VERSION");
const WORKFLOW: &str = ".github/workflows/fief.yaml";
const DOWNLOAD: &str = "Download fief";
const COMMENT: &str = "Comment the diff on the pull request";

/// `fief init` into `dir/repo` with `helper` as the render helper, or with none anywhere
/// (`$FIEF_RENDER_HELPER` empty, an empty PATH). Returns (its stdout, the workflow's text).
fn init(dir: &Path, helper: Option<&Path>) -> (String, String) {
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let repo = dir.join("repo");
    let mut cmd = Command::new(FIEF);
    cmd.arg("init").arg(&repo);
    match helper {
        Some(helper) => cmd.env("FIEF_RENDER_HELPER", helper),
        None => cmd.env("FIEF_RENDER_HELPER", "").env("PATH", &empty),
    };
    let out = cmd.output().expect("run fief init");
    assert!(out.status.success(), "{}", stderr(&out));
    let workflow = std::fs::read_to_string(repo.join(WORKFLOW)).expect("workflow written");
    (stdout(&out), workflow)
}

/// The workflow and stdout of one `fief init` without a render helper, shared by the tests
/// (init hashes the fief binary, which takes seconds in a debug build).
fn without_helper() -> &'static (String, String) {
    static WRITTEN: OnceLock<(String, String)> = OnceLock::new();
    WRITTEN.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        init(dir.path(), None)
    })
}

fn sha256_hex(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse(workflow: &str) -> Value {
    serde_saphyr::from_str(workflow).expect("the workflow is YAML")
}

/// The workflow-level `env:`.
fn workflow_env(workflow: &Value) -> BTreeMap<String, String> {
    let env = workflow["env"].as_object().expect("env: is a mapping");
    env.iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("a string").to_string()))
        .collect()
}

/// The step of the job `diff` named `name`.
fn step<'a>(workflow: &'a Value, name: &str) -> &'a Value {
    let steps = workflow["jobs"]["diff"]["steps"].as_array().expect("steps");
    steps
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step `{name}`"))
}

/// `text` with each `${{ expression }}` replaced by its value in `exprs`; an expression the
/// test does not know fails it.
fn expand(text: &str, exprs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        let expr = rest[start + 3..end].trim();
        let value = exprs
            .iter()
            .find(|(k, _)| *k == expr)
            .unwrap_or_else(|| panic!("unknown expression `{expr}`"))
            .1;
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out + rest
}

/// Run the step `name` of `workflow` as GitHub would (`bash -euo pipefail`, the workflow's
/// and the step's env, expressions from `exprs`), in `cwd`, with `env` added.
fn run_step(
    workflow: &str,
    name: &str,
    exprs: &[(&str, &str)],
    cwd: &Path,
    env: &[(&str, String)],
) -> Output {
    let workflow = parse(workflow);
    let step = step(&workflow, name);
    let script = expand(step["run"].as_str().expect("a run: script"), exprs);
    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", &script])
        .current_dir(cwd)
        .envs(workflow_env(&workflow));
    if let Some(step_env) = step["env"].as_object() {
        for (k, v) in step_env {
            cmd.env(k, expand(v.as_str().expect("a string"), exprs));
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.output().expect("run bash")
}

/// Run the download step against the release folder `served`, in `dir`; returns its output
/// and the folder it put on GITHUB_PATH, if any.
fn download(workflow: &str, served: &Path, dir: &Path) -> (Output, Option<String>) {
    let runner_temp = dir.join("runner-temp");
    std::fs::create_dir_all(&runner_temp).expect("mkdir");
    let github_path = dir.join("github-path");
    let url = format!("file://{}", served.display());
    let out = run_step(
        workflow,
        DOWNLOAD,
        &[("vars.FIEF_RELEASES", &url)],
        dir,
        &[
            ("RUNNER_TEMP", runner_temp.display().to_string()),
            ("GITHUB_PATH", github_path.display().to_string()),
        ],
    );
    let added = std::fs::read_to_string(&github_path).ok();
    (out, added.map(|s| s.trim_end().to_string()))
}

/// The release file name of `name` for this machine.
fn release_file(name: &str) -> String {
    format!("{name}-{VERSION}-{}-linux", std::env::consts::ARCH)
}

fn output(out: &Output) -> String {
    format!("{}{}", stdout(out), stderr(out))
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn the_workflow_pins_the_version_and_sha256_of_the_binary_that_ran_fief_init() {
    let (printed, workflow) = without_helper();
    let env = workflow_env(&parse(workflow));
    let hash = sha256_hex(Path::new(FIEF));
    assert_eq!(env["FIEF_VERSION"], VERSION);
    assert_eq!(env["FIEF_SHA256"], hash);
    assert!(!workflow.contains("cargo install"), "{workflow}");
    assert!(
        !workflow.contains("__"),
        "a placeholder is left: {workflow}"
    );
    for kept in [
        "fief validate .",
        "fief diff . --from \"origin/${{ github.base_ref }}\" -o markdown > diff.md || test $? -eq 1",
    ] {
        assert!(workflow.contains(kept), "lacks `{kept}`");
    }
    let said = format!("pins fief {VERSION} at sha256 {hash}, the binary that ran `fief init`");
    assert!(printed.contains(&said), "{printed}");
    assert!(printed.contains("if you serve another build, put its SHA-256 there"));
}

#[test]
fn without_a_render_helper_the_workflow_downloads_fief_alone_and_says_what_to_add() {
    let (printed, workflow) = without_helper();
    let env = workflow_env(&parse(workflow));
    for (name, var) in [
        ("fief-render-helper", "FIEF_RENDER_HELPER_SHA256"),
        ("fief-chart-pull", "FIEF_CHART_PULL_SHA256"),
    ] {
        assert!(!env.contains_key(var), "{env:?}");
        let to_add = format!("# {var}: \"<SHA-256 of {}>\"", release_file(name));
        assert!(workflow.contains(&to_add), "{workflow}");
        assert!(
            printed.contains(&format!("downloads no {name}")),
            "{printed}"
        );
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::os::unix::fs::symlink(FIEF, served.join(release_file("fief"))).expect("symlink");
    let (out, added) = download(workflow, &served, dir.path());
    assert!(out.status.success(), "{}", output(&out));
    let bin = Path::new(added.as_deref().expect("a folder on GITHUB_PATH")).to_path_buf();
    assert!(bin.join("fief").is_file());
    assert!(!bin.join("fief-render-helper").exists());
    assert!(!bin.join("fief-chart-pull").exists());
}

#[test]
fn the_download_step_installs_the_pinned_fief_render_helper_and_chart_pull_on_the_github_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let helper = dir.path().join("fief-render-helper");
    executable(&helper, "#!/bin/sh\necho a render helper\n");
    let pull = dir.path().join("fief-chart-pull");
    executable(&pull, "#!/bin/sh\necho a chart fetcher\n");
    let (printed, workflow) = init(dir.path(), Some(&helper));
    let env = workflow_env(&parse(&workflow));
    assert_eq!(env["FIEF_RENDER_HELPER_SHA256"], sha256_hex(&helper));
    assert_eq!(env["FIEF_CHART_PULL_SHA256"], sha256_hex(&pull));
    for name in ["fief-render-helper", "fief-chart-pull"] {
        let said = format!("pins {name} at sha256");
        assert!(printed.contains(&said), "{printed}");
    }

    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::os::unix::fs::symlink(FIEF, served.join(release_file("fief"))).expect("symlink");
    std::fs::copy(&helper, served.join(release_file("fief-render-helper"))).expect("copy");
    std::fs::copy(&pull, served.join(release_file("fief-chart-pull"))).expect("copy");
    let (out, added) = download(&workflow, &served, dir.path());
    assert!(out.status.success(), "{}", output(&out));
    let bin = Path::new(added.as_deref().expect("a folder on GITHUB_PATH")).to_path_buf();
    assert!(bin.starts_with(dir.path().join("runner-temp")), "{bin:?}");
    let version = Command::new(bin.join("fief"))
        .arg("--version")
        .output()
        .expect("run the downloaded fief");
    assert!(stdout(&version).contains(VERSION), "{}", stdout(&version));
    let helper_ran = Command::new(bin.join("fief-render-helper"))
        .output()
        .expect("run the downloaded helper");
    assert_eq!(stdout(&helper_ran), "a render helper\n");
    let pull_ran = Command::new(bin.join("fief-chart-pull"))
        .output()
        .expect("run the downloaded chart fetcher");
    assert_eq!(stdout(&pull_ran), "a chart fetcher\n");
}

#[test]
fn the_download_step_fails_naming_the_checksum_when_the_served_fief_differs() {
    let (_, workflow) = without_helper();
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served");
    write_file(
        &served,
        &release_file("fief"),
        "not the fief that ran init\n",
    );
    let (out, added) = download(workflow, &served, dir.path());
    assert!(!out.status.success());
    let text = output(&out);
    let pinned = &workflow_env(&parse(workflow))["FIEF_SHA256"];
    assert!(
        text.contains("checksum mismatch")
            && text.contains(&release_file("fief"))
            && text.contains(pinned.as_str()),
        "{text}"
    );
    assert_eq!(added, None, "nothing is put on GITHUB_PATH");
}

/// A fake `gh` in `dir/fake-bin` that logs each call's arguments to `dir/calls`, copies a
/// `body=@FILE` to `dir/body`, and answers a `--jq` query with jq over `dir/comments.json`
/// (one JSON array per page, as `--paginate` reads them).
fn fake_gh(dir: &Path, comments: &str) -> String {
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::write(dir.join("comments.json"), comments).expect("write");
    let d = dir.display();
    executable(
        &bin.join("gh"),
        &format!(
            "#!/usr/bin/env bash\nset -euo pipefail\nprintf '%s\\n' \"$*\" >> '{d}/calls'\n\
             filter=''; prev=''\nfor arg in \"$@\"; do\n  \
             [ \"$prev\" = --jq ] && filter=\"$arg\"\n  \
             case \"$arg\" in body=@*) cp \"${{arg#body=@}}\" '{d}/body' ;; esac\n  \
             prev=\"$arg\"\ndone\n\
             if [ -n \"$filter\" ]; then jq -r \"$filter\" '{d}/comments.json'; fi\n"
        ),
    );
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Run the comment step with the fake gh over `comments`; returns gh's calls and the body sent.
fn comment(comments: &str) -> (Vec<String>, String) {
    let (_, workflow) = without_helper();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = fake_gh(dir.path(), comments);
    write_file(
        dir.path(),
        "diff.md",
        "### fief diff\n\n**1 tenant changed**\n",
    );
    let exprs = [
        ("github.token", "a-token"),
        ("github.repository", "org/tenants"),
        ("github.event.number", "7"),
    ];
    let out = run_step(workflow, COMMENT, &exprs, dir.path(), &[("PATH", path)]);
    assert!(out.status.success(), "{}", output(&out));
    let calls = std::fs::read_to_string(dir.path().join("calls")).expect("gh was called");
    let body = std::fs::read_to_string(dir.path().join("body")).expect("a body was sent");
    (calls.lines().map(str::to_string).collect(), body)
}

#[test]
fn the_comment_step_creates_one_marked_comment_when_the_pull_request_has_none() {
    let (calls, body) = comment(r#"[{"id": 11, "body": "LGTM"}]"#);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].starts_with("api repos/org/tenants/issues/7/comments --paginate --jq"));
    assert_eq!(
        calls[1],
        "api --method POST repos/org/tenants/issues/7/comments -F body=@comment.md"
    );
    assert!(
        body.starts_with("<!-- fief diff -->\n### fief diff\n"),
        "{body}"
    );
}

#[test]
fn the_comment_step_updates_the_marked_comment_and_creates_none() {
    let pages = r#"[{"id": 11, "body": "LGTM"}, {"id": 12, "body": "quoting <!-- fief diff -->"}]
[{"id": 42, "body": "<!-- fief diff -->\nan older diff"}]"#;
    let (calls, body) = comment(pages);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[1],
        "api --method PATCH repos/org/tenants/issues/comments/42 -F body=@comment.md"
    );
    assert!(body.contains("**1 tenant changed**"), "{body}");
}
