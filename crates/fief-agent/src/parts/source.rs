//! What the source task follows: the branch, the webhook's secret, the age keys that decrypt
//! the repo's secrets, and the fetches asked for and done.
//!
//! In: the agent's options at start; requests for a fetch now (a push webhook, `fief
//! reconcile`, a shard taken); the source task's fetch starts and successes. Out: the same
//! settings, read by the HTTP handlers and the source task; a wake-up of the source task per
//! request; the [`FetchClock`] that tells whether a fetch begun after some moment is done.

use std::sync::Arc;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::fetches::FetchClock;

/// What the source task follows (see the module docs).
pub(crate) struct Source {
    branch: String,
    /// HMAC secret of the push webhook (none: webhook disabled).
    webhook_secret: Option<Vec<u8>>,
    age_keys: Option<Arc<fief_core::secrets::Keys>>,
    fetch_now: Notify,
    /// The fetches started and finished (a shard taken waits for a fresh one).
    fetches: FetchClock,
}

impl Source {
    /// The source of `branch`, its webhook checked with `webhook_secret`, its secrets
    /// decrypted with `age_keys`.
    pub(crate) fn new(
        branch: String,
        webhook_secret: Option<Vec<u8>>,
        age_keys: Option<Arc<fief_core::secrets::Keys>>,
    ) -> Source {
        Source {
            branch,
            webhook_secret,
            age_keys,
            fetch_now: Notify::new(),
            fetches: FetchClock::new(),
        }
    }

    /// The branch followed.
    pub(crate) fn branch(&self) -> &str {
        &self.branch
    }

    /// The push webhook's HMAC secret (none: webhook disabled).
    pub(crate) fn webhook_secret(&self) -> Option<&[u8]> {
        self.webhook_secret.as_deref()
    }

    /// The age identities that decrypt the repo's SOPS secrets.
    pub(crate) fn age_keys(&self) -> Option<&Arc<fief_core::secrets::Keys>> {
        self.age_keys.as_ref()
    }

    /// Ask the source task to fetch now (a request made while nobody waits is kept for the
    /// next wait).
    pub(crate) fn request_fetch(&self) {
        self.fetch_now.notify_one();
    }

    /// Resolves when a fetch is asked for.
    pub(crate) fn fetch_requested(&self) -> Notified<'_> {
        self.fetch_now.notified()
    }

    /// The fetches started and finished.
    pub(crate) fn fetches(&self) -> &FetchClock {
        &self.fetches
    }
}
