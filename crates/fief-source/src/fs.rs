//! Filesystem source: a checkout on disk read into a [`Snapshot`], once.
//!
//! In: a directory. Out: a [`Snapshot`] of the top-level entries fief reads; symlinks that
//! leave the repo, oversized and unreadable files become problem entries, not errors. Or,
//! for a render of a large fleet ([`read_dir_indexed`]), the same snapshot without the tenant
//! files' text, their paths, and a [`FsTenantReader`] that reads one when its tenant renders.
//! The only code that reads a repo from disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fief_core::diagnostic::Problem;
use fief_core::model::{TenantReader, tenant_stem};
use fief_core::snapshot::{Entry, MAX_FILE_BYTES, MAX_FILES, Snapshot, SnapshotError, TOP_LEVEL};

/// Read the repo at `root`: the top-level entries fief knows, recursively.
///
/// Symlinks are followed only while they stay inside the repo; one that leaves it becomes
/// an [`Problem::EscapesRepo`] entry, so the tenants using it fail and others go on.
pub fn read_dir(root: &Path) -> Result<Snapshot, SnapshotError> {
    let mut walk = Walk::new(root, false)?;
    walk.top_level()?;
    Ok(walk.snapshot)
}

/// A checkout read for [`fief_core::model::Indexed`]: every file but the tenant files, whose
/// paths are listed and which [`FsTenantReader`] reads, one at a time.
pub struct Listed {
    /// The files fief reads, but the tenant files that are plain files or links inside the
    /// repo (a link that leaves it, or an unreadable entry, is here as in [`read_dir`]).
    pub snapshot: Snapshot,
    /// The repo-relative paths of the tenant files left out of the snapshot.
    pub tenant_files: Vec<String>,
    /// Reads them.
    pub reader: FsTenantReader,
}

/// [`read_dir`] without reading the tenant files: their paths are listed instead.
pub fn read_dir_indexed(root: &Path) -> Result<Listed, SnapshotError> {
    let mut walk = Walk::new(root, true)?;
    walk.top_level()?;
    Ok(Listed {
        reader: FsTenantReader {
            root: walk.root.clone(),
        },
        snapshot: walk.snapshot,
        tenant_files: walk.listed,
    })
}

/// Reads one tenant file of a checkout, as [`read_dir`] reads it; a path that now leaves the
/// repo is refused.
#[derive(Debug, Clone)]
pub struct FsTenantReader {
    root: PathBuf,
}

impl TenantReader for FsTenantReader {
    fn read(&self, path: &str) -> Entry {
        match self.root.join(path).canonicalize() {
            Ok(target) if target.starts_with(&self.root) => read_file(&target),
            Ok(_) => Err(Problem::EscapesRepo {
                path: path.to_string(),
            }),
            Err(e) => Err(Problem::Unreadable {
                reason: e.to_string(),
            }),
        }
    }
}

/// A walk of the checkout: what it read, and (when listing) the tenant files it did not.
struct Walk {
    root: PathBuf,
    snapshot: Snapshot,
    list_tenants: bool,
    listed: Vec<String>,
}

impl Walk {
    fn new(root: &Path, list_tenants: bool) -> Result<Walk, SnapshotError> {
        let canonical_root = root.canonicalize().map_err(|source| SnapshotError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !canonical_root.is_dir() {
            return Err(SnapshotError::Root {
                path: root.to_path_buf(),
                source: std::io::Error::other("not a directory"),
            });
        }
        Ok(Walk {
            root: canonical_root,
            snapshot: Snapshot::default(),
            list_tenants,
            listed: Vec::new(),
        })
    }

    /// Every top-level entry fief reads, recursively.
    fn top_level(&mut self) -> Result<(), SnapshotError> {
        for name in TOP_LEVEL {
            let path = self.root.join(name);
            if std::fs::symlink_metadata(&path).is_ok() {
                self.walk(&path, name.to_string(), 0)?;
            }
        }
        Ok(())
    }

    fn walk(&mut self, path: &Path, rel: String, depth: usize) -> Result<(), SnapshotError> {
        if self.snapshot.len() + self.listed.len() >= MAX_FILES {
            return Err(SnapshotError::TooManyFiles);
        }
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) => {
                self.snapshot.insert_problem(rel, e.to_string());
                return Ok(());
            }
        };
        let target = if meta.file_type().is_symlink() {
            match path.canonicalize() {
                Ok(t) if t.starts_with(&self.root) => t,
                Ok(_) => {
                    self.snapshot.insert(
                        rel.clone(),
                        Err(Problem::EscapesRepo {
                            path: rel.to_string(),
                        }),
                    );
                    return Ok(());
                }
                Err(e) => {
                    self.snapshot
                        .insert_problem(rel, format!("broken symlink: {e}"));
                    return Ok(());
                }
            }
        } else {
            path.to_path_buf()
        };
        if target.is_dir() {
            self.walk_dir(&target, rel, depth)
        } else {
            if self.list_tenants && tenant_stem(&rel).is_some() {
                self.listed.push(rel);
            } else {
                let entry = read_file(&target);
                self.snapshot.insert(rel, entry);
            }
            Ok(())
        }
    }

    fn walk_dir(&mut self, target: &Path, rel: String, depth: usize) -> Result<(), SnapshotError> {
        // Depth bound guards against symlink loops that stay inside the repo.
        if depth > 16 {
            self.snapshot
                .insert_problem(rel, "directories nested too deeply".to_string());
            return Ok(());
        }
        let mut names: Vec<_> = std::fs::read_dir(target)
            .map_err(|source| SnapshotError::List {
                path: target.to_path_buf(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names.sort();
        for name in names {
            let Some(name) = name.to_str() else {
                self.snapshot.insert_problem(
                    format!("{rel}/{}", name.to_string_lossy()),
                    "file name is not UTF-8".to_string(),
                );
                continue;
            };
            if crate::hidden(name.as_bytes()) {
                continue;
            }
            self.walk(&target.join(name), format!("{rel}/{name}"), depth + 1)?;
        }
        Ok(())
    }
}

fn read_file(path: &Path) -> Entry {
    let meta = std::fs::metadata(path).map_err(|e| Problem::Unreadable {
        reason: e.to_string(),
    })?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(Problem::Unreadable {
            reason: format!(
                "file is {} bytes, more than the limit of {MAX_FILE_BYTES}",
                meta.len()
            ),
        });
    }
    let bytes = std::fs::read(path).map_err(|e| Problem::Unreadable {
        reason: e.to_string(),
    })?;
    // A binary file keeps its bytes: a chart's packed subcharts (`charts/*.tgz`) are read
    // from them; anything else that reads it gets "not UTF-8 text".
    String::from_utf8(bytes)
        .map(Arc::from)
        .map_err(|e| Problem::Binary {
            bytes: e.into_bytes().into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_leaving_the_repo_becomes_a_problem_entry() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "top secret").unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join("tenants")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            repo.path().join("tenants/evil.yaml"),
        )
        .unwrap();
        let s = read_dir(repo.path()).unwrap();
        assert!(matches!(
            s.get("tenants/evil.yaml"),
            Some(Err(Problem::EscapesRepo { .. }))
        ));
    }
}
