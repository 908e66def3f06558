//! `fief::source::git` against real repositories made with the `git` CLI: clone into the cache,
//! fetch, snapshot from git objects (compared with `fief::source::fs::read_dir` of a checkout),
//! symlinks, submodules, bad branches, `git daemon` on loopback and token authentication
//! against a loopback HTTP server. No traffic leaves 127.0.0.1.

use crate::common;

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

mod packs;
mod remote;

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
    // A file that is not UTF-8 text keeps its bytes (a packed subchart is read from them);
    // one over the size limit is unreadable.
    assert!(
        matches!(&from_git["components/bin/blob.yaml"], Err(Problem::Binary { bytes }) if **bytes == [0xff, 0xfe, 0x00, 0x41]),
        "{:?}",
        from_git["components/bin/blob.yaml"]
    );
    assert!(
        matches!(
            from_git["components/big/huge.yaml"],
            Err(Problem::Unreadable { .. })
        ),
        "{:?}",
        from_git["components/big/huge.yaml"]
    );
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
