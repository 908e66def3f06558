//! Retries: which failed sends are tried again, and after how long.
//!
//! In: the answer of one send (a status, or why there was none) and the attempt number. Out:
//! delivered, retry after a delay (exponential, with jitter, capped), or give up. A 5xx, a
//! 429, a refused or failed connection and a timeout are worth another try; any other
//! status is the receiver refusing the message and is not. Pure.

use std::time::Duration;

/// Attempts per message, the first included.
pub const MAX_ATTEMPTS: u32 = 5;
/// The first retry's delay (before jitter).
pub const BASE: Duration = Duration::from_secs(1);
/// The longest delay between attempts.
pub const CAP: Duration = Duration::from_secs(30);

/// What became of one send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The receiver answered with this status.
    Status(u16),
    /// No connection could be made (refused, reset, DNS, TLS).
    Connect,
    /// No answer in time.
    Timeout,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// It was taken.
    Delivered,
    /// Try again after this long.
    Retry(Duration),
    /// Give up: the receiver refused it, or every attempt failed.
    GiveUp,
}

/// After `attempt` (0-based) got `answer`: what next. `jitter` in `[0, 1)` spreads the
/// delays of many senders.
pub fn next(answer: Answer, attempt: u32, jitter: f64) -> Next {
    let retryable = match answer {
        Answer::Status(s) if (200..300).contains(&s) => return Next::Delivered,
        Answer::Status(s) => s == 429 || s >= 500,
        Answer::Connect | Answer::Timeout => true,
    };
    if !retryable || attempt + 1 >= MAX_ATTEMPTS {
        return Next::GiveUp;
    }
    Next::Retry(delay(attempt, jitter))
}

/// The delay after failed attempt `attempt`: `BASE * 2^attempt`, capped at [`CAP`], of which
/// the upper half is random.
pub fn delay(attempt: u32, jitter: f64) -> Duration {
    let full = BASE.saturating_mul(1u32 << attempt.min(16)).min(CAP);
    full / 2 + (full / 2).mul_f64(jitter.clamp(0.0, 1.0))
}

/// A number in `[0, 1)` that varies from call to call (for jitter; not for anything secret).
pub fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_and_lost_connections_are_retried_and_refusals_are_not() {
        assert_eq!(next(Answer::Status(204), 0, 0.0), Next::Delivered);
        assert!(matches!(next(Answer::Status(503), 0, 0.0), Next::Retry(_)));
        assert!(matches!(next(Answer::Status(429), 0, 0.0), Next::Retry(_)));
        assert!(matches!(next(Answer::Connect, 0, 0.0), Next::Retry(_)));
        assert!(matches!(next(Answer::Timeout, 2, 0.0), Next::Retry(_)));
        assert_eq!(next(Answer::Status(400), 0, 0.0), Next::GiveUp);
        assert_eq!(next(Answer::Status(404), 0, 0.0), Next::GiveUp);
        assert_eq!(
            next(Answer::Status(500), MAX_ATTEMPTS - 1, 0.0),
            Next::GiveUp,
            "attempts are bounded"
        );
    }

    #[test]
    fn delays_double_with_half_of_each_random_and_stop_at_the_cap() {
        assert_eq!(delay(0, 0.0), Duration::from_millis(500));
        assert_eq!(delay(0, 1.0), Duration::from_secs(1));
        assert_eq!(delay(1, 0.0), Duration::from_secs(1));
        assert_eq!(delay(3, 0.5), Duration::from_secs(6));
        assert_eq!(delay(10, 1.0), CAP);
        assert_eq!(delay(40, 0.0), CAP / 2);
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
    }
}
