//! Filesystem source: a checkout on disk read into a [`Snapshot`], once.
//!
//! In: a directory. Out: a [`Snapshot`] of the top-level entries fief reads; symlinks that
//! leave the repo, oversized and unreadable files become problem entries, not errors. The
//! only code that reads a repo from disk.

use std::path::Path;
use std::sync::Arc;

use fief_core::diagnostic::Problem;
use fief_core::snapshot::{Entry, MAX_FILE_BYTES, MAX_FILES, Snapshot, SnapshotError, TOP_LEVEL};

/// Read the repo at `root`: the top-level entries fief knows, recursively.
///
/// Symlinks are followed only while they stay inside the repo; one that leaves it becomes
/// an [`Problem::EscapesRepo`] entry, so the tenants using it fail and others go on.
pub fn read_dir(root: &Path) -> Result<Snapshot, SnapshotError> {
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
    let mut snapshot = Snapshot::default();
    for name in TOP_LEVEL {
        let path = canonical_root.join(name);
        if std::fs::symlink_metadata(&path).is_ok() {
            walk(&mut snapshot, &canonical_root, &path, name.to_string(), 0)?;
        }
    }
    Ok(snapshot)
}

fn walk(
    snapshot: &mut Snapshot,
    root: &Path,
    path: &Path,
    rel: String,
    depth: usize,
) -> Result<(), SnapshotError> {
    if snapshot.len() >= MAX_FILES {
        return Err(SnapshotError::TooManyFiles);
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => {
            snapshot.insert_problem(rel, e.to_string());
            return Ok(());
        }
    };
    let target = if meta.file_type().is_symlink() {
        match path.canonicalize() {
            Ok(t) if t.starts_with(root) => t,
            Ok(_) => {
                snapshot.insert(
                    rel.clone(),
                    Err(Problem::EscapesRepo {
                        path: rel.to_string(),
                    }),
                );
                return Ok(());
            }
            Err(e) => {
                snapshot.insert_problem(rel, format!("broken symlink: {e}"));
                return Ok(());
            }
        }
    } else {
        path.to_path_buf()
    };
    if target.is_dir() {
        // Depth bound guards against symlink loops that stay inside the repo.
        if depth > 16 {
            snapshot.insert_problem(rel, "directories nested too deeply".to_string());
            return Ok(());
        }
        let mut names: Vec<_> = std::fs::read_dir(&target)
            .map_err(|source| SnapshotError::List {
                path: target.clone(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names.sort();
        for name in names {
            let Some(name) = name.to_str() else {
                snapshot.insert_problem(
                    format!("{rel}/{}", name.to_string_lossy()),
                    "file name is not UTF-8".to_string(),
                );
                continue;
            };
            if crate::hidden(name.as_bytes()) {
                continue;
            }
            walk(
                snapshot,
                root,
                &target.join(name),
                format!("{rel}/{name}"),
                depth + 1,
            )?;
        }
    } else {
        let entry = read_file(&target);
        snapshot.insert(rel, entry);
    }
    Ok(())
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
