//! Notification channels: where the agent tells people that a tenant failed, stalled or
//! recovered. fief.yaml `notifications.providers` are the platform's channels (every tenant's
//! messages and the rollout's); a tenant file's `spec.notifications` are that tenant's own.
//!
//! In: the deserialized fields, and (to open a channel's URL) the repo's parsed SOPS files
//! with the agent's age keys. Out: [`Channel`]s, whether a channel may read its URL where it
//! says ([`UrlSource::allowed_for`]), and a channel's URL decrypted in memory
//! ([`resolve_url`]). A URL is read from a SOPS-encrypted file of the repo or (platform
//! channels only) from a key of a Kubernetes Secret in the agent's namespace, which the
//! agent and `fief notify test` read from the cluster; one written in plain text is kept as
//! [`UrlSource::Plain`] without its text, so no error, log or serialization can repeat it.
//! Pure.

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
    /// Where the URL is: `{secret, key}`, a key of a SOPS-encrypted file in the repo, or
    /// (fief.yaml's channels only) `{secretKeyRef: {name, key}}`, a key of a Secret in the
    /// agent's namespace. URLs carry tokens, so a plain-text URL is an error.
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

/// A key of a Kubernetes Secret in the agent's namespace (fief.yaml's channels only).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretKeyRef {
    /// The Secret's name, in the agent's namespace (fief.yaml `agentNamespace`).
    pub name: String,
    /// The key of the Secret's `data` whose value is the URL.
    pub key: String,
}

impl fmt::Display for SecretKeyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret `{}` (key `{}`)", self.name, self.key)
    }
}

/// Where a channel's URL is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlSource {
    /// In a SOPS-encrypted file.
    Secret(SecretRef),
    /// In a Secret of the agent's namespace, read from the cluster when a message is sent.
    Kube(SecretKeyRef),
    /// In plain text in the repo file (a validation error). The text is not kept.
    Plain,
}

/// A channel's `url` map as written: `{secret, key}` or `{secretKeyRef}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UrlFields {
    secret: Option<String>,
    key: Option<String>,
    secret_key_ref: Option<SecretKeyRef>,
}

impl UrlFields {
    fn source<E: de::Error>(self) -> Result<UrlSource, E> {
        match (self.secret, self.key, self.secret_key_ref) {
            (Some(secret), Some(key), None) => Ok(UrlSource::Secret(SecretRef { secret, key })),
            (None, None, Some(r)) => Ok(UrlSource::Kube(r)),
            (_, _, Some(_)) => Err(E::custom(
                "`secretKeyRef` stands alone: write `{secret: <SOPS file>, key: <key>}` or `{secretKeyRef: {name: <Secret>, key: <key>}}`, not both",
            )),
            (None, _, None) => Err(E::missing_field("secret")),
            (Some(_), None, None) => Err(E::missing_field("key")),
        }
    }
}

impl<'de> Deserialize<'de> for UrlSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Source;
        impl<'de> Visitor<'de> for Source {
            type Value = UrlSource;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a map `{secret: <SOPS file>, key: <key>}` or `{secretKeyRef: {name: <Secret>, key: <key>}}`",
                )
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<UrlSource, E> {
                Ok(UrlSource::Plain)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<UrlSource, A::Error> {
                UrlFields::deserialize(de::value::MapAccessDeserializer::new(map))?.source()
            }
        }
        d.deserialize_any(Source)
    }
}

impl Serialize for UrlSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Kube<'a> {
            secret_key_ref: &'a SecretKeyRef,
        }
        match self {
            UrlSource::Secret(r) => r.serialize(s),
            UrlSource::Kube(r) => Kube { secret_key_ref: r }.serialize(s),
            UrlSource::Plain => s.serialize_str("<plain-text URL, not kept>"),
        }
    }
}

impl schemars::JsonSchema for UrlSource {
    fn schema_name() -> Cow<'static, str> {
        "ChannelUrl".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut secret_key_ref = generator.subschema_for::<SecretKeyRef>();
        secret_key_ref.insert(
            "description".into(),
            "Instead of `secret` and `key` (fief.yaml's channels only): a key of a Kubernetes Secret in the agent's namespace, read from the cluster each time a message is sent.".into(),
        );
        schemars::json_schema!({
            "type": "object",
            "description": "Where a channel's URL is: `{secret, key}` or `{secretKeyRef: {name, key}}`.",
            "properties": {
                "secret": {
                    "type": "string",
                    "description": "A SOPS-encrypted file of the repo: its path, under `secrets/`, ending in `.sops.yaml` or `.sops.json` (a tenant's channel: the tenant's own `secrets/tenants/<tenant>.sops.yaml`). With `key`.",
                },
                "key": {
                    "type": "string",
                    "description": "With `secret`: the top-level key of the file whose (encrypted) value is the URL.",
                },
                "secretKeyRef": secret_key_ref,
            },
            "additionalProperties": false,
            "if": {"required": ["secretKeyRef"]},
            "then": {"maxProperties": 1},
            "else": {"required": ["secret", "key"]},
        })
    }
}

impl UrlSource {
    /// Whether a channel of `tenant` (`None`: fief.yaml's) may read its URL from here: the
    /// platform's from a SOPS file under `secrets/` or a Secret of the agent's namespace; a
    /// tenant's only from its own SOPS file, never from a Secret of the cluster (those are
    /// the platform's, and a tenant file must not be able to name one).
    pub fn allowed_for(&self, tenant: Option<&str>) -> Result<(), UrlError> {
        match (self, tenant) {
            (UrlSource::Plain, _) => Err(UrlError::Plain),
            (UrlSource::Kube(_), Some(_)) => Err(UrlError::TenantSecretRef),
            (UrlSource::Kube(_), None) => Ok(()),
            (UrlSource::Secret(r), Some(t)) => {
                let own = crate::secrets::tenant_paths(t);
                if own.contains(&r.secret) {
                    Ok(())
                } else {
                    Err(UrlError::NotOwnFile {
                        file: r.secret.clone(),
                        own: own[0].clone(),
                    })
                }
            }
            (UrlSource::Secret(r), None) => {
                let sops = r.secret.ends_with(".sops.yaml") || r.secret.ends_with(".sops.json");
                if r.secret.starts_with("secrets/") && sops {
                    Ok(())
                } else {
                    Err(UrlError::NotUnderSecrets(r.secret.clone()))
                }
            }
        }
    }
}

/// Why a channel's URL cannot be had. Names the file and key, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// The URL is written in plain text in the repo.
    #[error("the URL is written in plain text; fief reads URLs only from a SOPS file or a Secret")]
    Plain,
    /// A tenant's channel names a Secret of the cluster.
    #[error(
        "a tenant's channel cannot read a Kubernetes Secret (`secretKeyRef`): the agent namespace's Secrets are the platform's; read the URL from the tenant's own SOPS file instead"
    )]
    TenantSecretRef,
    /// A tenant's channel names a SOPS file other than the tenant's own.
    #[error(
        "`{file}` is not this tenant's secret file; a tenant's channel reads its URL from the tenant's own: {own}"
    )]
    NotOwnFile {
        /// The file named.
        file: String,
        /// The tenant's own file.
        own: String,
    },
    /// A platform channel names a file that is not a SOPS file under `secrets/`.
    #[error("`{0}` is not a SOPS file under secrets/ (ending in .sops.yaml or .sops.json)")]
    NotUnderSecrets(String),
    /// The URL is in a Secret of the cluster, not in the repo.
    #[error("the URL is in {0} of the agent's namespace, read from the cluster")]
    InCluster(SecretKeyRef),
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

/// Decrypt a channel's URL with the agent's age keys. The result is held in memory only. A
/// URL in a Secret of the cluster is [`UrlError::InCluster`]: the caller reads it there.
pub fn resolve_url(secrets: &Secrets, url: &UrlSource, keys: &Keys) -> Result<String, UrlError> {
    let r = match url {
        UrlSource::Secret(r) => r,
        UrlSource::Kube(r) => return Err(UrlError::InCluster(r.clone())),
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

    #[test]
    fn a_url_from_a_secret_key_ref_parses_and_cannot_be_mixed_with_a_sops_file() {
        let c = parse(
            "channel:\n  name: ops\n  type: slack\n  url: {secretKeyRef: {name: slack-ops, key: url}}\n",
        )
        .unwrap();
        let r = SecretKeyRef {
            name: "slack-ops".to_string(),
            key: "url".to_string(),
        };
        assert_eq!(c.url, UrlSource::Kube(r.clone()));
        assert_eq!(
            serde_json::to_value(&c.url).unwrap(),
            serde_json::json!({"secretKeyRef": {"name": "slack-ops", "key": "url"}})
        );
        assert_eq!(c.url.allowed_for(None), Ok(()));
        assert_eq!(
            c.url.allowed_for(Some("acme")),
            Err(UrlError::TenantSecretRef)
        );
        let e = parse(
            "channel:\n  name: ops\n  type: slack\n  url: {secret: s, key: k, secretKeyRef: {name: n, key: k}}\n",
        )
        .unwrap_err();
        assert!(e.contains("`secretKeyRef` stands alone"), "{e}");
        let e = parse("channel:\n  name: ops\n  type: slack\n  url: {key: k}\n").unwrap_err();
        assert!(e.contains("missing field `secret`"), "{e}");
    }
}
