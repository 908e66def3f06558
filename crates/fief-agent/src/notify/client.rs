//! Delivery: one task per channel posts its messages, retrying failed sends with backoff, so
//! a receiver that is down or hangs delays only its own channel.
//!
//! In: each channel's [`Target`] and its queue of bodies; for a channel whose URL is in a
//! Secret, the Secret as it is at each attempt. Out: HTTP POSTs (http or https, hyper's
//! client with rustls and the system's root certificates; each attempt bounded by
//! [`REQUEST_TIMEOUT`]), the notification counter by provider type and result, and on
//! failure a log line naming the channel and what went wrong (for a Secret: its name and
//! key) — never its URL.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::sync::mpsc;

use super::retry::{Answer, Next, delays, next};
use super::route::{Endpoint, Target, uri_for};
use super::secret_url;
use crate::metrics::NotificationLabel;

/// How long one attempt may take, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bodies a channel holds while it sends; more are dropped (and counted).
pub const QUEUE: usize = 64;

/// One body for a channel.
#[derive(Debug)]
pub struct Delivery {
    /// The JSON body.
    pub body: Vec<u8>,
    /// Whether it counts in the notifications metric (a re-sent firing alert does not).
    pub counted: bool,
}

/// The agent's HTTP clients for notifications: plain, and TLS when the system's root
/// certificates could be read.
#[derive(Clone)]
pub struct Client {
    plain: Hyper<HttpConnector, Full<Bytes>>,
    tls: Option<Hyper<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>>,
}

fn connector() -> HttpConnector {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    http.enforce_http(false);
    http
}

impl Client {
    /// Build the clients (https needs the system's root certificates).
    pub fn new() -> Client {
        let builder = || Hyper::builder(TokioExecutor::new());
        let tls = match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
            Ok(b) => {
                Some(builder().build(b.https_or_http().enable_http1().wrap_connector(connector())))
            }
            Err(e) => {
                tracing::warn!(error = %e, "no root certificates: notifications to https URLs cannot be sent");
                None
            }
        };
        Client {
            plain: builder().build(connector()),
            tls,
        }
    }

    /// POST `body` as JSON to `uri`, within [`REQUEST_TIMEOUT`].
    pub async fn post(&self, uri: &http::Uri, body: Vec<u8>) -> Answer {
        let request = http::Request::post(uri.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::USER_AGENT, "fief-agent")
            .body(Full::new(Bytes::from(body)));
        let Ok(request) = request else {
            return Answer::Status(400);
        };
        let sent = async {
            match (uri.scheme_str(), &self.tls) {
                (Some("https"), Some(tls)) => tls.request(request).await.ok(),
                (Some("https"), None) => None,
                _ => self.plain.request(request).await.ok(),
            }
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, sent).await {
            Err(_) => Answer::Timeout,
            Ok(None) => Answer::Connect,
            Ok(Some(response)) => Answer::Status(response.status().as_u16()),
        }
    }
}

/// What a failed send is called in logs (no URL, no body).
fn describe(answer: Answer) -> String {
    match answer {
        Answer::Status(s) => format!("the receiver answered {s}"),
        Answer::Connect => "cannot connect (or TLS failed)".to_string(),
        Answer::Timeout => format!("no answer within {}s", REQUEST_TIMEOUT.as_secs()),
    }
}

/// Start `target`'s delivery task; it ends when the returned sender is dropped and its
/// queue is empty. `kube` reads the URL of a channel whose URL is in a Secret.
pub fn spawn(
    target: Target,
    client: Client,
    kube: Option<kube::Client>,
    counter: Family<NotificationLabel, Counter>,
) -> mpsc::Sender<Delivery> {
    let (tx, mut rx) = mpsc::channel::<Delivery>(QUEUE);
    tokio::spawn(async move {
        while let Some(d) = rx.recv().await {
            let sent = deliver(&target, &client, kube.as_ref(), d.body).await;
            if d.counted {
                let label = NotificationLabel {
                    provider: target.provider.as_str().to_string(),
                    result: if sent { "sent" } else { "failed" },
                };
                counter.get_or_create(&label).inc();
            }
        }
    });
    tx
}

/// Post `body` to `target`, retrying with backoff; whether it was delivered. A channel whose
/// URL is in a Secret reads it afresh for each attempt: a Secret or key that is missing gives
/// up at once (logged by the Secret's name and key), one that cannot be read is retried.
async fn deliver(
    target: &Target,
    client: &Client,
    kube: Option<&kube::Client>,
    body: Vec<u8>,
) -> bool {
    let mut attempt = 0;
    let mut delays = delays();
    loop {
        let answer = match uri_now(target, kube).await {
            Ok(uri) => client.post(&uri, body.clone()).await,
            Err(Unsent::Lasting(why)) => {
                tracing::warn!(channel = %target.id, error = %why, "notification not sent: its URL cannot be read");
                return false;
            }
            Err(Unsent::Transient(why)) => {
                tracing::debug!(channel = %target.id, error = %why, "the channel's URL cannot be read now");
                Answer::Connect
            }
        };
        match next(answer, &mut delays) {
            Next::Delivered => return true,
            Next::Retry(wait) => {
                tracing::debug!(channel = %target.id, attempt, error = describe(answer), "notification not delivered; retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Next::GiveUp => {
                tracing::warn!(channel = %target.id, attempts = attempt + 1, error = describe(answer), "notification not delivered; given up");
                return false;
            }
        }
    }
}

/// Why a channel's URL cannot be had for this attempt (never the URL).
enum Unsent {
    /// Until a person fixes it (a missing Secret or key, not a URL).
    Lasting(String),
    /// For now (the API server did not answer).
    Transient(String),
}

/// Where to POST `target`'s message now.
async fn uri_now(target: &Target, kube: Option<&kube::Client>) -> Result<http::Uri, Unsent> {
    let at = match &target.endpoint {
        Endpoint::Fixed(uri) => return Ok(uri.clone()),
        Endpoint::Secret(at) => at,
    };
    let Some(kube) = kube else {
        return Err(Unsent::Lasting(format!("{at}: no cluster client")));
    };
    let url = secret_url::read(kube, at).await.map_err(|e| {
        if e.transient() {
            Unsent::Transient(e.to_string())
        } else {
            Unsent::Lasting(e.to_string())
        }
    })?;
    uri_for(&target.provider, &url).map_err(|why| Unsent::Lasting(format!("{at}: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn https_urls_go_through_tls_and_http_urls_do_not() {
        let client = Client::new();
        assert!(
            client.tls.is_some(),
            "the system's root certificates are read"
        );
        // A plain HTTP server: an http POST is answered, an https one fails its handshake.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().route(
            "/x",
            axum::routing::post(|| async { http::StatusCode::NO_CONTENT }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        let http: http::Uri = format!("http://127.0.0.1:{port}/x").parse().unwrap();
        assert_eq!(
            client.post(&http, b"{}".to_vec()).await,
            Answer::Status(204)
        );
        let https: http::Uri = format!("https://127.0.0.1:{port}/x").parse().unwrap();
        assert_eq!(client.post(&https, b"{}".to_vec()).await, Answer::Connect);
    }
}
