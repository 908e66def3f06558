//! `fief bump REPO COMPONENT (--version V | --ref R) (--tenant T... | --selector k=v | --all |
//! --percent N) [--commit]`: edit the chosen tenant files in place, print the diff, optionally
//! commit.
//!
//! In: a checkout of the tenants repo. Out: edited `tenants/<t>.yaml` files (one line each),
//! their unified diff on stdout, a commit naming the tenants with `--commit`, problems on
//! stderr. Exit 0 when done (or nothing to change), 1 when a chosen tenant could not be edited
//! (nothing is written or committed then), 2 for bad arguments.

use std::io::Write;
use std::sync::Arc;

use similar::TextDiff;

use super::{BumpArgs, CliError, EXIT_INVALID, EXIT_OK, write_err};
use crate::core::bump::{Field, current_version, percent_of, set_field};
use crate::core::model::Repo;
use crate::source::git::commit_files;

/// `fief bump`.
pub fn bump_cmd(args: &BumpArgs) -> Result<u8, CliError> {
    let repo = Repo::load(Arc::new(crate::source::fs::read_dir(&args.repo)?));
    let users: Vec<String> = repo
        .tenants
        .iter()
        .filter_map(|(name, t)| {
            let t = t.as_ref().ok()?;
            current_version(t, &args.component).map(|_| name.clone())
        })
        .collect();
    let chosen = choose(args, &repo, &users)?;
    if args.commit {
        // Before any file is edited: a commit that cannot be made changes nothing.
        crate::source::git::can_commit(&args.repo)?;
    }
    let (field, value, what) = match (&args.version, &args.git_ref) {
        (Some(v), _) => (Field::Version, v.as_str(), v.clone()),
        (None, Some(r)) => (Field::Ref, r.as_str(), format!("ref {r}")),
        (None, None) => {
            return Err(CliError::Usage("give --version or --ref".to_string()));
        }
    };
    let (edits, problems) = edit_tenants(&repo, &chosen, &args.component, field, value);
    let mut stderr = std::io::stderr().lock();
    if !problems.is_empty() {
        for p in &problems {
            let _ = writeln!(stderr, "{} {p}", super::colour::error_prefix());
        }
        let _ = writeln!(
            stderr,
            "hint: nothing was written; fix or leave out these tenants and run fief bump again"
        );
        return Ok(EXIT_INVALID);
    }
    let files = write_edits(args, &edits)?;
    let names: Vec<&str> = edits.iter().map(|e| e.tenant.as_str()).collect();
    if edits.is_empty() {
        let _ = writeln!(
            stderr,
            "nothing to change: every chosen tenant already has {} {what}",
            args.component
        );
    } else if args.commit {
        let message = format!(
            "bump {} to {what} for {} tenant{}: {}",
            args.component,
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
        let id = commit_files(&args.repo, &files, &message)?;
        let _ = writeln!(stderr, "committed {}: {message}", &id[..12.min(id.len())]);
    } else {
        let _ = writeln!(
            stderr,
            "{} tenant files changed ({}); review and commit, or run with --commit",
            names.len(),
            names.join(", ")
        );
    }
    Ok(EXIT_OK)
}

/// One tenant file to change.
struct Edit {
    tenant: String,
    /// Its path in the repo.
    rel: String,
    old: String,
    new: String,
}

/// The edit of each chosen tenant file (none when it already has the value), and one line
/// for each that cannot be edited.
fn edit_tenants(
    repo: &Repo,
    chosen: &[String],
    component: &str,
    field: Field,
    value: &str,
) -> (Vec<Edit>, Vec<String>) {
    let mut edits = Vec::new();
    let mut problems = Vec::new();
    for tenant in chosen {
        let rel = repo.tenant_file(tenant);
        let Some(Ok(text)) = repo.snapshot.get(&rel) else {
            problems.push(format!("{rel}: tenant `{tenant}`: cannot read the file"));
            continue;
        };
        match set_field(text, component, field, value) {
            Ok(Some(new)) => edits.push(Edit {
                tenant: tenant.clone(),
                rel,
                old: text.to_string(),
                new,
            }),
            Ok(None) => {}
            Err(e) => problems.push(format!("{rel}: tenant `{tenant}`: {e}")),
        }
    }
    (edits, problems)
}

/// Write the edited files and print their unified diff; the paths written.
fn write_edits(args: &BumpArgs, edits: &[Edit]) -> Result<Vec<std::path::PathBuf>, CliError> {
    let mut out = String::new();
    for e in edits {
        out.push_str(
            &TextDiff::from_lines(e.old.as_str(), e.new.as_str())
                .unified_diff()
                .context_radius(2)
                .header(&format!("a/{}", e.rel), &format!("b/{}", e.rel))
                .to_string(),
        );
    }
    let mut files = Vec::new();
    for e in edits {
        let path = args.repo.join(&e.rel);
        std::fs::write(&path, &e.new).map_err(write_err(&path))?;
        files.push(path);
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(files)
}

/// The tenants the arguments choose. Named tenants must exist and use the component; the
/// other selectors choose among the tenants that use it.
fn choose(args: &BumpArgs, repo: &Repo, users: &[String]) -> Result<Vec<String>, CliError> {
    if !args.tenants.is_empty() {
        let mut bad = Vec::new();
        for t in &args.tenants {
            if !repo.tenants.contains_key(t) {
                bad.push(format!("no tenant named {t}"));
            } else if !users.contains(t) {
                bad.push(format!(
                    "tenant {t} does not use component {}",
                    args.component
                ));
            }
        }
        if !bad.is_empty() {
            return Err(CliError::Usage(bad.join("; ")));
        }
        return Ok(args.tenants.clone());
    }
    if users.is_empty() {
        return Err(CliError::Usage(format!(
            "no tenant uses component {} (or its tenant files do not parse: run fief validate)",
            args.component
        )));
    }
    if let Some(sel) = &args.selector {
        let chosen = super::selector::select(repo, sel)?;
        return Ok(users
            .iter()
            .filter(|t| chosen.contains(t))
            .cloned()
            .collect());
    }
    if let Some(p) = args.percent {
        return Ok(percent_of(users, &args.component, p));
    }
    Ok(users.to_vec())
}
