//! Provider formats: one message as the JSON body each kind of receiver takes.
//!
//! In: a [`Message`] (and the time of sending). Out: the body — fief's webhook JSON, a Slack
//! incoming-webhook payload, a Teams Adaptive Card, or an Alertmanager v2 alert list (a
//! condition fires until its recovery resolves it). Pure.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};

use super::message::{Kind, Message, Severity, rfc3339};
use fief_core::model::ProviderType;

/// How long past its last push a firing Alertmanager alert stays firing (it is pushed again
/// every [`super::sender::REPUSH`] while its condition lasts).
pub const FIRING_FOR: Duration = Duration::from_secs(900);
/// How long an alert for one event (a prune held, an orphan, a rollout step) fires.
pub const EVENT_FOR: Duration = Duration::from_secs(3600);
/// How long the alert of a test message fires.
pub const TEST_FOR: Duration = Duration::from_secs(300);

/// The body `provider` takes for `m`, sent at `now` (`None`: a type fief does not know).
pub fn body(provider: &ProviderType, m: &Message, now: SystemTime) -> Option<Value> {
    Some(match provider {
        ProviderType::Webhook => webhook(m),
        ProviderType::Slack => slack(m),
        ProviderType::Teams => teams(m),
        ProviderType::Alertmanager => Value::Array(vec![alert(m, now)]),
        ProviderType::Unknown(_) => return None,
    })
}

/// fief's own JSON: `{tenant, kind, severity, message, commit, objects, at}` (and
/// `resolves` on a recovery).
pub fn webhook(m: &Message) -> Value {
    let mut v = json!({
        "tenant": m.tenant,
        "kind": m.kind.as_str(),
        "severity": m.kind.severity().as_str(),
        "message": m.text,
        "commit": m.commit,
        "objects": m.objects,
        "at": rfc3339(m.at),
    });
    if let Some(r) = m.resolves {
        v["resolves"] = r.as_str().into();
    }
    v
}

/// Slack's reserved characters escaped, so text shows as written.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace("```", "'''")
}

fn footer(m: &Message) -> String {
    let mut parts = vec![format!("severity {}", m.kind.severity().as_str())];
    if !m.commit.is_empty() {
        parts.push(format!(
            "commit {}",
            m.commit.get(..12).unwrap_or(&m.commit)
        ));
    }
    parts.push(rfc3339(m.at));
    parts.join(" · ")
}

/// A Slack incoming-webhook payload: `text` (the notification line) and `blocks`.
pub fn slack(m: &Message) -> Value {
    let icon = match m.kind.severity() {
        Severity::Error => ":red_circle:",
        Severity::Warning => ":warning:",
        Severity::Info => ":white_check_mark:",
    };
    let headline = slack_escape(&m.headline());
    let mut detail = format!("{icon} *{headline}*\n```{}```", slack_escape(&m.text));
    if !m.objects.is_empty() {
        detail.push_str(&format!(
            "\nobjects: {}",
            slack_escape(&m.objects.join(", "))
        ));
    }
    json!({
        "text": format!("[{}] {headline}", m.kind.severity().as_str()),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": detail}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": footer(m)}]},
        ],
    })
}

/// A Teams message with an Adaptive Card (incoming webhooks and Workflows take it).
pub fn teams(m: &Message) -> Value {
    let color = match m.kind.severity() {
        Severity::Error => "Attention",
        Severity::Warning => "Warning",
        Severity::Info => "Good",
    };
    let mut facts = vec![json!({"title": "Severity", "value": m.kind.severity().as_str()})];
    if !m.commit.is_empty() {
        facts.push(json!({"title": "Commit", "value": m.commit}));
    }
    if !m.objects.is_empty() {
        facts.push(json!({"title": "Objects", "value": m.objects.join(", ")}));
    }
    facts.push(json!({"title": "At", "value": rfc3339(m.at)}));
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {"type": "TextBlock", "size": "Medium", "weight": "Bolder",
                     "color": color, "wrap": true, "text": m.headline()},
                    {"type": "TextBlock", "wrap": true, "fontType": "Monospace", "text": m.text},
                    {"type": "FactSet", "facts": facts},
                ],
            },
        }],
    })
}

/// One Alertmanager v2 alert. Labels `alertname`, `tenant` (when there is one) and
/// `severity` name the alert; a recovery carries the labels of the alert it ends, with
/// `endsAt` now (resolved). A condition fires [`FIRING_FOR`] past `now`; an event
/// [`EVENT_FOR`] past when it happened; a test message [`TEST_FOR`].
pub fn alert(m: &Message, now: SystemTime) -> Value {
    let named = m.alert_kind();
    let mut labels = Map::new();
    labels.insert("alertname".into(), named.alertname().into());
    if let Some(t) = &m.tenant {
        labels.insert("tenant".into(), t.as_str().into());
    }
    labels.insert("severity".into(), named.severity().as_str().into());
    let mut annotations = Map::new();
    annotations.insert("summary".into(), m.headline().into());
    annotations.insert("description".into(), m.text.as_str().into());
    if !m.commit.is_empty() {
        annotations.insert("commit".into(), m.commit.as_str().into());
    }
    if !m.objects.is_empty() {
        annotations.insert("objects".into(), m.objects.join(", ").into());
    }
    let (starts, ends) = match m.kind {
        Kind::Recovered => (now, now),
        Kind::Test => (m.at, m.at + TEST_FOR),
        k if k.is_condition() => (m.at, now + FIRING_FOR),
        _ => (m.at, m.at + EVENT_FOR),
    };
    json!({
        "labels": labels,
        "annotations": annotations,
        "startsAt": rfc3339(starts),
        "endsAt": rfc3339(ends),
    })
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
