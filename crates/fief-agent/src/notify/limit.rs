//! How much is sent: the same message at most once per window, and at most a channel's
//! token bucket per channel, with one summary of what the bucket held back.
//!
//! In: each message with the time; each channel's sends. Out: per message send, hold (until
//! the window of its last send ends) or drop; per channel take a token or count one more
//! suppressed message; when tokens are back, the count to report in one summary. Pure: the
//! caller gives the time.
//!
//! Dedupe is by slot — a tenant's condition (failed, stalled, recovered), its prune hold, its
//! orphaning, the rollout — so a tenant that flaps between failed and recovered within the
//! window is told once each way, and when the window ends it is told where it stands then
//! (a held message is sent unless a later one of its slot replaced it).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::message::{Kind, Message};

/// How long the same message (tenant, kind, text) is not sent again.
pub const WINDOW: Duration = Duration::from_secs(600);

/// What to do with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send it now.
    Send,
    /// Sent within the window: held, and sent when the window ends unless replaced.
    Hold,
    /// The channels were last told exactly this: nothing to send.
    Drop,
}

/// Which messages replace one another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Slot {
    Condition,
    Prune,
    Orphan,
    Rollout,
    Summary,
}

fn slot(kind: Kind) -> Slot {
    match kind {
        Kind::SyncFailed | Kind::Stalled | Kind::Recovered => Slot::Condition,
        Kind::PruneHeld => Slot::Prune,
        Kind::Orphaned => Slot::Orphan,
        Kind::RolloutHalted | Kind::RolloutComplete => Slot::Rollout,
        Kind::Suppressed | Kind::Test => Slot::Summary,
    }
}

type Key = (Option<String>, Kind, String);

/// The dedupe window.
#[derive(Debug)]
pub struct Dedupe {
    window: Duration,
    /// When each (tenant, kind, text) was last sent.
    sent: HashMap<Key, Instant>,
    /// What each (tenant, slot) was last told, and when.
    last: HashMap<(Option<String>, Slot), (Kind, String, Instant)>,
    /// Held messages by (tenant, slot), with when they may go.
    held: HashMap<(Option<String>, Slot), (Message, Instant)>,
}

impl Default for Dedupe {
    fn default() -> Self {
        Dedupe::new(WINDOW)
    }
}

impl Dedupe {
    /// A dedupe with this window.
    pub fn new(window: Duration) -> Dedupe {
        Dedupe {
            window,
            sent: HashMap::new(),
            last: HashMap::new(),
            held: HashMap::new(),
        }
    }

    /// Decide about `m` at `now` (a message to send is recorded as sent).
    pub fn offer(&mut self, m: &Message, now: Instant) -> Decision {
        let s = (m.tenant.clone(), slot(m.kind));
        if self
            .last
            .get(&s)
            .is_some_and(|(k, t, _)| *k == m.kind && *t == m.text)
        {
            self.held.remove(&s);
            return Decision::Drop;
        }
        let key = (m.tenant.clone(), m.kind, m.text.clone());
        if let Some(at) = self.sent.get(&key)
            && now < *at + self.window
        {
            self.held.insert(s, (m.clone(), *at + self.window));
            return Decision::Hold;
        }
        self.held.remove(&s);
        self.sent.insert(key, now);
        self.last.insert(s, (m.kind, m.text.clone(), now));
        Decision::Send
    }

    /// The held messages whose window ended by `now`, to send now (recorded as sent); old
    /// records are forgotten.
    pub fn due(&mut self, now: Instant) -> Vec<Message> {
        let window = self.window;
        self.sent.retain(|_, at| now < *at + window);
        self.last.retain(|_, (_, _, at)| now < *at + window);
        let ready: Vec<_> = self
            .held
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(s, _)| s.clone())
            .collect();
        let mut out = Vec::new();
        for s in ready {
            if let Some((m, _)) = self.held.remove(&s)
                && self.offer(&m, now) == Decision::Send
            {
                out.push(m);
            }
        }
        out
    }
}

/// A channel's rate limit: a token bucket, and the count of messages it held back since the
/// last summary.
#[derive(Debug, Clone)]
pub struct Bucket {
    capacity: f64,
    per_second: f64,
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

/// Messages a channel may take at once.
pub const BURST: u32 = 10;
/// Messages a channel takes per minute after a burst.
pub const PER_MINUTE: u32 = 20;

impl Bucket {
    /// A full bucket of `capacity` tokens, refilled at `per_minute`.
    pub fn new(capacity: u32, per_minute: u32, now: Instant) -> Bucket {
        Bucket {
            capacity: f64::from(capacity),
            per_second: f64::from(per_minute) / 60.0,
            tokens: f64::from(capacity),
            last: now,
            suppressed: 0,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        self.last = now;
    }

    /// Take a token for one message; without one, count it as suppressed.
    pub fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.suppressed == 0 && self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return true;
        }
        self.suppressed += 1;
        false
    }

    /// When messages were suppressed and a token is back: take it and return how many were
    /// suppressed (the summary to send); the count starts again.
    pub fn summary(&mut self, now: Instant) -> Option<u64> {
        self.refill(now);
        if self.suppressed == 0 || self.tokens < 1.0 {
            return None;
        }
        self.tokens -= 1.0;
        Some(std::mem::take(&mut self.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tenant: &str, kind: Kind, text: &str) -> Message {
        Message::new(Some(tenant), kind, text, "c1")
    }

    #[test]
    fn the_same_message_is_not_sent_twice_in_a_row_nor_twice_in_a_window() {
        let mut d = Dedupe::new(Duration::from_secs(600));
        let t0 = Instant::now();
        let failed = msg("acme", Kind::SyncFailed, "x.yaml:3: bad");
        assert_eq!(d.offer(&failed, t0), Decision::Send);
        assert_eq!(d.offer(&failed, t0), Decision::Drop, "state persists");
        let other = msg("beta", Kind::SyncFailed, "x.yaml:3: bad");
        assert_eq!(d.offer(&other, t0), Decision::Send, "another tenant");
        let back = msg("acme", Kind::Recovered, "ok");
        assert_eq!(d.offer(&back, t0 + Duration::from_secs(1)), Decision::Send);
        // It fails again the same way within the window: held, not sent.
        let again = t0 + Duration::from_secs(2);
        assert_eq!(d.offer(&failed, again), Decision::Hold);
        assert!(d.due(t0 + Duration::from_secs(599)).is_empty());
        // Still failing when the window ends: told then.
        assert_eq!(d.due(t0 + Duration::from_secs(600)), [failed]);
    }

    #[test]
    fn a_held_message_replaced_by_what_was_last_sent_is_never_sent() {
        let mut d = Dedupe::new(Duration::from_secs(600));
        let t0 = Instant::now();
        let failed = msg("acme", Kind::SyncFailed, "bad");
        let back = msg("acme", Kind::Recovered, "ok");
        let s = |n| t0 + Duration::from_secs(n);
        assert_eq!(d.offer(&failed, s(0)), Decision::Send);
        assert_eq!(d.offer(&back, s(1)), Decision::Send);
        assert_eq!(d.offer(&failed, s(2)), Decision::Hold);
        // Recovered again: the channels were last told that; the held failure goes too.
        assert_eq!(d.offer(&back, s(3)), Decision::Drop);
        assert!(d.due(s(1000)).is_empty());
    }

    #[test]
    fn a_bucket_takes_a_burst_then_its_rate_and_sums_up_what_it_held_back() {
        let t0 = Instant::now();
        let mut b = Bucket::new(10, 20, t0);
        let taken = (0..100).filter(|_| b.take(t0)).count();
        assert_eq!(taken, 10);
        assert_eq!(b.summary(t0), None, "no token yet");
        // One token every 3 s: the summary takes it first, then messages flow again.
        let later = t0 + Duration::from_secs(3);
        assert_eq!(b.summary(later), Some(90));
        assert!(!b.take(later), "the summary took the token");
        assert_eq!(b.summary(later), None, "one more suppressed, no token");
        assert_eq!(b.summary(later + Duration::from_secs(3)), Some(1));
        assert!(b.take(later + Duration::from_secs(6)));
    }
}
