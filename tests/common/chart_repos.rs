//! Chart repositories on loopback for the tests of charts from repositories: a Helm HTTP
//! repository (a folder of `.tgz` files and the `index.yaml` the pinned `helm repo index`
//! writes, served by a small static file server) and an OCI registry (the pinned distribution
//! registry, `$FIEF_REGISTRY_BIN`, charts pushed with the pinned `helm push`).
//!
//! In: chart folders. Out: running servers (stopped when dropped) and the archives' paths.
//! Every server listens on 127.0.0.1 only.

#![allow(dead_code)] // each test binary uses its own subset of the helpers

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::offline::{helm_bin, stderr};

/// The pinned distribution registry (`FIEF_REGISTRY_BIN`, set by tools/test.sh); a test that
/// needs it fails without it, saying how to get it.
pub fn registry_bin() -> PathBuf {
    match std::env::var_os("FIEF_REGISTRY_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "FIEF_REGISTRY_BIN is not set: this test needs the pinned OCI registry. Run \
             tools/test.sh, or export FIEF_REGISTRY_BIN=\"$(tools/build-registry.sh)\" first"
        ),
    }
}

/// The pinned helm with its config, cache and data in `home` (never the user's).
pub fn helm(home: &Path, args: &[&str]) -> Output {
    let out = Command::new(helm_bin())
        .args(args)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("run helm");
    assert!(out.status.success(), "helm {args:?}: {}", stderr(&out));
    out
}

/// `helm package CHART --version VERSION -d OUT`: the archive's path.
pub fn package(home: &Path, chart: &Path, version: &str, out: &Path) -> PathBuf {
    std::fs::create_dir_all(out).expect("create the package folder");
    let o = helm(
        home,
        &[
            "package",
            chart.to_str().expect("a UTF-8 path"),
            "--version",
            version,
            "-d",
            out.to_str().expect("a UTF-8 path"),
        ],
    );
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    let path = line
        .rsplit(": ")
        .next()
        .map(|p| PathBuf::from(p.trim()))
        .expect("helm package names the archive");
    assert!(path.is_file(), "{line}");
    path
}

/// A Helm HTTP repository: the `.tgz` files and `index.yaml` of a folder, served over HTTP on
/// 127.0.0.1 until dropped.
pub struct HttpRepo {
    /// The folder served.
    pub dir: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl HttpRepo {
    /// Serve `dir` (its index written by [`HttpRepo::index`]).
    pub fn serve(dir: &Path) -> HttpRepo {
        HttpRepo::serve_on(dir, 0)
    }

    /// Serve `dir` on `port` (0: any free one).
    pub fn serve_on(dir: &Path, port: u16) -> HttpRepo {
        HttpRepo::start(dir, port, None)
    }

    /// Serve `dir` only to requests with HTTP basic auth `user`:`password`; others get 401.
    pub fn serve_with_basic_auth(dir: &Path, user: &str, password: &str) -> HttpRepo {
        let engine = base64::engine::general_purpose::STANDARD;
        let token = base64::Engine::encode(&engine, format!("{user}:{password}"));
        HttpRepo::start(dir, 0, Some(format!("Basic {token}")))
    }

    fn start(dir: &Path, port: u16, authorization: Option<String>) -> HttpRepo {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind a loopback port");
        let port = listener.local_addr().expect("a local address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let (root, flag) = (dir.to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(stream) = stream {
                    let _ = serve_one(&root, authorization.as_deref(), stream);
                }
            }
        });
        HttpRepo {
            dir: dir.to_path_buf(),
            url: format!("http://127.0.0.1:{port}"),
            stop,
            port,
        }
    }

    /// `helm repo index DIR --url URL`: the index of every archive in the folder.
    pub fn index(&self, home: &Path) {
        helm(
            home,
            &[
                "repo",
                "index",
                self.dir.to_str().expect("a UTF-8 path"),
                "--url",
                &self.url,
            ],
        );
    }
}

impl Drop for HttpRepo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answer one GET with the file it names under `root` (no `..`), or 404; 401 when
/// `authorization` is set and the request does not carry it.
fn serve_one(
    root: &Path,
    authorization: Option<&str>,
    mut stream: TcpStream,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut authorized = authorization.is_none();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let (Some(want), Some((name, value))) = (authorization, header.split_once(':')) {
            authorized |= name.eq_ignore_ascii_case("authorization") && value.trim() == want;
        }
    }
    if !authorized {
        return stream.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"charts\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let rel = path.trim_start_matches('/');
    let body = (!rel.contains("..") && !rel.is_empty())
        .then(|| std::fs::read(root.join(rel)).ok())
        .flatten();
    match body {
        Some(body) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)
        }
        None => stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    }
}

/// The pinned distribution registry on 127.0.0.1, its storage in a temporary folder, until
/// dropped.
pub struct Registry {
    /// `oci://127.0.0.1:<port>/charts`: where charts are pushed.
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Start it and wait until it answers.
    pub fn start() -> Registry {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = super::util::free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  \
                 filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.path().join("data").display()
            ),
        )
        .expect("write the registry's config");
        let child = Command::new(registry_bin())
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the registry");
        super::util::wait_until("the registry to answer", Duration::from_secs(30), || {
            super::util::http_request(("127.0.0.1", port), "GET", "/v2/", &[], "")
                .is_some_and(|(code, _)| code == 200)
        });
        Registry {
            url: format!("oci://127.0.0.1:{port}/charts"),
            child,
            _dir: dir,
        }
    }

    /// `helm push ARCHIVE <url> --plain-http`.
    pub fn push(&self, home: &Path, archive: &Path) {
        helm(
            home,
            &[
                "push",
                archive.to_str().expect("a UTF-8 path"),
                &self.url,
                "--plain-http",
            ],
        );
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copy the folder `from` to `to` (a chart to change before packaging it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the folder").flatten() {
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy a file");
            let mut perms = std::fs::metadata(&target).expect("stat").permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
            std::fs::set_permissions(&target, perms).expect("chmod");
        }
    }
}

/// `sha256:<hex>` of a file.
pub fn digest_of_file(path: &Path) -> String {
    fief_core::model::digest_of(&std::fs::read(path).expect("read the archive"))
}
