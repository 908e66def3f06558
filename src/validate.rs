//! Validation: the rules every tenant's render must pass before anything is applied.
//!
//! In: a tenant's rendered objects and namespaces (and, across tenants, every tenant's
//! namespaces). Out: diagnostics naming the template file and line of each offending object.
//! Pure.

use std::collections::{BTreeMap, HashMap};

use crate::error::{Diagnostic, Problem};
use crate::model::{BASELINE, Repo};
use crate::objects::{Scope, scope_of};
use crate::render::{RenderedObject, TenantRender};

/// Scope, namespace and uniqueness rules for one tenant's objects.
pub fn validate_objects(
    objects: &[RenderedObject],
    namespaces: &BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let allowed = || namespaces.values().cloned().collect::<Vec<_>>().join(", ");
    let mut seen: HashMap<&crate::objects::ObjectId, &RenderedObject> = HashMap::new();
    for o in objects {
        let at = |problem| Diagnostic::new(o.source.file.clone(), Some(o.source.line), problem);
        let cluster = scope_of(&o.id.group, &o.id.kind) == Scope::Cluster;
        if cluster && o.component != BASELINE {
            errors.push(at(Problem::ClusterScoped {
                kind: o.id.kind.clone(),
                name: o.id.name.clone(),
            }));
        }
        let is_namespace = o.id.group.is_empty() && o.id.kind == "Namespace";
        let target = if is_namespace {
            Some(&o.id.name)
        } else if cluster {
            None
        } else {
            Some(&o.id.namespace)
        };
        if let Some(ns) = target
            && !namespaces.values().any(|n| n == ns)
        {
            errors.push(at(Problem::ForeignNamespace {
                kind: o.id.kind.clone(),
                name: o.id.name.clone(),
                namespace: ns.clone(),
                allowed: allowed(),
            }));
        }
        if let Some(first) = seen.get(&o.id) {
            errors.push(at(Problem::DuplicateObject {
                id: o.id.to_string(),
                first: first.source.to_string(),
            }));
        } else {
            seen.insert(&o.id, o);
        }
    }
    errors
}

/// Two tenants that would share a namespace both fail: neither may own the other's objects.
pub fn check_namespace_collisions(
    renders: &mut [TenantRender],
    all: &BTreeMap<String, BTreeMap<String, String>>,
    repo: &Repo,
) {
    let mut owners: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (tenant, namespaces) in all {
        for ns in namespaces.values() {
            owners.entry(ns.as_str()).or_default().push(tenant.as_str());
        }
    }
    for render in renders.iter_mut() {
        let Some(namespaces) = all.get(&render.tenant) else {
            continue;
        };
        let file = format!("tenants/{}.yaml", render.tenant);
        let line = repo
            .snapshot
            .get(&file)
            .and_then(|e| e.as_ref().ok())
            .and_then(|t| crate::model::line_of_key(t, "name"));
        for ns in namespaces.values() {
            for other in owners.get(ns.as_str()).into_iter().flatten() {
                if *other != render.tenant {
                    render.errors.push(
                        Diagnostic::new(
                            file.clone(),
                            line,
                            Problem::NamespaceCollision {
                                namespace: ns.clone(),
                                other: other.to_string(),
                            },
                        )
                        .for_tenant(&render.tenant),
                    );
                }
            }
        }
    }
}
