//! The in-flight bound of a rollout: how far a shared change goes through the current wave.
//!
//! In: the current wave's tenants (those the rollout changes, in order), the ones released
//! so far, which of those are not settled yet (not synced at the rollout's commit, or synced
//! and waiting for health) and `--max-in-flight`. Out: the tenants to release now, so that at
//! most that many released tenants are unsettled at once, and how many are. A healthy,
//! stalled, failed or suspended tenant is settled: it frees its place. Nothing else is
//! bounded: the first sync, a restart, a tenant's own change and drift repair go out at once.

use std::collections::BTreeSet;

/// What the bound decides for the current wave.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Release {
    /// Tenants to release now, in the wave's order.
    pub(super) now: Vec<String>,
    /// Released tenants not settled yet, these included.
    pub(super) in_flight: usize,
}

/// Of `wave`'s tenants, those to release now: as many not released yet as there are places
/// left under `max` once the released ones that are `unsettled` are counted.
pub(super) fn release(
    wave: &[String],
    released: &BTreeSet<String>,
    max: usize,
    unsettled: impl Fn(&str) -> bool,
) -> Release {
    let busy = released.iter().filter(|t| unsettled(t)).count();
    let now: Vec<String> = wave
        .iter()
        .filter(|t| !released.contains(*t))
        .take(max.saturating_sub(busy))
        .cloned()
        .collect();
    Release {
        in_flight: busy + now.len(),
        now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i:02}")).collect()
    }

    #[test]
    fn a_wave_is_released_at_most_max_unsettled_tenants_at_a_time() {
        let wave = names(12);
        let first = release(&wave, &BTreeSet::new(), 5, |_| true);
        assert_eq!(first.now, names(5));
        assert_eq!(first.in_flight, 5);
        let released: BTreeSet<String> = first.now.into_iter().collect();
        let again = release(&wave, &released, 5, |_| true);
        assert_eq!(
            again,
            Release {
                now: vec![],
                in_flight: 5
            },
            "nothing settled: no place"
        );
    }

    #[test]
    fn a_settled_tenant_healthy_or_stalled_frees_its_place_for_the_next() {
        let wave = names(12);
        let released: BTreeSet<String> = names(5).into_iter().collect();
        // t00 healthy, t01 stalled: both settled.
        let r = release(&wave, &released, 5, |t| t != "t00" && t != "t01");
        assert_eq!(r.now, ["t05", "t06"]);
        assert_eq!(r.in_flight, 5);
    }

    #[test]
    fn the_end_of_a_wave_releases_what_is_left_and_a_bound_of_one_releases_one_at_a_time() {
        let wave = names(3);
        let released: BTreeSet<String> = names(2).into_iter().collect();
        let r = release(&wave, &released, 20, |_| true);
        assert_eq!(
            r,
            Release {
                now: vec!["t02".into()],
                in_flight: 3
            }
        );
        let r = release(&wave, &BTreeSet::new(), 1, |_| true);
        assert_eq!(r.now, ["t00"]);
        let all: BTreeSet<String> = wave.iter().cloned().collect();
        assert_eq!(
            release(&wave, &all, 1, |_| false),
            Release {
                now: vec![],
                in_flight: 0
            }
        );
    }
}
