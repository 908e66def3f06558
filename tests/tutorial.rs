//! The tutorial (`docs/src/getting-started.md`) is run as written: every `sh` block, in order,
//! in one shell, on a real node with the locally built image and a git server the agent's pods
//! reach, and what each block prints is checked against the output the page shows under it.
//! Only the two names a reader chooses are replaced (the image and the repo URL), so the page
//! cannot drift from what fief does.
//!
//! A binary of its own: it installs the agent into `fief-system` as a reader would, which the
//! node tests' install guide does too, so the two get a node cluster each.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use common::node::{FIEF_IMAGE, git, kubectl, node_cluster};

const TUTORIAL: &str = "docs/src/getting-started.md";
const IMAGE: &str = "registry.example.com/fief:0.1.0";
const REPO_URL: &str = "https://git.example.com/platform/tenants.git";

/// One `sh` block of the tutorial and the output it shows under it, if any.
struct Step {
    script: String,
    /// The lines after "The output is similar to:", before the next `sh` block.
    shown: Option<String>,
}

/// The `sh` blocks of the tutorial, in order, each with the `text` block that follows it
/// under "The output is similar to:".
fn steps(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut prose = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let fence = line.trim();
        if fence == "```sh" || fence == "```text" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            let block = block.join("\n");
            if fence == "```sh" {
                steps.push(Step {
                    script: block,
                    shown: None,
                });
            } else if let Some(last) = steps.last_mut()
                && prose.contains("The output is similar to:")
            {
                last.shown = Some(block);
            }
            prose.clear();
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    steps
}

/// Whether `line` matches `pattern`: whitespace runs compare as one space, and `…` stands for
/// any text.
fn matches(pattern: &str, line: &str) -> bool {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (pattern, line) = (squash(pattern), squash(line));
    let mut parts = pattern.split('…');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The lines of `shown` missing from `output`: each must match a line of it, in order.
fn missing_lines(shown: &str, output: &str) -> Vec<String> {
    let mut actual = output.lines();
    let mut missing = Vec::new();
    for want in shown
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "…")
    {
        if !actual.by_ref().any(|got| matches(want, got)) {
            missing.push(want.to_string());
            actual = output.lines();
        }
    }
    missing
}

/// Each step's shown output (with the names the test replaced in the script replaced the
/// same way) against what its block printed (stdout and stderr, split at the `### block N`
/// markers the script prints).
fn outputs_as_shown(steps: &[Step], output: &str, names: &[(&str, &str)]) -> Vec<String> {
    let mut by_block: Vec<String> = vec![String::new(); steps.len() + 1];
    let mut current = 0;
    for line in output.lines() {
        if let Some(n) = line.strip_prefix("### block ") {
            current = n.trim().parse().unwrap_or(0);
            continue;
        }
        if let Some(text) = by_block.get_mut(current) {
            text.push_str(line);
            text.push('\n');
        }
    }
    let mut problems = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let Some(shown) = &step.shown else { continue };
        let shown = names
            .iter()
            .fold(shown.clone(), |text, (from, to)| text.replace(from, to));
        let printed = &by_block[i + 1];
        let missing = missing_lines(&shown, printed);
        if !missing.is_empty() {
            problems.push(format!(
                "block {}: shown but not printed (in order): {missing:?}\n--- printed\n{printed}",
                i + 1
            ));
        }
    }
    problems
}

#[test]
fn shown_output_matches_lines_in_order_with_ellipses_for_what_varies() {
    assert!(matches(
        "stark: applied (… created, 0 failed)",
        "stark: applied (12 created, 0 failed)"
    ));
    assert!(matches("…Hello, Wayne…", "<p>Hello, Wayne</p>"));
    assert!(matches("NAME   STATUS AGE", "NAME  STATUS   AGE"));
    assert!(!matches("wayne: ok", "wayne: ok (2 namespaces)"));
    assert_eq!(missing_lines("a\n…\nc", "a\nb\nc\n"), Vec::<String>::new());
    assert_eq!(missing_lines("c\na", "a\nb\nc\n"), vec!["a".to_string()]);
}

/// An empty bare repo `tenants.git` served by `git daemon` on the node's address, accepting
/// pushes (`daemon.receivepack`), as a reader's git host would.
fn git_server(ip: &str, base: &Path) -> (common::util::Daemon, String) {
    let bare = base.join("tenants.git");
    std::fs::create_dir_all(&bare).expect("mkdir");
    git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    git(&bare, &["config", "daemon.receivepack", "true"]);
    let port = TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("cannot bind a port on {ip}: {e}"));
    let daemon = common::util::git_daemon_on(base, ip, port);
    (daemon, format!("git://{ip}:{port}/tenants.git"))
}

fn agent_logs() -> String {
    let out = kubectl(
        &[
            "logs",
            "-n",
            "fief-system",
            "-l",
            "app.kubernetes.io/name=fief-agent",
            "--tail=30",
            "--prefix",
        ],
        None,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The outputs the tutorial's steps promise.
fn what_the_reader_is_told_to_expect(stdout: &str) {
    assert!(
        stdout.contains("Hello, Wayne"),
        "step 5 shows the greeting:\n{stdout}"
    );
    assert!(
        stdout.contains("Hello again, Wayne"),
        "step 7 shows the change live:\n{stdout}"
    );
    assert!(
        stdout.contains("stark-prod"),
        "step 5 lists the namespaces:\n{stdout}"
    );
    assert!(
        stdout.contains("message: Wayne is up") && stdout.trim_end().ends_with("Wayne is up"),
        "step 8 renders the chart and shows its ConfigMap live:\n{stdout}"
    );
}

#[test]
fn every_shell_block_of_the_getting_started_tutorial_runs_as_written_on_a_real_cluster() {
    let cluster = node_cluster();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(TUTORIAL))
        .expect("read the tutorial");
    let steps = steps(&text);
    assert!(steps.len() >= 8, "{TUTORIAL} has {} sh blocks", steps.len());
    let shown = steps.iter().filter(|s| s.shown.is_some()).count();
    assert!(shown >= 8, "{TUTORIAL} shows the output of {shown} blocks");
    // One stream, as a reader's terminal shows it: stderr joins stdout.
    let script = std::iter::once("exec 2>&1\n".to_string())
        .chain(
            steps
                .iter()
                .enumerate()
                .map(|(i, s)| format!("echo '### block {}'\n{}\n", i + 1, s.script)),
        )
        .collect::<String>();
    for name in [IMAGE, REPO_URL] {
        assert!(script.contains(name), "the tutorial no longer uses {name}");
    }

    let work = tempfile::tempdir().expect("tempdir");
    let served = tempfile::tempdir().expect("tempdir");
    let (_daemon, url) = git_server(cluster.node_ip(), served.path());
    let script = script.replace(IMAGE, FIEF_IMAGE).replace(REPO_URL, &url);
    let fief_dir = Path::new(env!("CARGO_BIN_EXE_fief"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}:{}",
        fief_dir.display(),
        cluster.cp().bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(work.path())
        .env("PATH", path)
        .env("HOME", work.path())
        .env("KUBECONFIG", cluster.cp().admin_kubeconfig())
        .env("GIT_AUTHOR_NAME", "Tutorial Reader")
        .env("GIT_AUTHOR_EMAIL", "reader@example.com")
        .env("GIT_COMMITTER_NAME", "Tutorial Reader")
        .env("GIT_COMMITTER_EMAIL", "reader@example.com")
        .env("NO_COLOR", "1")
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the tutorial failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- agent\n{}",
        out.status,
        agent_logs()
    );
    what_the_reader_is_told_to_expect(&stdout);
    let problems = outputs_as_shown(&steps, &stdout, &[(IMAGE, FIEF_IMAGE), (REPO_URL, &url)]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let replicas = kubectl(
        &[
            "get",
            "deployment",
            "hello",
            "-n",
            "stark-prod",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        None,
    );
    assert_eq!(
        String::from_utf8_lossy(&replicas.stdout),
        "3",
        "the merged change applied"
    );
}
