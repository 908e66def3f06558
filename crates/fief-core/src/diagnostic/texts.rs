//! The text a problem quotes: every field that may hold something read from the repo or
//! rendered from it, so a redaction (secret values, see [`crate::secrets::scrub`]) reaches
//! all of them.
//!
//! In: a [`Problem`]. Out: its text fields, mutable. [`Problem::texts_mut`] names every kind
//! of problem (no catch-all arm), so a new kind cannot be added without routing it to the
//! function that lists its fields; a test checks that every kind's text is reached.

use super::Problem;

impl Problem {
    /// Every text field of the problem (all but the fixed hints written in fief's code).
    pub fn texts_mut(&mut self) -> Vec<&mut String> {
        match self {
            Problem::ClusterScoped { .. }
            | Problem::ForeignNamespace { .. }
            | Problem::DuplicateObject { .. }
            | Problem::HostNotAllowed { .. }
            | Problem::RegistryNotAllowed { .. }
            | Problem::KindNotAllowed { .. }
            | Problem::InvalidName { .. }
            | Problem::ReservedLabel { .. }
            | Problem::ForeignSubject { .. }
            | Problem::KubeSchema { .. }
            | Problem::UnknownKind { .. }
            | Problem::NotAnObject { .. } => object_texts(self),
            Problem::Unreadable { .. }
            | Problem::Binary { .. }
            | Problem::Chart { .. }
            | Problem::EscapesRepo { .. }
            | Problem::Yaml { .. }
            | Problem::UnknownField { .. }
            | Problem::InvalidField { .. }
            | Problem::NameMismatch { .. }
            | Problem::TenantFileTwice { .. }
            | Problem::UnknownComponent { .. }
            | Problem::UndeclaredEnvironment { .. }
            | Problem::PinnedRef { .. }
            | Problem::MissingDependency { .. }
            | Problem::DependencyCycle { .. }
            | Problem::Template { .. }
            | Problem::HelmSyntax { .. }
            | Problem::ForeignTemplate { .. }
            | Problem::NamespaceCollision { .. }
            | Problem::Secret { .. }
            | Problem::ReservedNamespace { .. }
            | Problem::HostSuffixTaken { .. }
            | Problem::ValuesSchema { .. }
            | Problem::UndefinedValue { .. }
            | Problem::InvalidSchema { .. }
            | Problem::RenderPanicked { .. }
            | Problem::ClusterAccess { .. }
            | Problem::UnknownOverride { .. }
            | Problem::Package { .. } => file_texts(self),
        }
    }
}

/// The text fields of a problem with a rendered object (as routed by [`Problem::texts_mut`]).
fn object_texts(p: &mut Problem) -> Vec<&mut String> {
    match p {
        Problem::ClusterScoped { kind, name } => vec![kind, name],
        Problem::ForeignNamespace {
            kind,
            name,
            namespace,
            allowed,
        } => vec![kind, name, namespace, allowed],
        Problem::DuplicateObject { id, first } => vec![id, first],
        Problem::HostNotAllowed {
            kind,
            name,
            host,
            allowed,
        } => vec![kind, name, host, allowed],
        Problem::RegistryNotAllowed {
            kind,
            name,
            image,
            allowed,
        } => vec![kind, name, image, allowed],
        Problem::KindNotAllowed {
            group,
            kind,
            name,
            allowed,
        } => vec![group, kind, name, allowed],
        Problem::InvalidName { kind, name, detail } => vec![kind, name, detail],
        Problem::ReservedLabel { kind, name, label } => vec![kind, name, label],
        Problem::ForeignSubject { name, subject } => vec![name, subject],
        Problem::KubeSchema {
            kind,
            name,
            path,
            detail,
        } => vec![kind, name, path, detail],
        Problem::UnknownKind {
            api_version,
            kind,
            suggestion,
        } => vec![api_version, kind, suggestion],
        Problem::NotAnObject { detail } => vec![detail],
        _ => Vec::new(),
    }
}

/// The text fields of a problem with a repo file, a template or the fleet (as routed by
/// [`Problem::texts_mut`]).
fn file_texts(p: &mut Problem) -> Vec<&mut String> {
    match p {
        Problem::Unreadable { reason } => vec![reason],
        Problem::EscapesRepo { path } => vec![path],
        Problem::Yaml { detail }
        | Problem::Template { detail }
        | Problem::HelmSyntax { detail, .. }
        | Problem::ForeignTemplate { detail }
        | Problem::Secret { detail, .. }
        | Problem::InvalidSchema { detail }
        | Problem::ClusterAccess { detail } => vec![detail],
        Problem::DependencyCycle { cycle } => vec![cycle],
        Problem::Package {
            component, detail, ..
        } => vec![component, detail],
        Problem::Chart { chart, detail } => vec![chart, detail],
        Problem::RenderPanicked { message } => vec![message],
        Problem::InvalidField { field, detail } => vec![field, detail],
        Problem::NameMismatch { file_stem, name } => vec![file_stem, name],
        Problem::TenantFileTwice { tenant, other } => vec![tenant, other],
        Problem::UnknownComponent {
            component,
            suggestion,
        } => vec![component, suggestion],
        Problem::MissingDependency { component, needs } => vec![component, needs],
        Problem::NamespaceCollision { namespace, other } => vec![namespace, other],
        Problem::ReservedNamespace { namespace, pattern } => vec![namespace, pattern],
        Problem::UnknownField {
            field,
            suggestion,
            allowed,
        } => vec![field, suggestion, allowed],
        Problem::UndeclaredEnvironment {
            env,
            suggestion,
            declared,
        } => vec![env, suggestion, declared],
        Problem::PinnedRef {
            component,
            git_ref,
            detail,
        } => vec![component, git_ref, detail],
        Problem::HostSuffixTaken {
            suffix,
            theirs,
            other,
        } => vec![suffix, theirs, other],
        Problem::ValuesSchema {
            component,
            path,
            detail,
        } => vec![component, path, detail],
        Problem::UndefinedValue {
            component,
            path,
            varz,
            suggestion,
        } => vec![component, path, varz, suggestion],
        Problem::UnknownOverride {
            name,
            suggestion,
            known,
            ..
        } => vec![name, suggestion, known],
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "texts_tests.rs"]
mod tests;
