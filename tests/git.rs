//! `fief::source::git` against real repositories made with the `git` CLI: clone into the cache,
//! fetch, snapshot from git objects (compared with `fief::source::fs::read_dir` of a checkout),
//! symlinks, submodules, bad branches, `git daemon` on loopback and token authentication
//! against a loopback HTTP server. No traffic leaves 127.0.0.1.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fief::Problem;
use fief::core::snapshot::{Entry, MAX_FILE_BYTES, Snapshot, TOP_LEVEL};
use fief::source::git::{GitAuth, GitError, GitSource};

use common::util::{git, write};

fn symlink(root: &Path, path: &str, target: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, p).unwrap();
}

/// A working repository on branch `main` with one commit of a small tenants repo.
fn work_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    write(dir.path(), "fief.yaml", "agentNamespace: fief-system\n");
    write(
        dir.path(),
        "tenants/acme.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\n",
    );
    write(
        dir.path(),
        "components/web/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\n",
    );
    write(dir.path(), "environments/prod.yaml", "values: {}\n");
    commit_all(dir.path(), "first");
    dir
}

fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

fn url_of(dir: &Path) -> String {
    dir.to_str().unwrap().to_string()
}

/// The `main` branch of the working repository `work`, cloned into `cache`.
fn open(work: &Path, cache: &Path) -> GitSource {
    GitSource::open_or_clone(&url_of(work), "main", cache, GitAuth::default()).unwrap()
}

/// Every entry of a snapshot, for comparisons.
fn entries(snapshot: &Snapshot) -> BTreeMap<String, Entry> {
    let mut all = BTreeMap::new();
    for name in TOP_LEVEL {
        if let Some(entry) = snapshot.get(name) {
            all.insert(name.to_string(), entry.clone());
        }
        for (path, entry) in snapshot.under(name) {
            all.insert(path.clone(), entry.clone());
        }
    }
    all
}

fn content<'a>(snapshot: &'a Snapshot, path: &str) -> &'a str {
    match snapshot.get(path) {
        Some(Ok(text)) => text,
        other => panic!("{path}: expected content, got {other:?}"),
    }
}

#[test]
fn git_cli_is_installed() {
    let version = git(Path::new("."), &["--version"]);
    assert!(version.starts_with("git version"), "{version}");
}

#[test]
fn snapshot_of_a_clone_equals_read_dir_of_a_checkout() {
    let work = work_repo();
    let root = work.path();
    // Everything read_dir has a rule for, with the same outcome on disk and in git.
    write(root, "tenants/.hidden.yaml", "hidden: true\n");
    write(root, "README.md", "not read\n");
    write(root, "docs/guide.md", "not read\n");
    write(root, "baseline/ns.yaml", "kind: Namespace\n");
    write(root, "components/web/varz.yaml", "replicas: 2\n");
    write(
        root,
        "components/web/templates/_helpers.tpl",
        "{% macro x() %}{% endmacro %}",
    );
    write(root, "components/bin/blob.yaml", [0xffu8, 0xfe, 0x00, 0x41]);
    write(
        root,
        "components/big/huge.yaml",
        vec![b'a'; MAX_FILE_BYTES as usize + 1],
    );
    std::fs::create_dir_all(root.join("tenants")).unwrap();
    std::fs::write(
        root.join("tenants").join(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"bad\xffname.yaml"),
        ),
        "x: 1\n",
    )
    .unwrap();
    symlink(root, "tenants/alias.yaml", "acme.yaml");
    symlink(root, "environments/web", "../components/web");
    symlink(root, "tenants/abs.yaml", "/etc/passwd");
    symlink(
        root,
        "tenants/up.yaml",
        "../../../../../../../../../../../../../../etc/passwd",
    );
    let head = commit_all(root, "everything");

    let cache = tempfile::tempdir().unwrap();
    let source =
        GitSource::open_or_clone(&url_of(root), "main", cache.path(), GitAuth::default()).unwrap();
    assert_eq!(source.fetch().unwrap(), head);
    let from_git = entries(&source.snapshot(&head).unwrap());
    let from_disk = entries(&fief::source::fs::read_dir(root).unwrap());
    assert_eq!(from_git, from_disk);

    // And the rules did what they say.
    assert!(from_git.contains_key("tenants/acme.yaml"));
    assert!(!from_git.contains_key("tenants/.hidden.yaml"));
    assert!(
        !from_git
            .keys()
            .any(|k| k.starts_with("docs") || k == "README.md")
    );
    assert_eq!(
        from_git["tenants/alias.yaml"],
        from_git["tenants/acme.yaml"]
    );
    assert!(from_git.contains_key("environments/web/templates/cm.yaml"));
    for path in ["components/bin/blob.yaml", "components/big/huge.yaml"] {
        assert!(
            matches!(from_git[path], Err(Problem::Unreadable { .. })),
            "{path}: {:?}",
            from_git[path]
        );
    }
    assert!(matches!(
        from_git["tenants/bad\u{fffd}name.yaml"],
        Err(Problem::Unreadable { .. })
    ));
}

#[test]
fn new_commit_is_seen_by_fetch_and_snapshot() {
    let work = work_repo();
    let cache = tempfile::tempdir().unwrap();
    let source = open(work.path(), cache.path());
    let first = source.fetch().unwrap();
    assert_eq!(first, git(work.path(), &["rev-parse", "HEAD"]));
    assert!(
        source
            .snapshot(&first)
            .unwrap()
            .get("tenants/beta.yaml")
            .is_none()
    );

    write(
        work.path(),
        "tenants/beta.yaml",
        "metadata:\n  name: beta\n",
    );
    write(work.path(), "fief.yaml", "agentNamespace: other\n");
    let second = commit_all(work.path(), "add beta");
    assert_ne!(first, second);
    assert_eq!(source.fetch().unwrap(), second);

    let new = source.snapshot(&second).unwrap();
    assert_eq!(
        content(&new, "tenants/beta.yaml"),
        "metadata:\n  name: beta\n"
    );
    assert_eq!(content(&new, "fief.yaml"), "agentNamespace: other\n");
    // The old commit is still readable, unchanged.
    let old = source.snapshot(&first).unwrap();
    assert_eq!(content(&old, "fief.yaml"), "agentNamespace: fief-system\n");
    assert!(old.get("tenants/beta.yaml").is_none());
}

#[test]
fn symlink_leaving_the_repo_escapes_while_one_inside_resolves() {
    let work = work_repo();
    let root = work.path();
    write(root, "shared/common.yaml", "shared: true\n");
    symlink(root, "tenants/inside.yaml", "../shared/common.yaml");
    symlink(root, "tenants/chain.yaml", "inside.yaml");
    symlink(
        root,
        "tenants/via-dir.yaml",
        "../components/web/templates/cm.yaml",
    );
    symlink(root, "components/linked", "web/templates");
    symlink(root, "tenants/parent.yaml", "../../outside.yaml");
    symlink(root, "tenants/deep.yaml", "../tenants/../../x.yaml");
    symlink(root, "tenants/absolute.yaml", "/etc/passwd");
    symlink(root, "baseline", "/tmp");
    symlink(root, "tenants/missing.yaml", "nope.yaml");
    symlink(root, "tenants/loop.yaml", "loop.yaml");
    let head = commit_all(root, "links");

    let cache = tempfile::tempdir().unwrap();
    let source =
        GitSource::open_or_clone(&url_of(root), "main", cache.path(), GitAuth::default()).unwrap();
    let snapshot = source.snapshot(&source.fetch().unwrap()).unwrap();
    assert_eq!(source.fetch().unwrap(), head);

    assert_eq!(content(&snapshot, "tenants/inside.yaml"), "shared: true\n");
    assert_eq!(content(&snapshot, "tenants/chain.yaml"), "shared: true\n");
    assert_eq!(
        content(&snapshot, "tenants/via-dir.yaml"),
        "apiVersion: v1\nkind: ConfigMap\n"
    );
    assert_eq!(
        content(&snapshot, "components/linked/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\n"
    );
    for path in [
        "tenants/parent.yaml",
        "tenants/deep.yaml",
        "tenants/absolute.yaml",
        "baseline",
    ] {
        assert_eq!(
            snapshot.get(path),
            Some(&Err(Problem::EscapesRepo {
                path: path.to_string()
            })),
            "{path}"
        );
    }
    for path in ["tenants/missing.yaml", "tenants/loop.yaml"] {
        assert!(
            matches!(snapshot.get(path), Some(Err(Problem::Unreadable { .. }))),
            "{path}: {:?}",
            snapshot.get(path)
        );
    }
}

#[test]
fn submodule_becomes_an_unreadable_entry() {
    let work = work_repo();
    let head = git(work.path(), &["rev-parse", "HEAD"]);
    git(
        work.path(),
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},components/vendored"),
        ],
    );
    git(work.path(), &["commit", "-q", "-m", "submodule"]);
    let cache = tempfile::tempdir().unwrap();
    let source = open(work.path(), cache.path());
    let snapshot = source.snapshot(&source.fetch().unwrap()).unwrap();
    assert!(matches!(
        snapshot.get("components/vendored"),
        Some(Err(Problem::Unreadable { .. }))
    ));
    assert!(snapshot.get("tenants/acme.yaml").is_some());
}

#[test]
fn unknown_branch_is_a_bad_branch_error() {
    let work = work_repo();
    let cache = tempfile::tempdir().unwrap();
    let url = url_of(work.path());
    let err = GitSource::open_or_clone(&url, "nope", cache.path(), GitAuth::default()).unwrap_err();
    assert!(
        matches!(&err, GitError::BadBranch { branch, .. } if branch == "nope"),
        "{err:?}"
    );
    assert!(err.to_string().contains("nope"), "{err}");
    // Nothing half-cloned is left behind to be reopened.
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);

    let err = GitSource::open_or_clone(&url, "a..b", cache.path(), GitAuth::default()).unwrap_err();
    assert!(matches!(err, GitError::BadBranch { .. }), "{err:?}");

    // A branch deleted after the clone: the fetch says so.
    git(work.path(), &["branch", "-q", "feature"]);
    let source =
        GitSource::open_or_clone(&url, "feature", cache.path(), GitAuth::default()).unwrap();
    source.fetch().unwrap();
    git(work.path(), &["branch", "-q", "-D", "feature"]);
    let err = source.fetch().unwrap_err();
    assert!(
        matches!(&err, GitError::BadBranch { branch, .. } if branch == "feature"),
        "{err:?}"
    );
}

#[test]
fn bad_commit_is_a_clear_error() {
    let work = work_repo();
    let cache = tempfile::tempdir().unwrap();
    let source = open(work.path(), cache.path());
    let head = source.fetch().unwrap();
    for commit in [
        &head[..7],
        "main",
        "0000000000000000000000000000000000000000",
    ] {
        let err = source.snapshot(commit).unwrap_err();
        assert!(
            matches!(&err, GitError::BadCommit { commit: c, .. } if c == commit),
            "{commit}: {err:?}"
        );
    }
    // A tree id is not a commit.
    let tree = git(work.path(), &["rev-parse", "HEAD^{tree}"]);
    assert!(matches!(
        source.snapshot(&tree),
        Err(GitError::BadCommit { .. })
    ));
}

#[test]
fn reopening_the_cache_does_not_clone_again() {
    let work = work_repo();
    let cache = tempfile::tempdir().unwrap();
    let url = url_of(work.path());
    let source = GitSource::open_or_clone(&url, "main", cache.path(), GitAuth::default()).unwrap();
    let head = source.fetch().unwrap();
    let cached = source.cache_path().to_path_buf();
    assert!(cached.starts_with(cache.path()));
    let marker = cached.join("fief-test-marker");
    std::fs::write(&marker, "still here").unwrap();

    // With the origin gone, a clone would fail: reopening must not need it.
    let moved = work.path().with_extension("moved");
    std::fs::rename(work.path(), &moved).unwrap();
    let reopened =
        GitSource::open_or_clone(&url, "main", cache.path(), GitAuth::default()).unwrap();
    assert_eq!(reopened.cache_path(), cached);
    assert!(marker.exists(), "the cached repository was replaced");
    assert_eq!(
        content(&reopened.snapshot(&head).unwrap(), "tenants/acme.yaml"),
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\n"
    );
    let err = reopened.fetch().unwrap_err();
    assert!(matches!(err, GitError::Fetch { .. }), "{err:?}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    std::fs::rename(&moved, work.path()).unwrap();
    assert_eq!(reopened.fetch().unwrap(), head);
}

/// `git daemon` on 127.0.0.1, killed when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Daemon {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
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

/// A commit read as a difference from the last one (the agent's cached read) equals the same
/// commit read whole, through adds, edits, removals, a folder turning into a file and back,
/// hidden files, nested folders, a whole top-level folder removed, and a symlink appearing
/// (from then on the repo is read whole) and going again. Each read also reports exactly the
/// paths that changed.
#[test]
fn cached_read_of_each_commit_equals_a_whole_read_and_names_what_changed() {
    let work = work_repo();
    let cache = tempfile::tempdir().unwrap();
    let source = open(work.path(), cache.path());
    let mut blobs = fief::source::git::BlobCache::default();
    let mut last = source
        .snapshot_cached(&source.fetch().unwrap(), Some(&mut blobs))
        .unwrap();
    let root = work.path();
    let steps = edit_steps(root);
    for (what, step) in steps {
        step();
        let head = commit_all(root, what);
        assert_eq!(source.fetch().unwrap(), head);
        let cached = source.snapshot_cached(&head, Some(&mut blobs)).unwrap();
        let whole = source.snapshot(&head).unwrap();
        assert_eq!(entries(&cached), entries(&whole), "{what}");
        let expected: std::collections::BTreeSet<String> = {
            let (a, b) = (entries(&last), entries(&whole));
            a.keys()
                .chain(b.keys())
                .filter(|k| a.get(*k) != b.get(*k))
                .cloned()
                .collect()
        };
        assert_eq!(cached.changed_since(&last), expected, "{what}");
        last = cached;
    }
}

/// One edit of the work repo, named.
type Step<'a> = (&'a str, Box<dyn Fn() + 'a>);

/// A file or folder of the work tree removed.
fn remove_path(root: &Path, path: &str) {
    let p = root.join(path);
    if p.is_dir() {
        std::fs::remove_dir_all(p).unwrap();
    } else {
        std::fs::remove_file(p).unwrap();
    }
}

/// The edits a cached read goes through: adds, edits, removals, a folder turning into a file
/// and back, hidden files, nested folders, a top-level folder removed, a symlink appearing
/// and going again.
fn edit_steps(root: &Path) -> Vec<Step<'_>> {
    vec![
        (
            "add a tenant",
            Box::new(move || write(root, "tenants/beta.yaml", "metadata:\n  name: beta\n")),
        ),
        (
            "edit a tenant",
            Box::new(move || write(root, "tenants/acme.yaml", "metadata:\n  name: acme\n")),
        ),
        (
            "nested component files",
            Box::new(move || {
                write(root, "components/web/templates/sub/deep.yaml", "kind: A\n");
                write(root, "components/web/.hidden", "not read\n");
                write(root, "components/db/varz.yaml", "size: 1\n");
            }),
        ),
        (
            "a folder becomes a file",
            Box::new(move || {
                remove_path(root, "components/web/templates/sub");
                write(root, "components/web/templates/sub", "now a file\n");
            }),
        ),
        (
            "the file becomes a folder again",
            Box::new(move || {
                remove_path(root, "components/web/templates/sub");
                write(root, "components/web/templates/sub/x.yaml", "kind: B\n");
            }),
        ),
        (
            "a top-level folder goes",
            Box::new(move || remove_path(root, "environments")),
        ),
        (
            "a symlink appears",
            Box::new(move || symlink(root, "tenants/link.yaml", "beta.yaml")),
        ),
        (
            "its target changes",
            Box::new(move || write(root, "tenants/beta.yaml", "metadata:\n  name: b2\n")),
        ),
        (
            "the symlink goes",
            Box::new(move || remove_path(root, "tenants/link.yaml")),
        ),
        (
            "a tenant goes and fief.yaml changes",
            Box::new(move || {
                remove_path(root, "tenants/beta.yaml");
                write(root, "fief.yaml", "agentNamespace: other\n");
            }),
        ),
    ]
}

/// The pack files (`pack-*.pack`) of the one cached repository under `cache`.
fn pack_files(cache: &Path) -> Vec<String> {
    let repo = std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".git"))
        .expect("the cached repository")
        .path();
    std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pack"))
        .collect()
}

/// A merge past `MAX_PACKS` rewrites only the small packs while a large one holds at least
/// twice their objects (the clone's pack of a big repo stays as it is), so a long-lived
/// agent's fetches do not rewrite the whole history every `MAX_PACKS` commits. Every commit
/// stays readable through merges of both kinds.
#[test]
fn a_merge_of_packs_leaves_the_large_pack_alone_and_every_commit_readable() {
    let work = work_repo();
    for i in 0..300 {
        write(
            work.path(),
            &format!("tenants/t{i:03}.yaml"),
            format!("metadata:\n  name: t{i:03}\n"),
        );
    }
    let mut commits = vec![commit_all(work.path(), "300 tenants")];
    let cache = tempfile::tempdir().unwrap();
    let source = open(work.path(), cache.path());
    let cloned = pack_files(cache.path());
    assert_eq!(cloned.len(), 1, "{cloned:?}");
    let limit = fief::source::git::MAX_PACKS;
    let mut most = 0;
    for i in 0..3 * limit {
        write(
            work.path(),
            "tenants/t007.yaml",
            format!("metadata:\n  name: t007\n# {i}\n"),
        );
        commits.push(commit_all(work.path(), &format!("change {i}")));
        assert_eq!(&source.fetch().unwrap(), commits.last().unwrap());
        let packs = pack_files(cache.path());
        most = most.max(packs.len());
        if i == limit {
            // The merge at fetch `limit` kept the clone's pack and merged the 16 small ones.
            assert!(packs.contains(&cloned[0]), "{packs:?}");
            assert_eq!(packs.len(), 3, "{packs:?}");
        }
    }
    assert!(most <= limit, "at most {limit} packs, saw {most}");
    for (i, commit) in commits.iter().enumerate() {
        let snapshot = source.snapshot(commit).unwrap();
        let expected = match i {
            0 => "metadata:\n  name: t007\n".to_string(),
            i => format!("metadata:\n  name: t007\n# {}\n", i - 1),
        };
        assert_eq!(
            content(&snapshot, "tenants/t007.yaml"),
            expected,
            "commit {i}"
        );
        assert_eq!(
            content(&snapshot, "tenants/t299.yaml"),
            "metadata:\n  name: t299\n"
        );
    }
}

/// Every fetch adds a pack to the cache; past `MAX_PACKS` they are rewritten into one, so reads
/// do not slow down with every commit an agent fetches. History, annotated tags and the other
/// branches stay readable (tenants may pin a component to any of them).
#[test]
fn packs_past_the_limit_are_rewritten_into_one_and_history_and_tags_stay_readable() {
    let work = work_repo();
    let first = git(work.path(), &["rev-parse", "HEAD"]);
    git(work.path(), &["tag", "-a", "v1", "-m", "first release"]);
    git(work.path(), &["branch", "old"]);
    let cache = tempfile::tempdir().unwrap();
    let source = open(work.path(), cache.path());
    let packs = || pack_files(cache.path()).len();
    let mut most = 0;
    let mut head = String::new();
    for i in 0..fief::source::git::MAX_PACKS + 4 {
        write(
            work.path(),
            "tenants/acme.yaml",
            format!("metadata:\n  name: acme\n# {i}\n"),
        );
        head = commit_all(work.path(), &format!("change {i}"));
        assert_eq!(source.fetch().unwrap(), head);
        most = most.max(packs());
    }
    assert!(
        most <= fief::source::git::MAX_PACKS,
        "at most {} packs, saw {most}",
        fief::source::git::MAX_PACKS
    );
    assert!(packs() < fief::source::git::MAX_PACKS, "rewritten into one");
    assert_eq!(
        most,
        fief::source::git::MAX_PACKS,
        "one pack per fetch up to the limit"
    );
    let old = source.snapshot(&first).unwrap();
    assert_eq!(
        content(&old, "tenants/acme.yaml"),
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\n"
    );
    assert_eq!(
        content(&source.snapshot(&head).unwrap(), "tenants/acme.yaml"),
        format!(
            "metadata:\n  name: acme\n# {}\n",
            fief::source::git::MAX_PACKS + 3
        )
    );
    for git_ref in ["v1", "old"] {
        let (snapshot, tree) = source.snapshot_at_ref("web", git_ref).unwrap();
        assert!(!tree.is_empty(), "{git_ref}");
        assert!(snapshot.get("components/web/templates/cm.yaml").is_some());
    }
}
