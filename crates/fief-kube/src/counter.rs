//! Request counting: a tower layer in the client that counts API requests by verb.
//!
//! In: every HTTP request the kube client sends. Out: [`RequestStats`] — reads (GET) and
//! mutating requests (POST, PUT, PATCH, DELETE) — so `fief apply` can report what a sync cost
//! and tests can assert that a steady-state sync sends zero mutating requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use serde::Serialize;

/// Shared counters.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<[AtomicU64; 5]>,
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestStats {
    /// GET (reads, lists, watches, discovery).
    pub get: u64,
    /// POST (creates).
    pub post: u64,
    /// PUT (updates).
    pub put: u64,
    /// PATCH (server-side applies).
    pub patch: u64,
    /// DELETE.
    pub delete: u64,
}

impl RequestStats {
    /// Requests that can change the cluster.
    pub fn mutating(&self) -> u64 {
        self.post + self.put + self.patch + self.delete
    }
}

impl RequestCounter {
    /// The counts so far.
    pub fn stats(&self) -> RequestStats {
        let c = |i: usize| self.counts[i].load(Ordering::Relaxed);
        RequestStats {
            get: c(0),
            post: c(1),
            put: c(2),
            patch: c(3),
            delete: c(4),
        }
    }

    fn record(&self, method: &http::Method) {
        let i = match *method {
            http::Method::POST => 1,
            http::Method::PUT => 2,
            http::Method::PATCH => 3,
            http::Method::DELETE => 4,
            _ => 0,
        };
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }
}

impl<S> tower::Layer<S> for RequestCounter {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counter: self.clone(),
        }
    }
}

/// The service the layer wraps around the client's stack.
#[derive(Debug, Clone)]
pub struct Counted<S> {
    inner: S,
    counter: RequestCounter,
}

impl<S, B> tower::Service<http::Request<B>> for Counted<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.counter.record(request.method());
        self.inner.call(request)
    }
}
