//! Notification channels: fief.yaml's `notifications.providers` and a tenant's
//! `spec.notifications` must name a known provider type, have unique names, and read their
//! URL from a key of a SOPS-encrypted file the channel may use (any under `secrets/` for the
//! platform, the tenant's own secret file for a tenant) or, fief.yaml's only, from a key of
//! a Secret in the agent's namespace (well-formed names; the cluster is not read): never
//! from plain text.
//!
//! In: the repo (its files and parsed SOPS files, nothing decrypted), fief.yaml and a tenant.
//! Out: a diagnostic at the file and line of each problem; a diagnostic never repeats a URL
//! written in plain text. Pure.

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{
    Channel, Config, ProviderType, Repo, SecretKeyRef, Tenant, UrlSource, is_dns_label,
};
use crate::schema::locate::{Step, line_of_path};
use crate::secrets::{ENCRYPTED, tenant_paths};
use crate::validate::names::is_dns_subdomain;

/// Where a list of channels is written, and which secret files its channels may read.
struct List<'a> {
    /// The repo file.
    file: String,
    /// The file's text (for lines).
    text: &'a str,
    /// The list's path in the file.
    path: &'a [Step<'a>],
    /// The field path the messages name, e.g. `spec.notifications`.
    field: &'a str,
    /// The tenant whose own secret file is the only one allowed; `None`: any under `secrets/`.
    tenant: Option<&'a str>,
}

/// The diagnostics of fief.yaml's channels and of `tenant`'s own.
pub fn check_notifications(repo: &Repo, config: &Config, tenant: &Tenant) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if !config.notifications.providers.is_empty() {
        let list = List {
            file: "fief.yaml".to_string(),
            text: text_of(repo, "fief.yaml"),
            path: &[Step::Key("notifications"), Step::Key("providers")],
            field: "notifications.providers",
            tenant: None,
        };
        out.extend(check_list(repo, &list, &config.notifications.providers));
    }
    if !tenant.spec.notifications.is_empty() {
        let name = tenant.metadata.name.as_str();
        let file = repo.tenant_file(name);
        let text = text_of(repo, &file);
        let list = List {
            file,
            text,
            path: &[Step::Key("spec"), Step::Key("notifications")],
            field: "spec.notifications",
            tenant: Some(name),
        };
        out.extend(check_list(repo, &list, &tenant.spec.notifications));
    }
    out
}

fn text_of<'r>(repo: &'r Repo, path: &str) -> &'r str {
    match repo.snapshot.get(path) {
        Some(Ok(text)) => text,
        _ => "",
    }
}

fn check_list(repo: &Repo, list: &List<'_>, channels: &[Channel]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, channel) in channels.iter().enumerate() {
        let at = |key: &str, detail: String| {
            let mut path = list.path.to_vec();
            path.extend([Step::Index(i), Step::Key(key)]);
            Diagnostic::new(
                list.file.clone(),
                line_of_path(list.text, &path),
                Problem::InvalidField {
                    field: format!("{}[{i}].{key}", list.field),
                    detail,
                },
            )
        };
        if !is_dns_label(&channel.name) {
            out.push(at(
                "name",
                format!(
                    "`{}` is not a DNS-1123 label (lowercase letters, digits and `-`)",
                    channel.name
                ),
            ));
        }
        if channels[..i].iter().any(|c| c.name == channel.name) {
            out.push(at(
                "name",
                format!("channel `{}` is listed twice", channel.name),
            ));
        }
        if let ProviderType::Unknown(t) = &channel.provider {
            let suggestion = crate::suggest::suggest(t, ProviderType::NAMES)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            out.push(at(
                "type",
                format!(
                    "unknown type `{t}`{suggestion}; the types are: {}",
                    ProviderType::NAMES.join(", ")
                ),
            ));
        }
        if let Some(detail) = url_problem(repo, list, channel) {
            out.push(at("url", detail));
        }
    }
    out
}

/// What is wrong with where `channel` reads its URL, if anything.
fn url_problem(repo: &Repo, list: &List<'_>, channel: &Channel) -> Option<String> {
    let r = match (&channel.url, channel.url.allowed_for(list.tenant)) {
        (UrlSource::Plain, _) => {
            let example = list.tenant.map_or_else(
                || "secrets/notifications.sops.yaml".to_string(),
                |t| tenant_paths(t)[0].clone(),
            );
            let or_secret = if list.tenant.is_none() {
                " (or keep it in a Secret of the agent's namespace: `url: {secretKeyRef: {name: <Secret>, key: <key>}}`)"
            } else {
                ""
            };
            return Some(format!(
                "channel `{}` has its URL in plain text; URLs carry tokens, so fief reads them only from a SOPS-encrypted file: put it in one (`sops set {example} '[\"{}\"]' '\"https://...\"'`), write `url: {{secret: {example}, key: {}}}`{or_secret}, and rotate the URL (it stays in git's history)",
                channel.name, channel.name, channel.name
            ));
        }
        (_, Err(e)) => return Some(e.to_string()),
        (UrlSource::Kube(r), Ok(())) => return secret_key_ref_problem(r),
        (UrlSource::Secret(r), Ok(())) => r,
    };
    let file = match repo.secrets.file(&r.secret) {
        None => {
            return Some(format!(
                "no SOPS file `{}` in the repo; create it with `sops set {} '[\"{}\"]' '\"https://...\"'` (or `sops --encrypt`)",
                r.secret, r.secret, r.key
            ));
        }
        Some(Err(d)) => return Some(format!("`{}` cannot be used: {}", r.secret, d.problem)),
        Some(Ok(f)) => f,
    };
    let tree = file.redacted();
    let keys: Vec<&str> = tree
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    match tree.get(&r.key) {
        None => {
            let suggestion = crate::suggest::suggest(&r.key, keys.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            Some(format!(
                "`{}` has no key `{}`{suggestion}; its keys: {}",
                r.secret,
                r.key,
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ))
        }
        Some(v) if v.as_str() != Some(ENCRYPTED) => Some(format!(
            "key `{}` of `{}` is not an encrypted string (an unencrypted suffix, or not a string): the URL must be encrypted",
            r.key, r.secret
        )),
        Some(_) => None,
    }
}

/// What is wrong with the names of a Secret reference (the Secret itself is the cluster's:
/// the agent reads it, `fief validate` does not).
fn secret_key_ref_problem(r: &SecretKeyRef) -> Option<String> {
    if !is_dns_subdomain(&r.name) {
        return Some(format!(
            "`{}` is not a Secret name (a DNS-1123 subdomain: lowercase letters, digits, `-` and `.`)",
            r.name
        ));
    }
    let key_chars = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if r.key.is_empty() || r.key.len() > 253 || !r.key.chars().all(key_chars) {
        return Some(format!(
            "`{}` is not a Secret key (letters, digits, `-`, `_` and `.`)",
            r.key
        ));
    }
    None
}

#[cfg(test)]
#[path = "notifications_tests.rs"]
mod tests;
