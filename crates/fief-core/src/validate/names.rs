//! Object names and kinds as the API server checks them, so that a bad name fails at
//! validate with file and line (not at apply), and no name can make `render --out` write
//! outside its folder.
//!
//! In: a tenant's rendered objects. Out: a diagnostic for each object whose kind or name the
//! API server would refuse, and for each label a template sets that fief reserves
//! ([`check_reserved_labels`]). Pure.

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::is_dns_label;
use crate::render::RenderedObject;

/// Longest DNS-1123 subdomain.
const MAX_SUBDOMAIN: usize = 253;

/// Whether `name` is a DNS-1123 subdomain: dot-separated DNS labels, at most 253 characters.
pub fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_SUBDOMAIN && name.split('.').all(is_dns_label)
}

/// Whether `name` is a DNS-1035 label (a DNS-1123 label that starts with a letter).
pub fn is_dns1035_label(name: &str) -> bool {
    is_dns_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase())
}

/// What is wrong with `name` for an object of `group`/`kind`, as the API server validates it:
/// Namespaces are DNS-1123 labels, Services DNS-1035 labels, RBAC objects path segments
/// (no `/`, `%`, `.` or `..`), everything else (custom resources included) DNS-1123
/// subdomains.
pub fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    let ok = match (group, kind) {
        ("", "Namespace") => is_dns_label(name),
        ("", "Service") => is_dns1035_label(name),
        ("rbac.authorization.k8s.io", _) => {
            !name.is_empty()
                && name != "."
                && name != ".."
                && !name.contains(['/', '%'])
                && !name.chars().any(char::is_control)
        }
        _ => is_dns_subdomain(name),
    };
    if ok {
        return None;
    }
    Some(match (group, kind) {
        ("", "Namespace") => {
            "a Namespace name must be a DNS-1123 label (lowercase letters, digits, `-`, at most 63)"
        }
        ("", "Service") => {
            "a Service name must be a DNS-1035 label (starts with a letter; lowercase letters, digits, `-`, at most 63)"
        }
        ("rbac.authorization.k8s.io", _) => {
            "an RBAC object name must not be `.` or `..` nor contain `/` or `%`"
        }
        _ => {
            "the name must be a DNS-1123 subdomain (lowercase letters, digits, `-` and `.`, each part starting and ending with a letter or digit, at most 253)"
        }
    }
    .to_string())
}

/// What is wrong with a kind: it must be a letter then letters and digits.
fn kind_problem(kind: &str) -> Option<String> {
    let ok = kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    (!ok).then(|| "a kind is a letter followed by letters and digits".to_string())
}

/// A diagnostic for every object whose kind or name the API server would refuse.
pub fn check_names(objects: &[RenderedObject]) -> Vec<Diagnostic> {
    objects
        .iter()
        .filter_map(|o| {
            let detail = kind_problem(&o.id.kind)
                .or_else(|| name_problem(&o.id.group, &o.id.kind, &o.id.name))?;
            Some(Diagnostic::new(
                o.source.file.clone(),
                Some(o.source.line),
                Problem::InvalidName {
                    kind: o.id.kind.clone(),
                    name: o.id.name.clone(),
                    detail,
                },
            ))
        })
        .collect()
}

/// Label prefix of the ApplySet bookkeeping (KEP-3659). fief sets
/// [`crate::objects::LABEL_PART_OF`] on every object itself; every other label under
/// it is the inventories' (`applyset.kubernetes.io/id` marks an ApplySet parent: the agent's
/// drift watches skip objects carrying it, and ApplySet tooling would take the object for a
/// parent), so no template may set one.
const APPLYSET_PREFIX: &str = "applyset.kubernetes.io/";

/// A diagnostic for every object whose labels include one under `applyset.kubernetes.io/`
/// other than the `part-of` label fief sets (see [`APPLYSET_PREFIX`]).
pub fn check_reserved_labels(objects: &[RenderedObject]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for o in objects {
        let labels = o.object["metadata"]["labels"].as_object();
        for key in labels.into_iter().flat_map(|l| l.keys()) {
            if key.starts_with(APPLYSET_PREFIX) && key != crate::objects::LABEL_PART_OF {
                out.push(Diagnostic::new(
                    o.source.file.clone(),
                    Some(o.source.line),
                    Problem::ReservedLabel {
                        kind: o.id.kind.clone(),
                        name: o.id.name.clone(),
                        label: key.clone(),
                    },
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_may_not_set_applyset_labels_other_than_the_member_label_fief_sets() {
        let object = |labels: serde_json::Value| RenderedObject {
            hash: Default::default(),
            component: "app".into(),
            env: "prod".into(),
            id: crate::objects::ObjectId {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "t-prod".into(),
                name: "cm".into(),
            },
            source: crate::render::Source {
                file: "components/app/templates/cm.yaml".into(),
                line: 1,
            },
            object: serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "labels": labels}
            }),
        };
        let ok = object(serde_json::json!({
            crate::objects::LABEL_PART_OF: "applyset-x-v1",
            "fief.dev/environment": "prod",
        }));
        assert!(check_reserved_labels(&[ok]).is_empty());
        let bad = object(serde_json::json!({"applyset.kubernetes.io/id": "applyset-y-v1"}));
        let errors = check_reserved_labels(&[bad]);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("applyset.kubernetes.io/id"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn names_are_checked_per_kind_like_the_api_server() {
        assert!(name_problem("", "ConfigMap", "app.config-1").is_none());
        assert!(name_problem("", "ConfigMap", "../../x").is_some());
        assert!(name_problem("", "ConfigMap", "a..b").is_some());
        assert!(name_problem("", "ConfigMap", "Upper").is_some());
        assert!(name_problem("", "ConfigMap", &"a".repeat(254)).is_some());
        assert!(name_problem("", "Service", "1web").is_some());
        assert!(name_problem("", "Service", "web").is_none());
        assert!(name_problem("", "Namespace", "a.b").is_some());
        assert!(name_problem("rbac.authorization.k8s.io", "Role", "system:leader").is_none());
        assert!(name_problem("rbac.authorization.k8s.io", "Role", "..").is_some());
        assert!(name_problem("rbac.authorization.k8s.io", "Role", "a/b").is_some());
        assert!(name_problem("monitoring.coreos.com", "ServiceMonitor", "x/y").is_some());
        assert!(kind_problem("../Secret").is_some());
        assert!(kind_problem("ConfigMap").is_none());
    }
}
