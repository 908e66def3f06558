//! Cached reads of each commit equal a whole read, and the pack files stay bounded as
//! commits pile up.

use super::*;

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
