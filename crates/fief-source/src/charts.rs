//! Charts from Helm repositories and OCI registries: fetched once per digest into a
//! content-addressed cache on disk, and put into the snapshot for the core to unpack.
//!
//! In: a [`Snapshot`] (its `fief.lock` and components' `component.yaml`), the cache folder and
//! `fief-chart-pull` (which fetches one archive with Helm's own getter and registry client).
//! Out: the snapshot with each locked archive at [`chart_archive_path`] (its bytes, or why it
//! could not be had), and, for `fief chart update`, a new lock. An archive is fetched only
//! when its digest is not cached, and its digest is checked after every download and on
//! every read from disk; rendering never fetches, so a warm cache works offline.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fief_core::diagnostic::Problem;
use fief_core::model::{
    ChartLock, ChartRef, ChartSource, ComponentMeta, LOCK_COMMAND, LOCK_FILE, LockedChart,
    RenderKind, digest_of,
};
use fief_core::snapshot::{Snapshot, chart_archive_path};

use crate::render_helper::find_pull;

/// The environment variable naming the chart cache's folder.
pub const CACHE_ENV: &str = "FIEF_CHART_CACHE";

/// Why a chart could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The program that fetches could not be found or run.
    #[error("{0}")]
    Puller(String),
    /// The repository or registry did not give the chart.
    #[error("cannot fetch `{chart}`: {detail}")]
    Fetch {
        /// The chart, as `<repository>/<name>:<version>`.
        chart: String,
        /// The fetcher's message.
        detail: String,
    },
    /// The cache folder could not be written.
    #[error("{path}: cannot write the chart cache: {source}")]
    Cache {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The process's chart cache ([`ChartCache::from_env`]), shared by every load so an archive
/// is read from disk and checked once.
pub fn shared() -> &'static ChartCache {
    static SHARED: std::sync::OnceLock<ChartCache> = std::sync::OnceLock::new();
    SHARED.get_or_init(ChartCache::from_env)
}

/// The content-addressed chart cache: `<dir>/sha256/<hex>.tgz`, each file named by the
/// digest of its bytes.
pub struct ChartCache {
    dir: PathBuf,
    /// The program to fetch with; `None`: found by [`find_pull`] when first needed.
    puller: Option<PathBuf>,
    /// Archives already read and checked in this process, by digest.
    memo: Mutex<HashMap<String, Arc<[u8]>>>,
}

impl ChartCache {
    /// A cache in `dir`, fetching with the program [`find_pull`] finds.
    pub fn new(dir: PathBuf) -> ChartCache {
        ChartCache {
            dir,
            puller: None,
            memo: Mutex::default(),
        }
    }

    /// The same cache fetching with the `fief-chart-pull` at `path`.
    pub fn with_puller(mut self, path: PathBuf) -> ChartCache {
        self.puller = Some(path);
        self
    }

    /// The default cache: `$FIEF_CHART_CACHE`, else `$XDG_CACHE_HOME/fief/charts`, else
    /// `$HOME/.cache/fief/charts`, else `<temp dir>/fief/charts`.
    pub fn from_env() -> ChartCache {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = var(CACHE_ENV)
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("fief/charts")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/fief/charts")))
            .unwrap_or_else(|| std::env::temp_dir().join("fief/charts"));
        ChartCache::new(dir)
    }

    /// The cache's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file_of(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| self.dir.join("sha256").join(format!("{hex}.tgz")))
    }

    /// The cached archive with `digest`, its digest checked; a cached file whose bytes do not
    /// match is removed (it is fetched again).
    pub fn get(&self, digest: &str) -> Option<Arc<[u8]>> {
        if let Some(bytes) = self.memo.lock().ok()?.get(digest) {
            return Some(bytes.clone());
        }
        let file = self.file_of(digest)?;
        let bytes: Arc<[u8]> = std::fs::read(&file).ok()?.into();
        if digest_of(&bytes) != digest {
            tracing::warn!(file = %file.display(), "a cached chart archive does not match its digest; removing it");
            let _ = std::fs::remove_file(&file);
            return None;
        }
        self.remember(digest, &bytes);
        Some(bytes)
    }

    fn remember(&self, digest: &str, bytes: &Arc<[u8]>) {
        if let Ok(mut memo) = self.memo.lock() {
            memo.insert(digest.to_string(), bytes.clone());
        }
    }

    /// Fetch `chart` from its repository (always: the network is asked) and store it under
    /// its digest; the digest and the bytes.
    pub fn fetch(&self, chart: &ChartRef) -> Result<(String, Arc<[u8]>), ChartError> {
        let puller = match &self.puller {
            Some(p) => p.clone(),
            None => find_pull().map_err(|e| ChartError::Puller(e.to_string()))?,
        };
        let out = std::process::Command::new(&puller)
            .args([chart.repository(), &chart.name, &chart.version])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| ChartError::Puller(format!("cannot run {}: {e}", puller.display())))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let detail = stderr.trim().trim_start_matches("fief-chart-pull: ");
            let detail = detail.to_string();
            return Err(ChartError::Fetch {
                chart: chart.display(),
                detail,
            });
        }
        let bytes: Arc<[u8]> = out.stdout.into();
        let digest = digest_of(&bytes);
        self.store(&digest, &bytes)?;
        Ok((digest, bytes))
    }

    /// Write `bytes` under `digest` (a temporary file renamed into place).
    fn store(&self, digest: &str, bytes: &Arc<[u8]>) -> Result<(), ChartError> {
        let Some(file) = self.file_of(digest) else {
            return Ok(());
        };
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ChartError::Cache { path, source }
        };
        let dir = file.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        let tmp = dir.join(format!(".{}.{}", std::process::id(), digest_hex(digest)));
        std::fs::write(&tmp, bytes).map_err(err(&tmp))?;
        std::fs::rename(&tmp, &file).map_err(err(&file))?;
        self.remember(digest, bytes);
        Ok(())
    }

    /// Put every archive `fief.lock` names into `snapshot`: from the cache, else fetched (its
    /// digest compared with the lock's). An archive that cannot be had is a problem entry
    /// saying why and what to run; the tenants whose components use it fail with it. A
    /// missing or broken lock adds nothing (the core reports it).
    pub fn resolve(&self, snapshot: &mut Snapshot) {
        let Some(lock) = read_lock(snapshot) else {
            return;
        };
        for entry in &lock.charts {
            let path = chart_archive_path(&entry.digest);
            let found = match self.get(&entry.digest) {
                Some(bytes) => Ok(bytes),
                None => self.fetch_locked(entry),
            };
            let problem = match found {
                Ok(bytes) => Problem::Binary { bytes },
                Err(reason) => Problem::Unreadable { reason },
            };
            snapshot.insert(path, Err(problem));
        }
    }

    /// Fetch a locked chart that is not cached; its bytes if their digest is the lock's.
    fn fetch_locked(&self, entry: &LockedChart) -> Result<Arc<[u8]>, String> {
        let chart = ChartRef {
            repository: entry.repository.clone(),
            name: entry.name.clone(),
            version: entry.version.clone(),
        };
        match self.fetch(&chart) {
            Ok((digest, bytes)) if digest == entry.digest => Ok(bytes),
            Ok((digest, _)) => Err(format!(
                "the repository serves an archive with digest {digest} for version {}, but {LOCK_FILE} says {}: the chart was published again under the same version. fief does not take it: check what changed, then run `{LOCK_COMMAND}` to record the new digest",
                chart.version, entry.digest
            )),
            Err(e) => {
                let why = match e {
                    ChartError::Fetch { detail, .. } => format!("cannot fetch it: {detail}"),
                    other => other.to_string(),
                };
                Err(format!(
                    "{why} (it is not in fief's chart cache, {}; once fetched, a chart renders offline)",
                    self.dir.display()
                ))
            }
        }
    }
}

fn digest_hex(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

/// Whether some archive `fief.lock` names could not be had when `snapshot` was resolved (a
/// source following a branch tries again).
pub fn unresolved(snapshot: &Snapshot) -> bool {
    snapshot
        .under(fief_core::snapshot::CHART_ARCHIVES)
        .any(|(_, entry)| !matches!(entry, Err(Problem::Binary { .. })))
}

/// `fief.lock` parsed; `None` when absent or broken.
pub fn read_lock(snapshot: &Snapshot) -> Option<ChartLock> {
    match snapshot.get(LOCK_FILE) {
        Some(Ok(text)) => fief_core::yaml::parse_single_typed(text).ok().flatten(),
        _ => None,
    }
}

/// Every chart a component (pinned ones included) takes from a repository, by the
/// component.yaml that names it; component.yaml files that do not parse are skipped (loading
/// the repo reports them).
pub fn wanted_charts(snapshot: &Snapshot) -> BTreeMap<String, ChartRef> {
    let mut wanted = BTreeMap::new();
    for (path, entry) in snapshot.under("components") {
        let Ok(text) = entry else { continue };
        if path.matches('/').count() != 2 || !path.ends_with("/component.yaml") {
            continue;
        }
        let meta = fief_core::yaml::parse_single_typed::<ComponentMeta>(text);
        if let Ok(Some(ComponentMeta {
            kind: RenderKind::Helm,
            chart: Some(ChartSource::Repository(chart)),
            ..
        })) = meta
        {
            wanted.insert(path.clone(), chart);
        }
    }
    wanted
}

/// What `fief chart update` did to one chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockChange {
    /// Newly locked.
    Added(LockedChart),
    /// Already locked at the same digest.
    Same(LockedChart),
    /// Locked before at another digest: the repository published this version again.
    Changed {
        /// The new entry.
        entry: LockedChart,
        /// The digest the lock had.
        was: String,
    },
}

/// The lock for `wanted` (see [`wanted_charts`]): each chart fetched afresh and its digest
/// recorded; `old` is the lock it replaces, to say what changed. Charts no component names
/// are dropped. The first chart that cannot be fetched or whose reference is wrong stops it.
pub fn update_lock(
    cache: &ChartCache,
    wanted: &BTreeMap<String, ChartRef>,
    old: &ChartLock,
) -> Result<(ChartLock, Vec<LockChange>), ChartError> {
    let mut lock = ChartLock::default();
    let mut changes = Vec::new();
    for (file, chart) in wanted {
        if let Err((field, detail)) = chart.check() {
            return Err(ChartError::Fetch {
                chart: chart.display(),
                detail: format!("{file}: chart.{field}: {detail}"),
            });
        }
        let (digest, _) = cache.fetch(chart)?;
        let entry = LockedChart {
            repository: chart.repository().to_string(),
            name: chart.name.clone(),
            version: chart.version.clone(),
            digest,
        };
        if lock.charts.contains(&entry) {
            continue;
        }
        let change = match old.find(chart) {
            fief_core::model::Locked::At(was) if was.digest == entry.digest => {
                LockChange::Same(entry.clone())
            }
            fief_core::model::Locked::At(was) => LockChange::Changed {
                entry: entry.clone(),
                was: was.digest.clone(),
            },
            _ => LockChange::Added(entry.clone()),
        };
        changes.push(change);
        lock.charts.push(entry);
    }
    Ok((lock, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_for(digest: &str) -> String {
        format!(
            "charts:\n  - repository: oci://127.0.0.1:1/c\n    name: ms\n    version: 1.0.0\n    digest: {digest}\n"
        )
    }

    #[test]
    fn a_cached_archive_is_read_by_its_digest_and_a_corrupt_one_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ChartCache::new(dir.path().to_path_buf());
        let bytes: Arc<[u8]> = b"an archive".to_vec().into();
        let digest = digest_of(&bytes);
        cache.store(&digest, &bytes).unwrap();
        // A fresh cache on the same folder reads it from disk.
        let again = ChartCache::new(dir.path().to_path_buf());
        assert_eq!(again.get(&digest).as_deref(), Some(&bytes[..]));
        let file = again.file_of(&digest).unwrap();
        std::fs::write(&file, b"changed on disk").unwrap();
        let third = ChartCache::new(dir.path().to_path_buf());
        assert_eq!(third.get(&digest), None);
        assert!(!file.exists(), "a corrupt archive is removed");
        assert_eq!(third.get("sha256:../../etc/passwd"), None);
    }

    #[test]
    fn resolve_puts_a_cached_archive_in_the_snapshot_and_says_why_one_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Arc<[u8]> = b"an archive".to_vec().into();
        let digest = digest_of(&bytes);
        let cache = ChartCache::new(dir.path().to_path_buf())
            .with_puller(dir.path().join("no-such-puller"));
        cache.store(&digest, &bytes).unwrap();
        let mut snapshot = Snapshot::from_files([(LOCK_FILE, lock_for(&digest))]);
        cache.resolve(&mut snapshot);
        assert!(!unresolved(&snapshot));
        assert!(matches!(
            snapshot.get(&chart_archive_path(&digest)),
            Some(Err(Problem::Binary { .. }))
        ));
        let other = digest_of(b"another archive");
        let mut snapshot = Snapshot::from_files([(LOCK_FILE, lock_for(&other))]);
        cache.resolve(&mut snapshot);
        assert!(unresolved(&snapshot));
        let Some(Err(Problem::Unreadable { reason })) = snapshot.get(&chart_archive_path(&other))
        else {
            panic!("no problem entry for the archive that could not be fetched");
        };
        assert!(reason.contains("no-such-puller"), "{reason}");
    }

    #[test]
    fn the_charts_components_take_from_repositories_are_found_pinned_ones_too() {
        let remote = "kind: helm\nchart: {repository: oci://r/c, name: ms, version: 1.0.0}\n";
        let snapshot = Snapshot::from_files([
            ("components/a/component.yaml", remote),
            ("components/a@v1/component.yaml", remote),
            ("components/b/component.yaml", "kind: helm\nchart: chart\n"),
            ("components/c/chart/component.yaml", remote),
        ]);
        let wanted: Vec<String> = wanted_charts(&snapshot).into_keys().collect();
        assert_eq!(
            wanted,
            [
                "components/a/component.yaml",
                "components/a@v1/component.yaml"
            ]
        );
    }
}
