//! Headless Chromium for the web view's tests: the DOM a page builds, and a screenshot of it.
//!
//! In: a URL on loopback. Out: the serialized DOM (`--dump-dom`) or a PNG (`--screenshot`).
//! Each run gets a fresh profile (`--user-data-dir` in a temporary folder) and flags that keep
//! Chromium off the network: no background networking, component updates, sync, metrics,
//! safe-browsing or other services, and every host name but 127.0.0.1 resolves to nothing.
//! The binary is `FIEF_CHROMIUM_BIN`, else `/usr/bin/chromium` (Debian's `chromium`, which
//! `.ci/run` installs); a missing one fails the test with how to install it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long one Chromium run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The flags of every run (besides the profile folder).
const FLAGS: [&str; 19] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,CertificateTransparencyComponentUpdater",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--hide-scrollbars",
];

/// A Chromium binary.
pub struct Chromium {
    bin: PathBuf,
}

impl Chromium {
    /// `FIEF_CHROMIUM_BIN` or `/usr/bin/chromium`; panics (the test fails) when it is missing.
    pub fn find() -> Chromium {
        let bin = std::env::var_os("FIEF_CHROMIUM_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
        let runs = Command::new(&bin)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            runs,
            "Chromium is needed for the web view's tests and {} does not run: install Debian's \
             `chromium` (apt-get install chromium; .ci/run does) or set FIEF_CHROMIUM_BIN",
            bin.display()
        );
        Chromium { bin }
    }

    /// The DOM of `url` once loaded, serialized as HTML.
    pub fn dump_dom(&self, url: &str) -> String {
        let out = self.run(&["--dump-dom".to_string()], url);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A PNG of `url` at 1280×2000 written to `path`.
    pub fn screenshot(&self, url: &str, path: &Path) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot folder");
        }
        let _ = std::fs::remove_file(path);
        self.run(
            &[
                format!("--screenshot={}", path.display()),
                "--window-size=1280,2000".to_string(),
            ],
            url,
        );
        let png = std::fs::read(path).unwrap_or_default();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "no screenshot of {url} at {} ({} bytes)",
            path.display(),
            png.len()
        );
    }

    /// Run Chromium on `url` with `extra` flags and a fresh profile; its output.
    fn run(&self, extra: &[String], url: &str) -> Output {
        let profile = tempfile::tempdir().expect("profile folder");
        let out_path = profile.path().join("stdout");
        let err_path = profile.path().join("stderr");
        let mut child = Command::new(&self.bin)
            .args(FLAGS)
            .arg(format!(
                "--user-data-dir={}",
                profile.path().join("p").display()
            ))
            .args(extra)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.display()));
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for chromium") {
                break status;
            }
            if start.elapsed() > RUN_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium on {url} did not finish within {RUN_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        assert!(status.success(), "chromium on {url}: {status}\n{stderr}");
        Output {
            status,
            stdout: std::fs::read(&out_path).unwrap_or_default(),
            stderr: stderr.into_bytes(),
        }
    }
}
