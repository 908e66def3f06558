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
    let file = repo.tenant_file(&tenant.metadata.name);
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

/// A host suffix belongs to one tenant. Claimed are each tenant's `spec.hostSuffixes` and the
/// policy suffixes that contain `{tenant}` (default `{tenant}.{baseDomain}`); suffixes without
/// `{tenant}` are shared by design. Two claims overlap when equal or one is under the other.
/// A `spec.hostSuffixes` claim that overlaps another tenant's `{tenant}` suffix fails the
/// claiming tenant alone; any other overlap fails both. Each claim is looked up in the
/// cross-tenant index ([`crate::model::Across::overlapping`]), so the cost is the
/// renders judged and the overlaps found, not the fleet.
pub fn check_host_suffixes(renders: &mut [TenantRender], repo: &Repo) {
    let across = repo.across();
    for render in renders.iter_mut() {
        let Some(mine) = across.claims(&render.tenant) else {
            continue;
        };
        let file = repo.tenant_file(&render.tenant);
        let text = tenant_text(repo, &file);
        for mine in &mine.suffixes {
            let overlapping = across.overlapping(&mine.suffix);
            let others = overlapping.into_iter().filter(|(t, _)| *t != render.tenant);
            for (other, index) in others {
                let Some(theirs) = across.claims(other).and_then(|c| c.suffixes.get(index)) else {
                    continue;
                };
                if mine.explicit || !theirs.explicit {
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
    use std::sync::Arc;

    use super::*;
    use crate::snapshot::Snapshot;

    /// The check as a comparison of every claim with every other tenant's: the reference the
    /// indexed check must agree with.
    fn all_pairs(renders: &mut [TenantRender], repo: &Repo) {
        let overlaps = |a: &str, b: &str| {
            let under = |x: &str, y: &str| x.strip_suffix(y).is_some_and(|p| p.ends_with('.'));
            a == b || under(a, b) || under(b, a)
        };
        let across = repo.across();
        for render in renders.iter_mut() {
            let Some(mine) = across.claims(&render.tenant) else {
                continue;
            };
            let file = format!("tenants/{}.yaml", render.tenant);
            let text = tenant_text(repo, &file);
            for mine in &mine.suffixes {
                let others = across.claimed().filter(|(t, _)| *t != render.tenant);
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
    }

    fn repo(tenants: &[(&str, &str)]) -> Repo {
        let config = "baseDomain: Example.COM\npolicy:\n  ingressHostSuffixes:\n    - \"{tenant}.{baseDomain}\"\n    - \"{tenant}.apps.{baseDomain}\"\n    - \"shared.{baseDomain}\"\n";
        let mut files = vec![("fief.yaml".to_string(), config.to_string())];
        for (name, suffixes) in tenants {
            files.push((
                format!("tenants/{name}.yaml"),
                format!(
                    "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  hostSuffixes: {suffixes}\n"
                ),
            ));
        }
        Repo::load(Arc::new(Snapshot::from_files(files)))
    }

    /// The host-suffix errors of every tenant, by the indexed check and by the reference.
    fn both(repo: &Repo) -> (Vec<TenantRender>, Vec<TenantRender>) {
        let renders: Vec<TenantRender> = repo
            .tenants
            .keys()
            .map(|t| TenantRender {
                tenant: t.clone(),
                ..Default::default()
            })
            .collect();
        let (mut indexed, mut reference) = (renders.clone(), renders);
        check_host_suffixes(&mut indexed, repo);
        all_pairs(&mut reference, repo);
        (indexed, reference)
    }

    fn messages(renders: &[TenantRender], tenant: &str) -> Vec<String> {
        let render = renders.iter().find(|r| r.tenant == tenant);
        let errors = render.map(|r| r.errors.as_slice()).unwrap_or_default();
        errors.iter().map(|d| d.problem.to_string()).collect()
    }

    const TRICKY: &[(&str, &str)] = &[
        ("acme", "[acme.io]"),
        // Under acme's own suffix: both fail (both claim it explicitly).
        ("beta", "[shop.acme.io]"),
        // Equal to acme's once lower-cased and without the trailing dot.
        ("gamma", "[\"ACME.IO.\"]"),
        // Under acme's `{tenant}` suffix: delta fails, acme does not.
        ("delta", "[x.acme.example.com]"),
        // Above every tenant's `{tenant}` suffixes: it fails against each, they do not.
        ("eps", "[example.com]"),
        // Ends with acme.io but not on a whole label: no overlap.
        ("zed", "[bacme.io, shared.example.com]"),
        // The same suffix twice, and one another tenant claims too.
        ("dup", "[dup.io, dup.io, dup.acme.example.com]"),
        ("dupe", "[dup.io]"),
        // Its own `{tenant}` suffix, claimed again: no overlap with itself.
        ("self", "[self.example.com, deep.self.apps.example.com]"),
        ("blank", "[\"\", \".\"]"),
        ("quiet", "[]"),
    ];

    #[test]
    fn the_indexed_check_gives_the_all_pairs_verdicts_on_tricky_suffixes() {
        let repo = repo(TRICKY);
        let (indexed, reference) = both(&repo);
        let errors = |rs: &[TenantRender]| {
            rs.iter()
                .map(|r| (r.tenant.clone(), r.errors.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(errors(&indexed), errors(&reference));
        assert!(indexed.iter().any(|r| !r.errors.is_empty()));
    }

    #[test]
    fn a_claim_fails_on_equal_parent_and_child_suffixes_on_whole_labels_only() {
        let repo = repo(TRICKY);
        let (indexed, _) = both(&repo);
        let acme = messages(&indexed, "acme");
        let taken = |mine: &str, theirs: &str, other: &str| {
            format!("host suffix `{mine}` overlaps `{theirs}`, a host suffix of tenant `{other}`")
        };
        // acme loses to the equal and the child explicit claims, not to delta's claim under
        // its `{tenant}` suffix, nor to eps (eps's claim is explicit, acme's are not).
        assert!(
            acme.contains(&taken("acme.io", "shop.acme.io", "beta")),
            "{acme:?}"
        );
        assert!(
            acme.contains(&taken("acme.io", "acme.io", "gamma")),
            "{acme:?}"
        );
        assert!(
            !acme
                .iter()
                .any(|m| m.contains("delta") || m.contains("eps")),
            "{acme:?}"
        );
        let beta = messages(&indexed, "beta");
        assert!(
            beta.contains(&taken("shop.acme.io", "acme.io", "acme")),
            "{beta:?}"
        );
        let delta = messages(&indexed, "delta");
        assert_eq!(
            delta,
            [
                taken("x.acme.example.com", "acme.example.com", "acme"),
                taken("x.acme.example.com", "example.com", "eps"),
            ]
        );
        let eps = messages(&indexed, "eps");
        assert!(
            eps.contains(&taken("example.com", "zed.apps.example.com", "zed")),
            "{eps:?}"
        );
        assert!(
            messages(&indexed, "zed")
                .iter()
                .all(|m| m.contains("`eps`"))
        );
        assert!(messages(&indexed, "quiet").is_empty());
        assert!(messages(&indexed, "blank").is_empty());
        let dup = messages(&indexed, "dup");
        assert_eq!(
            dup.iter().filter(|m| m.contains("`dupe`")).count(),
            2,
            "{dup:?}"
        );
        assert!(dup.iter().all(|m| !m.contains("`dup`")), "{dup:?}");
        assert!(
            messages(&indexed, "self")
                .iter()
                .all(|m| m.contains("`eps`"))
        );
    }
}
