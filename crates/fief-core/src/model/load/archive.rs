//! Chart archives (`.tgz`) unpacked in memory into the file map an unpacked chart folder
//! gives: a chart fetched from a repository, and the packed subcharts (`charts/*.tgz`) of any
//! chart.
//!
//! In: an archive's bytes (or a chart's files, some of them packed subcharts). Out: every
//! file by its path inside the chart (the archive's top folder, the chart's name, dropped as
//! Helm's loader drops it), a packed subchart `charts/<x>.tgz` as the folder `charts/<x>/`,
//! UTF-8 files as text and the others (an icon, a compressed dashboard) as bytes, which Helm
//! reads as they are; or why not: a path leaving the chart, a link, a file too large, a file
//! Helm parses as YAML that is not UTF-8 text. Nothing is written to disk. And the key the
//! renderer keeps a chart's or a kustomization's files under ([`key_of`]). Pure.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::model::RenderKind;
use crate::snapshot::MAX_FILE_BYTES;

/// Most bytes one chart unpacks to, subcharts included (Helm's own bound is 100 MiB).
const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;

/// The files Helm's loader parses as YAML, in a chart or any of its subcharts: they must be
/// UTF-8 text (Helm refuses them otherwise); every other file may hold any bytes.
const YAML_FILES: [&str; 5] = [
    "Chart.yaml",
    "Chart.lock",
    "values.yaml",
    "requirements.yaml",
    "requirements.lock",
];

/// A chart's files by path inside the chart: the UTF-8 ones as text, the others as bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChartFiles {
    /// The files that are UTF-8 text.
    pub text: BTreeMap<String, Arc<str>>,
    /// The files that are not (images, archives, keystores), as Helm reads them: bytes.
    pub binary: BTreeMap<String, Arc<[u8]>>,
}

impl ChartFiles {
    /// Whether the chart holds a file at `path`, text or not.
    pub fn contains(&self, path: &str) -> bool {
        self.text.contains_key(path) || self.binary.contains_key(path)
    }

    /// Add the file at `path`: as text when `data` is UTF-8, as bytes otherwise.
    fn insert_data(&mut self, path: String, data: Vec<u8>) {
        match String::from_utf8(data) {
            Ok(text) => {
                self.text.insert(path, Arc::from(text));
            }
            Err(e) => {
                self.binary.insert(path, Arc::from(e.into_bytes()));
            }
        }
    }
}

/// `sha256:<hex>` of `bytes`: how the lock names an archive.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Unpack a chart archive; subcharts packed inside it are unpacked too.
pub fn unpack_chart(bytes: &[u8]) -> Result<ChartFiles, String> {
    let mut budget = MAX_CHART_BYTES;
    unpack(bytes, &mut budget, 0)
}

/// Whether `path` (inside a chart) is a packed subchart: `charts/<x>.tgz`, at any depth.
pub(crate) fn is_packed_subchart(path: &str) -> bool {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    (dir == "charts" || dir.ends_with("/charts"))
        && file.ends_with(".tgz")
        && !file.starts_with(['.', '_'])
}

/// Whether Helm's loader parses the file at `path` (inside a chart) as YAML: a
/// [`YAML_FILES`] name at the top of the chart or of a subchart folder (`charts/<x>/`, at any
/// depth), where Helm reads it as that chart's.
pub(crate) fn read_as_yaml(path: &str) -> bool {
    let mut rest = path;
    while let Some(inner) = rest.strip_prefix("charts/") {
        match inner.split_once('/') {
            Some((_, after)) if !after.is_empty() => rest = after,
            _ => return false,
        }
    }
    YAML_FILES.contains(&rest)
}

/// Why Helm cannot load the chart file `path` that is not UTF-8 text (a [`read_as_yaml`]
/// file).
pub(crate) fn not_text(path: &str) -> String {
    format!(
        "`{path}` is not UTF-8 text: Helm reads a chart's Chart.yaml, Chart.lock, values.yaml and requirements files as YAML, which is text"
    )
}

/// Add the files of the packed subchart at `path` (`…/charts/<x>.tgz`) to `files` as the
/// folder `…/charts/<x>/`.
pub(crate) fn add_subchart(files: &mut ChartFiles, path: &str, bytes: &[u8]) -> Result<(), String> {
    let mut budget = MAX_CHART_BYTES;
    add_subchart_within(files, path, bytes, &mut budget, 0)
}

fn add_subchart_within(
    files: &mut ChartFiles,
    path: &str,
    bytes: &[u8],
    budget: &mut u64,
    depth: usize,
) -> Result<(), String> {
    let folder = path.trim_end_matches(".tgz");
    let inner = unpack(bytes, budget, depth + 1).map_err(|e| format!("{path}: {e}"))?;
    let clash = |at: &str| {
        format!(
            "{path} unpacks to {at}, which the chart also holds as a file: keep the chart folder or the archive, not both"
        )
    };
    for (name, text) in inner.text {
        let at = format!("{folder}/{name}");
        if files.contains(&at) {
            return Err(clash(&at));
        }
        files.text.insert(at, text);
    }
    for (name, data) in inner.binary {
        let at = format!("{folder}/{name}");
        if files.contains(&at) {
            return Err(clash(&at));
        }
        files.binary.insert(at, data);
    }
    Ok(())
}

fn unpack(bytes: &[u8], budget: &mut u64, depth: usize) -> Result<ChartFiles, String> {
    if depth > 8 {
        return Err("subcharts nested more than 8 deep".to_string());
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = ChartFiles::default();
    let mut packed = Vec::new();
    let entries = archive
        .entries()
        .map_err(|e| format!("not a chart archive (.tgz): {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("not a chart archive (.tgz): {e}"))?;
        let kind = entry.header().entry_type();
        let raw = entry
            .path()
            .map_err(|e| format!("a path in the archive: {e}"))?
            .to_string_lossy()
            .into_owned();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if !kind.is_file() {
            return Err(format!(
                "`{raw}` is a link or a special file; a chart holds plain files"
            ));
        }
        let Some(name) = inside_chart(&raw)? else {
            continue;
        };
        let size = entry.header().size().unwrap_or(u64::MAX);
        if size > MAX_FILE_BYTES || size > *budget {
            return Err(format!(
                "`{raw}` is {size} bytes: more than a chart file ({MAX_FILE_BYTES}) or the whole chart ({MAX_CHART_BYTES}) may be"
            ));
        }
        *budget -= size;
        let mut data = Vec::with_capacity(size as usize);
        entry
            .read_to_end(&mut data)
            .map_err(|e| format!("reading `{raw}`: {e}"))?;
        if is_packed_subchart(&name) {
            packed.push((name, data));
            continue;
        }
        files.insert_data(name, data);
    }
    if let Some(path) = files.binary.keys().find(|p| read_as_yaml(p)) {
        return Err(not_text(path));
    }
    for (name, data) in packed {
        add_subchart_within(&mut files, &name, &data, budget, depth)?;
    }
    if !files.text.contains_key("Chart.yaml") {
        return Err("the archive holds no Chart.yaml in its top folder".to_string());
    }
    Ok(files)
}

/// The path of an archive entry inside the chart: the top folder dropped, as Helm's loader
/// does; `None` for the top folder's own entry; an error for a path that leaves the chart.
fn inside_chart(raw: &str) -> Result<Option<String>, String> {
    let parts: Vec<&str> = raw
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if raw.starts_with('/') || parts.contains(&"..") || raw.contains('\\') {
        return Err(format!("`{raw}` leaves the chart's folder"));
    }
    match parts.split_first() {
        Some((_, rest)) if !rest.is_empty() => Ok(Some(rest.join("/"))),
        _ => Ok(None),
    }
}

/// A hash of the kind, the root and every file, text and bytes: the renderer's key for what
/// it loaded. A chart with no binary file hashes its text files alone.
pub(super) fn key_of(kind: RenderKind, root: &str, files: &ChartFiles) -> String {
    let mut hash = Sha256::new();
    hash.update(kind.as_str());
    hash.update([0]);
    hash.update(root);
    for (path, text) in &files.text {
        hash.update([0]);
        hash.update(path);
        hash.update([0]);
        hash.update(text.as_bytes());
    }
    for (path, bytes) in &files.binary {
        // Each binary file is marked and its length given: none can read as a text file's
        // end or as another binary file.
        hash.update([1]);
        hash.update(path);
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    }
    hex::encode(hash.finalize())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A .tgz of `files` (paths as written in the archive).
    pub(crate) fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        for (path, data) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn an_archive_unpacks_under_its_top_folder_with_packed_subcharts_as_folders() {
        let sub = tgz(&[
            ("sub/Chart.yaml", b"name: sub"),
            ("sub/values.yaml", b"a: 1"),
        ]);
        let top = tgz(&[
            ("app/Chart.yaml", b"name: app"),
            ("app/templates/x.yaml", b"kind: X"),
            ("app/charts/sub-1.0.0.tgz", &sub),
        ]);
        let files = unpack_chart(&top).unwrap();
        let names: Vec<&str> = files.text.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "Chart.yaml",
                "charts/sub-1.0.0/Chart.yaml",
                "charts/sub-1.0.0/values.yaml",
                "templates/x.yaml"
            ]
        );
    }

    #[test]
    fn files_that_are_not_utf8_unpack_as_bytes_in_the_chart_and_its_packed_subcharts() {
        let icon: &[u8] = &[0x89, b'P', b'N', b'G', 0xff, 0x00, 0xfe];
        let sub = tgz(&[("sub/Chart.yaml", b"name: sub"), ("sub/files/k.jks", icon)]);
        let top = tgz(&[
            ("app/Chart.yaml", b"name: app"),
            ("app/files/icon.png", icon),
            ("app/templates/x.yaml", b"kind: X"),
            ("app/charts/sub-1.0.0.tgz", &sub),
        ]);
        let files = unpack_chart(&top).unwrap();
        let binary: Vec<(&str, &[u8])> = files
            .binary
            .iter()
            .map(|(p, b)| (p.as_str(), &**b))
            .collect();
        assert_eq!(
            binary,
            [
                ("charts/sub-1.0.0/files/k.jks", icon),
                ("files/icon.png", icon)
            ]
        );
        assert!(files.text.contains_key("templates/x.yaml"));
        assert!(files.contains("files/icon.png") && !files.text.contains_key("files/icon.png"));
    }

    #[test]
    fn a_file_helm_parses_as_yaml_that_is_not_utf8_is_refused_naming_it() {
        let latin1 = b"a: caf\xe9\n";
        let top = tgz(&[
            ("app/Chart.yaml", b"name: app"),
            ("app/values.yaml", latin1),
        ]);
        let e = unpack_chart(&top).unwrap_err();
        assert!(
            e.contains("`values.yaml` is not UTF-8") && e.contains("YAML"),
            "{e}"
        );
        let sub = tgz(&[("sub/Chart.yaml", latin1)]);
        let top = tgz(&[
            ("app/Chart.yaml", b"name: app"),
            ("app/charts/sub.tgz", &sub),
        ]);
        let e = unpack_chart(&top).unwrap_err();
        assert!(
            e.contains("charts/sub.tgz: `Chart.yaml` is not UTF-8"),
            "{e}"
        );
        assert!(read_as_yaml("charts/sub/values.yaml"));
        assert!(read_as_yaml("charts/a/charts/b/Chart.lock"));
        assert!(!read_as_yaml("charts/values.yaml"));
        assert!(!read_as_yaml("files/values.yaml"));
        assert!(!read_as_yaml("templates/values.yaml"));
    }

    #[test]
    fn paths_leaving_the_chart_and_what_is_not_an_archive_are_refused() {
        assert!(inside_chart("app/../../etc/passwd").is_err());
        assert!(unpack_chart(b"not gzip").is_err());
        assert!(is_packed_subchart("charts/a-1.tgz"));
        assert!(is_packed_subchart("charts/x/charts/b.tgz"));
        assert!(!is_packed_subchart("files/a.tgz"));
    }
}
