//! Retries: which failed sends are tried again, and after how long.
//!
//! In: the answer of one send (a status, or why there was none) and the message's delays
//! left. Out: delivered, retry after the next delay, or give up. The delays are `backon`'s
//! exponential backoff with jitter, capped, as many as the attempts allow. A 5xx, a 429, a
//! refused or failed connection and a timeout are worth another try; any other status is
//! the receiver refusing the message and is not.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

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

/// The delays between the attempts of one message, from `backon`'s exponential backoff:
/// `BASE * 2^n` capped at [`CAP`], of which the upper half is random (so many senders
/// spread out); one fewer than [`MAX_ATTEMPTS`], so the iterator ends when attempts do.
pub fn delays() -> impl Iterator<Item = Duration> {
    // backon adds up to the current delay again as jitter: half of the full delay, doubled.
    ExponentialBuilder::new()
        .with_min_delay(BASE / 2)
        .with_max_delay(CAP / 2)
        .with_factor(2.0)
        .with_jitter()
        .with_max_times(MAX_ATTEMPTS as usize - 1)
        .build()
}

/// After an attempt got `answer`: what next, taking the delay from `delays` (from
/// [`delays`]; when it is spent, every attempt has been made).
pub fn next(answer: Answer, delays: &mut impl Iterator<Item = Duration>) -> Next {
    let retryable = match answer {
        Answer::Status(s) if (200..300).contains(&s) => return Next::Delivered,
        Answer::Status(s) => s == 429 || s >= 500,
        Answer::Connect | Answer::Timeout => true,
    };
    if !retryable {
        return Next::GiveUp;
    }
    delays.next().map_or(Next::GiveUp, Next::Retry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_and_lost_connections_are_retried_and_refusals_are_not() {
        let retry = |answer| matches!(next(answer, &mut delays()), Next::Retry(_));
        assert_eq!(next(Answer::Status(204), &mut delays()), Next::Delivered);
        assert!(retry(Answer::Status(503)));
        assert!(retry(Answer::Status(429)));
        assert!(retry(Answer::Connect));
        assert!(retry(Answer::Timeout));
        assert_eq!(next(Answer::Status(400), &mut delays()), Next::GiveUp);
        assert_eq!(next(Answer::Status(404), &mut delays()), Next::GiveUp);
        let mut spent = delays();
        for _ in 1..MAX_ATTEMPTS {
            assert!(matches!(
                next(Answer::Status(500), &mut spent),
                Next::Retry(_)
            ));
        }
        assert_eq!(
            next(Answer::Status(500), &mut spent),
            Next::GiveUp,
            "attempts are bounded"
        );
    }

    #[test]
    fn delays_double_with_half_of_each_random_and_stop_at_the_cap() {
        for _ in 0..50 {
            let got: Vec<Duration> = delays().collect();
            assert_eq!(got.len(), MAX_ATTEMPTS as usize - 1);
            for (n, d) in got.iter().enumerate() {
                let full = (BASE * 2u32.pow(n as u32)).min(CAP);
                assert!(full / 2 <= *d && *d <= full, "delay {n}: {d:?} of {full:?}");
            }
        }
        let long: Vec<Duration> = ExponentialBuilder::new()
            .with_min_delay(BASE / 2)
            .with_max_delay(CAP / 2)
            .with_jitter()
            .with_max_times(12)
            .build()
            .collect();
        assert!(long.iter().all(|d| *d <= CAP), "{long:?}");
    }
}
