//! Each provider's body for the same messages.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::*;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn failed() -> Message {
    let mut m = Message::new(
        Some("acme"),
        Kind::SyncFailed,
        "components/app/templates/a.yaml:3: tenant `acme`: template error: <x> & y",
        "0123456789abcdef",
    );
    m.at = at(1_700_000_000);
    m
}

#[test]
fn the_webhook_body_has_tenant_kind_severity_message_commit_objects_and_at() {
    let mut m = failed();
    m.objects = vec!["apps/Deployment/acme-prod/web".to_string()];
    assert_eq!(
        webhook(&m),
        json!({
            "tenant": "acme",
            "kind": "syncFailed",
            "severity": "error",
            "message": "components/app/templates/a.yaml:3: tenant `acme`: template error: <x> & y",
            "commit": "0123456789abcdef",
            "objects": ["apps/Deployment/acme-prod/web"],
            "at": "2023-11-14T22:13:20Z",
        })
    );
    let mut rollout = Message::new(None, Kind::RolloutComplete, "done", "c");
    rollout.resolves = None;
    assert_eq!(webhook(&rollout)["tenant"], json!(null));
    let mut back = Message::new(Some("acme"), Kind::Recovered, "ok", "c");
    back.resolves = Some(Kind::SyncFailed);
    assert_eq!(webhook(&back)["resolves"], "syncFailed");
    assert_eq!(webhook(&back)["severity"], "info");
}

#[test]
fn the_slack_body_has_a_text_line_and_blocks_with_reserved_characters_escaped() {
    let v = slack(&failed());
    assert_eq!(v["text"], "[error] acme: sync failed");
    let section = v["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(
        section.starts_with(":red_circle: *acme: sync failed*"),
        "{section}"
    );
    assert!(section.contains("a.yaml:3"), "{section}");
    assert!(section.contains("&lt;x&gt; &amp; y"), "{section}");
    let context = v["blocks"][1]["elements"][0]["text"].as_str().unwrap();
    assert!(context.contains("commit 0123456789ab"), "{context}");
}

#[test]
fn the_teams_body_is_an_adaptive_card_message() {
    let v = teams(&failed());
    assert_eq!(v["type"], "message");
    let a = &v["attachments"][0];
    assert_eq!(a["contentType"], "application/vnd.microsoft.card.adaptive");
    assert_eq!(a["content"]["type"], "AdaptiveCard");
    let body = &a["content"]["body"];
    assert_eq!(body[0]["text"], "acme: sync failed");
    assert_eq!(body[0]["color"], "Attention");
    assert!(body[1]["text"].as_str().unwrap().contains("a.yaml:3"));
    assert_eq!(body[2]["facts"][1]["title"], "Commit");
}

#[test]
fn an_alertmanager_alert_fires_for_a_failure_and_a_recovery_resolves_it() {
    let now = at(1_700_000_100);
    let v = body(&ProviderType::Alertmanager, &failed(), now).unwrap();
    let a = &v[0];
    assert_eq!(
        a["labels"],
        json!({"alertname": "FiefSyncFailed", "tenant": "acme", "severity": "error"})
    );
    assert_eq!(a["annotations"]["summary"], "acme: sync failed");
    assert_eq!(a["startsAt"], "2023-11-14T22:13:20Z");
    assert_eq!(a["endsAt"], rfc3339(now + FIRING_FOR));
    let mut back = Message::new(Some("acme"), Kind::Recovered, "ok", "c");
    back.resolves = Some(Kind::SyncFailed);
    let r = alert(&back, now);
    assert_eq!(r["labels"], a["labels"], "the same alert");
    assert_eq!(r["endsAt"], rfc3339(now), "resolved");
    let rollout = Message::new(None, Kind::RolloutHalted, "wave 1", "c");
    let h = alert(&rollout, now);
    assert!(h["labels"].get("tenant").is_none());
    assert_eq!(h["labels"]["alertname"], "FiefRolloutHalted");
    assert!(body(&ProviderType::Unknown("x".into()), &failed(), now).is_none());
}
