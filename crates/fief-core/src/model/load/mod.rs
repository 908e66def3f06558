//! Loading a [`Repo`] from a [`Snapshot`]: parse each file on its own, check the settings.
//!
//! In: a snapshot (and, for an incremental load, the previous repo and the paths changed
//! since). Out: a repo whose parts are each parsed or a list of diagnostics; an incremental
//! load parses only the parts that read a changed path. Pure.
//!
//! Here: the load as a whole, environments and the baseline; `fief.yaml` in `config`, the
//! tenant files in `tenants`, the component folders in `components`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::*;
use crate::diagnostic::{Diagnostic, Problem};
use crate::snapshot::Snapshot;
use crate::yaml;

pub mod archive;
mod components;
mod config;
mod kustomize;
mod package;
mod remote;
pub(super) mod tenants;

use components::load_components;
use config::load_config;
pub use tenants::tenant_stem;
use tenants::{load_tenants, pinning};

/// The text of `path`, `None` when absent, a diagnostic when it cannot be read.
fn read<'a>(snapshot: &'a Snapshot, path: &str) -> Result<Option<&'a Arc<str>>, Diagnostic> {
    match snapshot.get(path) {
        None => Ok(None),
        Some(Ok(text)) => Ok(Some(text)),
        Some(Err(problem)) => Err(Diagnostic::new(path, None, problem.clone())),
    }
}

/// `path` parsed as one YAML document of `T`; `None` when absent or empty.
fn parse_file<T: serde::de::DeserializeOwned>(
    snapshot: &Snapshot,
    path: &str,
) -> Result<Option<T>, Diagnostic> {
    let Some(text) = read(snapshot, path)? else {
        return Ok(None);
    };
    yaml::parse_single_typed(text)
        .map_err(|e| Diagnostic::new(path, e.line, Problem::from_yaml_error(&e.message)))
}

/// 1-based line of the first line in `text` that starts (after indentation) with `key:`.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let needle = format!("{key}:");
    text.lines()
        .position(|l| l.trim_start().starts_with(&needle))
        .map(|i| i + 1)
}

/// What a load parsed afresh (the rest was taken from the previous load).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoadStats {
    /// Tenant files parsed.
    pub tenants_parsed: usize,
    /// Components parsed.
    pub components_parsed: usize,
}

/// The previous load and the paths changed since, for [`Repo::load_reusing`].
type Reuse<'a> = Option<(&'a Repo, &'a BTreeSet<String>)>;

impl Repo {
    /// Parse every part of the repo; never fails as a whole.
    pub fn load(snapshot: Arc<Snapshot>) -> Repo {
        Repo::load_inner(snapshot, None).0
    }

    /// Parse the parts of the repo that read a path in `changed` (see
    /// [`Snapshot::changed_since`]); take every other part from `prev`, the load of the
    /// previous snapshot. The result equals [`Repo::load`] of the same snapshot; the work is
    /// proportional to what changed (a one-tenant change parses one tenant file).
    pub fn load_reusing(
        snapshot: Arc<Snapshot>,
        prev: &Repo,
        changed: &BTreeSet<String>,
    ) -> (Repo, LoadStats) {
        Repo::load_inner(snapshot, Some((prev, changed)))
    }

    fn load_inner(snapshot: Arc<Snapshot>, reuse: Reuse<'_>) -> (Repo, LoadStats) {
        let mut stats = LoadStats::default();
        let config = load_config(&snapshot, reuse);
        let (tenants, tenant_files, changed_tenants) = load_tenants(&snapshot, reuse, &mut stats);
        let pinning = pinning(reuse, changed_tenants.as_ref(), &tenants);
        let components = load_components(&snapshot, reuse, &mut stats);
        let environments = load_environments(&snapshot, reuse);
        let baseline = baseline(&snapshot);
        let secrets = match reuse {
            Some((prev, changed)) => {
                crate::secrets::Secrets::load_reusing(&snapshot, &prev.secrets, changed)
            }
            None => crate::secrets::Secrets::load(&snapshot),
        };
        let across = super::across::carried(
            reuse
                .filter(|(_, changed)| !changed.contains("fief.yaml"))
                .map(|(p, _)| p)
                .zip(changed_tenants.as_ref()),
            &config,
            &tenants,
        );
        let repo = Repo {
            secrets,
            snapshot,
            config,
            tenants,
            tenant_files,
            pinning,
            components: Arc::new(components),
            environments: Arc::new(environments),
            baseline,
            across,
        };
        (repo, stats)
    }
}

/// Every environment file, parsed (or taken from the previous load when unchanged).
fn load_environments(
    snapshot: &Snapshot,
    reuse: Reuse<'_>,
) -> BTreeMap<String, Parsed<Environment>> {
    let mut environments = BTreeMap::new();
    for (path, _) in snapshot.under("environments") {
        let Some(stem) = yaml_stem(path, "environments/") else {
            continue;
        };
        let same_stem = [
            format!("environments/{stem}.yaml"),
            format!("environments/{stem}.yml"),
        ];
        let kept = match reuse {
            Some((prev, changed)) if same_stem.iter().all(|p| !changed.contains(p)) => {
                prev.environments.get(stem).cloned()
            }
            _ => None,
        };
        let env = kept.unwrap_or_else(|| match parse_file::<Environment>(snapshot, path) {
            Ok(e) => Ok(e.unwrap_or_default()),
            Err(d) => Err(vec![d]),
        });
        environments.insert(stem.to_string(), env);
    }
    environments
}

/// The baseline templates: the repo's `baseline/` when it has one, else the built-in ones.
fn baseline(snapshot: &Snapshot) -> Vec<String> {
    if snapshot.has_dir("baseline") {
        snapshot
            .under("baseline")
            .map(|(p, _)| p.clone())
            .filter(|p| is_rendered_template(p))
            .collect()
    } else {
        BUILTIN_BASELINE
            .iter()
            .map(|(n, _)| n.to_string())
            .collect()
    }
}

/// The stem of a YAML file directly under `prefix` (`tenants/a.yaml` → `a`).
fn yaml_stem<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    if rest.contains('/') {
        return None;
    }
    rest.strip_suffix(".yaml")
        .or_else(|| rest.strip_suffix(".yml"))
}

/// A template file that renders objects: YAML, not a `_` partial.
fn is_rendered_template(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    !file.starts_with('_') && (file.ends_with(".yaml") || file.ends_with(".yml"))
}

#[cfg(test)]
mod tests;
