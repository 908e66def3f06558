//! Loading a [`Repo`] from a [`Snapshot`]: parse each file on its own, check the settings.
//!
//! In: a snapshot (and, for an incremental load, the previous repo and the paths changed
//! since). Out: a repo whose parts are each parsed or a list of diagnostics; an incremental
//! load parses only the parts that read a changed path. Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::diagnostic::{Diagnostic, Problem};
use crate::snapshot::Snapshot;
use crate::yaml;

fn read<'a>(snapshot: &'a Snapshot, path: &str) -> Result<Option<&'a Arc<str>>, Diagnostic> {
    match snapshot.get(path) {
        None => Ok(None),
        Some(Ok(text)) => Ok(Some(text)),
        Some(Err(problem)) => Err(Diagnostic::new(path, None, problem.clone())),
    }
}

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

/// Whether `name` is a DNS-1123 label (lowercase alphanumerics and `-`, ≤ 63).
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
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
        let unchanged = |path: &str| reuse.is_some_and(|(_, c)| !c.contains(path));
        let config = match reuse {
            Some((prev, _)) if unchanged("fief.yaml") => prev.config.clone(),
            _ => match parse_file::<Config>(&snapshot, "fief.yaml") {
                Ok(c) => check_config(&snapshot, c.unwrap_or_default()),
                Err(d) => Err(vec![d]),
            },
        };
        let (tenants, changed_tenants) = match reuse {
            // From the previous tenants (a persistent map: an O(1) copy), the stems of the
            // changed paths parsed again, so a one-tenant change costs one tenant.
            Some((prev, changed)) => {
                let mut tenants = prev.tenants.clone();
                let stems: BTreeSet<String> = changed
                    .range("tenants/".to_string()..)
                    .take_while(|p| p.starts_with("tenants/"))
                    .filter_map(|p| yaml_stem(p, "tenants/"))
                    .map(str::to_string)
                    .collect();
                for stem in &stems {
                    // As a whole load does: of `a.yaml` and `a.yml`, the last present wins.
                    let mut parsed = None;
                    for path in [
                        format!("tenants/{stem}.yaml"),
                        format!("tenants/{stem}.yml"),
                    ] {
                        if snapshot.get(&path).is_some() {
                            stats.tenants_parsed += 1;
                            parsed = Some(load_tenant(&snapshot, &path, stem).map(Arc::new));
                        }
                    }
                    match parsed {
                        Some(tenant) => tenants.insert(stem.clone(), tenant),
                        None => tenants.remove(stem),
                    };
                }
                (tenants, Some(stems))
            }
            None => {
                let mut tenants = Tenants::new();
                for (path, _) in snapshot.under("tenants") {
                    let Some(stem) = yaml_stem(path, "tenants/") else {
                        continue;
                    };
                    stats.tenants_parsed += 1;
                    tenants.insert(
                        stem.to_string(),
                        load_tenant(&snapshot, path, stem).map(Arc::new),
                    );
                }
                (tenants, None)
            }
        };
        let pinning = match (reuse, &changed_tenants) {
            (Some((prev, _)), Some(stems)) => {
                let mut pinning = prev.pinning.clone();
                for stem in stems {
                    pinning.remove(stem);
                    if tenants.get(stem).is_some_and(pins_a_ref) {
                        pinning.insert(stem.clone());
                    }
                }
                pinning
            }
            _ => tenants
                .iter()
                .filter(|(_, t)| pins_a_ref(t))
                .map(|(name, _)| name.clone())
                .collect(),
        };
        let mut components = BTreeMap::new();
        let mut names: Vec<String> = snapshot
            .under("components")
            .filter_map(|(p, _)| p.split('/').nth(1).map(str::to_string))
            .collect();
        names.dedup();
        for name in names {
            let kept = match reuse {
                Some((prev, changed)) => {
                    let prefix = format!("components/{name}/");
                    let touched = changed
                        .range(prefix.clone()..)
                        .next()
                        .is_some_and(|p| p.starts_with(&prefix));
                    if touched {
                        None
                    } else {
                        prev.components.get(&name).cloned()
                    }
                }
                None => None,
            };
            let component = kept.unwrap_or_else(|| {
                stats.components_parsed += 1;
                load_component(&snapshot, &name)
            });
            components.insert(name, component);
        }
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
                Some((prev, _)) if same_stem.iter().all(|p| unchanged(p)) => {
                    prev.environments.get(stem).cloned()
                }
                _ => None,
            };
            let env = kept.unwrap_or_else(|| match parse_file::<Environment>(&snapshot, path) {
                Ok(e) => Ok(e.unwrap_or_default()),
                Err(d) => Err(vec![d]),
            });
            environments.insert(stem.to_string(), env);
        }
        let baseline = if snapshot.has_dir("baseline") {
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
        };
        let secrets = match reuse {
            Some((prev, changed)) => {
                crate::secrets::Secrets::load_reusing(&snapshot, &prev.secrets, changed)
            }
            None => crate::secrets::Secrets::load(&snapshot),
        };
        let across = crate::validate::across::carried(
            reuse
                .filter(|_| unchanged("fief.yaml"))
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
            pinning,
            components,
            environments,
            baseline,
            across,
        };
        (repo, stats)
    }
}

/// Whether a tenant file parses and pins some component to a git ref.
fn pins_a_ref(tenant: &Parsed<Arc<Tenant>>) -> bool {
    tenant
        .as_ref()
        .is_ok_and(|t| t.spec.components.iter().any(|c| c.git_ref.is_some()))
}

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

fn check_config(snapshot: &Snapshot, config: Config) -> Parsed<Config> {
    let text = snapshot
        .get("fief.yaml")
        .and_then(|e| e.as_ref().ok())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut errors = Vec::new();
    if !config.namespace_pattern.contains("{tenant}") || !config.namespace_pattern.contains("{env}")
    {
        errors.push(Diagnostic::new(
            "fief.yaml",
            line_of_key(&text, "namespacePattern"),
            Problem::InvalidField {
                field: "namespacePattern".to_string(),
                detail: "must contain both {tenant} and {env}".to_string(),
            },
        ));
    }
    if !is_dns_label(&config.agent_namespace) {
        errors.push(Diagnostic::new(
            "fief.yaml",
            line_of_key(&text, "agentNamespace"),
            Problem::InvalidField {
                field: "agentNamespace".to_string(),
                detail: format!("`{}` is not a DNS-1123 label", config.agent_namespace),
            },
        ));
    }
    for entry in &config.component_kinds {
        if parse_component_kind(entry).is_none() {
            errors.push(Diagnostic::new(
                "fief.yaml",
                line_of_key(&text, "componentKinds"),
                Problem::InvalidField {
                    field: "componentKinds".to_string(),
                    detail: format!(
                        "`{entry}` is not `group/Kind` or `group/Kind/resource` (core group: `/Kind`)"
                    ),
                },
            ));
        }
    }
    for pattern in &config.reserved_namespaces {
        if pattern.is_empty() || pattern.chars().any(|c| c.is_whitespace() || c == '/') {
            errors.push(Diagnostic::new(
                "fief.yaml",
                line_of_key(&text, "reservedNamespaces"),
                Problem::InvalidField {
                    field: "reservedNamespaces".to_string(),
                    detail: format!("`{pattern}` is not a namespace glob pattern"),
                },
            ));
        }
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

fn load_tenant(snapshot: &Snapshot, path: &str, stem: &str) -> Parsed<Tenant> {
    let tenant = match parse_file::<Tenant>(snapshot, path) {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Err(vec![Diagnostic::new(
                path,
                Some(1),
                Problem::Yaml {
                    detail: "the tenant file is empty".to_string(),
                },
            )]);
        }
        Err(d) => return Err(vec![d]),
    };
    let text = read(snapshot, path).ok().flatten().map(|t| t.to_string());
    let text = text.as_deref().unwrap_or("");
    let at = |key: &str| line_of_key(text, key);
    let mut errors = Vec::new();
    let mut invalid = |key: &str, field: &str, detail: String| {
        errors.push(Diagnostic::new(
            path,
            at(key),
            Problem::InvalidField {
                field: field.to_string(),
                detail,
            },
        ));
    };
    if tenant.api_version != API_VERSION {
        invalid(
            "apiVersion",
            "apiVersion",
            format!("must be `{API_VERSION}`, found `{}`", tenant.api_version),
        );
    }
    if tenant.kind != "Tenant" {
        invalid(
            "kind",
            "kind",
            format!("must be `Tenant`, found `{}`", tenant.kind),
        );
    }
    if !is_dns_label(&tenant.metadata.name) {
        invalid(
            "name",
            "metadata.name",
            format!(
                "`{}` is not a DNS-1123 label (lowercase letters, digits and `-`, at most 63)",
                tenant.metadata.name
            ),
        );
    }
    let mut seen_envs = Vec::new();
    for env in &tenant.spec.environments {
        if !is_dns_label(env) {
            invalid(
                "environments",
                "spec.environments",
                format!("`{env}` is not a DNS-1123 label"),
            );
        }
        if seen_envs.contains(env) {
            invalid(
                "environments",
                "spec.environments",
                format!("`{env}` is listed twice"),
            );
        }
        seen_envs.push(env.clone());
    }
    let mut seen = Vec::new();
    for c in &tenant.spec.components {
        if seen.contains(&c.name) {
            invalid(
                "components",
                "spec.components",
                format!("component `{}` is listed twice", c.name),
            );
        }
        seen.push(c.name.clone());
    }
    if tenant.metadata.name != stem {
        errors.push(Diagnostic::new(
            path,
            at("name"),
            Problem::NameMismatch {
                file_stem: stem.to_string(),
                name: tenant.metadata.name.clone(),
            },
        ));
    }
    if errors.is_empty() {
        Ok(tenant)
    } else {
        Err(errors)
    }
}

fn load_component(snapshot: &Snapshot, name: &str) -> Parsed<Component> {
    let dir = format!("components/{name}");
    let mut errors = Vec::new();
    let meta = match parse_file::<ComponentMeta>(snapshot, &format!("{dir}/component.yaml")) {
        Ok(m) => m.unwrap_or_default(),
        Err(d) => {
            errors.push(d);
            ComponentMeta::default()
        }
    };
    if let Some(Err(detail)) = meta.health.timeout.as_deref().map(parse_duration) {
        let file = format!("{dir}/component.yaml");
        let line = read(snapshot, &file)
            .ok()
            .flatten()
            .and_then(|t| line_of_key(t, "timeout"));
        errors.push(Diagnostic::new(
            file,
            line,
            Problem::InvalidField {
                field: "health.timeout".to_string(),
                detail,
            },
        ));
    }
    let values = match parse_file::<Value>(snapshot, &format!("{dir}/varz.yaml")) {
        Ok(v) => v.unwrap_or(Value::Object(Default::default())),
        Err(d) => {
            errors.push(d);
            Value::Null
        }
    };
    if !values.is_object() && errors.is_empty() {
        errors.push(Diagnostic::new(
            format!("{dir}/varz.yaml"),
            Some(1),
            Problem::InvalidField {
                field: "varz".to_string(),
                detail: "must be a mapping of values".to_string(),
            },
        ));
    }
    let mut templates = Vec::new();
    for (path, entry) in snapshot.under(&format!("{dir}/templates")) {
        if let Err(problem) = entry {
            errors.push(Diagnostic::new(path.clone(), None, problem.clone()));
        } else if is_rendered_template(path) {
            templates.push(path.clone());
        }
    }
    // `<name>@<ref>` is a pinned component read at a git ref (see `core::pins`).
    let (base, pinned) = match name.split_once('@') {
        Some((base, r)) => (base, Some(r.replace("%2F", "/").replace("%25", "%"))),
        None => (name, None),
    };
    if !is_dns_label(base) {
        errors.push(Diagnostic::new(
            dir.clone(),
            None,
            Problem::InvalidField {
                field: "component name".to_string(),
                detail: format!("`{base}` is not a DNS-1123 label"),
            },
        ));
    }
    if base == BASELINE {
        errors.push(Diagnostic::new(
            dir,
            None,
            Problem::InvalidField {
                field: "component name".to_string(),
                detail: "`baseline` is reserved for the per-tenant baseline".to_string(),
            },
        ));
    }
    if errors.is_empty() {
        Ok(Component {
            name: base.to_string(),
            pinned,
            meta,
            values,
            templates,
        })
    } else {
        Err(errors)
    }
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
