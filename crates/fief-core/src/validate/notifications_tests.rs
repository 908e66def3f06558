//! Unit tests of the notification channel checks, over SOPS files written by the real `sops`
//! CLI (the example repo's, with its committed test-only age key).

use std::sync::Arc;

use super::*;
use crate::model::{Repo, UrlError, resolve_url};
use crate::secrets::Keys;
use crate::snapshot::Snapshot;

const KEY: &str = include_str!("../../../../examples/tenants-repo/age-key.TEST-ONLY.txt");
const SHARED: &str = include_str!("../../../../examples/tenants-repo/secrets/shared.sops.yaml");
const ACME: &str = include_str!("../../../../examples/tenants-repo/secrets/tenants/acme.sops.yaml");

const TENANT_HEAD: &str = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  notifications:\n";

fn repo(fief_yaml: &str, tenant_channels: &str) -> Repo {
    let files = [
        ("fief.yaml".to_string(), fief_yaml.to_string()),
        (
            "tenants/acme.yaml".to_string(),
            if tenant_channels.is_empty() {
                format!("{TENANT_HEAD}    []\n")
            } else {
                format!("{TENANT_HEAD}{tenant_channels}")
            },
        ),
        ("secrets/shared.sops.yaml".to_string(), SHARED.to_string()),
        (
            "secrets/tenants/acme.sops.yaml".to_string(),
            ACME.to_string(),
        ),
        (
            "secrets/tenants/globex.sops.yaml".to_string(),
            ACME.to_string(),
        ),
    ];
    Repo::load(Arc::new(Snapshot::from_files(files)))
}

fn check(r: &Repo) -> Vec<Diagnostic> {
    let config = r.config.as_ref().expect("fief.yaml parses");
    let tenant = r.tenants["acme"].as_ref().expect("tenant parses");
    check_notifications(r, config, tenant)
}

const OWN: &str = "url: {secret: secrets/tenants/acme.sops.yaml, key: postgresPassword}";

#[test]
fn channels_reading_an_encrypted_key_of_an_allowed_file_pass() {
    let r = repo(
        "notifications:\n  providers:\n    - name: ops\n      type: slack\n      url: {secret: secrets/tenants/acme.sops.yaml, key: postgresPassword}\n",
        &format!("    - name: team\n      type: webhook\n      {OWN}\n"),
    );
    assert_eq!(check(&r), Vec::<Diagnostic>::new());
}

#[test]
fn a_plain_text_url_is_an_error_at_its_line_that_says_to_use_a_sops_file_and_never_quotes_it() {
    let token = "T0AAA/B0BBB/zzSecretTokenzz";
    let r = repo(
        &format!(
            "agentNamespace: fief-system\nnotifications:\n  providers:\n    - name: ops\n      type: slack\n      url: https://hooks.slack.com/services/{token}\n"
        ),
        "",
    );
    let ds = check(&r);
    assert_eq!(ds.len(), 1, "{ds:?}");
    let d = &ds[0];
    assert_eq!((d.file.as_str(), d.line), ("fief.yaml", Some(6)));
    let text = d.to_string();
    assert!(text.contains("notifications.providers[0].url"), "{text}");
    assert!(text.contains("plain text"), "{text}");
    assert!(
        text.contains("sops set secrets/notifications.sops.yaml"),
        "{text}"
    );
    assert!(
        !text.contains(token) && !text.contains("hooks.slack.com"),
        "{text}"
    );
}

#[test]
fn an_unknown_type_is_an_error_at_its_line_with_a_did_you_mean() {
    let r = repo(
        "",
        &format!("    - name: team\n      type: slak\n      {OWN}\n"),
    );
    let ds = check(&r);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(
        (ds[0].file.as_str(), ds[0].line),
        ("tenants/acme.yaml", Some(8))
    );
    let text = ds[0].to_string();
    assert!(text.contains("spec.notifications[0].type"), "{text}");
    assert!(
        text.contains("unknown type `slak` (did you mean `slack`?)"),
        "{text}"
    );
    assert!(
        text.contains("webhook, slack, teams, alertmanager"),
        "{text}"
    );
}

#[test]
fn a_missing_file_a_missing_key_and_a_duplicate_name_are_each_reported_at_their_line() {
    let r = repo(
        "notifications:\n  providers:\n    - name: ops\n      type: webhook\n      url: {secret: secrets/nope.sops.yaml, key: url}\n    - name: ops\n      type: teams\n      url: {secret: secrets/shared.sops.yaml, key: smpt}\n",
        "",
    );
    let ds = check(&r);
    let found: Vec<(Option<usize>, String)> =
        ds.iter().map(|d| (d.line, d.problem.to_string())).collect();
    assert_eq!(ds.len(), 3, "{found:?}");
    assert_eq!(found[0].0, Some(5));
    assert!(
        found[0].1.contains("no SOPS file `secrets/nope.sops.yaml`"),
        "{found:?}"
    );
    assert_eq!(found[1].0, Some(6));
    assert!(
        found[1].1.contains("channel `ops` is listed twice"),
        "{found:?}"
    );
    assert_eq!(found[2].0, Some(8));
    assert!(
        found[2].1.contains("no key `smpt` (did you mean `smtp`?)"),
        "{found:?}"
    );
}

#[test]
fn a_tenant_channel_may_read_only_the_tenants_own_secret_file() {
    let r = repo(
        "",
        "    - name: team\n      type: webhook\n      url: {secret: secrets/tenants/globex.sops.yaml, key: postgresPassword}\n",
    );
    let ds = check(&r);
    assert_eq!(ds.len(), 1, "{ds:?}");
    let text = ds[0].problem.to_string();
    assert!(text.contains("not this tenant's secret file"), "{text}");
    assert!(text.contains("secrets/tenants/acme.sops.yaml"), "{text}");
}

#[test]
fn a_key_holding_a_map_is_not_a_url() {
    let r = repo(
        "notifications:\n  providers:\n    - name: ops\n      type: webhook\n      url: {secret: secrets/shared.sops.yaml, key: smtp}\n",
        "",
    );
    let ds = check(&r);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert!(
        ds[0]
            .problem
            .to_string()
            .contains("not an encrypted string")
    );
}

#[test]
fn a_url_is_decrypted_with_the_age_keys_and_errors_name_file_and_key_only() {
    let r = repo("", "");
    let keys = Keys::parse(KEY).unwrap();
    let source = |file: &str, key: &str| {
        UrlSource::Secret(crate::model::SecretRef {
            secret: file.to_string(),
            key: key.to_string(),
        })
    };
    let own = source("secrets/tenants/acme.sops.yaml", "postgresPassword");
    let url = resolve_url(&r.secrets, &own, &keys).unwrap();
    assert!(url.starts_with("acme-example"), "decrypted");
    let missing = source("secrets/tenants/acme.sops.yaml", "nope");
    let e = resolve_url(&r.secrets, &missing, &keys).unwrap_err();
    assert!(matches!(e, UrlError::NoKey { .. }));
    assert!(!e.to_string().contains("acme-example"));
    assert_eq!(
        resolve_url(&r.secrets, &UrlSource::Plain, &keys),
        Err(UrlError::Plain)
    );
}

#[test]
fn a_platform_channel_may_read_a_secret_of_the_agent_namespace_by_well_formed_names() {
    let r = repo(
        "notifications:\n  providers:\n    - name: ops\n      type: slack\n      url: {secretKeyRef: {name: slack-ops, key: url}}\n    - name: bad\n      type: slack\n      url: {secretKeyRef: {name: Slack_Ops, key: url}}\n",
        "",
    );
    let ds = check(&r);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].line, Some(8));
    assert!(
        ds[0]
            .problem
            .to_string()
            .contains("`Slack_Ops` is not a Secret name"),
        "{ds:?}"
    );
}

#[test]
fn a_tenant_channel_cannot_name_a_secret_of_the_cluster() {
    let r = repo(
        "",
        "    - name: team\n      type: webhook\n      url: {secretKeyRef: {name: slack-ops, key: url}}\n",
    );
    let ds = check(&r);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(
        (ds[0].file.as_str(), ds[0].line),
        ("tenants/acme.yaml", Some(9))
    );
    let text = ds[0].problem.to_string();
    assert!(text.contains("spec.notifications[0].url"), "{text}");
    assert!(
        text.contains("a tenant's channel cannot read a Kubernetes Secret"),
        "{text}"
    );
}
