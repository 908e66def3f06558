//! `fief render`: the repo's objects as one YAML stream (or a JSON `v1/List` with `-o json`),
//! or a tree of files with `--out`.
//!
//! In: [`RenderArgs`]. Out: YAML on stdout or files; diagnostics on stderr; exit code 0 or 1.
//!
//! `--out DIR` writes `<tenant>/<namespace or _cluster>/<kind>.<name>.yaml` for every tenant
//! that rendered cleanly and records the files it wrote in `DIR/.fief-render`. Run again
//! into the same folder, it first deletes the files of that list it no longer renders, so
//! the tree always equals the current render; files it did not write are never touched. A
//! folder that is neither new, empty, nor written by `fief render` is refused. Every path
//! is checked to stay inside `DIR` (no `/`, `..` or absolute part) before anything is written.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use super::secrets::WithoutKey;
use super::{
    CliError, EXIT_INVALID, EXIT_OK, RenderArgs, RenderFormat, load_and_render_envs, output,
    render_streamed, report_errors, write_err,
};
use crate::core::render::TenantRender;

/// The list of files `render --out` wrote, one relative path a line, inside the out folder.
pub const OUT_MANIFEST: &str = ".fief-render";

/// `fief render`.
pub fn render_cmd(args: &RenderArgs) -> Result<u8, CliError> {
    let without_key = if args.show_secrets {
        WithoutKey::Refuse
    } else {
        WithoutKey::Never
    };
    let renders = match &args.out {
        None => {
            // Written a batch at a time, so memory holds one batch's objects.
            let mut stdout = std::io::stdout().lock();
            let mut json = output::JsonList::default();
            let renders = render_streamed(&args.repo, without_key, &args.envs, |batch| {
                let text = match args.output {
                    RenderFormat::Yaml => output::stream(batch, args.show_secrets),
                    RenderFormat::Json => json.items(batch, args.show_secrets),
                }
                .map_err(CliError::Serialize)?;
                stdout
                    .write_all(text.as_bytes())
                    .map_err(write_err(Path::new("<stdout>")))
            })?;
            if args.output == RenderFormat::Json {
                stdout
                    .write_all(json.end().as_bytes())
                    .map_err(write_err(Path::new("<stdout>")))?;
            }
            renders
        }
        Some(dir) => {
            // Every path is checked before anything is written: the whole render is held.
            let (_, renders) = load_and_render_envs(&args.repo, without_key, &args.envs)?;
            write_tree(dir, &renders, args.show_secrets)?;
            renders
        }
    };
    Ok(if report_errors(&renders) {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// Whether `rel` is `a/b/c` of plain names: nothing that could leave the out folder.
fn is_safe_relative(rel: &Path) -> bool {
    rel.components().count() == 3
        && rel.components().all(|c| match c {
            Component::Normal(part) => part
                .to_str()
                .is_some_and(|s| !s.contains(['/', '\\']) && !s.starts_with("..")),
            _ => false,
        })
}

fn write_tree(dir: &Path, renders: &[TenantRender], show_secrets: bool) -> Result<(), CliError> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for r in renders.iter().filter(|r| r.is_ok()) {
        for o in r.chart_crds.iter().chain(&r.objects) {
            let rel = output::out_path(&r.tenant, o);
            if !is_safe_relative(&rel) {
                return Err(CliError::Usage(format!(
                    "{}: tenant `{}`: {} `{}` would be written to `{}`, outside the --out folder; nothing written",
                    o.source,
                    r.tenant,
                    o.id.kind,
                    o.id.name,
                    rel.display()
                )));
            }
            let text = output::document(&r.tenant, o, show_secrets).map_err(CliError::Serialize)?;
            files.push((rel, text));
        }
    }
    let previous = previous_files(dir)?;
    let now: BTreeSet<&Path> = files.iter().map(|(p, _)| p.as_path()).collect();
    for stale in previous.iter().filter(|p| !now.contains(p.as_path())) {
        let path = dir.join(stale);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(write_err(&path)(e));
            }
            _ => {}
        }
        // Drop the namespace and tenant folders once empty (fails harmlessly otherwise).
        for parent in path.ancestors().skip(1).take(2) {
            let _ = std::fs::remove_dir(parent);
        }
    }
    for (rel, text) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        std::fs::write(&path, text).map_err(write_err(&path))?;
    }
    let list: String = files
        .iter()
        .filter_map(|(p, _)| p.to_str())
        .map(|p| format!("{p}\n"))
        .collect();
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    let manifest = dir.join(OUT_MANIFEST);
    std::fs::write(&manifest, list).map_err(write_err(&manifest))
}

/// The files the last `render --out` into `dir` wrote; empty for a new or empty folder.
/// A non-empty folder without the list is refused: it holds files fief did not write.
fn previous_files(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let manifest = dir.join(OUT_MANIFEST);
    match std::fs::read_to_string(&manifest) {
        Ok(text) => Ok(text
            .lines()
            .map(PathBuf::from)
            .filter(|p| is_safe_relative(p))
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let empty = match std::fs::read_dir(dir) {
                Ok(mut entries) => entries.next().is_none(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(e) => return Err(write_err(dir)(e)),
            };
            if empty {
                Ok(Vec::new())
            } else {
                Err(CliError::Usage(format!(
                    "--out {}: the folder is not empty and was not written by `fief render` (no {OUT_MANIFEST} list); use a new or empty folder",
                    dir.display()
                )))
            }
        }
        Err(e) => Err(write_err(&manifest)(e)),
    }
}
