//! One test message to one channel, for `fief notify test`: the same body, client and
//! timeout the agent uses, one attempt, no rate limit or dedupe.
//!
//! In: the channel's provider type, its URL (resolved by the caller the way the agent
//! resolves it: a SOPS file, or a Secret through [`super::secret_url`]), its name and
//! tenant. Out: the receiver's HTTP status, or a [`TestError`] that never quotes the URL.

use std::time::SystemTime;

use fief_core::model::ProviderType;

use super::client::{Client, REQUEST_TIMEOUT};
use super::format;
use super::message::{Kind, Message};
use super::retry::Answer;
use super::route::uri_for;

/// Why the test message was not delivered. Never quotes the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestError {
    /// The provider type is not one fief knows.
    #[error("unknown provider type `{0}`")]
    UnknownType(String),
    /// The URL is not an http(s) URL.
    #[error("{0}")]
    BadUrl(&'static str),
    /// The receiver answered, with a status other than 2xx.
    #[error("the receiver answered HTTP {0}")]
    Refused(u16),
    /// No connection (or TLS failed).
    #[error("cannot connect (or TLS failed)")]
    Connect,
    /// No answer in time.
    #[error("no answer within {}s", REQUEST_TIMEOUT.as_secs())]
    Timeout,
}

impl TestError {
    /// Whether the channel's settings are at fault (type or URL), not the sending.
    pub fn is_input(&self) -> bool {
        matches!(self, TestError::UnknownType(_) | TestError::BadUrl(_))
    }
}

/// The test message for channel `channel` of `tenant` (`None`: a platform channel).
fn message(tenant: Option<&str>, channel: &str) -> Message {
    let text = format!(
        "A test message from `fief notify test` to channel `{channel}`: this channel receives fief's notifications."
    );
    Message::new(tenant, Kind::Test, &text, "")
}

/// Send one test message to the channel `channel` (of `tenant`) of type `provider` at `url`;
/// the receiver's 2xx status.
pub async fn send(
    provider: &ProviderType,
    url: &str,
    tenant: Option<&str>,
    channel: &str,
) -> Result<u16, TestError> {
    let m = message(tenant, channel);
    let body = format::body(provider, &m, SystemTime::now())
        .ok_or_else(|| TestError::UnknownType(provider.to_string()))?;
    let uri = uri_for(provider, url).map_err(TestError::BadUrl)?;
    let body = serde_json::to_vec(&body).unwrap_or_default();
    match Client::new().post(&uri, body).await {
        Answer::Status(s) if (200..300).contains(&s) => Ok(s),
        Answer::Status(s) => Err(TestError::Refused(s)),
        Answer::Connect => Err(TestError::Connect),
        Answer::Timeout => Err(TestError::Timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_message_names_its_channel_and_is_information_only() {
        let m = message(Some("acme"), "team");
        assert_eq!(m.headline(), "acme: test message");
        assert!(m.text.contains("channel `team`"));
        let body = format::webhook(&m);
        assert_eq!(body["kind"], "test");
        assert_eq!(body["severity"], "info");
    }

    #[tokio::test]
    async fn a_url_that_is_not_http_is_bad_input_and_is_not_quoted() {
        let e = send(&ProviderType::Webhook, "ftp://tok-xyz@host/", None, "ops")
            .await
            .unwrap_err();
        assert!(e.is_input());
        assert!(!e.to_string().contains("tok-xyz"));
    }
}
