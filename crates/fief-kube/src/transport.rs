//! Transport: the HTTP client stack under every request fief sends.
//!
//! In: a resolved kube `Config`. Out: a `ClientBuilder` whose service is kube's default stack
//! (rustls, connect/read/write timeouts, base URI, server-error retry, auth, extra headers)
//! with one change: each HTTP/1 connection's read buffer is capped at [`READ_BUFFER_MAX`]
//! instead of hyper's default of about 400 KiB.
//!
//! Why: the agent keeps one long-lived connection per watched kind plus the request pool.
//! A connection's read buffer grows to hyper's cap on the first large list and keeps that
//! capacity for the life of the connection, so at 1,000 tenants those buffers were the largest
//! single item of the agent's steady heap (10 MB of 37, measured with heaptrack). TLS records
//! are at most 16 KiB, so a 32 KiB buffer still takes a whole record or two per read.
//!
//! An agent that elects a leader passes its [`Fence`]: writes are checked against the
//! leader's term right before they are sent.
//!
//! A configured proxy falls back to kube's own builder (which handles SOCKS5 and HTTP
//! tunnels); the buffer cap then does not apply.

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::Config;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

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
