//! Chart archives (`.tgz`) unpacked in memory into the file map an unpacked chart folder
//! gives: a chart fetched from a repository, and the packed subcharts (`charts/*.tgz`) of any
//! chart.
//!
//! In: an archive's bytes (or a chart's files, some of them packed subcharts). Out: every
//! file by its path inside the chart (the archive's top folder, the chart's name, dropped as
//! Helm's loader drops it), a packed subchart `charts/<x>.tgz` as the folder `charts/<x>/`;
//! or why not: a path leaving the chart, a link, a file too large, a file that is not UTF-8
//! text (the render helper is sent text). Nothing is written to disk. Pure.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::snapshot::MAX_FILE_BYTES;

/// Most bytes one chart unpacks to, subcharts included (Helm's own bound is 100 MiB).
const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;

/// A chart's files by path inside the chart.
pub(crate) type ChartFiles = BTreeMap<String, Arc<str>>;

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
    for (name, text) in inner {
        let at = format!("{folder}/{name}");
        if files.insert(at.clone(), text).is_some() {
            return Err(format!(
                "{path} unpacks to {at}, which the chart also holds as a file: keep the chart folder or the archive, not both"
            ));
        }
    }
    Ok(())
}

fn unpack(bytes: &[u8], budget: &mut u64, depth: usize) -> Result<ChartFiles, String> {
    if depth > 8 {
        return Err("subcharts nested more than 8 deep".to_string());
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = ChartFiles::new();
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
        let text = String::from_utf8(data).map_err(|_| {
            format!("`{raw}` is not UTF-8 text; fief renders charts whose files are text")
        })?;
        files.insert(name, Arc::from(text));
    }
    for (name, data) in packed {
        add_subchart_within(&mut files, &name, &data, budget, depth)?;
    }
    if !files.contains_key("Chart.yaml") {
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

#[cfg(test)]
mod tests {
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
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
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
    fn binary_files_and_paths_leaving_the_chart_are_refused() {
        let binary = tgz(&[
            ("app/Chart.yaml", b"name: app"),
            ("app/files/x.bin", &[0xff, 0xfe]),
        ]);
        let e = unpack_chart(&binary).unwrap_err();
        assert!(e.contains("app/files/x.bin") && e.contains("UTF-8"), "{e}");
        assert!(inside_chart("app/../../etc/passwd").is_err());
        assert!(unpack_chart(b"not gzip").is_err());
        assert!(is_packed_subchart("charts/a-1.tgz"));
        assert!(is_packed_subchart("charts/x/charts/b.tgz"));
        assert!(!is_packed_subchart("files/a.tgz"));
    }
}
