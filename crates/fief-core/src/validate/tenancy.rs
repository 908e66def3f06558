//! What a tenant may claim: namespaces (never a reserved one), component kinds (only those
//! fief.yaml allows) and Ingress host suffixes (each belongs to one tenant).
//!
//! In: fief.yaml settings, tenant files and rendered objects. Out: diagnostics naming the
//! tenant file line (or the template line of an object). Pure.

use std::collections::BTreeMap;

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{BASELINE, Config, Repo, Tenant, is_dns_label, line_of_key};
use crate::objects::{Scope, scope_of};
use crate::render::{RenderedObject, TenantRender};

fn tenant_text<'r>(repo: &'r Repo, file: &str) -> &'r str {
    repo.snapshot
        .get(file)
        .and_then(|e| e.as_ref().ok())
        .map_or("", |t| t)
}

/// Every namespace of the tenant must be a DNS-1123 label and not reserved (`kube-*`,
/// `default`, the agent namespace, fief.yaml `reservedNamespaces`). Reported at the tenant
/// file's `environments` line when the tenant lists the environment, else its `name` line.
pub fn check_reserved_namespaces(
    repo: &Repo,
    config: &Config,
    tenant: &Tenant,
    namespaces: &BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    let file = format!("tenants/{}.yaml", tenant.metadata.name);
    let text = tenant_text(repo, &file);
    let mut errors = Vec::new();
    for (env, ns) in namespaces {
        let key = if tenant.spec.environments.contains(env) {
            "environments"
        } else {
            "name"
        };
        let at = |problem| Diagnostic::new(file.clone(), line_of_key(text, key), problem);
        if !is_dns_label(ns) {
            errors.push(at(Problem::InvalidName {
                kind: "Namespace".to_string(),
                name: ns.clone(),
                detail: "a Namespace name must be a DNS-1123 label (check namespacePattern in fief.yaml)"
                    .to_string(),
            }));
        }
        if let Some(pattern) = config.reserved_match(ns) {
            errors.push(at(Problem::ReservedNamespace {
                namespace: ns.clone(),
                pattern,
            }));
        }
    }
    errors
}

/// Component objects (namespaced ones; cluster-scoped ones fail on their own) must be of a
/// kind in the allowed list ([`Config::component_kinds`]).
pub fn check_component_kinds(objects: &[RenderedObject], config: &Config) -> Vec<Diagnostic> {
    let kinds = config.component_kinds_shared();
    let allowed = || {
        kinds
            .iter()
            .map(|k| format!("{}/{}", k.group, k.kind))
            .collect::<Vec<_>>()
            .join(", ")
    };
    objects
        .iter()
        .filter(|o| o.component != BASELINE)
        .filter(|o| scope_of(&o.id.group, &o.id.kind) == Scope::Namespaced)
        .filter(|o| {
            !kinds
                .iter()
                .any(|k| k.group == o.id.group && k.kind == o.id.kind)
        })
        // A kind that its built-in API group does not serve (a typo) is reported, with a
        // suggestion, by the Kubernetes schema check instead.
        .filter(|o| !crate::schema::k8s::is_unknown_builtin(&o.object))
        .map(|o| {
            Diagnostic::new(
                o.source.file.clone(),
                Some(o.source.line),
                Problem::KindNotAllowed {
                    group: o.id.group.clone(),
                    kind: o.id.kind.clone(),
                    name: o.id.name.clone(),
                    allowed: allowed(),
                },
            )
        })
        .collect()
}

/// Component RoleBindings may bind only ServiceAccounts of the tenant's own namespaces:
/// never a user, a group (`system:authenticated` would open the tenant's namespace to every
/// other tenant) or another namespace's ServiceAccount. People get access via `spec.access`.
pub fn check_component_bindings(
    objects: &[RenderedObject],
    namespaces: &BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for o in objects.iter().filter(|o| {
        o.component != BASELINE
            && o.id.group == "rbac.authorization.k8s.io"
            && o.id.kind == "RoleBinding"
    }) {
        let subjects = o.object.get("subjects").and_then(|s| s.as_array());
        for subject in subjects.into_iter().flatten() {
            let field = |k: &str| subject.get(k).and_then(|v| v.as_str()).unwrap_or("");
            let ns = match field("namespace") {
                "" => o.id.namespace.as_str(),
                ns => ns,
            };
            let own = field("kind") == "ServiceAccount" && namespaces.values().any(|n| n == ns);
            if !own {
                let what = if field("kind") == "ServiceAccount" {
                    format!("ServiceAccount {ns}/{}", field("name"))
                } else {
                    format!("{} {}", field("kind"), field("name"))
                };
                errors.push(Diagnostic::new(
                    o.source.file.clone(),
                    Some(o.source.line),
                    Problem::ForeignSubject {
                        name: o.id.name.clone(),
                        subject: what,
                    },
                ));
            }
        }
    }
    errors
}

/// Whether two suffixes are equal or one lies under the other (whole labels only).
fn overlaps(a: &str, b: &str) -> bool {
    let under = |x: &str, y: &str| x.strip_suffix(y).is_some_and(|p| p.ends_with('.'));
    a == b || under(a, b) || under(b, a)
}

/// A host suffix belongs to one tenant. Claimed are each tenant's `spec.hostSuffixes` and the
/// policy suffixes that contain `{tenant}` (default `{tenant}.{baseDomain}`); suffixes without
/// `{tenant}` are shared by design. Two claims overlap when equal or one is under the other.
/// A `spec.hostSuffixes` claim that overlaps another tenant's `{tenant}` suffix fails the
/// claiming tenant alone; any other overlap fails both.
pub fn check_host_suffixes(renders: &mut [TenantRender], repo: &Repo) {
    let across = repo.across();
    for render in renders.iter_mut() {
        let Some(mine) = across.tenants.get(&render.tenant) else {
            continue;
        };
        let file = format!("tenants/{}.yaml", render.tenant);
        let text = tenant_text(repo, &file);
        for mine in &mine.suffixes {
            let others = across.tenants.iter().filter(|(t, _)| **t != render.tenant);
            for (other, claims) in others {
                for theirs in &claims.suffixes {
                    let loses = mine.explicit || !theirs.explicit;
                    if loses && overlaps(&mine.suffix, &theirs.suffix) {
                        let key = if mine.explicit {
                            "hostSuffixes"
                        } else {
                            "name"
                        };
                        render.errors.push(
                            Diagnostic::new(
                                file.clone(),
                                line_of_key(text, key),
                                Problem::HostSuffixTaken {
                                    suffix: mine.suffix.clone(),
                                    theirs: theirs.suffix.clone(),
                                    other: other.clone(),
                                },
                            )
                            .for_tenant(&render.tenant),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_overlap_on_whole_labels() {
        assert!(overlaps("a.example.com", "a.example.com"));
        assert!(overlaps("x.a.example.com", "a.example.com"));
        assert!(overlaps("example.com", "a.example.com"));
        assert!(!overlaps("ba.example.com", "a.example.com"));
    }
}
