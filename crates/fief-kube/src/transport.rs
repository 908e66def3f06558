//! Transport: the HTTP client stack under every request fief sends.
//!
//! In: a resolved kube `Config` and, for an agent that elects a leader, its [`Fence`]. Out: a
//! `ClientBuilder` whose service is kube's default stack (rustls, connect/read/write timeouts,
//! base URI, server-error retry, auth, extra headers, an `HTTP` tracing span per request)
//! with two changes, the reasons this stack is built here and not by kube's
//! `ClientBuilder::try_from`:
//!
//! - Each HTTP/1 connection's read buffer is capped at [`READ_BUFFER_MAX`] instead of hyper's
//!   default of about 400 KiB. The agent keeps one long-lived connection per watched kind plus
//!   the request pool; a connection's read buffer grows to hyper's cap on the first large list
//!   and keeps that capacity for the life of the connection, which at a thousand tenants made
//!   those buffers the largest single item of the agent's steady heap. TLS records are at most
//!   16 KiB, so a 32 KiB buffer still takes a whole record or two per read. kube's builder
//!   makes its hyper client inside and offers no way to set this.
//! - The fence is checked right above the HTTP connection, under the retry layer, so every
//!   attempt of a write is checked as it is sent (see [`crate::fence`]) and nothing (not even
//!   an exec credential plugin run by the auth layer) comes between the check and the send.
//!   kube's builder returns its stack boxed, so a layer can only go on top of the whole of it:
//!   above auth, and above kube's retry; and its boxed service cannot be cloned, so a retry
//!   layer cannot be put back on top of a fence there either.
//!
//! What kube's builder adds that this stack does not: the expiry of a client certificate
//! that an exec credential plugin returned, which kube only records for the caller to read
//! (`Client::valid_until`) and computes with a crate-private function. fief never reads it.
//! The tracing span is kube's (same name and fields); failed requests are recorded at debug
//! level, since fief reports every failed request itself where it was made.
//!
//! A configured proxy falls back to kube's own builder (which handles SOCKS5 and HTTP
//! tunnels); the buffer cap then does not apply, and the caller places the fence on top.

use std::time::Duration;

use hyper::body::Incoming;
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::Config;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultOnFailure, DefaultOnRequest, TraceLayer};
use tracing::{Level, Span};

use super::fence::{Fence, FenceLayer};

/// The boxed service under a client, as kube's own builder makes it.
pub type Service = BoxService<http::Request<Body>, http::Response<Box<DynBody>>, BoxError>;

/// Upper bound of one connection's HTTP/1 read buffer (hyper's minimum is 8 KiB; response
/// heads from the API server are well under 2 KiB).
pub const READ_BUFFER_MAX: usize = 32 * 1024;

/// Build kube's default client stack with a bounded read buffer per connection. A `fence`
/// is checked right above the HTTP connection, under the retry layer, so every attempt of a
/// write is checked as it is sent. Through a proxy kube's own stack is used, and the fence is
/// not placed here: the second value hands it back for the caller to wrap the stack with.
pub fn client_builder(
    config: Config,
    fence: Option<Fence>,
) -> Result<(ClientBuilder<Service>, Option<Fence>), kube::Error> {
    if config.proxy_url.is_some() {
        return Ok((ClientBuilder::try_from(config)?, fence));
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = config.rustls_https_connector_with_connector(http)?;
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let client: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .http1_max_buf_size(READ_BUFFER_MAX)
            .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .layer(FenceLayer(fence))
        .layer(trace_layer())
        .service(client);
    let service = service
        .map_response(|response| {
            response.map(|body| {
                Box::new(http_body_util::BodyExt::map_err(body, BoxError::from)) as Box<DynBody>
            })
        })
        .boxed();
    Ok((ClientBuilder::new(service, config.default_namespace), None))
}

/// How the tracing layer opens a request's span.
type MakeSpan = fn(&http::Request<Body>) -> Span;
/// What the tracing layer does with a response's head.
type OnResponse = fn(&http::Response<Incoming>, Duration, &Span);
/// The tracing layer over the HTTP connection.
type Trace = TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    MakeSpan,
    DefaultOnRequest,
    OnResponse,
    (),
>;

/// The tracing layer over the HTTP connection: kube's `HTTP` span per request (method, URL,
/// status), with its events at debug level.
fn trace_layer() -> Trace {
    TraceLayer::new_for_http()
        .make_span_with(http_span as MakeSpan)
        .on_response(record_status as OnResponse)
        .on_body_chunk(())
        .on_failure(DefaultOnFailure::new().level(Level::DEBUG))
}

/// kube's span for one HTTP request, with the fields OpenTelemetry's HTTP conventions name.
fn http_span(request: &http::Request<Body>) -> Span {
    tracing::debug_span!(
        "HTTP",
        http.method = %request.method(),
        http.url = %request.uri(),
        http.status_code = tracing::field::Empty,
        otel.name = request.extensions().get::<&'static str>().unwrap_or(&"HTTP"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
    )
}

/// Record a response's status in its span, marking 4xx and 5xx as errors.
fn record_status(response: &http::Response<Incoming>, _: Duration, span: &Span) {
    let status = response.status();
    span.record("http.status_code", status.as_u16());
    if status.is_client_error() || status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Answer one request on `stream` with `200 {}` and close the connection.
    async fn answer(stream: TcpStream) -> std::io::Result<()> {
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            stream.readable().await?;
            match stream.try_read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => request.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        let response = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
        let mut sent = 0;
        while sent < response.len() {
            stream.writable().await?;
            match stream.try_write(&response[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A plain-HTTP server on a free local port; the counter counts the requests it received.
    async fn server() -> (http::Uri, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let uri = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer(stream));
            }
        });
        (uri.parse().expect("uri"), seen)
    }

    #[tokio::test]
    async fn reads_pass_and_a_fenced_write_never_reaches_the_server() {
        let (uri, seen) = server().await;
        let (builder, outer) =
            client_builder(Config::new(uri), Some(Fence::new())).expect("a client stack");
        assert!(
            outer.is_none(),
            "without a proxy the fence is placed in the stack"
        );
        let client = builder.build();
        let get = http::Request::get("/version")
            .body(Vec::new())
            .expect("request");
        assert_eq!(client.request_text(get).await.expect("a read"), "{}");
        let post = http::Request::post("/api/v1/namespaces")
            .body(b"{}".to_vec())
            .expect("request");
        let refused = client.request_text(post).await.expect_err("a fenced write");
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&refused);
        let mut fenced = false;
        while let Some(e) = cause {
            fenced |= e.is::<crate::fence::WriteRefused>();
            cause = e.source();
        }
        assert!(fenced, "{refused:?}");
        assert_eq!(seen.load(Ordering::SeqCst), 1, "only the read was sent");
    }
}
