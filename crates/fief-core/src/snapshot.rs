//! Snapshot: the tenants repo read into memory, once, with nothing read from outside it.
//!
//! In: files from a source (a checkout read by `fief::source::fs`, or git objects read by
//! `fief::source::git`). Out: a [`Snapshot`], a map from repo-relative path to file content
//! or to the reason the file cannot be used. Everything downstream (templates included) reads
//! the snapshot, so a template can never reach a file outside the repo. The map is persistent
//! ([`imbl::OrdMap`]): a snapshot made from the last one by changing a few paths shares the
//! rest of its structure, so copying it costs nothing and [`Snapshot::changed_since`] visits
//! only what differs. Pure.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::diagnostic::Problem;

/// Largest file fief reads from a tenants repo.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most files fief reads from one tenants repo.
pub const MAX_FILES: usize = 200_000;
/// The top-level entries of a tenants repo that fief reads.
pub const TOP_LEVEL: [&str; 7] = [
    "fief.yaml",
    "fief.lock",
    "tenants",
    "components",
    "environments",
    "baseline",
    "secrets",
];

/// Where the source layer puts the chart archives `fief.lock` names: `.charts/sha256/<hex>`,
/// each a [`Problem::Binary`] entry holding the archive (or a problem saying why it could not
/// be fetched). No repo file can be there: sources read only [`TOP_LEVEL`].
pub const CHART_ARCHIVES: &str = ".charts";

/// The snapshot path of the chart archive with digest `sha256:<hex>`.
pub fn chart_archive_path(digest: &str) -> String {
    format!("{CHART_ARCHIVES}/{}", digest.replacen(':', "/", 1))
}

/// A file's content, or why it cannot be used.
pub type Entry = Result<Arc<str>, Problem>;

/// The repo's files, keyed by `/`-separated repo-relative path. Cloning is O(1).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(crate) files: imbl::OrdMap<String, Entry>,
}

/// Failure to read the repo at all (as opposed to one bad file in it).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The repo root is missing or not a directory.
    #[error("{path}: not a readable directory: {source}")]
    Root {
        /// The path given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A directory inside the repo could not be listed.
    #[error("{path}: cannot list directory: {source}")]
    List {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The repo has more files than fief will read.
    #[error(
        "the repo has more than {MAX_FILES} files under fief.yaml/tenants/components/environments/baseline/secrets"
    )]
    TooManyFiles,
}

impl Snapshot {
    /// Build a snapshot from in-memory files (tests, git trees).
    pub fn from_files<I, P, C>(files: I) -> Self
    where
        I: IntoIterator<Item = (P, C)>,
        P: Into<String>,
        C: Into<Arc<str>>,
    {
        Snapshot {
            files: files
                .into_iter()
                .map(|(p, c)| (p.into(), Ok(c.into())))
                .collect(),
        }
    }

    /// Record a file that cannot be used, and why.
    pub fn insert_problem(&mut self, rel: String, reason: String) {
        self.files.insert(rel, Err(Problem::Unreadable { reason }));
    }

    /// Add or replace the entry at a `/`-separated repo-relative path (git trees, tests).
    pub fn insert(&mut self, path: String, entry: Entry) {
        self.files.insert(path, entry);
    }

    /// The entry at a repo-relative path.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.files.get(path)
    }

    /// Every path under `dir/` (recursively), in sorted order.
    pub fn under<'a>(&'a self, dir: &str) -> impl Iterator<Item = (&'a String, &'a Entry)> + 'a {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
    }

    /// Whether any file exists under `dir/`.
    pub fn has_dir(&self, dir: &str) -> bool {
        self.under(dir).next().is_some()
    }

    /// Remove the entry at `path`; returns it.
    pub fn remove(&mut self, path: &str) -> Option<Entry> {
        self.files.remove(path)
    }

    /// Files held.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the snapshot holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Paths whose entry differs between `prev` and this snapshot: added, removed or changed.
    /// Parts of the map shared between the two (a snapshot made from `prev`, as the git source
    /// makes each commit's from the last) are skipped whole, so this costs what changed.
    pub fn changed_since(&self, prev: &Snapshot) -> BTreeSet<String> {
        prev.files
            .diff(&self.files)
            .map(|item| match item {
                imbl::ordmap::DiffItem::Add(path, _) | imbl::ordmap::DiffItem::Remove(path, _) => {
                    path.clone()
                }
                imbl::ordmap::DiffItem::Update { new: (path, _), .. } => path.clone(),
            })
            .collect()
    }
}

/// Whether two entries hold the same content (or the same problem).
pub fn same_entry(a: &Entry, b: &Entry) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => Arc::ptr_eq(x, y) || x == y,
        (Err(x), Err(y)) => x == y,
        _ => false,
    }
}

/// Normalise a template include name to a repo-relative path, refusing anything that could
/// leave the repo: absolute paths, `..`, backslashes, empty segments.
pub fn safe_relative(name: &str) -> Result<String, Problem> {
    let escapes = || Problem::EscapesRepo {
        path: name.to_string(),
    };
    if name.is_empty() || name.contains('\\') || name.contains('\0') {
        return Err(escapes());
    }
    let mut parts = Vec::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().ok_or_else(escapes)?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(escapes());
            }
        }
    }
    if parts.is_empty() {
        return Err(escapes());
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_relative_refuses_parent_and_absolute_paths() {
        assert!(safe_relative("../etc/passwd").is_err());
        assert!(safe_relative("components/../../x").is_err());
        assert!(safe_relative("/etc/passwd").is_err());
        assert!(safe_relative("a\\b").is_err());
        assert_eq!(
            safe_relative("./components/web/templates/_h.tpl").unwrap(),
            "components/web/templates/_h.tpl"
        );
    }

    #[test]
    fn under_lists_only_files_below_the_directory() {
        let s = Snapshot::from_files([
            ("tenants/a.yaml", "x"),
            ("tenants/b.yaml", "y"),
            ("tenantsx/c.yaml", "z"),
        ]);
        let names: Vec<_> = s.under("tenants").map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["tenants/a.yaml", "tenants/b.yaml"]);
    }
}
