//! Clone and fetch through `git daemon` and a loopback HTTP server: tokens sent as basic
//! auth and never shown, and a cache folder holding another repository replaced.

use super::*;

/// `git daemon` on 127.0.0.1, killed when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Daemon {
        let port = crate::common::util::free_port();
        // The `git-daemon` program itself, not the `git daemon` wrapper: killing the wrapper
        // would leave the daemon running.
        let exec_path = git(base, &["--exec-path"]);
        let child = Command::new(Path::new(&exec_path).join("git-daemon"))
            .arg("--export-all")
            .arg(format!("--base-path={}", base.display()))
            .arg(format!("--port={port}"))
            .arg("--listen=127.0.0.1")
            .arg("--reuseaddr")
            .arg("--informative-errors")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `git daemon` (is git installed?): {e}"));
        let mut daemon = Daemon { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = daemon.child.try_wait() {
                panic!("git daemon exited with {status} before listening on port {port}");
            }
            assert!(
                Instant::now() < deadline,
                "git daemon is not listening on 127.0.0.1:{port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        daemon
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn clone_and_fetch_through_git_daemon_on_loopback() {
    let work = work_repo();
    let served = tempfile::tempdir().unwrap();
    let bare = served.path().join("tenants.git");
    git(
        served.path(),
        &[
            "clone",
            "-q",
            "--bare",
            work.path().to_str().unwrap(),
            "tenants.git",
        ],
    );
    let mut daemon = Daemon::start(served.path());
    let url = format!("git://127.0.0.1:{}/tenants.git", daemon.port);

    let cache = tempfile::tempdir().unwrap();
    let source = GitSource::open_or_clone(&url, "main", cache.path(), GitAuth::default()).unwrap();
    let first = source.fetch().unwrap();
    assert_eq!(first, git(work.path(), &["rev-parse", "HEAD"]));
    assert!(
        source
            .snapshot(&first)
            .unwrap()
            .get("tenants/acme.yaml")
            .is_some()
    );

    write(
        work.path(),
        "tenants/beta.yaml",
        "metadata:\n  name: beta\n",
    );
    let second = commit_all(work.path(), "beta");
    git(
        work.path(),
        &["push", "-q", bare.to_str().unwrap(), "main:main"],
    );
    assert_eq!(source.fetch().unwrap(), second);
    assert!(
        source
            .snapshot(&second)
            .unwrap()
            .get("tenants/beta.yaml")
            .is_some()
    );

    daemon.stop();
    let err = source.fetch().unwrap_err();
    assert!(matches!(err, GitError::Fetch { .. }), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");

    // A clone from a stopped daemon fails too, naming the URL.
    let other = tempfile::tempdir().unwrap();
    let err = GitSource::open_or_clone(&url, "main", other.path(), GitAuth::default()).unwrap_err();
    assert!(matches!(err, GitError::Clone { .. }), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");
}

/// An HTTP server on 127.0.0.1 that answers every request with 401 and records the
/// `Authorization` headers it was sent.
fn refusing_http_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    record.lock().unwrap().push(value.trim().to_string());
                }
                line.clear();
            }
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"fief\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (port, seen)
}

#[test]
fn token_is_sent_as_basic_auth_and_never_shown_in_errors() {
    use base64::Engine as _;
    let (port, seen) = refusing_http_server();
    let url = format!("http://127.0.0.1:{port}/org/tenants.git");
    let token = "ghp_s3cretT0kenValue";
    let cache = tempfile::tempdir().unwrap();
    let auth = GitAuth {
        token: Some(token.to_string()),
        ..GitAuth::default()
    };
    let err = GitSource::open_or_clone(&url, "main", cache.path(), auth).unwrap_err();
    assert!(matches!(err, GitError::Auth { .. }), "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(token), "{shown}");
    assert!(shown.contains(&url), "{shown}");

    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
    );
    let sent = seen.lock().unwrap().clone();
    assert!(sent.contains(&expected), "sent: {} headers", sent.len());
    // The refused token is offered once, not in a loop.
    assert!(sent.len() <= 2, "sent {} Authorization headers", sent.len());
}

#[test]
fn password_in_the_url_is_not_shown_in_errors() {
    let (port, _seen) = refusing_http_server();
    let url = format!("http://user:pa55word-in-url@127.0.0.1:{port}/tenants.git");
    let cache = tempfile::tempdir().unwrap();
    let err = GitSource::open_or_clone(&url, "main", cache.path(), GitAuth::default()).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("pa55word-in-url"), "{shown}");
    assert!(
        shown.contains(&format!("http://127.0.0.1:{port}/tenants.git")),
        "{shown}"
    );
}

#[test]
fn cache_folder_holding_another_repository_is_replaced() {
    let first = work_repo();
    let second = work_repo();
    write(second.path(), "tenants/only-in-second.yaml", "x: 1\n");
    commit_all(second.path(), "second");
    let cache = tempfile::tempdir().unwrap();
    let source = GitSource::open_or_clone(
        &url_of(second.path()),
        "main",
        cache.path(),
        GitAuth::default(),
    )
    .unwrap();
    let path: PathBuf = source.cache_path().to_path_buf();
    // Put a clone of another URL where this URL's cache lives.
    std::fs::remove_dir_all(&path).unwrap();
    git(
        cache.path(),
        &[
            "clone",
            "-q",
            "--bare",
            first.path().to_str().unwrap(),
            path.to_str().unwrap(),
        ],
    );
    let source = GitSource::open_or_clone(
        &url_of(second.path()),
        "main",
        cache.path(),
        GitAuth::default(),
    )
    .unwrap();
    let head = source.fetch().unwrap();
    assert!(
        source
            .snapshot(&head)
            .unwrap()
            .get("tenants/only-in-second.yaml")
            .is_some()
    );
}
