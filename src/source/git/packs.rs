//! The cached repository's packs: each fetch adds one, and every object read searches them,
//! so past [`MAX_PACKS`] a fetch rewrites them into one.
//!
//! In: the cached bare repository and its pack folder. Out: the same objects (everything
//! reachable from a ref) in one pack; nothing else changes.

use std::path::Path;

use git2::Repository;

/// Packs a cached repository may hold before a fetch rewrites them into one.
pub const MAX_PACKS: usize = 16;

/// Rewrite the packs in `dir` into one when there are more than [`MAX_PACKS`]: every object
/// reachable from a ref (commits with their history, trees, blobs, annotated tags) goes into a
/// new pack, then the other packs are removed. The caller holds the only handle on the cache.
pub(super) fn compact(repo: &Repository, dir: &Path) -> Result<(), git2::Error> {
    let packs = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("pack-") && n.ends_with(".pack"))
            .collect()
    };
    if packs(dir).len() <= MAX_PACKS {
        return Ok(());
    }
    let mut builder = repo.packbuilder()?;
    let mut walk = repo.revwalk()?;
    for reference in repo.references()? {
        let Some(oid) = reference?.target() else {
            continue;
        };
        match repo.find_object(oid, None)?.kind() {
            Some(git2::ObjectType::Commit) => walk.push(oid)?,
            // An annotated tag (with what it points at), or a ref to a tree or blob.
            _ => builder.insert_recursive(oid, None)?,
        }
    }
    builder.insert_walk(&mut walk)?;
    builder.write(dir, 0o644)?;
    let Some(name) = builder.name()?.map(|n| format!("pack-{n}.")) else {
        return Ok(());
    };
    for old in packs(dir).into_iter().filter(|p| !p.starts_with(&name)) {
        let stem = old.trim_end_matches(".pack");
        for ext in ["pack", "idx", "rev", "keep"] {
            let _ = std::fs::remove_file(dir.join(format!("{stem}.{ext}")));
        }
    }
    Ok(())
}
