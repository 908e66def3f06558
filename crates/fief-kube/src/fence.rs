//! The write fence: a leader's writes stop the moment its term may have ended.
//!
//! In: the leader's renewals (each successful one extends the term to the moment it was sent
//! plus the renew deadline), its step-down (closes the fence), and every HTTP request the
//! client it guards sends. Out: mutating requests (POST, PUT, PATCH, DELETE) pass only while
//! the term is valid on this process's monotonic clock; others fail at once with
//! [`WriteRefused`], and the first refusal closes the fence for good, which [`Fence::closed`]
//! reports so the leader steps down.
//!
//! Why a layer in the client and not checks at the call sites: a process frozen (SIGSTOP, a
//! VM pause) past its Lease resumes in the middle of whatever it was doing — an apply, an
//! inventory write, an Event, a health verdict — and every one of those must see the expired
//! term before it is sent. The layer sits under the client's retry, so a retried request is
//! checked again. Reads always pass: a standby reads, and reading after the term is harmless.
//!
//! The clock is `std::time::Instant` (`CLOCK_MONOTONIC`), which keeps counting while the
//! process is stopped, so a resumed process sees the time it lost.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use futures::TryFutureExt;
use futures::future::{Either, Ready, ready};
use tokio_util::sync::CancellationToken;
use tower::BoxError;

/// Why a write was refused: this process does not hold a valid term.
#[derive(Debug, thiserror::Error)]
#[error("write refused: this replica's Lease term has ended (or it is not the leader)")]
pub struct WriteRefused;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    /// Writes pass until this instant.
    Until(Instant),
    /// No term: writes are refused.
    Closed,
}

/// A leader's term as the client sees it. Clones share one term.
#[derive(Debug, Clone)]
pub struct Fence {
    term: Arc<Mutex<Term>>,
    closed: CancellationToken,
}

impl Default for Fence {
    fn default() -> Self {
        Fence::new()
    }
}

impl Fence {
    /// A closed fence: no write passes until [`Fence::extend`] opens a term.
    pub fn new() -> Fence {
        Fence {
            term: Arc::new(Mutex::new(Term::Closed)),
            closed: CancellationToken::new(),
        }
    }

    fn term(&self) -> std::sync::MutexGuard<'_, Term> {
        self.term.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Let writes pass until `until` (a renewal sent at `t` that succeeded: `t` plus the renew
    /// deadline). A term never shrinks, and a closed fence stays closed.
    pub fn extend(&self, until: Instant) {
        if self.closed.is_cancelled() {
            return;
        }
        let mut term = self.term();
        match *term {
            Term::Until(old) if old >= until => {}
            _ => *term = Term::Until(until),
        }
    }

    /// End the term now: no write passes from here on.
    pub fn close(&self) {
        *self.term() = Term::Closed;
        self.closed.cancel();
    }

    /// Whether a write may be sent at `now`. A refusal closes the fence.
    pub fn admits(&self, now: Instant) -> bool {
        let term = *self.term();
        match term {
            Term::Until(until) if now < until => true,
            // A term that ran out is lost: close, so the leader hears of it. A fence never
            // opened (a standby) has nothing to lose and stays quiet.
            Term::Until(_) => {
                self.close();
                false
            }
            Term::Closed => false,
        }
    }

    /// Resolves once the fence has closed (a step-down, or a write refused after the term).
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }
}

fn is_write(method: &http::Method) -> bool {
    matches!(
        *method,
        http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
    )
}

/// The layer that puts a fence (if any) in front of a service: with none, every request
/// passes.
#[derive(Debug, Clone, Default)]
pub struct FenceLayer(pub Option<Fence>);

impl<S> tower::Layer<S> for FenceLayer {
    type Service = FencedService<S>;

    fn layer(&self, inner: S) -> FencedService<S> {
        FencedService {
            inner,
            fence: self.0.clone(),
        }
    }
}

/// The service a [`FenceLayer`] wraps around the HTTP client.
#[derive(Debug, Clone)]
pub struct FencedService<S> {
    inner: S,
    fence: Option<Fence>,
}

impl<S, B> tower::Service<http::Request<B>> for FencedService<S>
where
    S: tower::Service<http::Request<B>>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future =
        Either<Ready<Result<S::Response, BoxError>>, futures::future::ErrInto<S::Future, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let refused = self
            .fence
            .as_ref()
            .is_some_and(|f| is_write(request.method()) && !f.admits(Instant::now()));
        if refused {
            return Either::Left(ready(Err(Box::new(WriteRefused))));
        }
        Either::Right(self.inner.call(request).err_into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_new_fence_refuses_writes_without_reporting_a_lost_term() {
        let fence = Fence::new();
        assert!(!fence.admits(Instant::now()));
        assert!(!fence.closed.is_cancelled(), "a standby has lost nothing");
    }

    #[test]
    fn writes_pass_until_the_deadline_of_the_last_renewal_and_never_after() {
        let fence = Fence::new();
        let t0 = Instant::now();
        fence.extend(t0 + Duration::from_secs(10));
        assert!(fence.admits(t0));
        assert!(fence.admits(t0 + Duration::from_secs(9)));
        // A renewal extends the term; an older one arriving late does not shorten it.
        fence.extend(t0 + Duration::from_secs(15));
        fence.extend(t0 + Duration::from_secs(12));
        assert!(fence.admits(t0 + Duration::from_secs(14)));
        // The clock jumped past the term (the process was stopped): refused, and closed.
        assert!(!fence.admits(t0 + Duration::from_secs(40)));
        assert!(fence.closed.is_cancelled());
        // A renewal after the fence closed does not reopen it.
        fence.extend(t0 + Duration::from_secs(100));
        assert!(!fence.admits(t0 + Duration::from_secs(41)));
    }

    #[test]
    fn a_step_down_closes_the_fence_at_once() {
        let fence = Fence::new();
        let t0 = Instant::now();
        fence.extend(t0 + Duration::from_secs(10));
        fence.clone().close();
        assert!(!fence.admits(t0), "clones share one term");
    }

    #[tokio::test]
    async fn only_writes_are_fenced() {
        use tower::{Service, ServiceExt};
        let fence = Fence::new();
        let inner = tower::service_fn(|_: http::Request<()>| async { Ok::<_, BoxError>(200u16) });
        let mut svc = tower::Layer::layer(&FenceLayer(Some(fence)), inner);
        let get = http::Request::get("/api").body(()).unwrap();
        assert_eq!(svc.ready().await.ok().map(|_| ()), Some(()));
        assert!(svc.call(get).await.is_ok(), "reads pass a closed fence");
        for method in [
            http::Method::POST,
            http::Method::PUT,
            http::Method::PATCH,
            http::Method::DELETE,
        ] {
            let req = http::Request::builder()
                .method(method.clone())
                .body(())
                .unwrap();
            let err = svc.call(req).await.err().map(|e| e.to_string());
            assert!(
                err.is_some_and(|e| e.contains("Lease term")),
                "{method} must be refused"
            );
        }
    }
}
