//! `fief render`: the repo's objects as one YAML stream (or a JSON `v1/List` with `-o json`),
//! or a tree of files with `--out`.
//!
//! In: [`RenderArgs`]. Out: YAML on stdout or files; diagnostics on stderr; exit code 0 or 1.
//!
//! Both render a batch of tenants at a time and write it before the next is rendered, so
//! memory holds a few batches, never the fleet's render. `--out DIR` writes
//! `<tenant>/<namespace or _cluster>/<kind>.<name>.yaml` per object and records the files it
//! wrote in `DIR/.fief-render`. A folder that is neither new, empty, nor written by
//! `fief render` is refused before anything is rendered. The batches are written into a
//! staging folder inside `DIR` ([`STAGING`]), every path checked to stay inside `DIR` (no `/`,
//! `..` or absolute part); only once every tenant rendered cleanly is the list made to name
//! both renders' files, the files of the last list that are no longer rendered deleted, the
//! staged files moved into place and the list replaced, so the tree equals the current render
//! and, interrupted on the way, holds no file of fief's that its list does not name. A path
//! that would leave `DIR`, or any tenant that fails, leaves `DIR` as it was (the staging
//! folder is removed) and exits non-zero; files fief did not write are never touched.

use std::io::{BufRead, BufWriter, Write};
use std::path::{Component, Path, PathBuf};

use super::repo::Streamed;
use super::secrets::WithoutKey;
use super::{
    CliError, EXIT_INVALID, EXIT_OK, RenderArgs, RenderFormat, output, render_streamed,
    report_errors, write_err,
};
use crate::core::render::TenantRender;

/// The list of files `render --out` wrote, one relative path a line, inside the out folder.
pub const OUT_MANIFEST: &str = ".fief-render";

/// The folder inside the out folder that a `render --out` writes into before the files are
/// moved into place.
pub const STAGING: &str = ".fief-render.staging";

/// The list of both renders' files, in the staging folder while it is written.
const BOTH_LISTS: &str = ".fief-render.both";

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
        Some(dir) => render_out(args, dir, without_key)?,
    };
    Ok(if report_errors(&renders.failed) {
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

/// `render --out dir`: staged a batch at a time, moved into place once every tenant rendered
/// cleanly (see the module docs). Out: the renders, for the error report.
fn render_out(
    args: &RenderArgs,
    dir: &Path,
    without_key: WithoutKey,
) -> Result<Streamed, CliError> {
    check_out_folder(dir)?;
    let mut stage = Stage::new(dir)?;
    let renders = render_streamed(&args.repo, without_key, &args.envs, |batch| {
        stage.write(batch, args.show_secrets)
    });
    match renders {
        Ok(renders) if renders.failed.is_empty() => {
            stage.commit()?;
            Ok(renders)
        }
        Ok(renders) => {
            stage.discard();
            Ok(renders)
        }
        Err(e) => {
            stage.discard();
            Err(e)
        }
    }
}

/// A render being written into the staging folder of `dir`.
struct Stage {
    dir: PathBuf,
    staging: PathBuf,
    /// The out folder did not exist: a discarded render removes it again.
    created: bool,
    /// The list of the staged files, written as they are.
    list: BufWriter<std::fs::File>,
    /// A tenant failed: nothing more is staged (the render will be discarded).
    failed: bool,
}

impl Stage {
    /// An empty staging folder in `dir` (created if need be), any left by an interrupted
    /// render removed.
    fn new(dir: &Path) -> Result<Stage, CliError> {
        let created = !dir.exists();
        let staging = dir.join(STAGING);
        match std::fs::remove_dir_all(&staging) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(write_err(&staging)(e));
            }
            _ => {}
        }
        std::fs::create_dir_all(&staging).map_err(write_err(&staging))?;
        let manifest = staging.join(OUT_MANIFEST);
        let list = std::fs::File::create(&manifest).map_err(write_err(&manifest))?;
        Ok(Stage {
            dir: dir.to_path_buf(),
            staging,
            created,
            list: BufWriter::new(list),
            failed: false,
        })
    }

    /// Stage the files of `batch`'s clean renders; a path that would leave the out folder is
    /// an error (nothing is then written to it).
    fn write(&mut self, batch: &[TenantRender], show_secrets: bool) -> Result<(), CliError> {
        self.failed |= batch.iter().any(|r| !r.is_ok());
        if self.failed {
            return Ok(());
        }
        for r in batch {
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
                let text =
                    output::document(&r.tenant, o, show_secrets).map_err(CliError::Serialize)?;
                let path = self.staging.join(&rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(write_err(parent))?;
                }
                std::fs::write(&path, text).map_err(write_err(&path))?;
                let line = format!("{}\n", rel.display());
                self.list
                    .write_all(line.as_bytes())
                    .map_err(write_err(&self.staging))?;
            }
        }
        Ok(())
    }

    /// Put the staged render in place: first the out folder's list names the files of both
    /// renders, then the files of the last list this one no longer holds are deleted, its
    /// files moved into the out folder, and the list replaced by its own. Interrupted at any
    /// step, every file fief wrote in the folder is on its list, so the next `render --out`
    /// deletes those it no longer renders.
    fn commit(mut self) -> Result<(), CliError> {
        self.list.flush().map_err(write_err(&self.staging))?;
        let (dir, staging) = (self.dir.clone(), self.staging.clone());
        let manifest = staging.join(OUT_MANIFEST);
        let placed = dir.join(OUT_MANIFEST);
        list_both(&placed, &manifest, &staging.join(BOTH_LISTS))?;
        for stale in listed(&placed)? {
            if staging.join(&stale).exists() {
                continue;
            }
            let path = dir.join(&stale);
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
        for rel in listed(&manifest)? {
            let (from, to) = (staging.join(&rel), dir.join(&rel));
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(write_err(parent))?;
            }
            // A path listed twice (two objects with one file name) was moved the first time.
            if from.exists() {
                std::fs::rename(&from, &to).map_err(write_err(&to))?;
            }
        }
        std::fs::rename(&manifest, &placed).map_err(write_err(&placed))?;
        std::fs::remove_dir_all(&staging).map_err(write_err(&staging))
    }

    /// Remove the staging folder (and the out folder, when this render created it).
    fn discard(self) {
        drop(self.list);
        let _ = std::fs::remove_dir_all(&self.staging);
        if self.created {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// The out folder's list made the lines of `placed` (when present) and then of `staged`: the
/// two are written one after the other into `both` (in the staging folder), which then
/// replaces `placed` at once.
fn list_both(placed: &Path, staged: &Path, both: &Path) -> Result<(), CliError> {
    let mut out = std::fs::File::create(both).map_err(write_err(both))?;
    for list in [placed, staged] {
        match std::fs::File::open(list) {
            Ok(mut file) => {
                std::io::copy(&mut file, &mut out).map_err(write_err(both))?;
                // A list whose last line has no newline would run into the next list's first.
                out.write_all(b"\n").map_err(write_err(both))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(write_err(list)(e)),
        }
    }
    out.sync_all().map_err(write_err(both))?;
    std::fs::rename(both, placed).map_err(write_err(placed))
}

/// The paths of a `render --out` list, read a line at a time (none when it is absent); a
/// line that is not `a/b/c` of plain names is skipped.
fn listed(manifest: &Path) -> Result<impl Iterator<Item = PathBuf>, CliError> {
    let lines = match std::fs::File::open(manifest) {
        Ok(file) => Some(std::io::BufReader::new(file).lines()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(write_err(manifest)(e)),
    };
    Ok(lines
        .into_iter()
        .flatten()
        .map_while(Result::ok)
        .map(PathBuf::from)
        .filter(|p| is_safe_relative(p)))
}

/// A folder `render --out` may write: new, empty (but for a staging folder an interrupted
/// render left), or holding the list of a previous `render --out`.
fn check_out_folder(dir: &Path) -> Result<(), CliError> {
    if dir.join(OUT_MANIFEST).is_file() {
        return Ok(());
    }
    let empty = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.all(|e| e.is_ok_and(|e| e.file_name() == STAGING)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(write_err(dir)(e)),
    };
    if empty {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "--out {}: the folder is not empty and was not written by `fief render` (no {OUT_MANIFEST} list); use a new or empty folder",
            dir.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_out_folders_list_names_both_renders_files_before_any_file_moves() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (placed, staged) = (dir.path().join("placed"), dir.path().join("staged"));
        // The old list without a final newline still ends its line before the new one's.
        std::fs::write(&placed, "acme/a/configmap.x.yaml").expect("write");
        std::fs::write(&staged, "beta/b/configmap.y.yaml\n").expect("write");
        list_both(&placed, &staged, &dir.path().join("both")).expect("listed");
        let names: Vec<PathBuf> = listed(&placed).expect("read").collect();
        assert_eq!(
            names,
            [
                PathBuf::from("acme/a/configmap.x.yaml"),
                PathBuf::from("beta/b/configmap.y.yaml")
            ]
        );
        assert!(!dir.path().join("both").exists());

        // A first render has no list yet: the staged one is taken alone.
        std::fs::remove_file(&placed).expect("remove");
        list_both(&placed, &staged, &dir.path().join("both")).expect("listed");
        assert_eq!(listed(&placed).expect("read").count(), 1);
    }
}
