//! The text exposition written in chunks as it is encoded, for `/metrics`.
//!
//! In: the text [`super::Metrics::encode_to`] writes, on a blocking thread. Out: chunks of at
//! most about [`CHUNK_BYTES`] each, sent through a channel of one to the response body. At
//! thousands of tenants the text is megabytes (a histogram per tenant); written whole into
//! one buffer, every scrape would hold all of it at once. Here a scrape holds the chunk being
//! written and the one waiting to be sent, whatever the fleet's size. The registry's locks are
//! held while the text is written, so a scrape has [`SCRAPE_WAIT`] for its client to take the
//! whole text: past it, the text stops before its `# EOF` line, which an OpenMetrics client
//! reads as a failed scrape, and the locks are let go (a slow client never holds up the syncs,
//! which add a tenant's series under them, for longer than that).

use std::fmt;
use std::time::Duration;

use axum::body::Bytes;
use tokio::sync::mpsc::Sender;

/// Bytes written before a chunk is sent.
pub(crate) const CHUNK_BYTES: usize = 64 * 1024;

/// How long a scrape's client has to take the whole text (Prometheus's own default scrape
/// timeout).
pub(crate) const SCRAPE_WAIT: Duration = Duration::from_secs(10);

/// A [`fmt::Write`] that sends what it is given in chunks (see the module docs). Used on a
/// blocking thread: a full chunk waits there for the channel.
pub(crate) struct Chunks {
    buf: String,
    tx: Sender<Bytes>,
    handle: tokio::runtime::Handle,
    /// When the client must have taken the whole text.
    deadline: tokio::time::Instant,
    /// The largest the buffer grew (what one chunk held), for the tests.
    #[cfg(test)]
    pub(crate) largest: usize,
}

impl Chunks {
    /// Chunks sent to `tx`, waited for on `handle`'s runtime, all taken within `wait`.
    pub(crate) fn new(tx: Sender<Bytes>, handle: tokio::runtime::Handle, wait: Duration) -> Chunks {
        Chunks {
            buf: String::with_capacity(CHUNK_BYTES),
            tx,
            handle,
            deadline: tokio::time::Instant::now() + wait,
            #[cfg(test)]
            largest: 0,
        }
    }

    /// Send what is buffered; an error when the client is gone or past the deadline.
    pub(crate) fn flush(&mut self) -> fmt::Result {
        if self.buf.is_empty() {
            return Ok(());
        }
        #[cfg(test)]
        {
            self.largest = self.largest.max(self.buf.len());
        }
        let next = String::with_capacity(CHUNK_BYTES);
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, next));
        let sent = self
            .handle
            .block_on(tokio::time::timeout_at(self.deadline, self.tx.send(chunk)));
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(fmt::Error),
        }
    }
}

impl fmt::Write for Chunks {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.buf.push_str(s);
        if self.buf.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn text_written_in_chunks_arrives_whole_and_no_chunk_holds_more_than_its_bound() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(1);
        let handle = tokio::runtime::Handle::current();
        let line = "fief_tenant_sync_duration_seconds_bucket{tenant=\"t-0001\",le=\"0.5\"} 3\n";
        let writer = tokio::task::spawn_blocking(move || {
            let mut out = Chunks::new(tx, handle, SCRAPE_WAIT);
            for _ in 0..20_000 {
                out.write_str(line)?;
            }
            out.flush()?;
            Ok::<usize, fmt::Error>(out.largest)
        });
        let mut got = Vec::new();
        while let Some(chunk) = rx.recv().await {
            got.extend_from_slice(&chunk);
        }
        let largest = writer.await.ok().and_then(Result::ok);
        assert_eq!(got, line.repeat(20_000).into_bytes());
        let largest = largest.unwrap_or(usize::MAX);
        assert!(
            largest < CHUNK_BYTES + line.len(),
            "a chunk held {largest} bytes"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_gone_ends_the_writing_with_an_error() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
        drop(rx);
        let handle = tokio::runtime::Handle::current();
        let written = tokio::task::spawn_blocking(move || {
            let mut out = Chunks::new(tx, handle, SCRAPE_WAIT);
            out.write_str(&"x".repeat(CHUNK_BYTES))
        })
        .await;
        assert!(matches!(written, Ok(Err(fmt::Error))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_does_not_take_the_text_in_time_ends_the_writing_at_the_deadline() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
        let handle = tokio::runtime::Handle::current();
        let started = std::time::Instant::now();
        let written = tokio::task::spawn_blocking(move || {
            let mut out = Chunks::new(tx, handle, Duration::from_millis(300));
            // The first chunk fills the channel; the second waits for a client that never reads.
            (0..3).try_for_each(|_| out.write_str(&"x".repeat(CHUNK_BYTES)))
        })
        .await;
        assert!(matches!(written, Ok(Err(fmt::Error))));
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(5),
            "ended after {took:?}, not at its deadline"
        );
        drop(rx);
    }
}
