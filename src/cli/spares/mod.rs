//! `fief spares` and `fief allocate`: the pool of spare tenants fief.yaml `spares:` asks for.
//!
//! In: a tenants-repo checkout ([`SparesArgs`], [`AllocateArgs`]); for `allocate`, the
//! cluster's inventories (which spares are Ready). Out: tenant files written in `tenants/` (new
//! spares with random names; a spare turned into a customer's tenant), optionally committed in
//! one commit and pushed; a summary on stdout (text or JSON). The agent does the rest: a new
//! spare is applied like any tenant, and an allocated one is a small change to objects that
//! already run.

mod allocate;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::args::{GitArgs, SparesArgs};
use super::{CliError, EXIT_OK, Format};
use crate::core::model::{ID_LEN, Repo, Spares, tenant_yaml};

pub use allocate::allocate_cmd;

/// The repo and its `spares:` settings; a repo without them is a usage error.
fn load(checkout: &Path) -> Result<(Repo, Spares), CliError> {
    let repo = Repo::load(Arc::new(crate::source::fs::read_dir(checkout)?));
    let config = repo.config.as_ref().map_err(|_| CliError::Config)?;
    match &config.spares {
        Some(s) => Ok((repo.clone(), s.clone())),
        None => Err(CliError::Usage(format!(
            "{}/fief.yaml has no `spares:`; add e.g. `spares: {{count: 3, components: [{{name: web}}]}}`",
            checkout.display()
        ))),
    }
}

/// The spares in git, by name.
fn pool(repo: &Repo) -> Vec<String> {
    repo.tenants
        .iter()
        .filter(|(_, t)| t.as_ref().is_ok_and(|t| t.spec.spare))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Write `missing` new spare tenant files (names unused in `taken`); returns their paths.
fn fill(
    checkout: &Path,
    spares: &Spares,
    missing: usize,
    taken: &mut BTreeSet<String>,
) -> Result<Vec<PathBuf>, CliError> {
    let mut written = Vec::new();
    while written.len() < missing {
        let mut random = [0u8; ID_LEN];
        getrandom::fill(&mut random)
            .map_err(|e| CliError::Usage(format!("no random numbers: {e}")))?;
        let name = spares.name(random);
        if !crate::core::model::is_dns_label(&name) {
            return Err(CliError::Usage(format!(
                "fief.yaml spares.prefix `{}` does not make DNS-label names (`{name}`): use lowercase letters, digits and `-`, starting with a letter, at most 54 characters",
                spares.prefix
            )));
        }
        if !taken.insert(name.clone()) {
            continue;
        }
        let path = checkout.join("tenants").join(format!("{name}.yaml"));
        let text = tenant_yaml(&spares.tenant(&name)).map_err(CliError::Serialize)?;
        write(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    let fail = |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)
}

/// Commit `files` with `message` and push when asked; returns the commit id, if committed.
fn commit(
    checkout: &Path,
    git: &GitArgs,
    files: &[PathBuf],
    message: &str,
) -> Result<Option<String>, CliError> {
    if !(git.commit || git.push) || files.is_empty() {
        return Ok(None);
    }
    let id = crate::source::git::commit_files(checkout, files, message)?;
    if git.push {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(checkout)
            .args(["push", "--quiet"])
            .output()
            .map_err(|e| CliError::Push(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            return Err(CliError::Push(format!(
                "commit {} was made but not pushed: {}; push it with `git push`",
                &id[..12.min(id.len())],
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(Some(id))
}

/// Before anything is written: a commit that cannot be made changes nothing.
fn check_git(checkout: &Path, git: &GitArgs) -> Result<(), CliError> {
    if git.commit || git.push {
        crate::source::git::can_commit(checkout)?;
    }
    Ok(())
}

/// `fief spares`.
pub fn spares_cmd(args: &SparesArgs) -> Result<u8, CliError> {
    let (repo, spares) = load(&args.repo)?;
    let existing = pool(&repo);
    let missing = spares.count.saturating_sub(existing.len());
    let mut written = Vec::new();
    let mut commit_id = None;
    if !args.dry_run && missing > 0 {
        check_git(&args.repo, &args.git)?;
        let mut taken: BTreeSet<String> = repo.tenants.keys().cloned().collect();
        written = fill(&args.repo, &spares, missing, &mut taken)?;
        let message = format!("Add {} spare tenant(s)", written.len());
        commit_id = commit(&args.repo, &args.git, &written, &message)?;
    }
    let names = |paths: &[PathBuf]| -> Vec<String> {
        paths
            .iter()
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect()
    };
    let out = match args.output {
        Format::Json => {
            let v = serde_json::json!({
                "count": spares.count,
                "spares": existing,
                "missing": missing,
                "added": names(&written),
                "commit": commit_id,
            });
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
        }
        Format::Text => {
            let mut s = format!(
                "spares: {} of {} in git{}\n",
                existing.len(),
                spares.count,
                if existing.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", existing.join(", "))
                }
            );
            if args.dry_run && missing > 0 {
                s.push_str(&format!(
                    "{missing} missing; run without --dry-run to add them\n"
                ));
            }
            for p in &written {
                s.push_str(&format!("wrote {}\n", p.display()));
            }
            if let Some(id) = &commit_id {
                s.push_str(&format!("committed {}\n", &id[..12.min(id.len())]));
            }
            s
        }
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(EXIT_OK)
}
