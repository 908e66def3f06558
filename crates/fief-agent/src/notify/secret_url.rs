//! Channel URLs kept in a Kubernetes Secret of the agent's namespace (fief.yaml's
//! `url: {secretKeyRef: {name, key}}`), read from the cluster each time they are needed, so
//! a changed Secret is used for the next message without a commit or a restart.
//!
//! In: a kube client, the agent's namespace and the [`SecretKeyRef`]. Out: the URL, held in
//! memory only, or a [`SecretUrlError`] that names the namespace, the Secret and the key —
//! never a value. The agent reads only the Secret a platform channel names, in its own
//! namespace; a tenant's channel never gets here (see [`UrlSource::allowed_for`]).
//!
//! [`UrlSource::allowed_for`]: fief_core::model::UrlSource::allowed_for

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;

use fief_core::model::SecretKeyRef;

/// How long reading the Secret may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A channel's Secret: where it is and which key holds the URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretUrl {
    /// The agent's namespace.
    pub namespace: String,
    /// The Secret and its key.
    pub r: SecretKeyRef,
}

impl std::fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Secret `{}/{}` (key `{}`)",
            self.namespace, self.r.name, self.r.key
        )
    }
}

/// Why a channel's URL cannot be read from its Secret. Names the Secret and key only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretUrlError {
    /// No such Secret in the namespace.
    #[error(
        "Secret `{namespace}/{name}` does not exist (it should hold the channel's URL at key `{key}`)"
    )]
    NotFound {
        /// The namespace.
        namespace: String,
        /// The Secret.
        name: String,
        /// The key the channel names.
        key: String,
    },
    /// The Secret has no such key.
    #[error("Secret `{namespace}/{name}` has no key `{key}` (its keys: {keys})")]
    NoKey {
        /// The namespace.
        namespace: String,
        /// The Secret.
        name: String,
        /// The key the channel names.
        key: String,
        /// The keys it has (names only), comma-separated, or `none`.
        keys: String,
    },
    /// The key's value is not UTF-8 text.
    #[error("key `{key}` of Secret `{namespace}/{name}` is not text")]
    NotText {
        /// The namespace.
        namespace: String,
        /// The Secret.
        name: String,
        /// The key.
        key: String,
    },
    /// The API server refused or could not be reached (the agent may not read it, or the
    /// cluster is down): worth trying again.
    #[error("cannot read Secret `{namespace}/{name}`: {detail}")]
    Api {
        /// The namespace.
        namespace: String,
        /// The Secret.
        name: String,
        /// What the API server or the connection said.
        detail: String,
    },
}

impl SecretUrlError {
    /// Whether trying again soon may help (the cluster could not be asked), rather than the
    /// Secret or its key being missing until a person adds them.
    pub fn transient(&self) -> bool {
        matches!(self, SecretUrlError::Api { .. })
    }
}

/// The URL `at` holds now.
pub async fn read(client: &kube::Client, at: &SecretUrl) -> Result<String, SecretUrlError> {
    let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), &at.namespace);
    let api_error = |detail: String| SecretUrlError::Api {
        namespace: at.namespace.clone(),
        name: at.r.name.clone(),
        detail,
    };
    let secret = match tokio::time::timeout(READ_TIMEOUT, api.get_opt(&at.r.name)).await {
        Err(_) => {
            return Err(api_error(format!(
                "no answer within {}s",
                READ_TIMEOUT.as_secs()
            )));
        }
        Ok(Err(e)) => return Err(api_error(e.to_string())),
        Ok(Ok(None)) => {
            return Err(SecretUrlError::NotFound {
                namespace: at.namespace.clone(),
                name: at.r.name.clone(),
                key: at.r.key.clone(),
            });
        }
        Ok(Ok(Some(s))) => s,
    };
    value_of(&secret, at)
}

/// The URL at `at.r.key` of `secret`'s data, trimmed.
fn value_of(secret: &Secret, at: &SecretUrl) -> Result<String, SecretUrlError> {
    let data = secret.data.clone().unwrap_or_default();
    let Some(bytes) = data.get(&at.r.key) else {
        let keys: Vec<&str> = data.keys().map(String::as_str).collect();
        return Err(SecretUrlError::NoKey {
            namespace: at.namespace.clone(),
            name: at.r.name.clone(),
            key: at.r.key.clone(),
            keys: if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            },
        });
    };
    std::str::from_utf8(&bytes.0)
        .map(|s| s.trim().to_string())
        .map_err(|_| SecretUrlError::NotText {
            namespace: at.namespace.clone(),
            name: at.r.name.clone(),
            key: at.r.key.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn at(key: &str) -> SecretUrl {
        SecretUrl {
            namespace: "fief-system".to_string(),
            r: SecretKeyRef {
                name: "slack-ops".to_string(),
                key: key.to_string(),
            },
        }
    }

    #[test]
    fn a_key_is_read_trimmed_and_a_missing_key_names_the_keys_there_but_no_value() {
        let value = "https://hooks.example/T/B/tok-secret\n";
        let secret = Secret {
            data: Some([("url".to_string(), ByteString(value.as_bytes().to_vec()))].into()),
            ..Secret::default()
        };
        assert_eq!(
            value_of(&secret, &at("url")).as_deref(),
            Ok("https://hooks.example/T/B/tok-secret")
        );
        let e = value_of(&secret, &at("nope")).unwrap_err();
        let text = e.to_string();
        assert_eq!(
            text,
            "Secret `fief-system/slack-ops` has no key `nope` (its keys: url)"
        );
        assert!(!text.contains("tok-secret") && !e.transient());
    }
}
