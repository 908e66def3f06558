//! Component order of a tenant: dependencies first, in spec order.
//!
//! In: the repo and a tenant. Out: its components in apply order, or the diagnostics of
//! unknown components, missing dependencies and cycles. Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Component, Repo, Tenant, line_of_key};

/// The tenant's components, dependencies first (stable by spec order); or the diagnostics of
/// unknown components, missing dependencies and cycles.
pub(super) fn component_order<'r>(
    repo: &'r Repo,
    tenant: &Tenant,
    tenant_file: &str,
) -> Result<Vec<&'r Component>, Vec<Diagnostic>> {
    let text = repo
        .snapshot
        .get(tenant_file)
        .and_then(|e| e.as_ref().ok())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let line_of = |name: &str| {
        text.lines()
            .position(|l| {
                let t = l.trim_start().trim_start_matches("- ").trim_start();
                t.strip_prefix("name:")
                    .map(|v| v.trim().trim_matches(['"', '\'']) == name)
                    .unwrap_or(false)
            })
            .map(|i| i + 1)
    };
    let mut errors = Vec::new();
    let mut enabled: BTreeMap<&str, &Component> = BTreeMap::new();
    for c in &tenant.spec.components {
        match repo.components.get(&c.key()) {
            None => errors.push(Diagnostic::new(
                tenant_file,
                line_of(&c.name),
                repo.unknown_component(&c.name),
            )),
            Some(Err(ds)) => errors.extend(ds.iter().cloned()),
            Some(Ok(component)) => {
                enabled.insert(c.name.as_str(), component);
            }
        }
    }
    for component in enabled.values() {
        for dep in &component.meta.depends_on {
            if enabled.contains_key(dep.as_str()) {
                continue;
            }
            if repo.components.contains_key(dep) {
                errors.push(Diagnostic::new(
                    tenant_file,
                    line_of(&component.name),
                    Problem::MissingDependency {
                        component: component.name.clone(),
                        needs: dep.clone(),
                    },
                ));
            } else {
                let file = format!("components/{}/component.yaml", component.name);
                let line = repo
                    .snapshot
                    .get(&file)
                    .and_then(|e| e.as_ref().ok())
                    .and_then(|t| line_of_key(t, "dependsOn"));
                errors.push(Diagnostic::new(file, line, repo.unknown_component(dep)));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Depth-first topological sort in spec order; a grey node seen again is a cycle.
    let mut order = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for c in &tenant.spec.components {
        let mut path = Vec::new();
        if let Err(cycle) = visit(&c.name, &enabled, &mut done, &mut path, &mut order) {
            let file = format!("components/{}/component.yaml", c.name);
            let line = repo
                .snapshot
                .get(&file)
                .and_then(|e| e.as_ref().ok())
                .and_then(|t| line_of_key(t, "dependsOn"));
            return Err(vec![Diagnostic::new(
                file,
                line,
                Problem::DependencyCycle { cycle },
            )]);
        }
    }
    Ok(order)
}

fn visit<'r>(
    name: &str,
    enabled: &BTreeMap<&str, &'r Component>,
    done: &mut BTreeSet<&'r str>,
    path: &mut Vec<String>,
    order: &mut Vec<&'r Component>,
) -> Result<(), String> {
    let Some(component) = enabled.get(name) else {
        return Ok(());
    };
    if done.contains(component.name.as_str()) {
        return Ok(());
    }
    if path.iter().any(|p| p == name) {
        path.push(name.to_string());
        return Err(path.join(" -> "));
    }
    path.push(name.to_string());
    for dep in &component.meta.depends_on {
        visit(dep, enabled, done, path, order)?;
    }
    path.pop();
    done.insert(component.name.as_str());
    order.push(component);
    Ok(())
}
