//! Notification channels: where the agent tells people that a tenant failed, stalled or
//! recovered. fief.yaml `notifications.providers` are the platform's channels (every tenant's
//! messages and the rollout's); a tenant file's `spec.notifications` are that tenant's own.
//!
//! In: the deserialized fields, and (to open a channel's URL) the repo's parsed SOPS files
//! with the agent's age keys. Out: [`Channel`]s, and a channel's URL decrypted in memory
//! ([`resolve_url`]). A URL is only ever read from a SOPS-encrypted file: one written in
//! plain text is kept as [`UrlSource::Plain`] without its text, so no error, log or
//! serialization can repeat it. Pure.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::secrets::{Keys, Secrets};

/// fief.yaml `notifications`: the platform's channels.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Notifications {
    /// Platform channels: each receives every tenant's messages and the rollout's.
    pub providers: Vec<Channel>,
}

impl Notifications {
    /// Whether no channel is declared (fief.yaml leaves the field out).
    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }
}

/// One channel: a name, a provider type and where its URL is kept.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Channel {
    /// The channel's name, unique in its list; logs and metrics name a channel by it (never
    /// by its URL).
    pub name: String,
    /// What the URL receives: `webhook` (fief's JSON), `slack` (an incoming webhook),
    /// `teams` (an incoming webhook or Workflows URL, Adaptive Card) or `alertmanager`
    /// (the base URL of an Alertmanager; fief posts to `/api/v2/alerts`).
    #[serde(rename = "type")]
    pub provider: ProviderType,
    /// Where the URL is: a key of a SOPS-encrypted file in the repo. URLs carry tokens, so a
    /// plain-text URL is an error.
    #[schemars(with = "SecretRef")]
    pub url: UrlSource,
}

/// A provider type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProviderType {
    /// fief's own JSON body, for any HTTP receiver.
    Webhook,
    /// A Slack incoming webhook.
    Slack,
    /// A Microsoft Teams incoming webhook (or Workflows URL), sent an Adaptive Card.
    Teams,
    /// An Alertmanager (v2 API): messages become alerts, a recovery resolves its alert.
    Alertmanager,
    /// A type fief does not know, as written (a validation error; never sent to).
    Unknown(String),
}

impl ProviderType {
    /// The types fief knows, as written in the repo.
    pub const NAMES: [&'static str; 4] = ["webhook", "slack", "teams", "alertmanager"];

    /// The type as written in the repo (and as the metrics label it).
    pub fn as_str(&self) -> &str {
        match self {
            ProviderType::Webhook => "webhook",
            ProviderType::Slack => "slack",
            ProviderType::Teams => "teams",
            ProviderType::Alertmanager => "alertmanager",
            ProviderType::Unknown(s) => s,
        }
    }

    /// The type for a name as written.
    pub fn parse(name: &str) -> ProviderType {
        match name {
            "webhook" => ProviderType::Webhook,
            "slack" => ProviderType::Slack,
            "teams" => ProviderType::Teams,
            "alertmanager" => ProviderType::Alertmanager,
            other => ProviderType::Unknown(other.to_string()),
        }
    }
}

impl fmt::Display for ProviderType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProviderType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| ProviderType::parse(&s))
    }
}

impl Serialize for ProviderType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl schemars::JsonSchema for ProviderType {
    fn schema_name() -> Cow<'static, str> {
        "ProviderType".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": ProviderType::NAMES,
        })
    }
}

/// A key of a SOPS-encrypted file in the repo.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretRef {
    /// The file's path in the repo: under `secrets/`, ending in `.sops.yaml` or `.sops.json`
    /// (a tenant's channel: the tenant's own `secrets/tenants/<tenant>.sops.yaml`).
    pub secret: String,
    /// The top-level key of the file whose (encrypted) value is the URL.
    pub key: String,
}

/// Where a channel's URL is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlSource {
    /// In a SOPS-encrypted file.
    Secret(SecretRef),
    /// In plain text in the repo file (a validation error). The text is not kept.
    Plain,
}

impl<'de> Deserialize<'de> for UrlSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Source;
        impl<'de> Visitor<'de> for Source {
            type Value = UrlSource;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map `{secret: <SOPS file>, key: <key>}`")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<UrlSource, E> {
                Ok(UrlSource::Plain)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<UrlSource, A::Error> {
                SecretRef::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(UrlSource::Secret)
            }
        }
        d.deserialize_any(Source)
    }
}

impl Serialize for UrlSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UrlSource::Secret(r) => r.serialize(s),
            UrlSource::Plain => s.serialize_str("<plain-text URL, not kept>"),
        }
    }
}

/// Why a channel's URL cannot be had. Names the file and key, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// The URL is written in plain text in the repo.
    #[error("the URL is written in plain text; fief reads URLs only from a SOPS file")]
    Plain,
    /// No SOPS file at that path.
    #[error("no SOPS file `{0}` in the repo")]
    NoFile(String),
    /// The file cannot be parsed or decrypted.
    #[error("`{file}`: {detail}")]
    Unreadable {
        /// The file.
        file: String,
        /// Why (never a value).
        detail: String,
    },
    /// The file has no such key, or its value is not a string.
    #[error("`{file}` has no string value at key `{key}`")]
    NoKey {
        /// The file.
        file: String,
        /// The key.
        key: String,
    },
}

/// Decrypt a channel's URL with the agent's age keys. The result is held in memory only.
pub fn resolve_url(secrets: &Secrets, url: &UrlSource, keys: &Keys) -> Result<String, UrlError> {
    let r = match url {
        UrlSource::Secret(r) => r,
        UrlSource::Plain => return Err(UrlError::Plain),
    };
    let unreadable = |detail: String| UrlError::Unreadable {
        file: r.secret.clone(),
        detail,
    };
    let file = match secrets.file(&r.secret) {
        None => return Err(UrlError::NoFile(r.secret.clone())),
        Some(Err(d)) => return Err(unreadable(d.problem.to_string())),
        Some(Ok(f)) => f,
    };
    let decrypted = file.decrypt(keys).map_err(|e| unreadable(e.to_string()))?;
    decrypted
        .value
        .get(&r.key)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| UrlError::NoKey {
            file: r.secret.clone(),
            key: r.key.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct One {
        channel: Channel,
    }

    fn parse(text: &str) -> Result<Channel, String> {
        crate::yaml::parse_single_typed::<One>(text)
            .map(|o| o.expect("a document").channel)
            .map_err(|e| e.message)
    }

    #[test]
    fn a_channel_reads_its_url_from_a_secret_and_keeps_an_unknown_type_as_written() {
        let c = parse(
            "channel:\n  name: ops\n  type: slak\n  url: {secret: secrets/n.sops.yaml, key: slack}\n",
        )
        .unwrap();
        assert_eq!(c.provider, ProviderType::Unknown("slak".to_string()));
        assert_eq!(
            c.url,
            UrlSource::Secret(SecretRef {
                secret: "secrets/n.sops.yaml".to_string(),
                key: "slack".to_string()
            })
        );
    }

    #[test]
    fn a_plain_text_url_parses_as_plain_and_its_text_is_never_kept() {
        let token = "T000/B000/XXXXsecretXXXX";
        let c = parse(&format!(
            "channel:\n  name: ops\n  type: slack\n  url: https://hooks.slack.com/services/{token}\n"
        ))
        .unwrap();
        assert_eq!(c.url, UrlSource::Plain);
        assert!(!format!("{c:?}").contains(token));
        assert!(!serde_json::to_string(&c).unwrap().contains(token));
    }

    #[test]
    fn a_misspelt_field_of_the_secret_reference_is_an_unknown_field() {
        let e = parse("channel:\n  name: ops\n  type: slack\n  url: {secret: s, kee: k}\n")
            .unwrap_err();
        assert!(e.contains("unknown field `kee`"), "{e}");
    }
}
