//! The fetches the source task starts and finishes, by number.
//!
//! In: the source task's fetch starts and successes. Out: whether a fetch that started after
//! some moment has finished (its revision already published), and a receiver that changes
//! with each success. A shard taken waits on this for a fresh fetch before its tenants sync.

use tokio::sync::watch;

/// The fetches started and finished, by number: a fetch numbered above the count of those
/// started at some moment began after it.
pub(crate) struct FetchClock {
    started: std::sync::atomic::AtomicU64,
    done: watch::Sender<u64>,
}

impl FetchClock {
    pub(crate) fn new() -> FetchClock {
        FetchClock {
            started: std::sync::atomic::AtomicU64::new(0),
            done: watch::Sender::new(0),
        }
    }

    pub(crate) fn start(&self) -> u64 {
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1
    }

    pub(crate) fn finish(&self, id: u64) {
        self.done.send_if_modified(|d| {
            let newer = id > *d;
            if newer {
                *d = id;
            }
            newer
        });
    }

    /// The number the next fetch to start will have.
    pub(crate) fn next(&self) -> u64 {
        self.started.load(std::sync::atomic::Ordering::SeqCst) + 1
    }

    /// The highest number of a fetch that succeeded (its revision already published).
    pub(crate) fn done(&self) -> u64 {
        *self.done.borrow()
    }

    /// A receiver that changes when a fetch succeeds.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.done.subscribe()
    }
}
