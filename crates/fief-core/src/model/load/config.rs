//! Loading `fief.yaml`: parsed, then its settings checked.
//!
//! In: the snapshot (and, for an incremental load, the previous repo's config when the file
//! did not change). Out: the [`Config`] (defaults when the file is absent) or diagnostics
//! naming each invalid setting at its line.

use super::{Reuse, line_of_key, parse_file};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Config, Parsed, is_dns_label, parse_component_kind};
use crate::snapshot::Snapshot;

/// The repo's config: the previous one when `fief.yaml` is unchanged, else parsed and checked.
pub(super) fn load_config(snapshot: &Snapshot, reuse: Reuse<'_>) -> Parsed<Config> {
    match reuse {
        Some((prev, changed)) if !changed.contains("fief.yaml") => prev.config.clone(),
        _ => match parse_file::<Config>(snapshot, "fief.yaml") {
            Ok(c) => check_config(snapshot, c.unwrap_or_default()),
            Err(d) => Err(vec![d]),
        },
    }
}

fn check_config(snapshot: &Snapshot, config: Config) -> Parsed<Config> {
    let text = snapshot
        .get("fief.yaml")
        .and_then(|e| e.as_ref().ok())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut errors = Vec::new();
    let mut invalid = |key: &str, detail: String| {
        errors.push(Diagnostic::new(
            "fief.yaml",
            line_of_key(&text, key),
            Problem::InvalidField {
                field: key.to_string(),
                detail,
            },
        ));
    };
    if !config.namespace_pattern.contains("{tenant}") || !config.namespace_pattern.contains("{env}")
    {
        invalid(
            "namespacePattern",
            "must contain both {tenant} and {env}".to_string(),
        );
    }
    if !is_dns_label(&config.agent_namespace) {
        invalid(
            "agentNamespace",
            format!("`{}` is not a DNS-1123 label", config.agent_namespace),
        );
    }
    for entry in &config.component_kinds {
        if parse_component_kind(entry).is_none() {
            invalid(
                "componentKinds",
                format!(
                    "`{entry}` is not `group/Kind` or `group/Kind/resource` (core group: `/Kind`)"
                ),
            );
        }
    }
    if let Some(version) = &config.kubernetes_version
        && !is_kube_version(version)
    {
        invalid(
            "kubernetesVersion",
            format!("`{version}` is not a Kubernetes version like 1.34.0"),
        );
    }
    for entry in &config.api_versions {
        if entry.is_empty() || entry.chars().any(char::is_whitespace) {
            invalid(
                "apiVersions",
                format!("`{entry}` is not an API version like `monitoring.coreos.com/v1`"),
            );
        }
    }
    for pattern in &config.reserved_namespaces {
        if pattern.is_empty() || pattern.chars().any(|c| c.is_whitespace() || c == '/') {
            invalid(
                "reservedNamespaces",
                format!("`{pattern}` is not a namespace glob pattern"),
            );
        }
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

/// `1.34`, `1.34.0` or `v1.34.0`, with an optional `-pre` or `+build` suffix: what Helm's
/// `--kube-version` reads.
fn is_kube_version(text: &str) -> bool {
    let text = text.strip_prefix('v').unwrap_or(text);
    let core = text.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}
