//! Reading one commit's tree from git objects into a [`Snapshot`], with the same rules as
//! the filesystem source: only the top-level entries fief knows, hidden names skipped (but a
//! chart's `.helmignore`), size and count limits, symlinks followed only while they stay
//! inside the repo.
//!
//! In: a repository, a commit's tree and optionally the [`BlobCache`] of the last read. Out: a
//! [`Snapshot`] or a [`GitError`]. With a cache, a commit is read as a difference from the
//! last one: subtrees whose object id did not change are skipped whole, and the snapshot is
//! the last one with the changed paths replaced (its map shares everything else), so reading
//! a one-file commit costs that file and the trees above it, at any repo size. A repo with a
//! symlink is read whole every time (a link's target may change while the link does not),
//! with unchanged blobs shared from the last read.

use std::collections::HashMap;

use git2::{ObjectType, Oid, Repository};

use super::*;
use fief_core::diagnostic::Problem;
use fief_core::snapshot::{Entry, MAX_FILE_BYTES, MAX_FILES, Snapshot};

/// What the last read through it leaves for the next: that commit's tree and snapshot (while
/// the snapshot holds no symlink), so the next commit is read as a difference; or, for a repo
/// with symlinks, the blobs read, by object id, so unchanged files are not read (and inflated)
/// again.
#[derive(Default)]
pub struct BlobCache {
    blobs: HashMap<Oid, Entry>,
    last: Option<(Oid, Snapshot)>,
}

impl BlobCache {
    /// Files held (those of the last snapshot read through this cache).
    pub fn len(&self) -> usize {
        match &self.last {
            Some((_, snapshot)) => snapshot.len(),
            None => self.blobs.len(),
        }
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tree entry: what it is and where its object is.
#[derive(Clone, Copy)]
pub(super) struct Node {
    pub(super) oid: Oid,
    pub(super) mode: i32,
    pub(super) kind: Option<ObjectType>,
}

/// Reads one commit's tree into a snapshot, following [`crate::fs::read_dir`]'s rules.
pub(super) struct TreeReader<'r> {
    pub(super) repo: &'r Repository,
    pub(super) root: git2::Tree<'r>,
    pub(super) snapshot: Snapshot,
    pub(super) files: usize,
    pub(super) url: &'r str,
    pub(super) commit: &'r str,
    /// Blobs of the previous snapshot (reused when unchanged).
    pub(super) old: HashMap<Oid, Entry>,
    /// Blobs of this snapshot (become the cache for the next).
    pub(super) new: HashMap<Oid, Entry>,
    /// Whether a symlink was met.
    pub(super) symlinks: bool,
}

/// Where a symlink leads: a node and its path from the repo root (empty for the root).
pub(super) enum Resolved {
    Found(Vec<String>, Node),
    Problem(Problem),
}

impl TreeReader<'_> {
    /// `parent` is the real (symlink-free) path of the directory holding this entry; `rel` the
    /// key it gets in the snapshot; `real_name` its own name in `parent`.
    pub(super) fn walk(
        &mut self,
        node: Node,
        parent: &[String],
        real_name: String,
        rel: String,
        depth: usize,
    ) -> Result<(), GitError> {
        if self.files >= MAX_FILES {
            return Err(GitError::TooManyFiles {
                url: redact_url(self.url),
                commit: self.commit.to_string(),
            });
        }
        let (real, node) = if node.mode == MODE_SYMLINK {
            self.symlinks = true;
            match self.resolve_link(node, parent.to_vec(), &rel)? {
                Resolved::Found(real, target) => (real, target),
                Resolved::Problem(problem) => {
                    self.insert(rel, Err(problem));
                    return Ok(());
                }
            }
        } else {
            let mut real = parent.to_vec();
            real.push(real_name);
            (real, node)
        };
        match node.kind {
            Some(ObjectType::Tree) => {
                if depth > MAX_DEPTH {
                    self.insert_problem(rel, "directories nested too deeply".to_string());
                    return Ok(());
                }
                let tree = self
                    .repo
                    .find_tree(node.oid)
                    .map_err(|e| self.read_error(&rel, e))?;
                let mut children: Vec<(Vec<u8>, Node)> = tree
                    .iter()
                    .map(|e| {
                        let node = Node {
                            oid: e.id(),
                            mode: e.filemode(),
                            kind: e.kind(),
                        };
                        (e.name_bytes().to_vec(), node)
                    })
                    .collect();
                children.sort_by(|a, b| a.0.cmp(&b.0));
                for (name, child) in children {
                    let Ok(name) = String::from_utf8(name.clone()) else {
                        self.insert_problem(
                            format!("{rel}/{}", String::from_utf8_lossy(&name)),
                            "file name is not UTF-8".to_string(),
                        );
                        continue;
                    };
                    if crate::hidden(name.as_bytes()) {
                        continue;
                    }
                    let child_rel = format!("{rel}/{name}");
                    self.walk(child, &real, name, child_rel, depth + 1)?;
                }
            }
            Some(ObjectType::Blob) => {
                let entry = match self.old.get(&node.oid).or_else(|| self.new.get(&node.oid)) {
                    Some(known) => known.clone(),
                    None => self.read_blob(node.oid, &rel)?,
                };
                self.new.insert(node.oid, entry.clone());
                self.insert(rel, entry);
            }
            Some(ObjectType::Commit) => {
                self.insert_problem(
                    rel,
                    "a git submodule; fief does not read submodules".to_string(),
                );
            }
            _ => self.insert_problem(rel, "not a file or directory".to_string()),
        }
        Ok(())
    }

    /// Bring the snapshot (the last commit's) at `rel` from the tree entry `old` to `new`
    /// (`None`: absent); `parent` is the directory holding `rel`. Equal object ids are skipped
    /// whole; two trees are compared entry by entry; anything else is removed and read anew.
    /// Returns false when the difference cannot be read this way (a symlink or a non-UTF-8
    /// name met): the caller then reads the commit whole.
    fn diff(
        &mut self,
        new: Option<Node>,
        old: Option<Node>,
        parent: &[String],
        name: &str,
        depth: usize,
    ) -> Result<bool, GitError> {
        if let (Some(n), Some(o)) = (new, old)
            && n.oid == o.oid
            && n.mode == o.mode
        {
            return Ok(true);
        }
        if new.is_some_and(|n| n.mode == MODE_SYMLINK) {
            return Ok(false);
        }
        let rel = if parent.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", parent.join("/"))
        };
        let tree = Some(ObjectType::Tree);
        if let (Some(n), Some(o)) = (new, old)
            && n.kind == tree
            && o.kind == tree
            && depth <= MAX_DEPTH
        {
            let new_tree = self
                .repo
                .find_tree(n.oid)
                .map_err(|e| self.read_error(&rel, e))?;
            let old_tree = self
                .repo
                .find_tree(o.oid)
                .map_err(|e| self.read_error(&rel, e))?;
            let (new_entries, old_entries) = (sorted_entries(&new_tree), sorted_entries(&old_tree));
            let node = |e: &git2::TreeEntry<'_>| Node {
                oid: e.id(),
                mode: e.filemode(),
                kind: e.kind(),
            };
            let mut dir = parent.to_vec();
            dir.push(name.to_string());
            let (mut i, mut j) = (0, 0);
            while i < new_entries.len() || j < old_entries.len() {
                let (a, b) = (new_entries.get(i), old_entries.get(j));
                let order = match (a, b) {
                    (Some(x), Some(y)) => x.name_bytes().cmp(y.name_bytes()),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    _ => std::cmp::Ordering::Greater,
                };
                let (child_new, child_old) = match order {
                    std::cmp::Ordering::Less => (a, None),
                    std::cmp::Ordering::Greater => (None, b),
                    std::cmp::Ordering::Equal => (a, b),
                };
                i += usize::from(child_new.is_some());
                j += usize::from(child_old.is_some());
                let Some(entry) = child_new.or(child_old) else {
                    break;
                };
                let (child_new, child_old) = (child_new.map(node), child_old.map(node));
                if crate::hidden(entry.name_bytes()) {
                    continue;
                }
                if let (Some(x), Some(y)) = (child_new, child_old)
                    && x.oid == y.oid
                    && x.mode == y.mode
                {
                    continue;
                }
                let Ok(child) = std::str::from_utf8(entry.name_bytes()) else {
                    return Ok(false);
                };
                if !self.diff(child_new, child_old, &dir, child, depth + 1)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if old.is_some() {
            self.remove_all(&rel);
        }
        if let Some(n) = new {
            self.walk(n, parent, name.to_string(), rel, depth)?;
        }
        Ok(!self.symlinks)
    }

    /// Remove `rel` and everything under `rel/` from the snapshot.
    fn remove_all(&mut self, rel: &str) {
        let mut gone: Vec<String> = self.snapshot.under(rel).map(|(p, _)| p.clone()).collect();
        gone.push(rel.to_string());
        for path in gone {
            if self.snapshot.remove(&path).is_some() {
                self.files = self.files.saturating_sub(1);
            }
        }
    }

    fn read_blob(&self, oid: Oid, rel: &str) -> Result<Entry, GitError> {
        let odb = self.repo.odb().map_err(|e| self.read_error(rel, e))?;
        let (size, _) = odb.read_header(oid).map_err(|e| self.read_error(rel, e))?;
        if size as u64 > MAX_FILE_BYTES {
            return Ok(Err(Problem::Unreadable {
                reason: format!("file is {size} bytes, more than the limit of {MAX_FILE_BYTES}"),
            }));
        }
        let blob = self
            .repo
            .find_blob(oid)
            .map_err(|e| self.read_error(rel, e))?;
        // A binary file keeps its bytes, as the filesystem source does (packed subcharts).
        Ok(std::str::from_utf8(blob.content())
            .map(Arc::from)
            .map_err(|_| Problem::Binary {
                bytes: blob.content().into(),
            }))
    }

    fn insert(&mut self, rel: String, entry: Entry) {
        self.files += 1;
        self.snapshot.insert(rel, entry);
    }

    fn insert_problem(&mut self, rel: String, reason: String) {
        self.insert(rel, Err(Problem::Unreadable { reason }));
    }

    /// A failure to read `rel` from the repository.
    pub(super) fn read_error(&self, rel: &str, e: git2::Error) -> GitError {
        GitError::Read {
            url: redact_url(self.url),
            commit: self.commit.to_string(),
            path: rel.to_string(),
            detail: e.message().to_string(),
        }
    }
}

/// Read the top-level entries fief knows from `root` (a commit's tree, or a folder of it)
/// into a snapshot; `url` and `commit` only label errors. With a `cache`, the commit is read as
/// a difference from the last one read through it (see the module docs), or, for a repo with
/// symlinks, unchanged blobs are taken from it (the same shared text, so a later comparison is
/// a pointer check); the cache is left holding this read.
pub(super) fn read_tree(
    repo: &Repository,
    root: git2::Tree<'_>,
    url: &str,
    commit: &str,
    cache: Option<&mut BlobCache>,
) -> Result<Snapshot, GitError> {
    let Some(cache) = cache else {
        return read_whole(repo, root, url, commit, HashMap::new()).map(|r| r.snapshot);
    };
    let root_id = root.id();
    if let Some((old_root, prev)) = cache.last.take()
        && let Ok(old_tree) = repo.find_tree(old_root)
    {
        let files = prev.len();
        let mut reader = TreeReader {
            repo,
            root: root.clone(),
            snapshot: prev,
            files,
            url,
            commit,
            old: HashMap::new(),
            new: HashMap::new(),
            symlinks: false,
        };
        let mut whole = false;
        for name in TOP_LEVEL {
            let new = top_node(&reader.root, name);
            let old = top_node(&old_tree, name);
            if !reader.diff(new, old, &[], name, 0)? {
                whole = true;
                break;
            }
        }
        if !whole {
            cache.last = Some((root_id, reader.snapshot.clone()));
            return Ok(reader.snapshot);
        }
    }
    let reader = read_whole(repo, root, url, commit, std::mem::take(&mut cache.blobs))?;
    if reader.symlinks {
        cache.blobs = reader.new;
    } else {
        cache.last = Some((root_id, reader.snapshot.clone()));
    }
    Ok(reader.snapshot)
}

/// A tree's entries by name, bytewise (git orders a folder as if its name ended in `/`).
fn sorted_entries<'t>(tree: &'t git2::Tree<'_>) -> Vec<git2::TreeEntry<'t>> {
    let mut v: Vec<git2::TreeEntry<'t>> = tree.iter().collect();
    v.sort_by(|a, b| a.name_bytes().cmp(b.name_bytes()));
    v
}

fn top_node(root: &git2::Tree<'_>, name: &str) -> Option<Node> {
    root.get_name(name).map(|entry| Node {
        oid: entry.id(),
        mode: entry.filemode(),
        kind: entry.kind(),
    })
}

/// Read every top-level entry fief knows, taking blobs found in `old` from there.
fn read_whole<'r>(
    repo: &'r Repository,
    root: git2::Tree<'r>,
    url: &'r str,
    commit: &'r str,
    old: HashMap<Oid, Entry>,
) -> Result<TreeReader<'r>, GitError> {
    let mut reader = TreeReader {
        repo,
        root,
        snapshot: Snapshot::default(),
        files: 0,
        url,
        commit,
        old,
        new: HashMap::new(),
        symlinks: false,
    };
    for name in TOP_LEVEL {
        if let Some(node) = top_node(&reader.root, name) {
            reader.walk(node, &[], name.to_string(), name.to_string(), 0)?;
        }
    }
    Ok(reader)
}
