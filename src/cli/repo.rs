//! The tenants repo as the commands read it: loaded from a checkout (pinned components from
//! its git history, locked charts from the chart cache), its secrets unlocked, rendered whole,
//! for some environments, or a batch at a time.
//!
//! In: a command's [`RepoArgs`] (the checkout, `--tenant`, the age key) and `--env`. Out: the
//! loaded [`Repo`] and its [`TenantRender`]s, or a [`CliError`] saying what to fix.

use std::collections::BTreeSet;
use std::path::Path;

use super::{CliError, RepoArgs, secrets};
use crate::core::model::Repo;
use crate::core::pipeline;
use crate::core::render::TenantRender;
use crate::core::scope::EnvScope;
use crate::core::snapshot::Snapshot;

/// Read, parse and render the repo; unknown `--tenant` names are a usage error. Secrets are
/// decrypted with the configured age key; without one, tenants that read them fail.
pub fn render_repo(args: &RepoArgs) -> Result<Vec<TenantRender>, CliError> {
    load_and_render(args).map(|(_, renders)| renders)
}

/// Like [`render_repo`], also returning the parsed repo.
pub fn load_and_render(args: &RepoArgs) -> Result<(Repo, Vec<TenantRender>), CliError> {
    load_and_render_with(args, secrets::WithoutKey::Fail)
}

/// Like [`load_and_render`], choosing what happens to secrets without a key.
pub fn load_and_render_with(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
) -> Result<(Repo, Vec<TenantRender>), CliError> {
    let repo = load_repo_with(args, without_key)?;
    let renders = pipeline::render_all(&repo, &args.tenants);
    Ok((repo, renders))
}

/// The repo of [`load_and_render_with`], loaded and unlocked but not rendered.
pub fn load_repo_with(args: &RepoArgs, without_key: secrets::WithoutKey) -> Result<Repo, CliError> {
    let mut repo = load_with_pins(&args.repo, crate::source::fs::read_dir(&args.repo)?);
    if repo.tenants.is_empty() && repo.snapshot.get("fief.yaml").is_none() {
        // A CI gate pointed at the wrong folder must fail, not pass on zero tenants.
        return Err(CliError::Usage(format!(
            "{} is not a tenants repo: it has no fief.yaml and no tenants/*.yaml. Give the \
             folder that holds fief.yaml, or create a repo with `fief init`.",
            args.repo.display()
        )));
    }
    let unknown: Vec<&String> = args
        .tenants
        .iter()
        .filter(|t| !repo.tenants.contains_key(*t))
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        return Err(CliError::Usage(format!(
            "no tenant named {} in {}/tenants/ (known: {})",
            names.join(", "),
            args.repo.display(),
            repo.tenants.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    secrets::unlock(&mut repo, args, without_key)?;
    Ok(repo)
}

/// Load a repo, with the components tenants pin to git refs read from `checkout`'s own git
/// history (a ref that cannot be read fails only the tenants that pin it).
pub fn load_with_pins(checkout: &Path, mut snapshot: Snapshot) -> Repo {
    // The charts fief.lock names, from the chart cache (fetched once when missing).
    crate::source::charts::shared().resolve(&mut snapshot);
    load_with_pins_unresolved(checkout, snapshot)
}

/// [`load_with_pins`] without the charts of fief.lock (`fief chart update`, which writes it).
pub fn load_with_pins_unresolved(checkout: &Path, snapshot: Snapshot) -> Repo {
    crate::source::pins::load(&crate::source::pins::Checkout(checkout), snapshot).0
}

/// Print every diagnostic on stderr, one repeated in many tenants once; whether there were any.
pub fn report_errors(renders: &[TenantRender]) -> bool {
    super::report::report_errors(renders)
}

pub(super) fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// The scope of `--env` for the tenants `tenants` (empty: all) of `repo`: an environment none
/// of them has is a usage error with a did-you-mean (a typo would otherwise show, apply and
/// prune nothing).
pub(super) fn env_scope(
    repo: &Repo,
    tenants: &[String],
    envs: &[String],
) -> Result<EnvScope, CliError> {
    let Ok(config) = repo.config.as_ref() else {
        // fief.yaml is broken: every tenant fails to render, which says why.
        return Ok(EnvScope::of(envs));
    };
    let known: BTreeSet<String> = repo
        .tenants
        .iter()
        .filter(|(name, _)| tenants.is_empty() || tenants.contains(name))
        .filter_map(|(_, t)| t.as_ref().ok())
        .flat_map(|t| crate::core::render::namespaces(config, t).into_keys())
        .collect();
    if let Some(unknown) = envs.iter().find(|e| !known.contains(*e)) {
        let hint = crate::core::suggest::suggest(unknown, known.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "--env {unknown}: no tenant has this environment{hint}; they have: {}",
            known.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(EnvScope::of(envs))
}

/// [`load_and_render_with`] for the environments `envs` only (all when empty), checked by
/// [`env_scope`].
pub fn load_and_render_envs(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
    envs: &[String],
) -> Result<(Repo, Vec<TenantRender>), CliError> {
    let repo = load_repo_with(args, without_key)?;
    let scope = env_scope(&repo, &args.tenants, envs)?;
    let renders = pipeline::render_all_in(&repo, &args.tenants, &scope);
    Ok((repo, renders))
}

/// [`load_and_render_envs`] a batch of tenants at a time ([`pipeline::BATCH`]): `each` sees
/// every batch's renders in tenant order, then their objects are dropped. Out: every render
/// without its objects (names, namespaces, errors: what the error report and summaries
/// read), so memory holds one batch's objects, not the fleet's.
pub fn render_streamed(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
    envs: &[String],
    mut each: impl FnMut(&[TenantRender]) -> Result<(), CliError>,
) -> Result<Vec<TenantRender>, CliError> {
    let repo = load_repo_with(args, without_key)?;
    let scope = env_scope(&repo, &args.tenants, envs)?;
    let mut done: Vec<TenantRender> = Vec::with_capacity(repo.tenants.len());
    pipeline::render_batches_in(&repo, &args.tenants, &scope, pipeline::BATCH, |batch| {
        each(&batch)?;
        done.extend(batch.into_iter().map(|r| TenantRender {
            objects: Vec::new(),
            ..r
        }));
        Ok::<(), CliError>(())
    })?;
    Ok(done)
}
