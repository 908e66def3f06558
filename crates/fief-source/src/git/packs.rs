//! The cached repository's packs: each fetch adds one, and every object read searches them,
//! so past [`MAX_PACKS`] a fetch merges them, geometrically.
//!
//! In: the cached bare repository and its pack folder. Out: fewer packs holding the same
//! objects; nothing else changes.
//!
//! Rewriting every pack into one on each merge would cost the whole history every
//! [`MAX_PACKS`] fetches (libgit2 computes every delta afresh), so a long-lived agent's fetches
//! would slow down with its repo's age. Instead the packs are kept in a geometric progression
//! (as `git repack --geometric=2` does): a pack stays while it holds at least twice the objects
//! of all smaller packs together, and only the smaller ones are merged, by the object ids their
//! `.idx` files list. Each object is thus rewritten a logarithmic number of times. When no pack
//! stands out that way, every object reachable from a ref is rewritten into one pack, which
//! also drops what nothing reaches any more (after a force push).

use std::path::Path;

use git2::{Oid, Repository};

/// Packs a cached repository may hold before a fetch merges them.
pub const MAX_PACKS: usize = 16;

/// One pack of the folder.
struct Pack {
    /// `pack-<hash>`: the `.pack`, `.idx` and `.rev` files share it.
    stem: String,
    /// Objects its index lists; `None` when the index cannot be read.
    objects: Option<u32>,
}

/// Merge the packs in `dir` when there are more than [`MAX_PACKS`] (see the module docs). The
/// caller holds the only handle on the cache.
pub(super) fn compact(repo: &Repository, dir: &Path) -> Result<(), git2::Error> {
    let mut packs = packs(dir);
    if packs.len() <= MAX_PACKS {
        return Ok(());
    }
    packs.sort_by_key(|p| std::cmp::Reverse(p.objects.unwrap_or(0)));
    let keep = kept(&packs);
    let merged = &packs[keep..];
    let ids = if keep == 0 {
        None
    } else {
        merged
            .iter()
            .map(|p| object_ids(&dir.join(format!("{}.idx", p.stem))))
            .collect::<Option<Vec<_>>>()
    };
    // Everything, or an index could not be read: every object reachable from a ref.
    let full = ids.is_none();
    let name = match ids {
        Some(ids) => write_pack(repo, dir, |b| {
            for id in ids.iter().flatten() {
                b.insert_object(*id, None)?;
            }
            Ok(())
        })?,
        None => write_pack(repo, dir, |b| insert_reachable(repo, b))?,
    };
    let Some(name) = name else {
        return Ok(());
    };
    let gone = if full { &packs[..] } else { merged };
    for p in gone.iter().filter(|p| p.stem != name) {
        for ext in ["pack", "idx", "rev", "keep"] {
            let _ = std::fs::remove_file(dir.join(format!("{}.{ext}", p.stem)));
        }
    }
    Ok(())
}

/// How many of the largest packs (sorted largest first) stay: each holds at least twice the
/// objects of all smaller packs together. At least two packs are merged, and at most half of
/// [`MAX_PACKS`] stay, so a merge always leaves room for the next fetches.
fn kept(packs: &[Pack]) -> usize {
    let counts: Vec<u64> = packs
        .iter()
        .map(|p| u64::from(p.objects.unwrap_or(0)))
        .collect();
    let mut keep = 0;
    while keep < counts.len() {
        let smaller: u64 = counts[keep + 1..].iter().sum();
        if counts[keep] < 2 * smaller || smaller == 0 {
            break;
        }
        keep += 1;
    }
    if packs[..keep].iter().any(|p| p.objects.is_none()) {
        return 0;
    }
    keep.min(MAX_PACKS / 2).min(packs.len().saturating_sub(2))
}

/// Write a pack of what `fill` inserts into `dir`; its file stem (`pack-<hash>`).
fn write_pack(
    repo: &Repository,
    dir: &Path,
    fill: impl FnOnce(&mut git2::PackBuilder<'_>) -> Result<(), git2::Error>,
) -> Result<Option<String>, git2::Error> {
    let mut builder = repo.packbuilder()?;
    fill(&mut builder)?;
    builder.write(dir, 0o644)?;
    Ok(builder.name()?.map(|n| format!("pack-{n}")))
}

/// Insert every object reachable from a ref: commits with their history, trees, blobs,
/// annotated tags.
fn insert_reachable(
    repo: &Repository,
    builder: &mut git2::PackBuilder<'_>,
) -> Result<(), git2::Error> {
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
    builder.insert_walk(&mut walk)
}

/// The packs in `dir`, with their object counts.
fn packs(dir: &Path) -> Vec<Pack> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| Some(n.strip_prefix("pack-")?.strip_suffix(".pack")?.to_string()))
        .map(|hash| {
            let stem = format!("pack-{hash}");
            let objects = index(&dir.join(format!("{stem}.idx"))).map(|(n, _)| n);
            Pack { stem, objects }
        })
        .collect()
}

/// Header of a version 2 pack index: magic `\377tOc`, version 2, then the 256-entry fan-out
/// table (big-endian counts; the last is the number of objects), then the sorted object ids.
const IDX_MAGIC: [u8; 4] = [0xff, b't', b'O', b'c'];
/// Bytes before the object ids in a version 2 index.
const IDX_IDS_AT: usize = 8 + 256 * 4;
/// Bytes of a SHA-1 object id (the cache is a SHA-1 repository).
const OID_LEN: usize = 20;

/// A version 2 index's object count and bytes; `None` for anything else.
fn index(path: &Path) -> Option<(u32, Vec<u8>)> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.get(..4)? != IDX_MAGIC || bytes.get(4..8)? != [0, 0, 0, 2] {
        return None;
    }
    let last = bytes.get(IDX_IDS_AT - 4..IDX_IDS_AT)?;
    let count = u32::from_be_bytes(last.try_into().ok()?);
    let ids_end = IDX_IDS_AT.checked_add((count as usize).checked_mul(OID_LEN)?)?;
    (bytes.len() >= ids_end).then_some((count, bytes))
}

/// The object ids a version 2 index lists; `None` when it cannot be read.
fn object_ids(path: &Path) -> Option<Vec<Oid>> {
    let (count, bytes) = index(path)?;
    bytes[IDX_IDS_AT..]
        .chunks_exact(OID_LEN)
        .take(count as usize)
        .map(|id| Oid::from_bytes(id).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(objects: u32) -> Pack {
        Pack {
            stem: format!("pack-{objects}"),
            objects: Some(objects),
        }
    }

    #[test]
    fn a_pack_stays_while_it_holds_twice_the_objects_of_all_smaller_ones() {
        // 1000 >= 2 * (300 + 17 * 4) and 300 >= 2 * (17 * 4) stay; 4 < 2 * (16 * 4): the
        // seventeen small ones are merged.
        let mut packs = vec![pack(1000), pack(300)];
        packs.extend((0..17).map(|_| pack(4)));
        assert_eq!(kept(&packs), 2);
    }

    #[test]
    fn without_a_pack_that_stands_out_everything_is_merged() {
        let packs: Vec<Pack> = (0..17).map(|_| pack(10)).collect();
        assert_eq!(kept(&packs), 0);
        let mut packs = vec![pack(100)];
        packs.extend((0..17).map(|_| pack(10)));
        assert_eq!(kept(&packs), 0, "100 < 2 * 170");
    }

    #[test]
    fn a_merge_keeps_at_most_half_the_limit_and_merges_at_least_two() {
        // A perfect progression: every pack would stay.
        let packs: Vec<Pack> = (0..17).rev().map(|i| pack(3u32.pow(i))).collect();
        assert_eq!(kept(&packs), MAX_PACKS / 2);
        let packs = vec![pack(100), pack(1)];
        assert_eq!(kept(&packs), 0);
    }

    #[test]
    fn an_unreadable_index_among_the_kept_packs_rewrites_everything() {
        let mut packs = vec![Pack {
            stem: "pack-x".to_string(),
            objects: None,
        }];
        packs.extend((0..17).map(|_| pack(1)));
        assert_eq!(kept(&packs), 0);
    }
}
