//! Following a symlink inside one commit's tree, as the filesystem source follows one
//! inside a checkout.
//!
//! In: the symlink's node, the real path of the directory holding it, and the tree it lives
//! in. Out: the node it leads to and that node's real path, or the problem that makes it
//! unusable (it leaves the repo, is broken, loops); a [`GitError`] only when the repository
//! cannot be read.

use std::collections::VecDeque;
use std::path::Path;

use git2::ObjectType;

use super::tree::{Node, Resolved, TreeReader};
use super::{GitError, MAX_SYMLINK_HOPS, MODE_SYMLINK};
use fief_core::diagnostic::Problem;

impl TreeReader<'_> {
    /// Follow the symlink `link` found in directory `dir` (a real path), component by
    /// component, through further symlinks, without ever leaving the commit's tree.
    pub(super) fn resolve_link(
        &self,
        link: Node,
        dir: Vec<String>,
        rel: &str,
    ) -> Result<Resolved, GitError> {
        let mut current = dir;
        let mut pending: VecDeque<String> = VecDeque::new();
        let mut hops = 0;
        let mut next_link = Some(link);
        loop {
            if let Some(link) = next_link.take() {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Ok(broken("too many levels of symbolic links"));
                }
                match self.link_target(&link, rel)? {
                    Ok(parts) => {
                        for part in parts.into_iter().rev() {
                            pending.push_front(part);
                        }
                    }
                    Err(refused) => return Ok(refused),
                }
            }
            let Some(part) = pending.pop_front() else {
                break;
            };
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if current.pop().is_none() {
                        return Ok(escapes(rel));
                    }
                    continue;
                }
                _ => {}
            }
            let mut path = current.clone();
            path.push(part);
            let Ok(entry) = self.root.get_path(Path::new(&path.join("/"))) else {
                return Ok(broken("target not found in the commit"));
            };
            let node = Node {
                oid: entry.id(),
                mode: entry.filemode(),
                kind: entry.kind(),
            };
            if node.mode == MODE_SYMLINK {
                // Its target is relative to the directory holding it: `current`.
                next_link = Some(node);
                continue;
            }
            if !pending.iter().all(|p| p.is_empty() || p == ".")
                && node.kind != Some(ObjectType::Tree)
            {
                return Ok(broken("a path component is not a directory"));
            }
            current = path;
        }
        self.found(current, rel)
    }

    /// The components of a symlink's target, or why it cannot be followed (not UTF-8, empty,
    /// absolute).
    fn link_target(
        &self,
        link: &Node,
        rel: &str,
    ) -> Result<Result<Vec<String>, Resolved>, GitError> {
        let blob = self
            .repo
            .find_blob(link.oid)
            .map_err(|e| self.read_error(rel, e))?;
        let Ok(target) = std::str::from_utf8(blob.content()) else {
            return Ok(Err(broken("target is not UTF-8")));
        };
        if target.is_empty() {
            return Ok(Err(broken("empty target")));
        }
        if target.starts_with('/') {
            return Ok(Err(escapes(rel)));
        }
        Ok(Ok(target.split('/').map(str::to_string).collect()))
    }

    /// The node at the real path `current` (the root when empty).
    fn found(&self, current: Vec<String>, rel: &str) -> Result<Resolved, GitError> {
        if current.is_empty() {
            let node = Node {
                oid: self.root.id(),
                mode: 0o040_000,
                kind: Some(ObjectType::Tree),
            };
            return Ok(Resolved::Found(current, node));
        }
        let entry = self
            .root
            .get_path(Path::new(&current.join("/")))
            .map_err(|e| self.read_error(rel, e))?;
        let node = Node {
            oid: entry.id(),
            mode: entry.filemode(),
            kind: entry.kind(),
        };
        Ok(Resolved::Found(current, node))
    }
}

/// A symlink that leaves the repo.
fn escapes(rel: &str) -> Resolved {
    Resolved::Problem(Problem::EscapesRepo {
        path: rel.to_string(),
    })
}

/// A symlink that cannot be followed, and why.
fn broken(why: &str) -> Resolved {
    Resolved::Problem(Problem::Unreadable {
        reason: format!("broken symlink: {why}"),
    })
}
