//! The agent's handles on the cluster: the syncs' client, the API request counter, the
//! metrics and the shutdown token. None of them is replaced once the agent runs.
//!
//! In: the client and counter built at start, the metrics' settings. Out: the same handles,
//! read by every task; the shutdown token is cancelled on SIGTERM/SIGINT.

use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use fief_kube::counter::RequestCounter;

/// The handles on the cluster (see the module docs).
pub(crate) struct Cluster {
    client: kube::Client,
    counter: RequestCounter,
    metrics: Metrics,
    /// Cancelled on SIGTERM/SIGINT.
    shutdown: CancellationToken,
}

impl Cluster {
    /// The handles, with a shutdown token not cancelled yet.
    pub(crate) fn new(client: kube::Client, counter: RequestCounter, metrics: Metrics) -> Cluster {
        Cluster {
            client,
            counter,
            metrics,
            shutdown: CancellationToken::new(),
        }
    }

    /// The syncs' client (fenced by the Lease terms when there are any).
    pub(crate) fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The count of API requests by verb.
    pub(crate) fn counter(&self) -> &RequestCounter {
        &self.counter
    }

    /// The agent's metrics.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Cancelled on SIGTERM/SIGINT.
    pub(crate) fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }
}
