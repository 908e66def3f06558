//! The real `sops` CLI and `age-keygen` for the secrets tests.
//!
//! `sops` is built from its Go module by `tools/build-sops.sh` (cached under `.cache/sops/`;
//! `$FIEF_SOPS_BIN` overrides); `age-keygen` comes from the Debian `age` package (`.ci/run`
//! installs it). A missing tool fails the test, never skips it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The pinned `sops` binary, built on first use.
pub fn sops_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("FIEF_SOPS_BIN") {
            return PathBuf::from(p);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/build-sops.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed with {}",
            script.display(),
            out.status
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// An age identity made by `age-keygen`: the key file and its public recipient.
pub struct AgeKey {
    /// The identity file (`age-keygen -o`).
    pub file: PathBuf,
    /// `age1...`.
    pub recipient: String,
}

/// Run `age-keygen -o dir/name`.
pub fn age_keygen(dir: &Path, name: &str) -> AgeKey {
    let file = dir.join(name);
    let out = Command::new("age-keygen")
        .arg("-o")
        .arg(&file)
        .output()
        .expect("age-keygen not found: install Debian's `age` package (.ci/run does)");
    assert!(out.status.success(), "age-keygen failed: {out:?}");
    let text = std::fs::read_to_string(&file).expect("key file");
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .expect("public key line")
        .trim()
        .to_string();
    AgeKey { file, recipient }
}

fn sops(dir: &Path) -> Command {
    let mut c = Command::new(sops_bin());
    c.current_dir(dir)
        .env_remove("SOPS_AGE_KEY")
        .env_remove("SOPS_AGE_KEY_FILE")
        .env("SOPS_AGE_KEY_FILE", "/nonexistent");
    c
}

/// Write `plaintext` to `repo/rel` and encrypt it in place with `sops --encrypt --age`.
pub fn encrypt(repo: &Path, rel: &str, plaintext: &str, recipients: &[&str]) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, plaintext).expect("write plaintext");
    let out = sops(repo)
        .args(["--encrypt", "--age", &recipients.join(","), "--in-place"])
        .arg(&path)
        .output()
        .expect("run sops");
    assert!(
        out.status.success(),
        "sops --encrypt {rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `sops set repo/rel '["key"]' '<json value>'` with the given identity.
pub fn set(repo: &Path, rel: &str, key: &AgeKey, index: &str, json_value: &str) {
    let out = sops(repo)
        .env("SOPS_AGE_KEY_FILE", &key.file)
        .arg("set")
        .arg(repo.join(rel))
        .args([index, json_value])
        .output()
        .expect("run sops");
    assert!(
        out.status.success(),
        "sops set {rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `sops --decrypt` (to check fief agrees with sops).
pub fn decrypt(repo: &Path, rel: &str, key: &AgeKey) -> String {
    let out = sops(repo)
        .env("SOPS_AGE_KEY_FILE", &key.file)
        .arg("--decrypt")
        .arg(repo.join(rel))
        .output()
        .expect("run sops");
    assert!(
        out.status.success(),
        "sops --decrypt {rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
