//! Loading the tenant files (`tenants/<name>.yaml`) and the set of tenants that pin a ref.
//!
//! In: the snapshot (and, for an incremental load, the previous repo and the changed paths).
//! Out: the [`Tenants`] map, each tenant parsed and checked or its diagnostics; the stems
//! parsed again (for an incremental load); the names of the tenants that pin a component to
//! a git ref. An incremental load parses only the tenant files whose path changed.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{LoadStats, Reuse, is_dns_label, line_of_key, parse_file, read, yaml_stem};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{API_VERSION, Parsed, Tenant, Tenants};
use crate::snapshot::Snapshot;

/// Every tenant, and (for an incremental load) the stems that were parsed again.
pub(super) fn load_tenants(
    snapshot: &Snapshot,
    reuse: Reuse<'_>,
    stats: &mut LoadStats,
) -> (Tenants, Option<BTreeSet<String>>) {
    match reuse {
        Some((prev, changed)) => {
            let (tenants, stems) = reload_changed(snapshot, prev.tenants.clone(), changed, stats);
            (tenants, Some(stems))
        }
        None => (load_all(snapshot, stats), None),
    }
}

/// Every tenant file of the snapshot, parsed.
fn load_all(snapshot: &Snapshot, stats: &mut LoadStats) -> Tenants {
    let mut tenants = Tenants::new();
    for (path, _) in snapshot.under("tenants") {
        let Some(stem) = yaml_stem(path, "tenants/") else {
            continue;
        };
        stats.tenants_parsed += 1;
        tenants.insert(
            stem.to_string(),
            load_tenant(snapshot, path, stem).map(Arc::new),
        );
    }
    tenants
}

/// The previous tenants (a persistent map: an O(1) copy) with the stems of the changed paths
/// parsed again, so a one-tenant change costs one tenant.
fn reload_changed(
    snapshot: &Snapshot,
    mut tenants: Tenants,
    changed: &BTreeSet<String>,
    stats: &mut LoadStats,
) -> (Tenants, BTreeSet<String>) {
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
                parsed = Some(load_tenant(snapshot, &path, stem).map(Arc::new));
            }
        }
        match parsed {
            Some(tenant) => tenants.insert(stem.clone(), tenant),
            None => tenants.remove(stem),
        };
    }
    (tenants, stems)
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

/// One tenant file, parsed and checked; `stem` is its file name without the extension.
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
    errors
}
