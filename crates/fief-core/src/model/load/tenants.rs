//! Loading the tenant files (`tenants/<name>.yaml`, at any depth under `tenants/`) and the
//! set of tenants that pin a ref.
//!
//! In: the snapshot (and, for an incremental load, the previous repo and the changed paths).
//! Out: the [`Tenants`] map, each tenant parsed and checked or its diagnostics; the
//! [`TenantFiles`] each was read from; the stems parsed again (for an incremental load); the
//! names of the tenants that pin a component to a git ref. An incremental load parses only
//! the tenants one of whose files changed. The component entries, environment lists, owners
//! and quotas alike among the tenants a load parses are held once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

use super::{LoadStats, Reuse, is_dns_label, line_of_key};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{API_VERSION, ComponentRef, Owner, Parsed, Quota, Tenant, TenantFiles, Tenants};
use crate::snapshot::{Entry, Snapshot};
use crate::yaml;

/// Every tenant, the files they were read from, and (for an incremental load) the stems that
/// were parsed again.
pub(super) fn load_tenants(
    snapshot: &Snapshot,
    reuse: Reuse<'_>,
    stats: &mut LoadStats,
) -> (Tenants, TenantFiles, Option<BTreeSet<String>>) {
    match reuse {
        Some((prev, changed)) => {
            let (tenants, files, stems) = reload_changed(snapshot, prev, changed, stats);
            (tenants, files, Some(stems))
        }
        None => {
            let (tenants, files) = load_all(snapshot, stats);
            (tenants, files, None)
        }
    }
}

/// The tenant a path under `tenants/` declares: its file name without `.yaml` or `.yml`, at
/// any depth (`tenants/eu/shop.yaml` declares `shop`); none for any other path.
pub fn tenant_stem(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("tenants/")?;
    let file = rest.rsplit('/').next().unwrap_or(rest);
    file.strip_suffix(".yaml")
        .or_else(|| file.strip_suffix(".yml"))
        .filter(|stem| !stem.is_empty())
}

/// Every tenant file of the snapshot, parsed.
fn load_all(snapshot: &Snapshot, stats: &mut LoadStats) -> (Tenants, TenantFiles) {
    let mut by_stem: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, _) in snapshot.under("tenants") {
        if let Some(stem) = tenant_stem(path) {
            by_stem
                .entry(stem.to_string())
                .or_default()
                .push(path.clone());
        }
    }
    let (mut tenants, mut repeated) = (Tenants::new(), Repeated::default());
    for (stem, paths) in &by_stem {
        let tenant = load_stem(snapshot, stem, paths, stats, &mut repeated);
        tenants.insert(stem.clone(), tenant);
    }
    (tenants, by_stem.into_iter().collect())
}

/// The previous tenants (a persistent map: an O(1) copy) with the stems of the changed paths
/// parsed again, so a one-tenant change costs one tenant. A stem's files are its previous
/// ones and the changed paths that name it, those still present.
fn reload_changed(
    snapshot: &Snapshot,
    prev: &crate::model::Repo,
    changed: &BTreeSet<String>,
    stats: &mut LoadStats,
) -> (Tenants, TenantFiles, BTreeSet<String>) {
    let mut touched: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in changed
        .range("tenants/".to_string()..)
        .take_while(|p| p.starts_with("tenants/"))
    {
        if let Some(stem) = tenant_stem(path) {
            touched
                .entry(stem.to_string())
                .or_default()
                .push(path.clone());
        }
    }
    let (mut tenants, mut files) = (prev.tenants.clone(), prev.tenant_files.clone());
    let mut repeated = Repeated::default();
    for (stem, changed_paths) in &touched {
        let mut paths: Vec<String> = files.get(stem).cloned().unwrap_or_default();
        paths.extend(changed_paths.iter().cloned());
        paths.retain(|p| snapshot.get(p).is_some());
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            tenants.remove(stem);
            files.remove(stem);
        } else {
            let tenant = load_stem(snapshot, stem, &paths, stats, &mut repeated);
            tenants.insert(stem.clone(), tenant);
            files.insert(stem.clone(), paths);
        }
    }
    (tenants, files, touched.into_keys().collect())
}

/// The parts of one load's tenants that repeat across a fleet, each held once: component
/// entries, environment lists, owners and quotas (by their JSON: a quantity may be a float).
#[derive(Default)]
struct Repeated {
    components: HashSet<Arc<ComponentRef>>,
    environments: HashSet<Arc<[String]>>,
    owners: HashSet<Arc<Owner>>,
    quotas: HashMap<String, Arc<Quota>>,
}

impl Repeated {
    /// `tenant` with each of its repeating parts replaced by the one held, when alike.
    fn share(&mut self, tenant: &mut Tenant) {
        for c in &mut tenant.spec.components {
            share_in(&mut self.components, c);
        }
        share_in(&mut self.environments, &mut tenant.spec.environments);
        share_in(&mut self.owners, &mut tenant.spec.owner);
        // Keyed by its JSON (a float has no hash), and taken only when equal: the parser
        // refuses non-finite floats, the one kind of number two unequal quotas could write
        // alike (as null).
        if let Ok(key) = serde_json::to_string(&*tenant.spec.quota) {
            let held = self
                .quotas
                .entry(key)
                .or_insert_with(|| tenant.spec.quota.clone());
            if **held == *tenant.spec.quota {
                tenant.spec.quota = held.clone();
            }
        }
    }
}

/// `part` made the one `held` holds when one is alike, added there otherwise.
fn share_in<T: ?Sized + Eq + Hash>(held: &mut HashSet<Arc<T>>, part: &mut Arc<T>) {
    match held.get(&**part) {
        Some(alike) => *part = alike.clone(),
        None => {
            held.insert(part.clone());
        }
    }
}

/// One tenant from its files (sorted): the last of those in one directory (of `x.yaml` and
/// `x.yml`, `x.yml`); files in two directories declare the tenant twice, an error at each.
/// Its repeating parts are those of `repeated` where one is alike, added there otherwise.
fn load_stem(
    snapshot: &Snapshot,
    stem: &str,
    paths: &[String],
    stats: &mut LoadStats,
    repeated: &mut Repeated,
) -> Parsed<Arc<Tenant>> {
    if let Some(twice) = declared_twice(stem, paths) {
        return Err(twice);
    }
    let Some(path) = paths.last() else {
        return Err(Vec::new());
    };
    stats.tenants_parsed += 1;
    let mut tenant = load_tenant(path, snapshot.get(path), stem)?;
    repeated.share(&mut tenant);
    Ok(Arc::new(tenant))
}

/// A tenant whose files (sorted) are in two directories: an error at each file.
pub(in crate::model) fn declared_twice(stem: &str, paths: &[String]) -> Option<Vec<Diagnostic>> {
    let dir = |p: &str| {
        p.rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string())
    };
    let twice: Vec<Diagnostic> = paths
        .iter()
        .filter_map(|p| {
            let other = paths.iter().find(|o| dir(o) != dir(p))?;
            Some(Diagnostic::new(
                p.as_str(),
                None,
                Problem::TenantFileTwice {
                    tenant: stem.to_string(),
                    other: other.clone(),
                },
            ))
        })
        .collect();
    (!twice.is_empty()).then_some(twice)
}

/// The tenants that pin a component to a git ref; an incremental load updates only the
/// stems parsed again.
pub(super) fn pinning(
    reuse: Reuse<'_>,
    changed_tenants: Option<&BTreeSet<String>>,
    tenants: &Tenants,
) -> imbl::OrdSet<String> {
    match (reuse, changed_tenants) {
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
    }
}

/// Whether a tenant file parses and pins some component to a git ref (in any environment).
fn pins_a_ref(tenant: &Parsed<Arc<Tenant>>) -> bool {
    tenant
        .as_ref()
        .is_ok_and(|t| t.spec.pinned_refs().next().is_some())
}

/// One tenant file, parsed and checked, from its `entry` (`None`: absent); `stem` is its file
/// name without the extension.
pub(in crate::model) fn load_tenant(
    path: &str,
    entry: Option<&Entry>,
    stem: &str,
) -> Parsed<Tenant> {
    let empty = || {
        Err(vec![Diagnostic::new(
            path,
            Some(1),
            Problem::Yaml {
                detail: "the tenant file is empty".to_string(),
            },
        )])
    };
    let text: &str = match entry {
        None => return empty(),
        Some(Err(problem)) => return Err(vec![Diagnostic::new(path, None, problem.clone())]),
        Some(Ok(text)) => text,
    };
    let tenant = match yaml::parse_single_typed::<Tenant>(text) {
        Ok(Some(t)) => t,
        Ok(None) => return empty(),
        Err(e) => {
            return Err(vec![Diagnostic::new(
                path,
                e.line,
                Problem::from_yaml_error(&e.message),
            )]);
        }
    };
    let mut errors = field_errors(&tenant, path, text);
    if tenant.metadata.name != stem {
        errors.push(Diagnostic::new(
            path,
            line_of_key(text, "name"),
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

/// The tenant's invalid fields (kind, version, names, duplicates), each at its line of `text`.
fn field_errors(tenant: &Tenant, path: &str, text: &str) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let mut invalid = |key: &str, field: &str, detail: String| {
        errors.push(Diagnostic::new(
            path,
            line_of_key(text, key),
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
    for env in tenant.spec.environments.iter() {
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
    errors
}
