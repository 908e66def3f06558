//! Every kind of problem: once each of its text fields is redacted, its message quotes
//! nothing that was in them.

use super::*;
use crate::diagnostic::OverrideTarget;

/// What every text field holds before the redaction.
const QUOTED: &str = "Quoted_Value";

fn q() -> String {
    QUOTED.to_string()
}

/// One problem of every kind, each text field holding [`QUOTED`].
fn every_kind() -> Vec<Problem> {
    let mut all = file_kinds();
    all.extend(object_kinds());
    all.extend(fleet_kinds());
    all
}

/// One problem of every kind about a rendered object.
fn object_kinds() -> Vec<Problem> {
    vec![
        Problem::NotAnObject { detail: q() },
        Problem::ClusterScoped {
            kind: q(),
            name: q(),
        },
        Problem::ForeignNamespace {
            kind: q(),
            name: q(),
            namespace: q(),
            allowed: q(),
        },
        Problem::DuplicateObject {
            id: q(),
            first: q(),
        },
        Problem::HostNotAllowed {
            kind: q(),
            name: q(),
            host: q(),
            allowed: q(),
        },
        Problem::RegistryNotAllowed {
            kind: q(),
            name: q(),
            image: q(),
            allowed: q(),
        },
        Problem::KindNotAllowed {
            group: q(),
            kind: q(),
            name: q(),
            allowed: q(),
        },
        Problem::InvalidName {
            kind: q(),
            name: q(),
            detail: q(),
        },
        Problem::ReservedLabel {
            kind: q(),
            name: q(),
            label: q(),
        },
        Problem::ForeignSubject {
            name: q(),
            subject: q(),
        },
        Problem::KubeSchema {
            kind: q(),
            name: q(),
            path: q(),
            detail: q(),
        },
        Problem::UnknownKind {
            api_version: q(),
            kind: q(),
            suggestion: q(),
        },
    ]
}

/// One problem of every kind about a repo file or a template.
fn file_kinds() -> Vec<Problem> {
    vec![
        Problem::Unreadable { reason: q() },
        Problem::EscapesRepo { path: q() },
        Problem::Yaml { detail: q() },
        Problem::UnknownField {
            field: q(),
            suggestion: q(),
            allowed: q(),
        },
        Problem::InvalidField {
            field: q(),
            detail: q(),
        },
        Problem::NameMismatch {
            file_stem: q(),
            name: q(),
        },
        Problem::TenantFileTwice {
            tenant: q(),
            other: q(),
        },
        Problem::UnknownComponent {
            component: q(),
            suggestion: q(),
        },
        Problem::UndeclaredEnvironment {
            env: q(),
            suggestion: q(),
            declared: q(),
        },
        Problem::PinnedRef {
            component: q(),
            git_ref: q(),
            detail: q(),
        },
        Problem::MissingDependency {
            component: q(),
            needs: q(),
        },
        Problem::DependencyCycle { cycle: q() },
        Problem::Template { detail: q() },
        Problem::HelmSyntax {
            detail: q(),
            jinja: "x",
        },
        Problem::ForeignTemplate { detail: q() },
        Problem::Secret {
            detail: q(),
            hint: "x",
        },
        Problem::ValuesSchema {
            component: q(),
            path: q(),
            detail: q(),
        },
        Problem::UndefinedValue {
            component: q(),
            path: q(),
            varz: q(),
            suggestion: q(),
        },
        Problem::InvalidSchema { detail: q() },
        Problem::Chart {
            chart: q(),
            detail: q(),
        },
        Problem::Package {
            kind: "helm",
            component: q(),
            detail: q(),
        },
        Problem::UnknownOverride {
            target: OverrideTarget::Component,
            name: q(),
            suggestion: q(),
            known: q(),
        },
    ]
}

#[test]
fn every_text_a_problem_quotes_is_reached_by_its_text_fields() {
    for mut p in every_kind() {
        assert!(p.to_string().contains(QUOTED), "{p:?}");
        for t in p.texts_mut() {
            *t = t.replace(QUOTED, "<hidden>");
        }
        let shown = format!("{p}\n{}", p.hint());
        assert!(!shown.contains(QUOTED), "{p:?} still quotes it: {shown}");
    }
}

#[test]
fn an_invalid_names_name_is_one_of_its_text_fields() {
    let mut p = Problem::InvalidName {
        kind: "ConfigMap".into(),
        name: "Tok_en".into(),
        detail: "must be a DNS-1123 subdomain".into(),
    };
    for t in p.texts_mut() {
        *t = t.replace("Tok_en", "<hidden>");
    }
    assert_eq!(
        p.to_string(),
        "ConfigMap `<hidden>`: must be a DNS-1123 subdomain"
    );
}

/// One problem of every kind about the fleet: namespaces, host suffixes, the render, access.
fn fleet_kinds() -> Vec<Problem> {
    vec![
        Problem::NamespaceCollision {
            namespace: q(),
            other: q(),
        },
        Problem::ReservedNamespace {
            namespace: q(),
            pattern: q(),
        },
        Problem::HostSuffixTaken {
            suffix: q(),
            theirs: q(),
            other: q(),
        },
        Problem::RenderPanicked { message: q() },
        Problem::ClusterAccess { detail: q() },
    ]
}
