//! Dynamic shell completion: the shell asks `fief` itself (`COMPLETE=<shell> fief -- …`), so
//! commands and flags come from the parser's own definitions, and `--tenant` and `--env`
//! values from the tenants repo in the current folder.
//!
//! In: the word being completed, and the current folder's `tenants/` (tenant files, in
//! sub-folders too) and `environments/`. Out: candidates, by name. Files are listed, not
//! parsed: a completion never fails and never prints an error.

use std::ffi::OsStr;
use std::path::Path;

use clap_complete::engine::CompletionCandidate;

/// How deep tenant folders are searched (`tenants/<a>/<b>/<tenant>.yaml`).
const DEPTH: usize = 4;

/// Tenant names starting with `current`: the stems of `tenants/**/*.yaml`.
pub fn tenant_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut names = Vec::new();
    yaml_stems(Path::new("tenants"), DEPTH, &mut names);
    candidates(names, current)
}

/// Environment names starting with `current`: the stems of `environments/*.yaml`.
pub fn environment_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut names = Vec::new();
    yaml_stems(Path::new("environments"), 1, &mut names);
    candidates(names, current)
}

/// The sorted, distinct names that start with `current`.
fn candidates(mut names: Vec<String>, current: &OsStr) -> Vec<CompletionCandidate> {
    let prefix = current.to_string_lossy();
    names.retain(|n| n.starts_with(prefix.as_ref()));
    names.sort();
    names.dedup();
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// The stems of the `.yaml`/`.yml` files under `dir`, `depth` levels deep.
fn yaml_stems(dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if depth > 1 {
                yaml_stems(&path, depth - 1, out);
            }
            continue;
        }
        let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if let (true, Some(stem)) = (yaml, path.file_stem().and_then(OsStr::to_str)) {
            out.push(stem.to_string());
        }
    }
}
