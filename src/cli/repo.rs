//! The tenants repo as the commands read it: loaded from a checkout (pinned components from
//! its git history, locked charts from the chart cache), its secrets unlocked, rendered whole,
//! for some environments, or a batch at a time.
//!
//! In: a command's [`RepoArgs`] (the checkout, `--tenant`, the age key) and `--env`. Out: the
//! loaded [`Repo`] and its [`TenantRender`]s, or a [`CliError`] saying what to fix. A render
//! a batch at a time ([`render_streamed`]) loads the repo [`Indexed`]: per tenant a small
//! index is held, and its file is read again when it renders.

use std::collections::BTreeSet;
use std::path::Path;

use super::{CliError, RepoArgs, secrets};
use crate::core::model::{Indexed, Repo};
use crate::core::pipeline;
use crate::core::render::TenantRender;
use crate::core::scope::EnvScope;

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
    let mut repo = crate::source::checkout::load(&args.repo)?;
    check_tenants(args, repo.snapshot.get("fief.yaml").is_some(), || {
        repo.tenants.keys().map(String::as_str)
    })?;
    secrets::unlock(&mut repo, args, without_key)?;
    Ok(repo)
}

/// The repo of [`load_repo_with`], [`Indexed`]: its tenant files read and indexed, not held.
pub fn load_indexed_with(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
) -> Result<Indexed, CliError> {
    let mut indexed = crate::source::checkout::load_indexed(&args.repo)?;
    let has_config = indexed.base.snapshot.get("fief.yaml").is_some();
    check_tenants(args, has_config, || indexed.names())?;
    secrets::unlock(&mut indexed.base, args, without_key)?;
    Ok(indexed)
}

/// A repo with no fief.yaml and no tenant is not a tenants repo; every `--tenant` must be
/// one of `names()` (the repo's tenants, in order).
fn check_tenants<'a, I: Iterator<Item = &'a str>>(
    args: &RepoArgs,
    has_config: bool,
    names: impl Fn() -> I,
) -> Result<(), CliError> {
    if names().next().is_none() && !has_config {
        // A CI gate pointed at the wrong folder must fail, not pass on zero tenants.
        return Err(CliError::Usage(format!(
            "{} is not a tenants repo: it has no fief.yaml and no tenants/*.yaml. Give the \
             folder that holds fief.yaml, or create a repo with `fief init`.",
            args.repo.display()
        )));
    }
    let known: BTreeSet<&str> = if args.tenants.is_empty() {
        BTreeSet::new()
    } else {
        names().collect()
    };
    let unknown: Vec<&str> = args
        .tenants
        .iter()
        .map(String::as_str)
        .filter(|t| !known.contains(t))
        .collect();
    if !unknown.is_empty() {
        return Err(CliError::Usage(format!(
            "no tenant named {} in {}/tenants/ (known: {})",
            unknown.join(", "),
            args.repo.display(),
            names().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(())
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
    scope_of(known, envs)
}

/// [`env_scope`] of an [`Indexed`] repo, from its cross-tenant index.
pub(super) fn env_scope_indexed(
    indexed: &Indexed,
    tenants: &[String],
    envs: &[String],
) -> Result<EnvScope, CliError> {
    if indexed.config().is_none() || envs.is_empty() {
        return Ok(EnvScope::of(envs));
    }
    let known: BTreeSet<String> = indexed
        .names()
        .filter(|name| tenants.is_empty() || tenants.iter().any(|t| t == name))
        .flat_map(|name| indexed.environments(name).cloned())
        .collect();
    scope_of(known, envs)
}

/// The scope of `envs`, each of which must be one of the `known` environments.
fn scope_of(known: BTreeSet<String>, envs: &[String]) -> Result<EnvScope, CliError> {
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

/// What [`render_streamed`] keeps of every tenant: its name and state, and its render
/// (without objects) when it failed.
#[derive(Debug, Default)]
pub struct Streamed {
    /// Every tenant rendered, in order.
    pub tenants: Vec<Rendered>,
    /// The renders that failed, without their objects: what the error report reads.
    pub failed: Vec<TenantRender>,
}

/// One tenant of a [`Streamed`] render.
#[derive(Debug)]
pub struct Rendered {
    /// Its name.
    pub tenant: Box<str>,
    /// Its lifecycle state, when its file parsed.
    pub state: Option<crate::core::model::TenantState>,
    /// Where its render is in [`Streamed::failed`], when it failed.
    pub failed: Option<u32>,
}

/// [`load_and_render_envs`] a batch of tenants at a time ([`pipeline::BATCH`]) from the repo
/// loaded [`Indexed`]: `each` sees every batch's renders in tenant order, then their objects
/// are dropped. Out: per tenant its name and state, and the failed renders (see
/// [`Streamed`]), so memory holds the index and a few batches' objects, not the fleet's
/// tenant files or renders.
pub fn render_streamed(
    args: &RepoArgs,
    without_key: secrets::WithoutKey,
    envs: &[String],
    mut each: impl FnMut(&[TenantRender]) -> Result<(), CliError>,
) -> Result<Streamed, CliError> {
    let indexed = load_indexed_with(args, without_key)?;
    let scope = env_scope_indexed(&indexed, &args.tenants, envs)?;
    let mut done = Streamed::default();
    pipeline::render_indexed_batches(&indexed, &args.tenants, &scope, pipeline::BATCH, |batch| {
        each(&batch)?;
        for r in batch {
            let failed = (!r.is_ok()).then(|| u32::try_from(done.failed.len()).unwrap_or(u32::MAX));
            done.tenants.push(Rendered {
                tenant: r.tenant.as_str().into(),
                state: r.state,
                failed,
            });
            if failed.is_some() {
                done.failed.push(TenantRender {
                    objects: Vec::new(),
                    chart_crds: Vec::new(),
                    ..r
                });
            }
        }
        Ok::<(), CliError>(())
    })?;
    Ok(done)
}
