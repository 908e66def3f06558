//! The tutorial (`docs/src/getting-started.md`) is run as written: every `sh` block, in order,
//! in one shell, on a real node with the locally built image and a git server the agent's pods
//! reach. Only the two names a reader chooses are replaced (the image and the repo URL), so the
//! page cannot drift from what fief does.
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

/// The `sh` blocks of the tutorial, in order.
fn sh_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```sh" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            blocks.push(block.join("\n"));
        }
    }
    blocks
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
        stdout.contains("Hello, Globex"),
        "step 4 shows the greeting:\n{stdout}"
    );
    assert!(
        stdout.contains("Hello again, Globex"),
        "step 6 shows the change live:\n{stdout}"
    );
    assert!(
        stdout.contains("acme-prod"),
        "step 4 lists the namespaces:\n{stdout}"
    );
    assert!(
        stdout.contains("message: Globex is up") && stdout.trim_end().ends_with("Globex is up"),
        "step 7 renders the chart and shows its ConfigMap live:\n{stdout}"
    );
}

#[test]
fn every_shell_block_of_the_getting_started_tutorial_runs_as_written_on_a_real_cluster() {
    let cluster = node_cluster();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(TUTORIAL))
        .expect("read the tutorial");
    let blocks = sh_blocks(&text);
    assert!(
        blocks.len() >= 7,
        "{TUTORIAL} has {} sh blocks",
        blocks.len()
    );
    let script = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| format!("echo '### block {}' >&2\n{b}\n", i + 1))
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
    let replicas = kubectl(
        &[
            "get",
            "deployment",
            "hello",
            "-n",
            "acme-prod",
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
