//! Unit tests over files written by the real `sops` CLI: the example repo's secrets and its
//! committed, test-only age key.

use super::*;

const KEY: &str = include_str!("../../../../examples/tenants-repo/age-key.TEST-ONLY.txt");
const SHARED: &str = include_str!("../../../../examples/tenants-repo/secrets/shared.sops.yaml");
const ACME: &str = include_str!("../../../../examples/tenants-repo/secrets/tenants/acme.sops.yaml");
const GLOBEX_JSON: &str =
    include_str!("../../../../examples/tenants-repo/secrets/tenants/globex.sops.json");

fn keys() -> Keys {
    Keys::parse(KEY).expect("test key")
}

#[test]
fn a_sops_yaml_file_decrypts_with_the_age_key_and_its_mac_verifies() {
    let file = SopsFile::parse(SHARED, false).expect("parse");
    let d = file.decrypt(&keys()).expect("decrypt");
    assert_eq!(
        d.value["analytics"]["apiKey"],
        "ak_example_shared_analytics_0001"
    );
    assert!(d.leaves.iter().any(|(k, _)| k == "analytics.apiKey"));
}

#[test]
fn a_sops_json_file_decrypts_with_types_kept() {
    let file = SopsFile::parse(GLOBEX_JSON, true).expect("parse");
    let d = file.decrypt(&keys()).expect("decrypt");
    assert_eq!(d.value["postgresPassword"], "globex-example-db-password");
    assert_eq!(d.value["maxConnections"], 20);
    assert_eq!(d.value["tls"], true);
}

#[test]
fn without_a_key_values_show_as_encrypted() {
    let file = SopsFile::parse(ACME, false).expect("parse");
    let r = file.redacted();
    assert_eq!(r["postgresPassword"], ENCRYPTED);
    assert!(!r.to_string().contains("acme-example"));
}

/// Replace the first `ENC[...]` after `after` with the `ENC[...]` found after `from`.
fn swap_value(text: &str, after: &str, from: &str) -> String {
    let enc_at = |key: &str| {
        let start = text.find(key).expect("key")
            + text[text.find(key).expect("key")..]
                .find("ENC[")
                .expect("ENC");
        let end = start + text[start..].find(']').expect("]") + 1;
        (start, end)
    };
    let (a0, a1) = enc_at(after);
    let (b0, b1) = enc_at(from);
    format!("{}{}{}", &text[..a0], &text[b0..b1], &text[a1..])
}

#[test]
fn a_tampered_mac_is_refused() {
    // The MAC of another file: well-formed, but not this file's.
    let other_mac = {
        let at = ACME.find("mac: ENC[").expect("mac");
        &ACME[at + 5..at + ACME[at..].find(']').expect("]") + 1]
    };
    let at = SHARED.find("mac: ENC[").expect("mac");
    let end = at + SHARED[at..].find(']').expect("]") + 1;
    let tampered = format!("{}mac: {other_mac}{}", &SHARED[..at], &SHARED[end..]);
    let file = SopsFile::parse(&tampered, false).expect("parse");
    assert_eq!(file.decrypt(&keys()).unwrap_err(), SopsError::MacMismatch);
}

#[test]
fn a_removed_value_fails_the_mac() {
    let text: String = SHARED
        .lines()
        .filter(|l| !l.trim_start().starts_with("password:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(text, SHARED);
    let file = SopsFile::parse(&text, false).expect("parse");
    assert_eq!(file.decrypt(&keys()).unwrap_err(), SopsError::MacMismatch);
}

#[test]
fn a_value_moved_to_another_key_does_not_decrypt_and_names_the_key() {
    let text = swap_value(SHARED, "apiKey:", "password:");
    let file = SopsFile::parse(&text, false).expect("parse");
    let err = file.decrypt(&keys()).unwrap_err();
    assert_eq!(err, SopsError::Decrypt("analytics:apiKey".into()));
}

#[test]
fn a_wrong_key_is_refused_naming_the_recipients() {
    let other = Keys(vec![age::x25519::Identity::generate()]);
    let file = SopsFile::parse(SHARED, false).expect("parse");
    let err = file.decrypt(&other).unwrap_err();
    assert!(matches!(err, SopsError::NoMatchingKey { .. }), "{err}");
    assert!(err.to_string().contains("age1"), "{err}");
}

#[test]
fn plaintext_and_non_age_files_are_refused_with_a_hint() {
    assert_eq!(
        SopsFile::parse("password: hunter22\n", false).unwrap_err(),
        SopsError::NotEncrypted
    );
    let pgp_only = "a: ENC[AES256_GCM,data:AA==,iv:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:str]\nsops:\n  pgp:\n    - fp: ABC\n      enc: x\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  mac: ENC[AES256_GCM,data:AA==,iv:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:str]\n  version: 3.9.0\n";
    let err = SopsFile::parse(pgp_only, false).unwrap_err();
    assert_eq!(err, SopsError::NoAgeRecipient("pgp".into()));
    assert!(err.hint().contains("age"));
    let msg = SopsFile::parse("password: hunter22\n", false)
        .unwrap_err()
        .to_string();
    assert!(!msg.contains("hunter22"), "{msg}");
}

#[test]
fn key_file_errors_name_the_line_not_the_key() {
    let err = Keys::parse("# created: x\nAGE-SECRET-KEY-1NOTAKEY\n").unwrap_err();
    assert_eq!(err, KeyError::BadLine { line: 2 });
    assert!(!err.to_string().contains("NOTAKEY"));
    assert_eq!(Keys::parse("# nothing\n").unwrap_err(), KeyError::Empty);
    assert!(!format!("{:?}", keys()).contains("AGE-SECRET"));
}

#[test]
fn scrub_replaces_plaintext_and_base64_with_the_key_name() {
    let leaves = vec![("secrets.tenant.db".to_string(), "hunter22".to_string())];
    let mut ds = vec![Diagnostic::new(
        "t.yaml",
        Some(1),
        Problem::Template {
            detail: "template \"hunter22\" not found; aHVudGVyMjI= too".into(),
        },
    )];
    scrub(&mut ds, &leaves);
    let text = ds[0].to_string();
    assert!(
        !text.contains("hunter22") && !text.contains("aHVudGVyMjI="),
        "{text}"
    );
    assert!(text.contains("<secret secrets.tenant.db>"), "{text}");
}

#[test]
fn a_tenant_reads_the_shared_file_and_only_its_own() {
    let snapshot = Snapshot::from_files([
        ("secrets/shared.sops.yaml", SHARED),
        ("secrets/tenants/acme.sops.yaml", ACME),
        ("secrets/tenants/globex.sops.json", GLOBEX_JSON),
    ]);
    let mut s = Secrets::load(&snapshot);
    assert_eq!(
        s.paths_for("acme"),
        ["secrets/shared.sops.yaml", "secrets/tenants/acme.sops.yaml"]
    );
    assert_eq!(s.paths_for("hooli"), ["secrets/shared.sops.yaml"]);
    // Default: no key configured, so a tenant that reads secrets fails (never placeholders).
    assert!(s.for_tenant("acme").is_err());
    s.set_unlock(Unlock::Keys(Arc::new(keys())));
    let acme = s.for_tenant("acme").expect("acme");
    assert_eq!(
        acme.context["tenant"]["postgresPassword"],
        "acme-example-db-password"
    );
    assert!(acme.context["tenant"].get("maxConnections").is_none());
    assert!(
        acme.leaves
            .iter()
            .any(|(k, _)| k == "secrets.shared.analytics.apiKey")
    );
    let hooli = s.for_tenant("hooli").expect("hooli");
    assert_eq!(hooli.context["tenant"], json!({}));
}

#[test]
fn a_secret_rendered_without_the_key_is_known_by_its_placeholder_in_data_or_string_data() {
    use base64::Engine;
    let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
    let secret = |field: &str, v: String| serde_json::json!({"apiVersion": "v1", "kind": "Secret", field: {"k": v}});
    assert!(super::holds_redacted_value(&secret(
        "data",
        b64("<encrypted>")
    )));
    assert!(super::holds_redacted_value(&secret(
        "stringData",
        "url=<encrypted>".into()
    )));
    assert!(!super::holds_redacted_value(&secret(
        "data",
        b64("hunter2")
    )));
    let cm =
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "<encrypted>"}});
    assert!(!super::holds_redacted_value(&cm));
}

#[test]
fn scrub_reaches_every_text_a_check_quotes_in_any_letter_case() {
    let leaves = vec![(
        "secrets.tenant.apiToken".to_string(),
        "Tok_Zq81".to_string(),
    )];
    let mut ds = vec![Diagnostic::new(
        "components/app/templates/cm.yaml",
        Some(4),
        Problem::InvalidName {
            kind: "ConfigMap".into(),
            name: "tok_zq81-web".into(),
            detail: "a name must be a DNS-1123 subdomain, not \"TOK_ZQ81\"".into(),
        },
    )];
    scrub(&mut ds, &leaves);
    let text = ds[0].to_string();
    assert!(!text.to_ascii_lowercase().contains("tok_zq81"), "{text}");
    assert!(
        text.contains("ConfigMap `<secret secrets.tenant.apiToken>-web`"),
        "{text}"
    );
}

#[test]
fn a_secret_rendered_where_a_name_goes_is_named_by_its_key_in_the_validation_error() {
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ secrets.shared.analytics.apiKey }}\ndata:\n  a: b\n";
    let snapshot = Snapshot::from_files([
        ("secrets/shared.sops.yaml", SHARED),
        (
            "tenants/acme.yaml",
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  components:\n    - name: app\n",
        ),
        ("components/app/templates/cm.yaml", template),
    ]);
    let mut repo = crate::model::Repo::load(std::sync::Arc::new(snapshot));
    repo.secrets
        .set_unlock(Unlock::Keys(std::sync::Arc::new(keys())));
    let renders = crate::pipeline::render_all(&repo, &[]);
    let text: String = renders[0].errors.iter().map(|d| format!("{d}\n")).collect();
    assert!(text.contains("DNS-1123"), "{text}");
    assert!(
        text.contains("ConfigMap `<secret secrets.shared.analytics.apiKey>`"),
        "{text}"
    );
    assert!(!text.contains("ak_example_shared_analytics_0001"), "{text}");
    let listed: Vec<&str> = renders[0]
        .objects
        .iter()
        .map(|o| o.id.name.as_str())
        .collect();
    assert!(
        listed.contains(&"<secret secrets.shared.analytics.apiKey>"),
        "the invalid render's objects are listed by key: {listed:?}"
    );
    assert!(
        !listed.iter().any(|n| n.contains("ak_example")),
        "{listed:?}"
    );
}
