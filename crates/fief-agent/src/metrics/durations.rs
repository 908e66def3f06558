//! The sync-duration histogram, one per tenant, kept small.
//!
//! In: a tenant's sync durations as they end ([`Durations::observe`]). Out: the OpenMetrics
//! histogram of them (cumulative `le` buckets, `_sum`, `_count`), as prometheus-client's own
//! histogram encodes it. The buckets' bounds are the same for every tenant, so they are held
//! once ([`bounds`]), not per tenant; a tenant's histogram is its per-bucket counts and its
//! sum as atomics, held in place in the metric family's table. prometheus-client's histogram
//! keeps the bounds beside the counts in a vector of its own behind a shared lock: two more
//! allocations and the bounds again for each of thousands of tenants.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Buckets with a finite bound: 5 ms, doubling up to about 10 seconds.
const FINITE: usize = 12;

/// The upper bound of each finite bucket, in seconds: 5 ms doubling [`FINITE`] times.
pub(super) fn bounds() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.005, 2.0, FINITE as u16)
}

/// One tenant's sync durations: the observations per bucket (each in the first bucket whose
/// bound is not below it; the last bucket, `+Inf`, takes the rest) and their sum.
#[derive(Debug, Default)]
pub struct Durations {
    /// Observations per bucket, not cumulative (a tenant syncs far fewer than 2^32 times).
    counts: [AtomicU32; FINITE + 1],
    /// The sum of the observations, as the bits of an `f64`.
    sum: AtomicU64,
}

impl Durations {
    /// Count one sync of `seconds`.
    pub fn observe(&self, seconds: f64) {
        let bucket = bounds().position(|b| seconds <= b).unwrap_or(FINITE);
        if let Some(count) = self.counts.get(bucket) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + seconds).to_bits())
            });
    }

    /// The buckets as the exposition has them: each bound (`f64::MAX` for `+Inf`, as
    /// prometheus-client writes it) with its count, not cumulative; and the total count.
    fn buckets(&self) -> ([(f64, u64); FINITE + 1], u64) {
        let mut out = [(f64::MAX, 0); FINITE + 1];
        for (place, bound) in out.iter_mut().zip(bounds()) {
            place.0 = bound;
        }
        let mut total = 0;
        for (place, count) in out.iter_mut().zip(&self.counts) {
            place.1 = u64::from(count.load(Ordering::Relaxed));
            total += place.1;
        }
        (out, total)
    }
}

impl TypedMetric for Durations {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Durations {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (buckets, count) = self.buckets();
        let sum = f64::from_bits(self.sum.load(Ordering::Relaxed));
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    fn text(register: impl FnOnce(&mut Registry)) -> String {
        let mut registry = Registry::default();
        register(&mut registry);
        let mut out = String::new();
        encode(&mut out, &registry).expect("encodes");
        out
    }

    #[test]
    fn a_tenants_durations_encode_as_prometheus_clients_histogram_of_the_same_bounds() {
        let ours = Durations::default();
        let theirs = Histogram::new(bounds());
        for seconds in [0.001, 0.005, 0.0051, 0.3, 0.3, 7.5, 10.24, 10.25, 400.0] {
            ours.observe(seconds);
            theirs.observe(seconds);
        }
        let ours = text(|r| r.register("d", "durations", ours));
        let theirs = text(|r| r.register("d", "durations", theirs));
        assert_eq!(ours, theirs);
        assert!(ours.contains("d_count 9"), "{ours}");
        assert!(ours.contains("d_bucket{le=\"+Inf\"} 9"), "{ours}");
    }

    #[test]
    fn a_tenants_durations_are_held_in_a_few_words() {
        assert!(std::mem::size_of::<Durations>() <= 64);
    }
}
