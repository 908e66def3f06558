//! Validation: the rules every tenant's render must pass before anything is applied.
//!
//! In: a tenant's rendered objects and namespaces (and, across tenants, every tenant's
//! namespaces). Out: diagnostics naming the template file and line of each offending object.
//! Pure. Names and kinds: [`names`]; what a tenant may claim (namespaces, kinds, host
//! suffixes): [`tenancy`].

pub mod names;
pub mod tenancy;

pub use names::check_names;
pub use tenancy::{
    check_component_bindings, check_component_kinds, check_host_suffixes, check_reserved_namespaces,
};

mod environments;
mod notifications;
mod overrides;

pub use environments::{check_declared, declared};
pub use notifications::check_notifications;
pub use overrides::check_overrides;

use std::collections::{BTreeMap, HashMap};

use crate::diagnostic::{Diagnostic, Problem};
use serde_json::Value;

use crate::model::{BASELINE, Policy, Repo};
use crate::objects::{Scope, scope_of};
use crate::render::{RenderedObject, TenantRender};

/// Scope, namespace and uniqueness rules for one tenant's objects.
pub fn validate_objects(
    objects: &[RenderedObject],
    namespaces: &BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let allowed = || namespaces.values().cloned().collect::<Vec<_>>().join(", ");
    let mut seen: HashMap<&crate::objects::ObjectId, &RenderedObject> =
        HashMap::with_capacity(objects.len());
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

/// Where a pod template sits in each workload kind.
fn pod_spec(o: &RenderedObject) -> Option<&Value> {
    let spec = o.object.get("spec")?;
    match (o.id.group.as_str(), o.id.kind.as_str()) {
        ("", "Pod") => Some(spec),
        ("batch", "CronJob") => spec.pointer("/jobTemplate/spec/template/spec"),
        _ => spec.pointer("/template/spec"),
    }
}

/// `nginx` → `docker.io/library/nginx`, `org/app:1` → `docker.io/org/app:1`.
pub fn normalise_image(image: &str) -> String {
    let first = image.split('/').next().unwrap_or("");
    let has_registry =
        image.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_registry {
        image.to_string()
    } else if image.contains('/') {
        format!("docker.io/{image}")
    } else {
        format!("docker.io/library/{image}")
    }
}

fn host_allowed(host: &str, suffixes: &[String]) -> bool {
    suffixes.iter().any(|s| {
        host == s
            || host
                .strip_suffix(s.as_str())
                .is_some_and(|p| p.ends_with('.'))
    })
}

/// Ingress hosts under the tenant's suffixes, images from allowed registries.
pub fn check_policy(
    objects: &[RenderedObject],
    policy: &Policy,
    tenant: &str,
    base_domain: &str,
    extra_suffixes: &[String],
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let suffixes: Vec<String> = policy
        .ingress_host_suffixes
        .iter()
        .chain(extra_suffixes)
        .map(|s| {
            s.replace("{tenant}", tenant)
                .replace("{baseDomain}", base_domain)
        })
        .collect();
    for o in objects {
        let at = |problem| Diagnostic::new(o.source.file.clone(), Some(o.source.line), problem);
        if o.id.group == "networking.k8s.io" && o.id.kind == "Ingress" {
            let spec = &o.object["spec"];
            let rule_hosts = spec["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| &r["host"]);
            let tls_hosts = spec["tls"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|t| t["hosts"].as_array().into_iter().flatten());
            for host in rule_hosts.chain(tls_hosts).filter_map(Value::as_str) {
                if !host_allowed(host, &suffixes) {
                    errors.push(at(Problem::HostNotAllowed {
                        kind: o.id.kind.clone(),
                        name: o.id.name.clone(),
                        host: host.to_string(),
                        allowed: suffixes.join(", "),
                    }));
                }
            }
        }
        if policy.allowed_registries.is_empty() {
            continue;
        }
        let Some(pod) = pod_spec(o) else { continue };
        for list in ["initContainers", "containers", "ephemeralContainers"] {
            for c in pod[list].as_array().into_iter().flatten() {
                let Some(image) = c["image"].as_str() else {
                    continue;
                };
                let full = normalise_image(image);
                let allowed = policy.allowed_registries.iter().any(|r| {
                    full.strip_prefix(r.trim_end_matches('/'))
                        .is_some_and(|rest| rest.starts_with('/'))
                });
                if !allowed {
                    errors.push(at(Problem::RegistryNotAllowed {
                        kind: o.id.kind.clone(),
                        name: o.id.name.clone(),
                        image: image.to_string(),
                        allowed: policy.allowed_registries.join(", "),
                    }));
                }
            }
        }
    }
    errors
}

/// Two tenants that would share a namespace both fail: neither may own the other's objects.
pub fn check_namespace_collisions(renders: &mut [TenantRender], repo: &Repo) {
    let across = repo.across();
    for render in renders.iter_mut() {
        let Some(claims) = across.claims(&render.tenant) else {
            continue;
        };
        let file = repo.tenant_file(&render.tenant);
        let line = repo
            .snapshot
            .get(&file)
            .and_then(|e| e.as_ref().ok())
            .and_then(|t| crate::model::line_of_key(t, "name"));
        for (_, ns) in &claims.namespaces {
            for other in across.owners(ns) {
                if other != render.tenant {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_normalised_like_docker_does() {
        assert_eq!(normalise_image("nginx:1"), "docker.io/library/nginx:1");
        assert_eq!(normalise_image("org/app"), "docker.io/org/app");
        assert_eq!(normalise_image("ghcr.io/org/app"), "ghcr.io/org/app");
        assert_eq!(normalise_image("localhost/app"), "localhost/app");
        assert_eq!(normalise_image("registry:5000/app"), "registry:5000/app");
    }

    #[test]
    fn host_suffix_matches_whole_labels_only() {
        let s = vec!["acme.example.com".to_string()];
        assert!(host_allowed("acme.example.com", &s));
        assert!(host_allowed("dev.acme.example.com", &s));
        assert!(!host_allowed("evilacme.example.com", &s));
        assert!(!host_allowed("acme.example.com.evil.io", &s));
    }
}
