//! `fief import`: a tenants repo written from Flux and Argo CD objects, with a report of what
//! could not be mapped and why.
//!
//! In: YAML files (or folders of them) holding Flux and Argo CD objects, or a cluster's (read
//! by [`cluster`] into `import-source/` of the output), checkouts of the git repositories
//! ApplicationSet git generators read, and an empty output folder. Out: the
//! repo's files in that folder (fief.yaml, environments, components, tenants, the files
//! `fief init` writes besides) with `IMPORT-REPORT.md`, and the report on stdout. Secret data
//! is never read: a value from a Secret becomes a `secretValues` entry and a report line.
//!
//! Here: reading and writing files. The mapping is pure: [`read`] parses the objects, [`flux`],
//! [`argo`] and [`appset`] turn them into releases, [`group`] into components and tenants,
//! [`layers`] splits their values, [`write`] makes the files and [`report`] the report.

mod appset;
mod appset_git;
mod argo;
mod cluster;
mod flux;
mod group;
mod kustomize;
mod layers;
mod model;
mod read;
mod report;
mod values;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{CliError, EXIT_INVALID, EXIT_OK, Format, ImportArgs, write_err};
use model::{Finding, Object};

/// The result of an import: the repo and the report's findings.
pub struct Imported {
    /// The repo's files, by path.
    pub files: Vec<(String, String)>,
    /// What was not mapped, by file and line.
    pub findings: Vec<Finding>,
    /// The layered repo the files were made from.
    repo: layers::Repo,
    /// How many Flux and Argo CD objects were read.
    pub objects: usize,
}

/// One input file.
pub struct Input {
    /// Its path, as the report names it.
    pub file: String,
    /// Its text.
    pub text: String,
    /// The environment its path below `--from` names (`clusters/production/…`), for objects
    /// whose namespace names none.
    pub env: Option<String>,
}

/// Import the objects of `inputs`. Pure; the git generators read `git`.
pub fn import(inputs: &[Input], git: &dyn appset::GitFiles) -> Imported {
    let mut findings = Vec::new();
    let mut objects: Vec<Object> = Vec::new();
    let envs: BTreeMap<String, String> = inputs
        .iter()
        .filter_map(|i| Some((i.file.clone(), i.env.clone()?)))
        .collect();
    for Input { file, text, .. } in inputs {
        let (found, bad) = read::objects(file, text);
        objects.extend(found);
        findings.extend(bad);
    }
    let index = read::Index::new(&objects);
    let (mut releases, flux_findings) = flux::releases(&objects, &index);
    findings.extend(flux_findings);
    for o in objects.iter().filter(|o| o.group() == read::ARGO_GROUP) {
        match o.kind() {
            "Application" => releases.extend(argo::application(o, &index, &mut findings)),
            "ApplicationSet" => {
                for app in appset::applications(o, &index, git, &mut findings) {
                    releases.extend(argo::application(&app, &index, &mut findings));
                }
            }
            kind => findings.push(o.finding(
                "",
                format!("an Argo {kind}: not mapped; fief has no equivalent"),
            )),
        }
    }
    let count = objects
        .iter()
        .filter(|o| o.group() == read::ARGO_GROUP || read::FLUX_GROUPS.contains(&o.group()))
        .count();
    let fleet = group::fleet(releases, &envs, &mut findings);
    let repo = layers::repo(fleet, &mut findings);
    findings.extend(report::copy_findings(&repo));
    findings.sort();
    findings.dedup();
    Imported {
        files: write::files(&repo, count),
        findings,
        repo,
        objects: count,
    }
}

/// `fief import --from PATH... --out DIR`.
pub fn import_cmd(args: &ImportArgs) -> Result<u8, CliError> {
    refuse_non_empty(&args.out)?;
    let mut inputs = Vec::new();
    for from in &args.from {
        read_inputs(from, &mut inputs)?;
    }
    let from_cluster = if args.from_cluster {
        cluster::read(&args.cluster)?
    } else {
        Vec::new()
    };
    for (path, text) in &from_cluster {
        inputs.push(Input {
            file: args.out.join(path).display().to_string(),
            text: text.clone(),
            env: None,
        });
    }
    let git = Checkouts::parse(&args.checkout)?;
    let imported = import(&inputs, &git);
    if imported.objects == 0 {
        eprintln!(
            "no Flux or Argo CD object in {}: nothing written",
            args.from
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(EXIT_INVALID);
    }
    let out = args.out.display().to_string();
    let mut files = from_cluster;
    files.extend(imported.files.iter().cloned());
    files.push((
        "IMPORT-REPORT.md".to_string(),
        report::markdown(&imported.findings, &imported.repo),
    ));
    for (path, text) in &files {
        let path = args.out.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        std::fs::write(&path, text).map_err(write_err(&path))?;
    }
    match args.format {
        Format::Text => print!("{}", report::text(&imported.findings, &imported.repo, &out)),
        Format::Json => print!("{}", report::json(&imported.findings, &imported.repo, &out)),
    }
    Ok(EXIT_OK)
}

/// `--out` must be absent or an empty folder.
fn refuse_non_empty(out: &Path) -> Result<(), CliError> {
    let in_the_way = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
    };
    if in_the_way {
        return Err(CliError::Usage(format!(
            "--out {} is not an empty folder; import overwrites nothing. Give a new folder \
             (`--out tenants-repo`) or empty this one.",
            out.display()
        )));
    }
    Ok(())
}

/// The YAML files of `path` (itself, or under it, recursively, hidden folders left out).
fn read_inputs(path: &Path, out: &mut Vec<Input>) -> Result<(), CliError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| CliError::Usage(format!("--from {}: {e}", path.display())))?;
    let mut files: Vec<PathBuf> = Vec::new();
    if meta.is_dir() {
        walk(path, &mut files, &|p| {
            p.extension().is_some_and(|e| e == "yaml" || e == "yml")
        });
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| CliError::Usage(format!("--from {}: {e}", file.display())))?;
        // Only the part below --from names an environment (not the user's own folders).
        let below = match file.strip_prefix(path) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel,
            _ => Path::new(file.file_name().unwrap_or_default()),
        };
        out.push(Input {
            file: file.display().to_string(),
            text,
            env: group::env_of_file(&below.to_string_lossy()),
        });
    }
    Ok(())
}

/// Every file (or with `dirs`, every folder) under `dir` that `keep` keeps; hidden entries
/// (`.git`) are left out.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, keep: &dyn Fn(&Path) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if keep(&path) {
            out.push(path.clone());
        }
        if path.is_dir() {
            walk(&path, out, keep);
        }
    }
}

/// The checkouts given with `--checkout URL=DIR`.
struct Checkouts(BTreeMap<String, PathBuf>);

/// A repository URL as compared: without a trailing `/` or `.git`.
fn normal_url(url: &str) -> String {
    url.trim_end_matches('/')
        .trim_end_matches(".git")
        .to_string()
}

impl Checkouts {
    fn parse(given: &[String]) -> Result<Checkouts, CliError> {
        let mut map = BTreeMap::new();
        for g in given {
            let Some((url, dir)) = g.rsplit_once('=') else {
                return Err(CliError::Usage(format!("--checkout {g}: write URL=DIR")));
            };
            if !Path::new(dir).is_dir() {
                return Err(CliError::Usage(format!(
                    "--checkout {g}: {dir} is not a folder"
                )));
            }
            map.insert(normal_url(url), PathBuf::from(dir));
        }
        Ok(Checkouts(map))
    }
}

impl appset::GitFiles for Checkouts {
    fn matching(&self, url: &str, pattern: &str, dirs: bool) -> Option<Vec<String>> {
        let root = self.0.get(&normal_url(url))?;
        let mut found = Vec::new();
        walk(root, &mut found, &|p| p.is_dir() == dirs);
        let mut out: Vec<String> = found
            .iter()
            .filter_map(|p| p.strip_prefix(root).ok())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .filter(|rel| appset_git::glob(pattern, rel))
            .collect();
        out.sort();
        Some(out)
    }

    fn read(&self, url: &str, path: &str) -> Option<String> {
        let root = self.0.get(&normal_url(url))?;
        std::fs::read_to_string(root.join(path)).ok()
    }
}
